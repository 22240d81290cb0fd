/* png.c — PNG chunk walking, card text extraction (tEXt/zTXt/iTXt, bounded
 * inflate) and re-embedding. The 1×1 placeholder image comes from libpng's
 * simplified writer; chunk parsing is by hand because libpng cannot stop a
 * single oversized zTXt cleanly nor read text without decoding pixels. */
#include "plugins/tavern/png.h"

#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

static const uint8_t SIG[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

bool cdsh_tavern_png_is_png(const uint8_t *data, size_t len)
{
    return data && len >= 8 && memcmp(data, SIG, 8) == 0;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

typedef struct chunk {
    size_t offset; /* of the length field */
    uint32_t length;
    char type[5];
    const uint8_t *body;
} chunk;

/* Checks the whole chunk layout; calls back for each chunk. */
typedef int (*chunk_fn)(const chunk *c, void *ctx, cdsh_error *err);

static int walk(const uint8_t *data, size_t len, chunk_fn fn, void *ctx, cdsh_error *err)
{
    if (len > CDSH_TAVERN_PNG_MAX)
        return cdsh_error_set(err, CDSH_ETOOBIG, "CARD_TOO_BIG",
                              "PNG is %zu bytes; the limit is 32 MiB", len);
    if (!cdsh_tavern_png_is_png(data, len))
        return cdsh_error_set(err, CDSH_EINVAL, "PNG_BAD_SIGNATURE",
                              "not a PNG file (bad signature)");
    size_t pos = 8;
    bool first = true;
    for (;;) {
        if (len - pos < 12)
            return cdsh_error_set(err, CDSH_EINVAL, "PNG_TRUNCATED",
                                  "PNG is truncated at offset %zu (no IEND chunk)", pos);
        chunk c = {.offset = pos, .length = be32(data + pos), .body = data + pos + 8};
        memcpy(c.type, data + pos + 4, 4);
        c.type[4] = '\0';
        for (int i = 0; i < 4; i++) {
            char t = c.type[i];
            if (!((t >= 'A' && t <= 'Z') || (t >= 'a' && t <= 'z')))
                return cdsh_error_set(err, CDSH_EINVAL, "PNG_BAD_CHUNK",
                                      "PNG chunk at offset %zu has an invalid type", pos);
        }
        if (c.length > 0x7fffffffu || c.length > len - pos - 12)
            return cdsh_error_set(err, CDSH_EINVAL, "PNG_BAD_CHUNK",
                                  "PNG chunk %s at offset %zu declares length %u, past the end "
                                  "of the file (corrupt length or truncated file)",
                                  c.type, pos, c.length);
        if (first && strcmp(c.type, "IHDR") != 0)
            return cdsh_error_set(err, CDSH_EINVAL, "PNG_BAD_CHUNK",
                                  "PNG does not start with an IHDR chunk");
        first = false;
        if (fn) {
            int rc = fn(&c, ctx, err);
            if (rc < 0)
                return rc;
        }
        pos += 12 + (size_t)c.length;
        if (strcmp(c.type, "IEND") == 0)
            return 0;
    }
}

static int inflate_bounded(const uint8_t *src, size_t n, char **out, size_t *out_len,
                           cdsh_error *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot start inflate");
    size_t cap = 64 * 1024, used = 0;
    char *buf = malloc(cap + 1);
    int rc = 0;
    if (!buf) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory inflating PNG text");
        goto cleanup;
    }
    zs.next_in = (Bytef *)src;
    zs.avail_in = (uInt)n;
    for (;;) {
        if (used == cap) {
            if (cap >= CDSH_TAVERN_INFLATE_MAX) {
                rc = cdsh_error_set(err, CDSH_ETOOBIG, "INFLATE_TOO_BIG",
                                    "compressed PNG text chunk inflates beyond 4 MiB "
                                    "(refused as a zip bomb)");
                goto cleanup;
            }
            size_t ncap = cap * 2 > CDSH_TAVERN_INFLATE_MAX ? CDSH_TAVERN_INFLATE_MAX : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory inflating");
                goto cleanup;
            }
            buf = nb;
            cap = ncap;
        }
        zs.next_out = (Bytef *)buf + used;
        zs.avail_out = (uInt)(cap - used);
        int zr = inflate(&zs, Z_NO_FLUSH);
        used = cap - zs.avail_out;
        if (zr == Z_STREAM_END)
            break;
        if (zr == Z_BUF_ERROR && zs.avail_in == 0 && used < cap) {
            rc = cdsh_error_set(err, CDSH_EINVAL, "PNG_BAD_CHUNK",
                                "compressed PNG text chunk ends early");
            goto cleanup;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            rc = cdsh_error_set(err, CDSH_EINVAL, "PNG_BAD_CHUNK",
                                "compressed PNG text chunk is corrupt (%s)",
                                zs.msg ? zs.msg : "inflate error");
            goto cleanup;
        }
    }
    buf[used] = '\0';
    *out = buf;
    *out_len = used;
    buf = NULL;
cleanup:
    inflateEnd(&zs);
    free(buf);
    return rc;
}

