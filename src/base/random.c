/* random.c — CSPRNG helpers over getrandom(2). No userspace PRNG here: ids and
 * tokens must be unguessable, and the kernel pool is fast enough for them. */
#include "base/random.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/err.h"

int cdsh_random_bytes(void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return CDSH_EIO;
        }
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

int cdsh_random_hex(char *out, size_t out_size, size_t nbytes)
{
    static const char digits[] = "0123456789abcdef";
    if (!out || out_size < nbytes * 2 + 1 || nbytes > 256)
        return CDSH_EINVAL;
    uint8_t raw[256];
    if (cdsh_random_bytes(raw, nbytes) != 0)
        return CDSH_EIO;
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = digits[raw[i] >> 4];
        out[2 * i + 1] = digits[raw[i] & 15];
    }
    out[nbytes * 2] = '\0';
    return 0;
}

char *cdsh_random_id_dup(const char *prefix)
{
    static const char alphabet[] = "0123456789abcdefghjkmnpqrstvwxyz"; /* Crockford base32 */
    enum { ID_CHARS = 22 };
    uint8_t raw[ID_CHARS];
    if (cdsh_random_bytes(raw, sizeof raw) != 0)
        return NULL;
    size_t plen = prefix ? strlen(prefix) : 0;
    char *id = malloc(plen + ID_CHARS + 1);
    if (!id)
        return NULL;
    if (plen)
        memcpy(id, prefix, plen);
    for (size_t i = 0; i < ID_CHARS; i++)
        id[plen + i] = alphabet[raw[i] & 31];
    id[plen + ID_CHARS] = '\0';
    return id;
}
