/* regex.c — ST regex script → internal rule conversion and rule validation.
 * Running rules (the isolated engine with depth and macro handling) belongs
 * to the story engine, not here. */
#include "plugins/tavern/regex.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"

static const char *const SOURCE_NAMES[] = {"user", "card", "preset"};

static void add_unique(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (!strcmp(json_string_value(v), s))
            return;
    }
    json_array_append_new(arr, json_string(s));
}

static bool has(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (json_is_string(v) && !strcmp(json_string_value(v), s))
            return true;
    }
    return false;
}

static json_t *depth_value(const json_t *v)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0)
        return json_copy((json_t *)v);
    if (json_is_real(v) && json_real_value(v) >= 0)
        return json_integer((json_int_t)json_real_value(v));
    return json_null();
}

static int bad_script(cdsh_error *err, const char *what)
{
    return cdsh_error_set(err, CDSH_EINVAL, "REGEX_BAD_SCRIPT", "regex script: %s", what);
}

/* Long by design: the field-by-field mapping of an ST regex script. */
int cdsh_tavern_regex_from_st(const json_t *script, cdsh_tavern_regex_source source, json_t **rule,
                              cdsh_error *err)
{
    if (!rule)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "regex_from_st: no output");
    *rule = NULL;
    if (!json_is_object(script))
        return bad_script(err, "not an object");
    json_t *find = json_object_get(script, "findRegex");
    json_t *repl = json_object_get(script, "replaceString");
    json_t *name = json_object_get(script, "scriptName");
    json_t *placement = json_object_get(script, "placement");
    json_t *trims = json_object_get(script, "trimStrings");
    if (!json_is_string(find))
        return bad_script(err, "findRegex must be a string");
    if (repl && !json_is_string(repl) && !json_is_null(repl))
        return bad_script(err, "replaceString must be a string");
    if (placement && !json_is_array(placement) && !json_is_null(placement))
        return bad_script(err, "placement must be a list of numbers");
    if (trims && !json_is_array(trims) && !json_is_null(trims))
        return bad_script(err, "trimStrings must be a list of strings");

    json_t *scopes = json_array();
    json_t *timing = json_array();
    bool any = false;
    size_t n = json_array_size(placement);
    for (size_t i = 0; i < (n ? n : 1); i++) {
        json_int_t p = n ? json_integer_value(json_array_get(placement, i)) : 2;
        if (p == 1) {
            add_unique(scopes, "input");
            add_unique(timing, "send");
        } else if (p == 2) {
            add_unique(scopes, "output");
            add_unique(timing, "render");
        } else if (p == 5) {
            add_unique(scopes, "prompt");
            add_unique(timing, "assemble");
        } else {
            continue;
        }
        any = true;
    }
    if (!any) {
        json_decref(scopes);
        json_decref(timing);
        return 0;
    }
    bool md = json_is_true(json_object_get(script, "markdownOnly"));
    bool po = json_is_true(json_object_get(script, "promptOnly"));
    if (md || po) {
        json_array_clear(scopes);
        json_array_clear(timing);
        if (md) {
            add_unique(scopes, "output");
            add_unique(timing, "render");
        }
        if (po) {
            add_unique(scopes, "prompt");
            add_unique(timing, "assemble");
            add_unique(timing, "send");
        }
    }
    bool disabled = json_is_true(json_object_get(script, "disabled"));
    bool enabled = !disabled;
    if (source == CDSH_TAVERN_REGEX_CARD && !disabled) {
        if (has(scopes, "output") && has(timing, "render")) {
            /* Card rules with a display part are reduced to display-only. */
            json_array_clear(scopes);
            json_array_clear(timing);
            add_unique(scopes, "output");
            add_unique(timing, "render");
        } else {
            enabled = false; /* prompt/input card rules default off */
        }
    }
    json_t *roles = json_array();
    if (has(scopes, "input"))
        add_unique(roles, "user");
    if (has(scopes, "output"))
        add_unique(roles, "assistant");

    json_t *sub = json_object_get(script, "substituteRegex");
    json_int_t subv = json_is_true(sub) ? 1 : json_is_integer(sub) ? json_integer_value(sub) : 0;
    if (subv < 0 || subv > 2)
        subv = 0;
    const char *id = json_string_value(json_object_get(script, "id"));
    char *gen = id && *id ? NULL : cdsh_random_id_dup("rx-");

    json_t *r = json_object();
    json_object_set_new(r, "id", json_string(gen ? gen : id));
    json_object_set_new(r, "name",
                        json_string(json_is_string(name) ? json_string_value(name) : ""));
    json_object_set(r, "find", find);
    json_object_set_new(r, "replace",
                        json_string(json_is_string(repl) ? json_string_value(repl) : ""));
    json_object_set_new(r, "enabled", json_boolean(enabled));
    json_object_set_new(r, "scopes", scopes);
    json_object_set_new(r, "timing", timing);
    json_object_set_new(r, "minDepth", depth_value(json_object_get(script, "minDepth")));
    json_object_set_new(r, "maxDepth", depth_value(json_object_get(script, "maxDepth")));
    json_object_set_new(r, "substituteRegex", json_integer(subv));
    json_object_set_new(r, "source", json_string(SOURCE_NAMES[source]));
    if (json_array_size(roles))
        json_object_set(r, "roles", roles);
    json_decref(roles);
    if (json_array_size(trims))
        json_object_set(r, "trimStrings", trims);
    free(gen);
    if (!json_string_value(json_object_get(r, "id"))) {
        json_decref(r);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    *rule = r;
    return 0;
}