/* The keyword of a text chunk, or NULL if it has no NUL within 80 bytes. */
static const uint8_t *keyword_end(const chunk *c)
{
    size_t lim = c->length < 80 ? c->length : 80;
    return memchr(c->body, 0, lim);
}

static bool is_text_chunk(const chunk *c)
{
    return !strcmp(c->type, "tEXt") || !strcmp(c->type, "zTXt") || !strcmp(c->type, "iTXt");
}

/* 1 chara, 2 ccv3, 0 other. */
static int card_keyword(const chunk *c)
{
    if (!is_text_chunk(c))
        return 0;
    const uint8_t *e = keyword_end(c);
    if (!e)
        return 0;
    size_t kl = (size_t)(e - c->body);
    if (kl == 5 && strncasecmp((const char *)c->body, "chara", 5) == 0)
        return 1;
    if (kl == 4 && strncasecmp((const char *)c->body, "ccv3", 4) == 0)
        return 2;
    return 0;
}

static int chunk_text(const chunk *c, char **out, size_t *out_len, cdsh_error *err)
{
    const uint8_t *p = keyword_end(c) + 1;
    const uint8_t *end = c->body + c->length;
    bool compressed = false;
    if (!strcmp(c->type, "zTXt")) {
        if (p >= end || *p != 0)
            return cdsh_error_set(err, CDSH_EINVAL, "PNG_BAD_CHUNK",
                                  "zTXt card chunk at offset %zu has an unknown compression "
                                  "method",
                                  c->offset);
        p++;
        compressed = true;
    } else if (!strcmp(c->type, "iTXt")) {
        if (end - p < 2 || p[1] != 0 || p[0] > 1)
            return cdsh_error_set(err, CDSH_EINVAL, "PNG_BAD_CHUNK",
                                  "iTXt card chunk at offset %zu has a bad compression flag",
                                  c->offset);
        compressed = p[0] == 1;
        p += 2;
        for (int i = 0; i < 2; i++) { /* language tag, translated keyword */
            const uint8_t *z = memchr(p, 0, (size_t)(end - p));
            if (!z)
                return cdsh_error_set(err, CDSH_EINVAL, "PNG_BAD_CHUNK",
                                      "iTXt card chunk at offset %zu is missing a separator",
                                      c->offset);
            p = z + 1;
        }
    }
    if (compressed)
        return inflate_bounded(p, (size_t)(end - p), out, out_len, err);
    size_t n = (size_t)(end - p);
    char *s = malloc(n + 1);
    if (!s)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    memcpy(s, p, n);
    s[n] = '\0';
    *out = s;
    *out_len = n;
    return 0;
}

typedef struct find_ctx {
    chunk chara, ccv3;
    bool has_chara, has_ccv3;
} find_ctx;

static int find_cb(const chunk *c, void *vctx, cdsh_error *err)
{
    (void)err;
    find_ctx *f = vctx;
    int k = card_keyword(c);
    if (k == 1 && !f->has_chara) {
        f->chara = *c;
        f->has_chara = true;
    } else if (k == 2 && !f->has_ccv3) {
        f->ccv3 = *c;
        f->has_ccv3 = true;
    }
    return 0;
}

int cdsh_tavern_png_find_card(const uint8_t *data, size_t len, char **text, size_t *text_len,
                              bool *is_ccv3, cdsh_error *err)
{
    if (!text || !text_len || !is_ccv3)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "png_find_card: bad arguments");
    *text = NULL;
    find_ctx f = {0};
    int rc = walk(data, len, find_cb, &f, err);
    if (rc < 0)
        return rc;
    if (!f.has_ccv3 && !f.has_chara)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "PNG_NO_CARD",
                              "PNG has no character card (no chara or ccv3 text chunk)");
    *is_ccv3 = f.has_ccv3;
    return chunk_text(f.has_ccv3 ? &f.ccv3 : &f.chara, text, text_len, err);
}

