/* fuzz_schema.c — fuzzes schema compilation and validation: the input is a
 * schema JSON text, a newline, then a value JSON text. Compiling may fail;
 * validating must not crash, must yield only string violations, and must
 * reach the same verdict with and without collecting them. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nl = memchr(text, '\n', size);
    size_t schema_len = nl ? (size_t)(nl - text) : size;
    json_t *schema = json_loadb(text, schema_len, JSON_DECODE_ANY, NULL);
    if (!schema)
        return 0;
    json_t *value = nl ? json_loadb(nl + 1, size - schema_len - 1, JSON_DECODE_ANY, NULL) : NULL;
    cdsh_schema *compiled = NULL;
    json_t *refusals = NULL;
    cdsh_error err = {0};
    int rc = cdsh_schema_compile_at(schema, NULL, &compiled, &refusals, &err);
    if (rc == 0) {
        json_t *violations = NULL;
        rc = cdsh_schema_validate(compiled, value, "value", &violations);
        if (rc == CDSH_EINVAL && (!violations || json_array_size(violations) == 0))
            abort();
        if (rc == 0 && violations)
            abort();
        /* Counting mode (no array) and the implicit root must agree on the verdict. */
        if (cdsh_schema_validate(compiled, value, "", NULL) != rc)
            abort();
        for (size_t i = 0; i < json_array_size(violations); i++)
            if (!json_is_string(json_array_get(violations, i)))
                abort();
        free(cdsh_schema_violations_join_dup(violations));
        json_decref(violations);
        cdsh_schema_free(compiled);
    } else if (rc == CDSH_EUNSUPPORTED) {
        if (json_array_size(refusals) == 0 || strcmp(err.code, "UNSUPPORTED_SCHEMA") != 0)
            abort();
        for (size_t i = 0; i < json_array_size(refusals); i++)
            if (!json_is_string(json_array_get(refusals, i)))
                abort();
    }
    json_decref(refusals);
    json_decref(value);
    json_decref(schema);
    return 0;
}
