/* fuzz_tavern_template.c — the EJS compiler never crashes; on success the
 * output is a JavaScript body that ends with the return statement, on
 * failure it reports TEMPLATE_SYNTAX or TEMPLATE_TOO_BIG. (Execution is
 * covered by tests; forking per fuzz input would be too slow.) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256 * 1024)
        return 0;
    char *src = malloc(size + 1);
    if (!src)
        return 0;
    memcpy(src, data, size);
    src[size] = 0;
    char *js = NULL;
    cdsh_error err = {0};
    int rc = cdsh_tavern_template_compile(src, size, &js, &err);
    if (rc == 0) {
        const char *tail = "return __out.join('');\n";
        size_t n = strlen(js), t = strlen(tail);
        if (n < t || strcmp(js + n - t, tail))
            abort();
    } else if (strcmp(err.code, "TEMPLATE_SYNTAX") && strcmp(err.code, "TEMPLATE_TOO_BIG")) {
        abort();
    }
    free(js);
    free(src);
    return 0;
}