/* ---- writing ------------------------------------------------------------ */

typedef struct outbuf {
    uint8_t *data;
    size_t len, cap;
    bool failed;
} outbuf;

static void ob_put(outbuf *o, const void *p, size_t n)
{
    if (o->failed)
        return;
    if (o->len + n > o->cap) {
        size_t ncap = o->cap ? o->cap : 4096;
        while (ncap < o->len + n)
            ncap *= 2;
        uint8_t *nd = realloc(o->data, ncap);
        if (!nd) {
            o->failed = true;
            return;
        }
        o->data = nd;
        o->cap = ncap;
    }
    memcpy(o->data + o->len, p, n);
    o->len += n;
}

static void ob_text_chunk(outbuf *o, const char *keyword, const char *text)
{
    size_t kl = strlen(keyword), tl = strlen(text);
    uint8_t hdr[8];
    put_be32(hdr, (uint32_t)(kl + 1 + tl));
    memcpy(hdr + 4, "tEXt", 4);
    ob_put(o, hdr, 8);
    ob_put(o, keyword, kl + 1);
    ob_put(o, text, tl);
    uLong crc = crc32(0L, hdr + 4, 4);
    crc = crc32(crc, (const Bytef *)keyword, (uInt)(kl + 1));
    crc = crc32_z(crc, (const Bytef *)text, tl);
    uint8_t cb[4];
    put_be32(cb, (uint32_t)crc);
    ob_put(o, cb, 4);
}

typedef struct embed_ctx {
    const uint8_t *src;
    outbuf *o;
    const char *chara, *ccv3;
} embed_ctx;

static int embed_cb(const chunk *c, void *vctx, cdsh_error *err)
{
    (void)err;
    embed_ctx *e = vctx;
    if (card_keyword(c))
        return 0; /* old card chunks are dropped */
    if (!strcmp(c->type, "IEND")) {
        ob_text_chunk(e->o, "chara", e->chara);
        if (e->ccv3)
            ob_text_chunk(e->o, "ccv3", e->ccv3);
    }
    ob_put(e->o, e->src + c->offset, 12 + (size_t)c->length);
    return 0;
}

static int placeholder_png(uint8_t **out, size_t *out_len, cdsh_error *err)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = 1;
    img.height = 1;
    img.format = PNG_FORMAT_RGBA;
    const uint8_t pixel[4] = {0, 0, 0, 0};
    png_alloc_size_t size = 0;
    if (!png_image_write_to_memory(&img, NULL, &size, 0, pixel, 0, NULL) || size == 0)
        return cdsh_error_set(err, CDSH_EIO, "PNG_WRITE_FAILED", "cannot build placeholder PNG");
    uint8_t *buf = malloc(size);
    if (!buf)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (!png_image_write_to_memory(&img, buf, &size, 0, pixel, 0, NULL)) {
        free(buf);
        return cdsh_error_set(err, CDSH_EIO, "PNG_WRITE_FAILED", "cannot build placeholder PNG");
    }
    *out = buf;
    *out_len = size;
    return 0;
}

int cdsh_tavern_png_embed(const uint8_t *png, size_t png_len, const char *chara_b64,
                          const char *ccv3_b64, uint8_t **out, size_t *out_len, cdsh_error *err)
{
    if (!chara_b64 || !out || !out_len)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "png_embed: bad arguments");
    *out = NULL;
    uint8_t *own = NULL;
    size_t own_len = 0;
    outbuf o = {0};
    int rc = 0;
    if (!png) {
        rc = placeholder_png(&own, &own_len, err);
        if (rc < 0)
            goto cleanup;
        png = own;
        png_len = own_len;
    }
    ob_put(&o, SIG, 8);
    embed_ctx e = {.src = png, .o = &o, .chara = chara_b64, .ccv3 = ccv3_b64};
    rc = walk(png, png_len, embed_cb, &e, err);
    if (rc < 0)
        goto cleanup;
    if (o.failed) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory writing PNG");
        goto cleanup;
    }
    *out = o.data;
    *out_len = o.len;
    o.data = NULL;
cleanup:
    free(o.data);
    free(own);
    return rc;
}
