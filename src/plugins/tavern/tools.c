/* tools.c — the seven tavern tools as host tool definitions: parameter
 * schemas, pretty-JSON rendering, concurrency safety for the read tools and
 * the same-turn write notice as a deferred context. No business logic. */
#include "plugins/tavern/tools.h"

#include <stdlib.h>
#include <string.h>

#include "host/dispatch.h"

static const char *const DESCRIPTIONS[] = {
    "Search this story's memories (BM25 with time decay). Use only when a needed fact may have "
    "been forgotten. Args: query, topK (default from settings, max 20).",
    "Save a lasting fact of this story as a memory (checked against similar memories first; "
    "on similar-found use tavern_memory_update). Args: body (<= 200 characters), tags, keys.",
    "Update a memory by id: new body and/or tags/keys merged in.",
    "Read lorebook entries bound to this story: no args = catalog; uid = one entry; query = "
    "ranked matches. source: global, character, chat, delta.",
    "Record a change of the world state: type add/update/invalidate, content, ref (required for "
    "update/invalidate), keys, expiresAt (ISO date in the future).",
    "List the readable story and card assets, the memory count and the preset catalog.",
    "Read one readable asset by path, or the preset catalog / one preset entry.",
};

static const char *const PARAMS[] = {
    "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"},\"topK\":{\"type\":"
    "\"integer\"}},\"required\":[\"query\"]}",
    "{\"type\":\"object\",\"properties\":{\"body\":{\"type\":\"string\"},\"tags\":{\"type\":"
    "\"array\",\"items\":{\"type\":\"string\"}},\"keys\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"string\"}}},\"required\":[\"body\"]}",
    "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"body\":{\"type\":"
    "\"string\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"keys\":{\"type\":"
    "\"array\",\"items\":{\"type\":\"string\"}}},\"required\":[\"id\"]}",
    "{\"type\":\"object\",\"properties\":{\"uid\":{\"type\":\"string\"},\"query\":{\"type\":"
    "\"string\"},\"source\":{\"type\":\"string\"},\"topK\":{\"type\":\"integer\"}}}",
    "{\"type\":\"object\",\"properties\":{\"type\":{\"type\":\"string\",\"enum\":[\"add\","
    "\"update\",\"invalidate\"]},\"content\":{\"type\":\"string\"},\"ref\":{\"type\":\"string\"},"
    "\"keys\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"expiresAt\":{\"type\":"
    "\"string\"}},\"required\":[\"type\",\"content\"]}",
    "{\"type\":\"object\",\"properties\":{}}",
    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"preset\":{\"type\":"
    "\"string\"},\"presetIdentifier\":{\"type\":\"string\"}}}",
};

json_t *cdsh_tavern_tool_parameters_dup(const char *name)
{
    for (size_t i = 0; cdsh_tavern_tool_names[i]; i++)
        if (name && strcmp(cdsh_tavern_tool_names[i], name) == 0)
            return json_loads(PARAMS[i], 0, NULL);
    return NULL;
}

typedef struct tool_ud {
    cdsh_tavern_service *svc;
    const char *name;
} tool_ud;

static int body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    tool_ud *t = ud;
    char *notice = NULL;
    cdsh_error err = {0};
    int rc =
        cdsh_tavern_service_tool(t->svc, exec->agent, t->name, exec->args, value, &notice, &err);
    if (rc < 0)
        return cdsh_dispatch_fail(exec, "TavernError", err.code[0] ? err.code : "internal", "%s",
                                  err.message[0] ? err.message : "tavern tool failed");
    if (notice)
        cdsh_dispatch_defer_context(exec, notice);
    free(notice);
    return 0;
}

/* Tool results reach the model as pretty JSON (budgets are counted on it). */
static json_t *render(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
{
    (void)ud, (void)args, (void)err;
    char *text = json_dumps(value, JSON_INDENT(2));
    json_t *out = json_pack("[{s:s,s:s}]", "type", "text", "text", text ? text : "null");
    free(text);
    return out;
}

int cdsh_tavern_tools_register(cdsh_plugin_ctx *ctx, cdsh_tavern_service *svc, cdsh_error *err)
{
    json_t *out_schema = json_pack("{s:s}", "type", "object");
    int rc = 0;
    for (size_t i = 0; cdsh_tavern_tool_names[i] && rc == 0; i++) {
        tool_ud *ud = calloc(1, sizeof *ud);
        json_t *params = json_loads(PARAMS[i], 0, NULL);
        if (!ud || !params) {
            free(ud);
            json_decref(params);
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            break;
        }
        ud->svc = svc;
        ud->name = cdsh_tavern_tool_names[i];
        cdsh_tool_def def = {
            .name = cdsh_tavern_tool_names[i],
            .description = DESCRIPTIONS[i],
            .parameters = params,
            .output_schema = out_schema,
            .execute = body,
            .render = render,
            .is_concurrency_safe =
                cdsh_tavern_tool_is_read(cdsh_tavern_tool_names[i]) ? cdsh_tools_always_safe : NULL,
            .ud = ud,
            .free_ud = free,
        };
        rc = cdsh_ctx_register_tool(ctx, &def, err);
        json_decref(params);
    }
    json_decref(out_schema);
    return rc;
}
