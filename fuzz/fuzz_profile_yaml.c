/* fuzz_profile_yaml.c — the profile YAML reader on arbitrary bytes: it either
 * refuses with BAD_YAML or yields JSON that the writer emits and the reader
 * reads back equal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cdsh_error err = {0};
    json_t *v = cdsh_profile_yaml_parse((const char *)data, size, &err);
    if (!v) {
        if (strcmp(err.code, "BAD_YAML") != 0 && strcmp(err.code, "NO_MEMORY") != 0)
            abort();
        return 0;
    }
    char *text = cdsh_profile_yaml_emit_dup(v);
    if (!text)
        abort();
    json_t *back = cdsh_profile_yaml_parse(text, strlen(text), &err);
    if (!back || !json_equal(v, back))
        abort();
    json_decref(back);
    free(text);
    json_decref(v);
    return 0;
}
