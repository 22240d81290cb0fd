/* wi_settings.c — world-info settings as JSON (see wi_settings.h): one table
 * of keys, SillyTavern's names beside cdsh's, with the range of each. */
#include "plugins/tavern/wi_settings.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

typedef struct key_def {
    const char *name, *st; /* cdsh's key, SillyTavern's key (or NULL) */
    size_t off;            /* offset in cdsh_tavern_wi_settings */
    bool boolean;
    long min, max;
} key_def;

#define INT_KEY(n, st, f, lo, hi) {n, st, offsetof(cdsh_tavern_wi_settings, f), false, lo, hi}
#define BOOL_KEY(n, st, f) {n, st, offsetof(cdsh_tavern_wi_settings, f), true, 0, 1}

static const key_def KEYS[] = {
    INT_KEY("scanDepth", "world_info_depth", scan_depth, 0, 1000),
    INT_KEY("budgetPercent", "world_info_budget", context_percent, 1, 100),
    INT_KEY("budgetCap", "world_info_budget_cap", budget_cap, 0, 1L << 30),
    INT_KEY("minActivations", "world_info_min_activations", min_activations, 0, 1L << 30),
    INT_KEY("minActivationsDepthMax", "world_info_min_activations_depth_max",
            min_activations_depth_max, 0, 1000),
    INT_KEY("maxRecursionSteps", "world_info_max_recursion_steps", max_recursion_steps, 0,
            1L << 30),
    INT_KEY("characterStrategy", "world_info_character_strategy", character_strategy, 0, 2),
    BOOL_KEY("recursive", "world_info_recursive", recursive),
    BOOL_KEY("caseSensitive", "world_info_case_sensitive", case_sensitive),
    BOOL_KEY("matchWholeWords", "world_info_match_whole_words", match_whole_words),
    BOOL_KEY("includeNames", "world_info_include_names", include_names),
    BOOL_KEY("overflowAlert", "world_info_overflow_alert", overflow_alert),
    BOOL_KEY("useGroupScoring", "world_info_use_group_scoring", use_group_scoring),
    INT_KEY("maxContext", NULL, max_context, 1, 1L << 30),
    INT_KEY("tokenBudget", NULL, token_budget, 0, 1L << 30),
};
#define N_KEYS (sizeof KEYS / sizeof KEYS[0])

static const key_def *find_key(const char *k)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (!strcmp(KEYS[i].name, k) || (KEYS[i].st && !strcmp(KEYS[i].st, k)))
            return &KEYS[i];
    return NULL;
}

static int reject(cdsh_error *err, const char *key, const char *why)
{
    return cdsh_error_set(err, CDSH_EINVAL, "wi-settings-rejected",
                          "world-info setting \"%s\" %s", key, why);
}

static int apply_one(cdsh_tavern_wi_settings *s, const char *k, const json_t *v, cdsh_error *err)
{
    const key_def *d = find_key(k);
    if (!d)
        return reject(err, k, "is unknown");
    if (d->boolean) {
        bool b;
        if (json_is_boolean(v))
            b = json_is_true(v);
        else if (json_is_integer(v) &&
                 (json_integer_value(v) == 0 || json_integer_value(v) == 1))
            b = json_integer_value(v) == 1;
        else
            return reject(err, k, "must be true or false");
        *(bool *)((char *)s + d->off) = b;
        return 0;
    }
    json_int_t n;
    if (json_is_integer(v))
        n = json_integer_value(v);
    else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
             fabs(json_real_value(v)) < 1e15)
        n = (json_int_t)json_real_value(v);
    else
        return reject(err, k, "must be an integer");
    if (n < d->min || n > d->max)
        return cdsh_error_set(err, CDSH_EINVAL, "wi-settings-rejected",
                              "world-info setting \"%s\" must be between %ld and %ld (got %lld)",
                              k, d->min, d->max, (long long)n);
    *(int *)((char *)s + d->off) = (int)n;
    return 0;
}

int cdsh_tavern_wi_settings_apply(cdsh_tavern_wi_settings *s, const json_t *o, cdsh_error *err)
{
    if (!o || json_is_null(o))
        return 0;
    if (!json_is_object(o))
        return cdsh_error_set(err, CDSH_EINVAL, "wi-settings-rejected",
                              "world-info settings must be an object");
    cdsh_tavern_wi_settings t = *s;
    const json_t *nested = json_object_get(o, "world_info_settings");
    if (nested) {
        if (!json_is_object(nested))
            return reject(err, "world_info_settings", "must be an object");
        int rc = cdsh_tavern_wi_settings_apply(&t, nested, err);
        if (rc < 0)
            return rc;
    }
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        if (!strcmp(k, "world_info_settings") || !strcmp(k, "world_info"))
            continue;
        int rc = apply_one(&t, k, v, err);
        if (rc < 0)
            return rc;
    }
    *s = t;
    return 0;
}

json_t *cdsh_tavern_wi_settings_json(const cdsh_tavern_wi_settings *s)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < N_KEYS; i++) {
        const char *p = (const char *)s + KEYS[i].off;
        json_t *v = KEYS[i].boolean ? json_boolean(*(const bool *)p)
                                    : json_integer(*(const int *)p);
        if (json_object_set_new(o, KEYS[i].name, v) < 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

int cdsh_tavern_wi_settings_budget(const cdsh_tavern_wi_settings *s)
{
    if (s->token_budget > 0)
        return s->token_budget;
    /* Math.round(world_info_budget * maxContext / 100) || 1, then the cap. */
    double b = floor((double)s->context_percent * (double)s->max_context / 100.0 + 0.5);
    if (b < 1)
        b = 1;
    if (s->budget_cap > 0 && b > s->budget_cap)
        b = s->budget_cap;
    return (int)b;
}

bool cdsh_tavern_generation_type_valid(const char *type)
{
    static const char *const TYPES[] = {"normal", "continue", "impersonate",
                                        "swipe",  "regenerate", "quiet"};
    for (size_t i = 0; type && i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (!strcmp(type, TYPES[i]))
            return true;
    return false;
}
