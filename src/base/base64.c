/* base64.c — base64 through libcrypto's EVP block coder; this file only
 * normalises the input (whitespace, URL-safe symbols, missing padding) and
 * checks it, so errors name the offending offset. No streaming: callers bound
 * their payloads first. */
#include "base/base64.h"

#include <openssl/evp.h>
#include <stdlib.h>

char *cdsh_base64_encode_dup(const uint8_t *data, size_t n)
{
    if ((!data && n) || n > (size_t)INT32_MAX / 4 * 3)
        return NULL;
    char *out = malloc((n + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    EVP_EncodeBlock((unsigned char *)out, data ? data : (const uint8_t *)"", (int)n);
    return out; /* EVP_EncodeBlock writes the NUL */
}

static int symbol(unsigned char c)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
        c == '/')
        return c;
    return c == '-' ? '+' : c == '_' ? '/' : -1;
}

static int bad(cdsh_error *err, size_t at)
{
    return cdsh_error_set(err, CDSH_EINVAL, "BAD_BASE64",
                          "not valid base64 (bad character at offset %zu)", at);
}

int cdsh_base64_decode(const char *text, size_t n, uint8_t **out, size_t *out_len, cdsh_error *err)
{
    if (!out || (!text && n) || n > (size_t)INT32_MAX - 4)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "base64 decode: bad arguments");
    *out = NULL;
    /* The symbols alone, then padded back to whole quads for EVP_DecodeBlock. */
    unsigned char *sym = malloc(n + 4);
    if (!sym)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory decoding base64");
    size_t len = 0, pad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = symbol(c);
        if (v < 0 || pad) {
            free(sym);
            return bad(err, i);
        }
        sym[len++] = (unsigned char)v;
    }
    size_t tail = len % 4;
    if (tail == 1 || pad > 2) {
        free(sym);
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_BASE64", "not valid base64 (truncated)");
    }
    size_t fill = tail ? 4 - tail : 0;
    for (size_t i = 0; i < fill; i++)
        sym[len++] = '=';
    uint8_t *buf = malloc(len / 4 * 3 + 1);
    if (!buf) {
        free(sym);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory decoding base64");
    }
    int got = len ? EVP_DecodeBlock(buf, sym, (int)len) : 0;
    free(sym);
    if (got < 0) { /* not reached: every symbol was checked above */
        free(buf);
        return bad(err, 0);
    }
    size_t o = (size_t)got - fill; /* EVP counts the bytes the padding stands for */
    buf[o] = 0;
    *out = buf;
    if (out_len)
        *out_len = o;
    return 0;
}
