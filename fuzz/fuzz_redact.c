/* fuzz_redact.c — redaction never crashes on arbitrary bytes, is idempotent,
 * and a secret planted into the input (after a separator) never survives. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const planted[] = {
    "sk-ant-api03-PLANTEDsecretVALUE0123456789",
    "ghp_PLANTEDsecretVALUE0123456789abcdefgh",
    "AKIAPLANTEDSECRET012",
    "Authorization: Bearer PLANTEDsecretVALUE0123456789",
    "password=PLANTEDsecretVALUE0123456789",
};

static size_t count(const char *hay, size_t n, const char *needle)
{
    size_t m = strlen(needle), c = 0;
    for (size_t i = 0; i + m <= n; i++)
        c += memcmp(hay + i, needle, m) == 0;
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t out_len;
    char *out = cdsh_redact_dupn((const char *)data, size, &out_len);
    if (!out)
        abort();
    size_t again_len;
    char *again = cdsh_redact_dupn(out, out_len, &again_len);
    if (!again || again_len != out_len || memcmp(again, out, out_len) != 0)
        abort();
    free(again);
    free(out);

    /* input + "\n" + secret + "\n" + input: the secret must be gone */
    const char *secret = planted[size ? data[0] % 5 : 0];
    size_t slen = strlen(secret);
    char *text = malloc(2 * size + slen + 2);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\n';
    memcpy(text + size + 1, secret, slen);
    text[size + 1 + slen] = '\n';
    memcpy(text + size + 2 + slen, data, size);
    out = cdsh_redact_dupn(text, 2 * size + slen + 2, &out_len);
    /* The input itself may spell the marker where it is not a secret (say
     * "AKIAPLANTEDSECRET012x"), so only the planted copy must disappear. */
    static const char *const markers[] = {"PLANTEDsecretVALUE0123456789", "AKIAPLANTEDSECRET012"};
    for (size_t i = 0; out && i < 2; i++)
        if (count(out, out_len, markers[i]) > 2 * count((const char *)data, size, markers[i]))
            abort();
    if (!out)
        abort();
    free(out);
    free(text);
    return 0;
}
