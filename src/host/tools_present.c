/* tools_present.c — render intents of tool calls and results (§1: DSH's
 * presentCall / presentResult): asks the tool's presenter, softly — invalid
 * args, a missing presenter or an answer that is not a valid intent all
 * give the generic card — and checks each card's fields. The page draws
 * them (web/tool_cards.js); the model never sees them. */
#include <string.h>

#include "base/json.h"
#include "base/schema.h"
#include "host/tools.h"
#include "host/tools_priv.h"

static bool str_or_absent(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return !v || json_is_string(v);
}

static bool str_present(const json_t *o, const char *k)
{
    return json_is_string(json_object_get(o, k));
}

static bool search_results_ok(const json_t *arr)
{
    if (!json_is_array(arr))
        return false;
    size_t i;
    json_t *r;
    json_array_foreach(arr, i, r) {
        if (!json_is_object(r) || !str_present(r, "title") || !str_or_absent(r, "snippet") ||
            !str_or_absent(r, "ref"))
            return false;
    }
    return true;
}

bool cdsh_tools_present_valid(const json_t *in)
{
    const char *card = json_string_value(json_object_get(in, "card"));
    if (!json_is_object(in) || !card)
        return false;
    if (strcmp(card, "generic") == 0)
        return str_or_absent(in, "title") && str_or_absent(in, "text") &&
               str_or_absent(in, "view") && str_or_absent(in, "fen");
    if (strcmp(card, "terminal") == 0) {
        const json_t *code = json_object_get(in, "exitCode");
        return str_present(in, "output") && str_or_absent(in, "command") &&
               (!code || json_is_integer(code) || json_is_null(code));
    }
    if (strcmp(card, "diff") == 0)
        return str_present(in, "path") && str_present(in, "newText") &&
               (str_or_absent(in, "oldText") || json_is_null(json_object_get(in, "oldText")));
    if (strcmp(card, "search") == 0)
        return str_or_absent(in, "query") && search_results_ok(json_object_get(in, "results"));
    if (strcmp(card, "read") == 0)
        return str_present(in, "path") && str_or_absent(in, "text");
    if (strcmp(card, "web") == 0)
        return str_present(in, "url") && str_or_absent(in, "title");
    return false;
}

static json_t *generic(void)
{
    return json_pack("{s:s}", "card", "generic");
}

/* Takes `intent`; returns it when valid, else the generic card. */
static json_t *checked(json_t *intent)
{
    if (intent && cdsh_tools_present_valid(intent) &&
        cdsh_json_check_lossless(intent, "intent", NULL) == 0)
        return intent;
    json_decref(intent);
    return generic();
}

/* The resolved tool when args validate against it (referenced), else NULL. */
static cdsh__tool *tool_for(cdsh_tools *t, const cdsh_scope *scope, const char *name,
                            const json_t *args)
{
    if (!t || !name)
        return NULL;
    cdsh__tool *tool = cdsh__tools_resolve(t, scope, name);
    if (tool && !(json_is_object(args) && cdsh_json_check_lossless(args, "arguments", NULL) == 0 &&
                  cdsh_schema_validate(tool->params, args, "arguments", NULL) == 0)) {
        cdsh__tool_unref(tool);
        tool = NULL;
    }
    return tool;
}

json_t *cdsh_tools_present_call_dup(cdsh_tools *t, const cdsh_scope *scope, const char *name,
                                    const json_t *args)
{
    cdsh__tool *tool = tool_for(t, scope, name, args);
    json_t *intent = tool && tool->present_call ? tool->present_call(tool->ud, args) : NULL;
    cdsh__tool_unref(tool);
    return checked(intent);
}

json_t *cdsh_tools_present_result_dup(cdsh_tools *t, const cdsh_scope *scope, const char *name,
                                      const json_t *args, const json_t *result)
{
    cdsh__tool *tool = tool_for(t, scope, name, args);
    json_t *intent = tool && tool->present_result && json_is_object(result)
                         ? tool->present_result(tool->ud, args, result)
                         : NULL;
    cdsh__tool_unref(tool);
    return checked(intent);
}
