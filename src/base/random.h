/* random.h — secure random bytes, hex tokens and prefixed ids from the
 * kernel's CSPRNG (getrandom). Thread-safe. */
#ifndef CDSH_BASE_RANDOM_H
#define CDSH_BASE_RANDOM_H

#include <stddef.h>

/* Fills buf with n random bytes. 0 or CDSH_EIO. */
int cdsh_random_bytes(void *buf, size_t n);

/* Writes 2*nbytes lowercase hex digits plus NUL into out (size ≥ 2*nbytes+1).
 * 0 or CDSH_EIO / CDSH_EINVAL. */
int cdsh_random_hex(char *out, size_t out_size, size_t nbytes);

/* Owned string "<prefix><22 base32 chars>" (about 110 bits); NULL on failure. */
char *cdsh_random_id_dup(const char *prefix);

#endif
