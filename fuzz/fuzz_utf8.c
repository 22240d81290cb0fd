/* fuzz_utf8.c — the UTF-8 functions agree with each other on arbitrary
 * bytes: validation matches a decode loop, counts and widths are consistent,
 * truncation stays within bounds and valid, sanitising yields valid text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    size_t i = 0, count = 0, width = 0;
    bool all_ok = true;
    while (i < size) {
        uint32_t cp;
        size_t len;
        int rc = cdsh_utf8_decode(s + i, size - i, &cp, &len);
        if (len < 1 || len > 4 || len > size - i)
            abort();
        if (rc == 0) {
            char enc[4];
            if (cdsh_utf8_encode(cp, enc) != len || memcmp(enc, s + i, len) != 0)
                abort(); /* decoding is exact: re-encoding gives the same bytes */
        } else {
            all_ok = false;
            if (cp != CDSH_UTF8_REPLACEMENT)
                abort();
        }
        int w = cdsh_utf8_cp_width(cp);
        if (w < 0 || w > 2)
            abort();
        width += (size_t)w;
        count++;
        i += len;
    }
    if (cdsh_utf8_valid(s, size) != all_ok || cdsh_utf8_count(s, size) != count ||
        cdsh_utf8_width(s, size) != width)
        abort();
    size_t prefix = cdsh_utf8_valid_prefix(s, size);
    if (prefix > size || !cdsh_utf8_valid(s, prefix) || (all_ok && prefix != size))
        abort();
    size_t max = size ? data[0] % 16 : 0;
    size_t got_w;
    size_t cut = cdsh_utf8_truncate_width(s, size, max, &got_w);
    if (cut > size || got_w > max || cdsh_utf8_width(s, cut) != got_w)
        abort();
    if (all_ok && !cdsh_utf8_valid(s, cut))
        abort();
    size_t clean_len;
    char *clean = cdsh_utf8_sanitize_dup(s, size, &clean_len);
    if (!clean || !cdsh_utf8_valid(clean, clean_len) || cdsh_utf8_count(clean, clean_len) != count)
        abort();
    if (all_ok && (clean_len != size || memcmp(clean, s, size) != 0))
        abort();
    free(clean);
    return 0;
}
