/* fuzz_front_matter.c — fuzzes the front-matter splitter and the command IR
 * built on it: never crashes, the body offset stays inside the input, the
 * metadata is an object, warnings are strings, the mapped command name
 * always matches ^[a-z][a-z0-9_-]*$, and expansion either succeeds or fails
 * with a code. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/commands.h"
#include "plugins/mcpimport/commands.h"
#include "plugins/mcpimport/frontmatter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    json_t *w = json_array(), *meta = NULL;
    size_t off = 0;
    if (cdsh_mcpimport_frontmatter_parse(text, size, &meta, &off, w) == 0) {
        if (off > size || !json_is_object(meta))
            abort();
        size_t i;
        json_t *v;
        json_array_foreach(w, i, v) {
            if (!json_is_string(v))
                abort();
        }
    }
    json_decref(meta);
    json_decref(w);
    /* the command IR wants text without NUL bytes (files are read as C strings) */
    char *copy = strndup(text, size);
    if (!copy)
        return 0;
    const char *sources[] = {"claude", "codex"};
    for (int k = 0; k < 2; k++) {
        json_t *c =
            json_pack("{s:{s:s, s:s, s:s}, s:s, s:s}", "provenance", "source", sources[k], "file",
                      "/f.md", "scope", "user", "stem", "Fuzz Cmd", "namespace", "p");
        json_t *ir = cdsh_mcpimport_command_from_markdown(c, copy, strlen(copy));
        if (ir) {
            if (!cdsh_commands_name_valid(json_string_value(json_object_get(ir, "name"))))
                abort();
            char *out = NULL;
            cdsh_error e = {0};
            int rc = cdsh_mcpimport_command_expand(ir, "a \"b c\" K=v $1", &out, &e);
            if ((rc == 0) != (out != NULL) || (rc != 0 && !e.code[0]))
                abort();
            free(out);
        }
        json_decref(ir);
        json_decref(c);
    }
    free(copy);
    return 0;
}
