/* b64.c — base64 encode/decode for card text chunks. No streaming: payloads
 * are bounded by the PNG size limit before they get here. */
#include "plugins/tavern/b64.h"

#include <stdlib.h>

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *cdsh_tavern_b64_encode_dup(const uint8_t *data, size_t n)
{
    if (!data && n)
        return NULL;
    size_t out_len = (n + 2) / 3 * 4;
    char *out = malloc(out_len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)data[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)data[i + 1] << 8;
        if (i + 2 < n)
            v |= data[i + 2];
        out[o++] = ALPHABET[(v >> 18) & 63];
        out[o++] = ALPHABET[(v >> 12) & 63];
        out[o++] = i + 1 < n ? ALPHABET[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? ALPHABET[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

static int sym(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

int cdsh_tavern_b64_decode(const char *text, size_t n, uint8_t **out, size_t *out_len,
                           cdsh_error *err)
{
    if (!out || (!text && n))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "base64 decode: bad arguments");
    *out = NULL;
    uint8_t *buf = malloc(n / 4 * 3 + 4);
    if (!buf)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory decoding base64");
    size_t o = 0, quad = 0, pad = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = sym(c);
        if (v < 0 || pad) {
            free(buf);
            return cdsh_error_set(err, CDSH_EINVAL, "CARD_BAD_BASE64",
                                  "card payload is not valid base64 (bad character at offset %zu)",
                                  i);
        }
        acc = acc << 6 | (uint32_t)v;
        if (++quad == 4) {
            buf[o++] = (uint8_t)(acc >> 16);
            buf[o++] = (uint8_t)(acc >> 8);
            buf[o++] = (uint8_t)acc;
            quad = 0;
            acc = 0;
        }
    }
    if (quad == 1 || pad > 2) {
        free(buf);
        return cdsh_error_set(err, CDSH_EINVAL, "CARD_BAD_BASE64",
                              "card payload is not valid base64 (truncated)");
    }
    if (quad == 2) {
        buf[o++] = (uint8_t)(acc >> 4);
    } else if (quad == 3) {
        buf[o++] = (uint8_t)(acc >> 10);
        buf[o++] = (uint8_t)(acc >> 2);
    }
    buf[o] = 0;
    *out = buf;
    if (out_len)
        *out_len = o;
    return 0;
}
