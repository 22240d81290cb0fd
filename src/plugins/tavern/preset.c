/* preset.c — preset and persona normalisation. Prompt assembly from a preset
 * is the story engine's job; this file only guarantees the shape. */
#include "plugins/tavern/preset.h"

#include <stdbool.h>
#include <string.h>

typedef struct num_default {
    const char *key;
    double value;
    bool integer;
} num_default;

/* Default.json of SillyTavern (§6 of the digest). */
static const num_default SAMPLING[] = {
    {"temperature", 1, false},
    {"frequency_penalty", 0, false},
    {"presence_penalty", 0, false},
    {"top_p", 1, false},
    {"top_k", 0, true},
    {"top_a", 0, false},
    {"min_p", 0, false},
    {"repetition_penalty", 1, false},
    {"openai_max_context", 4095, true},
    {"openai_max_tokens", 300, true},
    {"seed", -1, true},
    {"n", 1, true},
};
#define N_SAMPLING (sizeof SAMPLING / sizeof SAMPLING[0])

static json_t *fail(cdsh_error *err, const char *code, const char *msg, const char *detail)
{
    cdsh_error_set(err, CDSH_EINVAL, code, "%s%s", msg, detail ? detail : "");
    return NULL;
}

static json_t *prompt_normalize(const json_t *p, size_t idx, cdsh_error *err)
{
    if (!json_is_object(p) || !json_is_string(json_object_get(p, "identifier"))) {
        cdsh_error_set(err, CDSH_EINVAL, "PRESET_BAD_FIELD",
                       "preset prompts[%zu] needs a string \"identifier\"", idx);
        return NULL;
    }
    json_t *content = json_object_get(p, "content");
    const char *role = json_string_value(json_object_get(p, "role"));
    if ((content && !json_is_string(content) && !json_is_null(content)) ||
        (role && strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant"))) {
        cdsh_error_set(err, CDSH_EINVAL, "PRESET_BAD_FIELD",
                       "preset prompts[%zu]: content must be a string and role one of system, "
                       "user, assistant",
                       idx);
        return NULL;
    }
    json_t *out = json_deep_copy(p);
    if (!json_object_get(out, "name"))
        json_object_set(out, "name", json_object_get(p, "identifier"));
    if (!role)
        json_object_set_new(out, "role", json_string("system"));
    if (!json_is_string(content))
        json_object_set_new(out, "content", json_string(""));
    const char *bools[] = {"system_prompt", "marker", "forbid_overrides"};
    for (size_t i = 0; i < 3; i++)
        if (!json_is_boolean(json_object_get(out, bools[i])))
            json_object_set_new(out, bools[i], json_false());
    if (!json_is_integer(json_object_get(out, "injection_position")))
        json_object_set_new(out, "injection_position", json_integer(0));
    if (!json_is_integer(json_object_get(out, "injection_depth")))
        json_object_set_new(out, "injection_depth", json_integer(4));
    if (!json_is_integer(json_object_get(out, "injection_order")))
        json_object_set_new(out, "injection_order", json_integer(100));
    if (!json_is_array(json_object_get(out, "injection_trigger")))
        json_object_set_new(out, "injection_trigger", json_array());
    return out;
}

json_t *cdsh_tavern_preset_normalize_dup(const json_t *in, const char *fallback_name,
                                         cdsh_error *err)
{
    if (!json_is_object(in))
        return fail(err, "PRESET_BAD_SHAPE", "a preset must be a JSON object", NULL);
    for (size_t i = 0; i < N_SAMPLING; i++) {
        json_t *v = json_object_get(in, SAMPLING[i].key);
        if (v && !json_is_number(v))
            return fail(err, "PRESET_BAD_FIELD",
                        "preset field must be a number: ", SAMPLING[i].key);
    }
    json_t *prompts = json_object_get(in, "prompts");
    json_t *order = json_object_get(in, "prompt_order");
    json_t *rx = json_object_get(in, "regexScripts");
    if (prompts && !json_is_array(prompts))
        return fail(err, "PRESET_BAD_FIELD", "preset prompts must be a list", NULL);
    if (order && !json_is_array(order))
        return fail(err, "PRESET_BAD_FIELD", "preset prompt_order must be a list", NULL);
    if (rx && !json_is_array(rx))
        return fail(err, "PRESET_BAD_FIELD", "preset regexScripts must be a list", NULL);
    size_t i;
    json_t *v;
    json_array_foreach(order, i, v) {
        if (!json_is_object(v) || !json_is_array(json_object_get(v, "order"))) {
            cdsh_error_set(err, CDSH_EINVAL, "PRESET_BAD_FIELD",
                           "preset prompt_order[%zu] needs an \"order\" list", i);
            return NULL;
        }
    }
    json_t *name = json_object_get(in, "name");
    if (name && !json_is_string(name))
        return fail(err, "PRESET_BAD_FIELD", "preset name must be a string", NULL);

    json_t *out = json_deep_copy(in);
    if (!name || !json_string_length(name))
        json_object_set_new(
            out, "name", json_string(fallback_name && *fallback_name ? fallback_name : "preset"));
    for (size_t s = 0; s < N_SAMPLING; s++) {
        if (json_object_get(out, SAMPLING[s].key))
            continue;
        json_object_set_new(out, SAMPLING[s].key,
                            SAMPLING[s].integer ? json_integer((json_int_t)SAMPLING[s].value)
                                                : json_real(SAMPLING[s].value));
    }
    json_t *np = json_array();
    json_array_foreach(prompts, i, v) {
        json_t *p = prompt_normalize(v, i, err);
        if (!p) {
            json_decref(np);
            json_decref(out);
            return NULL;
        }
        json_array_append_new(np, p);
    }
    json_object_set_new(out, "prompts", np);
    if (!order)
        json_object_set_new(out, "prompt_order", json_array());
    if (!rx)
        json_object_set_new(out, "regexScripts", json_array());
    return out;
}

json_t *cdsh_tavern_persona_normalize_dup(const json_t *in, cdsh_error *err)
{
    if (!json_is_object(in))
        return fail(err, "PERSONA_BAD_SHAPE", "a persona must be a JSON object", NULL);
    json_t *name = json_object_get(in, "name");
    if (!json_is_string(name) || json_string_length(name) == 0)
        return fail(err, "PERSONA_NO_NAME", "the persona has no name", NULL);
    const char *opt[] = {"description", "avatar", "lorebook"};
    for (size_t i = 0; i < 3; i++) {
        json_t *v = json_object_get(in, opt[i]);
        if (v && !json_is_string(v) && !json_is_null(v))
            return fail(err, "PERSONA_BAD_SHAPE", "persona field must be a string: ", opt[i]);
    }
    json_t *out = json_deep_copy(in);
    if (!json_is_string(json_object_get(out, "description")))
        json_object_set_new(out, "description", json_string(""));
    if (!json_object_get(out, "avatar"))
        json_object_set_new(out, "avatar", json_null());
    if (!json_object_get(out, "lorebook"))
        json_object_set_new(out, "lorebook", json_null());
    return out;
}
