/* fuzz_tavern_wi_keys.c — lorebook keys (plain, whole-word, case, /regex/
 * flags, macros) and scan text from fuzz input: activation never crashes,
 * and a fired entry always has a matching reason in the log. Input layout:
 * keys separated by '\n' up to a NUL byte, then the chat text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "plugins/tavern/wi_activate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 16 * 1024)
        return 0;
    const char *nul = memchr(data, 0, size);
    size_t klen = nul ? (size_t)(nul - (const char *)data) : size;
    char *keys = strndup((const char *)data, klen);
    char *text = nul ? strndup(nul + 1, size - klen - 1) : strdup("");
    json_t *entries = json_object();
    int uid = 0;
    char *save = NULL;
    for (char *k = strtok_r(keys, "\n", &save); k && uid < 32; k = strtok_r(NULL, "\n", &save)) {
        json_t *key = json_stringn_nocheck(k, strlen(k)), *e;
        if (!json_string_value(key)) {
            json_decref(key);
            continue;
        }
        e = json_pack("{s:i, s:[o], s:[s], s:s, s:i, s:b, s:b, s:i, s:s}", "uid", uid, "key", key,
                      "keysecondary", k, "content", k, "selectiveLogic", uid % 4, "matchWholeWords",
                      uid % 2, "caseSensitive", uid % 3 == 0, "position", uid % 8, "group",
                      uid % 5 ? "" : "g");
        char id[16];
        snprintf(id, sizeof id, "%d", uid++);
        json_object_set_new(entries, id, e);
    }
    json_t *books = json_pack("[{s:s, s:o}]", "name", "fz", "entries", entries);
    cdsh_tavern_wi_message msg = {"User", text};
    cdsh_tavern_macro_env env = {.user = "U", .chr = "C"};
    cdsh_tavern_wi_input in = {
        .character_books = books, .messages = &msg, .n_messages = 1, .macros = &env};
    cdsh_tavern_wi_settings_default(&in.settings);
    json_t *out = NULL;
    if (cdsh_tavern_wi_activate(&in, &out, NULL) == 0) {
        size_t i;
        json_t *l;
        json_array_foreach(json_object_get(out, "log"), i, l) {
            if (!json_string_value(json_object_get(l, "reason")))
                abort();
        }
    }
    json_decref(out);
    json_decref(books);
    free(keys);
    free(text);
    return 0;
}
