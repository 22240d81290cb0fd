/* hash.h — SHA-256 over buffers and streams (OpenSSL libcrypto EVP),
 * as lowercase hex, and a one-shot SHA-512 for formats that prescribe it. A cdsh_hash is used by
 * one thread at a time; the one-shot functions are thread-safe. */
#ifndef CDSH_BASE_HASH_H
#define CDSH_BASE_HASH_H

#include <stddef.h>

#include "base/err.h"

#define CDSH_SHA256_HEX_LEN 64 /* hex digits; buffers need 65 bytes with the NUL */

typedef struct cdsh_hash cdsh_hash;

/* Incremental SHA-256. new: NULL on ENOMEM. update: 0 or CDSH_EIO (libcrypto
 * failure) / CDSH_EINVAL (after final). final writes 64 hex digits + NUL into
 * hex_out (65 bytes) and returns 0; the hash cannot be updated afterwards.
 * free is NULL-safe. */
cdsh_hash *cdsh_hash_new(void);
int cdsh_hash_update(cdsh_hash *h, const void *data, size_t n);
int cdsh_hash_final(cdsh_hash *h, char hex_out[CDSH_SHA256_HEX_LEN + 1]);
void cdsh_hash_free(cdsh_hash *h);

/* One-shot hash of data[0..n) into hex_out. 0, or CDSH_ENOMEM / CDSH_EIO. */
int cdsh_hash_sha256_hex(const void *data, size_t n, char hex_out[CDSH_SHA256_HEX_LEN + 1]);

#define CDSH_SHA512_HEX_LEN 128

/* One-shot SHA-512 of data[0..n) as 128 hex digits + NUL, for keys other
 * programs derive with it (npx's cache directories). 0, or CDSH_ENOMEM /
 * CDSH_EIO. */
int cdsh_hash_sha512_hex(const void *data, size_t n, char hex_out[CDSH_SHA512_HEX_LEN + 1]);

#endif
