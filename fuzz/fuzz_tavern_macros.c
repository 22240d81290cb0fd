/* fuzz_tavern_macros.c — the macro expander never crashes, always returns a
 * string, stays within its output bound, and is deterministic for a seed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "plugins/tavern/macros.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *run(const char *text)
{
    json_t *local = json_object(), *global = json_object();
    json_t *outlets = json_pack("{s:s}", "o", "{{outlet::o}}{{char}}");
    cdsh_tavern_macro_env e = {.user = "U",
                               .chr = "C",
                               .description = "{{user}} and {{char}}",
                               .chat_id = "c",
                               .now_ms = 1767225600000LL,
                               .seed = 7,
                               .vars_local = local,
                               .vars_global = global,
                               .outlets = outlets,
                               .last_message_id = 3};
    char *out = cdsh_tavern_macros_expand_dup(text, &e);
    json_decref(local);
    json_decref(global);
    json_decref(outlets);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char *a = run(text), *b = run(text);
    if (!a || !b || strcmp(a, b) || strlen(a) > CDSH_TAVERN_MACRO_MAX_BYTES + size + 64)
        abort();
    free(a);
    free(b);
    free(text);
    return 0;
}
