/* hash.c — SHA-256 via libcrypto's EVP interface. Digest choice is fixed on
 * purpose: callers compare hashes across runs, so there is one algorithm.
 * The one-shot SHA-512 exists only to reproduce keys other tools compute. */
#include "base/hash.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void hex_encode(const unsigned char *md, unsigned int n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned int i = 0; i < n; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 15];
    }
    out[2 * n] = '\0';
}

struct cdsh_hash {
    EVP_MD_CTX *ctx;
    bool finished;
};

cdsh_hash *cdsh_hash_new(void)
{
    cdsh_hash *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->ctx = EVP_MD_CTX_new();
    if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(h->ctx);
        free(h);
        return NULL;
    }
    return h;
}

int cdsh_hash_update(cdsh_hash *h, const void *data, size_t n)
{
    if (!h || h->finished || (!data && n))
        return CDSH_EINVAL;
    if (n && EVP_DigestUpdate(h->ctx, data, n) != 1)
        return CDSH_EIO;
    return 0;
}

int cdsh_hash_final(cdsh_hash *h, char hex_out[CDSH_SHA256_HEX_LEN + 1])
{
    if (!h || h->finished || !hex_out)
        return CDSH_EINVAL;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    h->finished = true;
    if (EVP_DigestFinal_ex(h->ctx, md, &mdlen) != 1 || mdlen != 32)
        return CDSH_EIO;
    hex_encode(md, mdlen, hex_out);
    return 0;
}

void cdsh_hash_free(cdsh_hash *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->ctx);
    free(h);
}

int cdsh_hash_sha256_hex(const void *data, size_t n, char hex_out[CDSH_SHA256_HEX_LEN + 1])
{
    cdsh_hash *h = cdsh_hash_new();
    if (!h)
        return CDSH_ENOMEM;
    int rc = cdsh_hash_update(h, data, n);
    if (rc == 0)
        rc = cdsh_hash_final(h, hex_out);
    cdsh_hash_free(h);
    return rc;
}

int cdsh_hash_sha512_hex(const void *data, size_t n, char hex_out[CDSH_SHA512_HEX_LEN + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if ((!data && n) || !hex_out)
        return CDSH_EINVAL;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx)
        return CDSH_ENOMEM;
    int ok = EVP_DigestInit_ex(ctx, EVP_sha512(), NULL) == 1 &&
             EVP_DigestUpdate(ctx, data ? data : "", n) == 1 &&
             EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 64;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return CDSH_EIO;
    hex_encode(md, mdlen, hex_out);
    return 0;
}