json_t *cdsh_tavern_regex_rules_from_st_dup(const json_t *scripts, cdsh_tavern_regex_source source,
                                            cdsh_error *err)
{
    json_t *out = json_array();
    if (json_is_object(scripts)) {
        json_t *r = NULL;
        if (cdsh_tavern_regex_from_st(scripts, source, &r, err) < 0) {
            json_decref(out);
            return NULL;
        }
        if (r)
            json_array_append_new(out, r);
        return out;
    }
    size_t i;
    json_t *s;
    json_array_foreach(scripts, i, s) {
        json_t *r = NULL;
        if (cdsh_tavern_regex_from_st(s, source, &r, err) < 0) {
            json_decref(out);
            return NULL;
        }
        if (r)
            json_array_append_new(out, r);
    }
    return out;
}

static json_t *bad_rule(cdsh_error *err, const char *what)
{
    cdsh_error_set(err, CDSH_EINVAL, "REGEX_BAD_RULE", "regex rule: %s", what);
    return NULL;
}

static bool values_in(const json_t *arr, const char *const *allowed, size_t n)
{
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return false;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        bool ok = false;
        for (size_t j = 0; j < n && json_is_string(v); j++)
            ok = ok || !strcmp(json_string_value(v), allowed[j]);
        if (!ok)
            return false;
    }
    return true;
}

json_t *cdsh_tavern_regex_rule_normalize_dup(const json_t *rule, cdsh_error *err)
{
    static const char *const SCOPES[] = {"input", "output", "prompt"};
    static const char *const TIMING[] = {"assemble", "send", "render"};
    static const char *const ROLES[] = {"user", "assistant", "system"};
    if (!json_is_object(rule))
        return bad_rule(err, "not an object");
    json_t *find = json_object_get(rule, "find");
    if (!json_is_string(find) || json_string_length(find) == 0)
        return bad_rule(err, "find must be a non-empty string");
    json_t *repl = json_object_get(rule, "replace");
    if (repl && !json_is_string(repl))
        return bad_rule(err, "replace must be a string");
    json_t *scopes = json_object_get(rule, "scopes");
    json_t *timing = json_object_get(rule, "timing");
    json_t *roles = json_object_get(rule, "roles");
    if (scopes && !values_in(scopes, SCOPES, 3))
        return bad_rule(err, "scopes must be a non-empty subset of input, output, prompt");
    if (timing && !values_in(timing, TIMING, 3))
        return bad_rule(err, "timing must be a non-empty subset of assemble, send, render");
    if (roles && !json_is_null(roles) && !values_in(roles, ROLES, 3))
        return bad_rule(err, "roles must be a subset of user, assistant, system");
    json_t *src = json_object_get(rule, "source");
    const char *s = json_string_value(src);
    if (src && !(s && (!strcmp(s, "user") || !strcmp(s, "card") || !strcmp(s, "preset"))))
        return bad_rule(err, "source must be user, card or preset");
    json_t *sub = json_object_get(rule, "substituteRegex");
    if (sub &&
        !(json_is_integer(sub) && json_integer_value(sub) >= 0 && json_integer_value(sub) <= 2))
        return bad_rule(err, "substituteRegex must be 0, 1 or 2");
    json_t *en = json_object_get(rule, "enabled");
    if (en && !json_is_boolean(en))
        return bad_rule(err, "enabled must be true or false");

    json_t *out = json_object();
    const char *id = json_string_value(json_object_get(rule, "id"));
    char *gen = id && *id ? NULL : cdsh_random_id_dup("rx-");
    json_object_set_new(out, "id", json_string(gen ? gen : id));
    free(gen);
    json_t *name = json_object_get(rule, "name");
    json_object_set_new(out, "name",
                        json_string(json_is_string(name) ? json_string_value(name) : ""));
    json_object_set(out, "find", find);
    json_object_set_new(out, "replace", json_string(repl ? json_string_value(repl) : ""));
    json_object_set_new(out, "enabled", json_boolean(!en || json_is_true(en)));
    /* New rules default to output/render, the only placement with a live effect. */
    json_t *dflt_scopes = json_pack("[s]", "output"), *dflt_timing = json_pack("[s]", "render");
    json_object_set(out, "scopes", scopes ? scopes : dflt_scopes);
    json_object_set(out, "timing", timing ? timing : dflt_timing);
    json_decref(dflt_scopes);
    json_decref(dflt_timing);
    json_object_set_new(out, "minDepth", depth_value(json_object_get(rule, "minDepth")));
    json_object_set_new(out, "maxDepth", depth_value(json_object_get(rule, "maxDepth")));
    json_object_set_new(out, "substituteRegex", sub ? json_copy(sub) : json_integer(0));
    json_object_set_new(out, "source", json_string(s ? s : "user"));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)rule, k, v) {
        if (!json_object_get(out, k) && !json_is_null(v))
            json_object_set(out, k, v);
    }
    if (!json_string_value(json_object_get(out, "id"))) {
        json_decref(out);
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    return out;
}

json_t *cdsh_tavern_regex_import_dup(const json_t *in, cdsh_tavern_regex_source source,
                                     cdsh_error *err)
{
    if (!json_is_array(in) && !json_is_object(in)) {
        cdsh_error_set(err, CDSH_EINVAL, "REGEX_BAD_SCRIPT",
                       "regex file must hold a script object or a list of scripts");
        return NULL;
    }
    json_t *list = json_is_array(in) ? json_incref((json_t *)in) : json_pack("[O]", in);
    json_t *out = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        json_t *r = NULL;
        if (json_object_get(item, "findRegex")) {
            if (cdsh_tavern_regex_from_st(item, source, &r, err) < 0)
                goto fail;
        } else {
            r = cdsh_tavern_regex_rule_normalize_dup(item, err);
            if (!r)
                goto fail;
        }
        if (r)
            json_array_append_new(out, r);
    }
    json_decref(list);
    return out;
fail:
    json_decref(list);
    json_decref(out);
    return NULL;
}
