/* engine.c — EngineSpec validation, coercion, builtins, patches and command
 * resolution. Which rows exist (builtin + engines.json) is state.c's job. */
#include "plugins/acp/engine.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hash.h"
#include "base/process.h"
#include "base/redact.h"
#include "base/strbuf.h"

#ifdef __APPLE__
#define PLATFORM "darwin"
#else
#define PLATFORM "linux"
#endif

/* Builtin rows (digest §2 and acp-peers.md). Windows overrides are kept as
 * the digest measured them; they do nothing on Linux. */
static const char builtins_json[] =
    "["
    "{\"id\":\"omp\",\"label\":{\"zh\":\"omp（oh-my-pi）\",\"en\":\"omp (oh-my-pi)\"},"
    "\"command\":\"omp\",\"args\":[\"acp\"],\"sortOrder\":10,"
    "\"commandOverrides\":{\"windows\":\"%LOCALAPPDATA%\\\\omp\\\\omp.exe\"},"
    "\"fallbackPaths\":[\"~/.local/bin/omp\",\"${HOME}/.omp/bin/omp\"]},"
    "{\"id\":\"opencode\",\"label\":{\"zh\":\"OpenCode\",\"en\":\"OpenCode\"},"
    "\"command\":\"opencode\",\"args\":[\"acp\"],\"sortOrder\":20,"
    /* Its default model is paid ("Insufficient account funds"); a free one
     * first (digest §2). Its initialize took 19-31 s on a busy machine. */
    "\"initialConfigOptions\":[{\"configId\":\"model\","
    "\"value\":\"opencode/nemotron-3.5-lightning-free\"}],"
    "\"initBudget\":{\"steadySecs\":90},"
    "\"commandOverrides\":{\"windows\":\"%USERPROFILE%\\\\.opencode\\\\bin\\\\opencode.exe\"},"
    "\"fallbackPaths\":[\"~/.opencode/bin/opencode\"],"
    "\"env\":{\"OPENCODE_DISABLE_AUTOUPDATE\":\"1\"}},"
    "{\"id\":\"commandcode\",\"label\":{\"zh\":\"Command Code\",\"en\":\"Command Code\"},"
    "\"command\":\"commandcode\",\"args\":[\"acp\"],\"sortOrder\":30,"
    "\"skillDelivery\":\"args\","
    "\"commandOverrides\":{\"windows\":\"%APPDATA%\\\\npm\\\\commandcode.ps1\"}},"
    "{\"id\":\"qodercn\",\"label\":{\"zh\":\"Qoder CLI（中国版）\",\"en\":\"Qoder CLI CN\"},"
    "\"command\":\"qoder-cn\",\"args\":[\"--acp\"],\"sortOrder\":35,"
    "\"skillDelivery\":\"auto\",\"permissionMode\":\"default\","
    "\"permissionTemplates\":{\"dont_ask\":[\"--permission-mode\",\"dont_ask\"],"
    "\"bypass\":[\"--dangerously-skip-permissions\"]}},"
    "{\"id\":\"codex-acp\",\"label\":{\"zh\":\"Codex（ACP 适配）\",\"en\":\"Codex ACP\"},"
    "\"command\":\"codex-acp\",\"args\":[],\"sortOrder\":40},"
    "{\"id\":\"claude-code-acp\",\"label\":{\"zh\":\"Claude Code（ACP 适配）\","
    "\"en\":\"Claude Code ACP\"},\"command\":\"claude-code-acp\",\"args\":[],\"sortOrder\":50},"
    "{\"id\":\"gemini\",\"label\":{\"zh\":\"Gemini CLI\",\"en\":\"Gemini CLI\"},"
    "\"command\":\"gemini\",\"args\":[\"--acp\"],\"sortOrder\":60}"
    "]";

static int invalid(cdsh_error *err, const char *code, const char *fmt, const char *a)
{
    return cdsh_error_set(err, CDSH_EINVAL, code, fmt, a);
}

static bool id_ok(const char *id)
{
    if (!id || !(islower((unsigned char)id[0]) || isdigit((unsigned char)id[0])))
        return false;
    for (const char *p = id; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-'))
            return false;
    return true;
}

/* A string, or a number turned into its text; NULL otherwise. */
static json_t *coerce_string(const json_t *v)
{
    if (json_is_string(v))
        return json_string(json_string_value(v));
    if (json_is_integer(v)) {
        char b[32];
        snprintf(b, sizeof b, "%lld", (long long)json_integer_value(v));
        return json_string(b);
    }
    if (json_is_real(v)) {
        char b[64];
        snprintf(b, sizeof b, "%g", json_real_value(v));
        return json_string(b);
    }
    if (json_is_boolean(v))
        return json_string(json_is_true(v) ? "true" : "false");
    return NULL;
}

/* A number, or a numeric string; dflt otherwise. */
static int64_t coerce_int(const json_t *v, int64_t dflt)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v))
        return (int64_t)json_real_value(v);
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        long long n = strtoll(s, &end, 10);
        if (*s && *end == '\0')
            return n;
    }
    return dflt;
}

static json_t *string_array(const json_t *v)
{
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        json_t *s = coerce_string(e);
        if (s)
            json_array_append_new(out, s);
    }
    return out;
}

static json_t *i18n(const json_t *v, const char *dflt)
{
    if (json_is_string(v))
        return json_pack("{s:s,s:s}", "zh", json_string_value(v), "en", json_string_value(v));
    if (json_is_object(v)) {
        const char *zh = json_string_value(json_object_get(v, "zh"));
        const char *en = json_string_value(json_object_get(v, "en"));
        if (zh || en)
            return json_pack("{s:s,s:s}", "zh", zh ? zh : en, "en", en ? en : zh);
    }
    return dflt ? json_pack("{s:s,s:s}", "zh", dflt, "en", dflt) : json_null();
}

/* A string array field: each entry trimmed, empty ones dropped. NULL
 * (with err) when v is present but not an array of strings. */
static json_t *trimmed_strings(const json_t *v, const char *id, const char *field, cdsh_error *err)
{
    if (!json_is_array(v)) {
        cdsh_error_set(err, CDSH_EINVAL, "INVALID_ENGINE",
                       "engine \"%s\": %s must be an array of strings", id, field);
        return NULL;
    }
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        const char *s = json_string_value(e);
        if (!s) {
            json_decref(out);
            cdsh_error_set(err, CDSH_EINVAL, "INVALID_ENGINE",
                           "engine \"%s\": %s[%zu] is not a string", id, field, i);
            return NULL;
        }
        while (isspace((unsigned char)*s))
            s++;
        size_t n = strlen(s);
        while (n > 0 && isspace((unsigned char)s[n - 1]))
            n--;
        if (n)
            json_array_append_new(out, json_stringn(s, n));
    }
    return out;
}

static bool one_of(const char *v, const char *const *allowed)
{
    for (const char *const *a = allowed; *a; a++)
        if (strcmp(v, *a) == 0)
            return true;
    return false;
}

/* skillDelivery, skillsDirs, skillArgsTemplate, permissionMode,
 * permissionTemplates and the derived poolKey (digest §1.1, §4.5). */
static int skills_and_permissions(const json_t *row, const char *id, json_t *r, cdsh_error *err)
{
    static const char *const deliveries[] = {"auto", "args", "none", NULL};
    static const char *const modes[] = {"default", "dont_ask", "bypass", NULL};
    const json_t *v = json_object_get(row, "skillDelivery");
    const char *d = json_string_value(v);
    if (v && !json_is_null(v) && (!d || !one_of(d, deliveries)))
        return cdsh_error_set(err, CDSH_EINVAL, "UNKNOWN_VALUE",
                              "engine \"%s\": skillDelivery must be \"auto\", \"args\" or "
                              "\"none\", not %s",
                              id, d ? d : "a non-string");
    json_object_set_new(r, "skillDelivery", json_string(d ? d : "auto"));
    v = json_object_get(row, "skillsDirs");
    json_t *dirs = v && !json_is_null(v) ? trimmed_strings(v, id, "skillsDirs", err)
                                         : json_pack("[s]", "~/.agents/skills");
    if (!dirs)
        return CDSH_EINVAL;
    json_object_set_new(r, "skillsDirs", dirs);
    v = json_object_get(row, "skillArgsTemplate");
    json_t *tmpl = v && !json_is_null(v) ? trimmed_strings(v, id, "skillArgsTemplate", err)
                                         : json_pack("[s,s]", "--skill", "{dir}");
    if (!tmpl)
        return CDSH_EINVAL;
    bool has_dir = false;
    size_t i;
    json_t *e;
    json_array_foreach(tmpl, i, e)
        has_dir |= strstr(json_string_value(e), "{dir}") != NULL;
    json_object_set_new(r, "skillArgsTemplate", tmpl);
    if (!has_dir)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ENGINE",
                              "engine \"%s\": skillArgsTemplate must contain \"{dir}\"", id);
    json_t *templates = json_object();
    json_object_set_new(r, "permissionTemplates", templates);
    const char *k;
    json_object_foreach(json_object_get(row, "permissionTemplates"), k, v) {
        if (strcmp(k, "dont_ask") != 0 && strcmp(k, "bypass") != 0)
            return cdsh_error_set(err, CDSH_EINVAL, "UNKNOWN_VALUE",
                                  "engine \"%s\": permissionTemplates has no mode \"%s\" (only "
                                  "dont_ask and bypass)",
                                  id, k);
        char field[64];
        snprintf(field, sizeof field, "permissionTemplates.%s", k);
        json_t *args = trimmed_strings(v, id, field, err);
        if (!args)
            return CDSH_EINVAL;
        json_object_set_new(templates, k, args);
    }
    v = json_object_get(row, "permissionMode");
    const char *mode = json_string_value(v);
    if (v && !json_is_null(v) && (!mode || !one_of(mode, modes)))
        return cdsh_error_set(err, CDSH_EINVAL, "UNKNOWN_VALUE",
                              "engine \"%s\": permissionMode must be \"default\", "
                              "\"dont_ask\" or \"bypass\", not %s",
                              id, mode ? mode : "a non-string");
    if (!mode)
        mode = "default";
    if (strcmp(mode, "default") != 0 && !json_array_size(json_object_get(templates, mode)))
        return cdsh_error_set(err, CDSH_EINVAL, "UNSUPPORTED_MODE",
                              "engine \"%s\": permissionMode \"%s\" needs a non-empty "
                              "permissionTemplates.%s (the arguments that start it so)",
                              id, mode, mode);
    json_object_set_new(r, "permissionMode", json_string(mode));
    /* Asking and non-asking processes of one engine are never shared. */
    json_object_set_new(r, "poolKey", strcmp(mode, "default") == 0
                                          ? json_string(id)
                                          : json_sprintf("%s#%s", id, mode));
    return 0;
}

/* resolvedCommand, commandOverrides, fallbackPaths, args and env of a
 * normalised row (coerced, never refused). */
static void launch_fields(const json_t *row, json_t *r)
{
    const char *resolved = json_string_value(json_object_get(row, "resolvedCommand"));
    json_object_set_new(r, "resolvedCommand",
                        resolved && *resolved ? json_string(resolved) : json_null());
    json_t *ov = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(row, "commandOverrides"), k, v) {
        if ((strcmp(k, "windows") == 0 || strcmp(k, "darwin") == 0 || strcmp(k, "linux") == 0) &&
            json_is_string(v))
            json_object_set(ov, k, v);
    }
    json_object_set_new(r, "commandOverrides", ov);
    json_object_set_new(r, "fallbackPaths", string_array(json_object_get(row, "fallbackPaths")));
    json_object_set_new(r, "args", string_array(json_object_get(row, "args")));
    json_t *env = json_object();
    json_object_foreach(json_object_get(row, "env"), k, v) {
        json_t *s = coerce_string(v);
        if (s && *k && !strchr(k, '='))
            json_object_set_new(env, k, s);
        else
            json_decref(s);
    }
    json_object_set_new(r, "env", env);
}

/* Timeouts, disposal, enabled, sortOrder and the probed / runtime fields
 * (capabilities, health, warm: carried through only for trusted rows). */
static void lifecycle_fields(const json_t *row, bool from_user, json_t *r)
{
    json_t *pt = json_object_get(row, "promptTimeoutMs"),
           *it = json_object_get(row, "idleTimeoutMs");
    json_object_set_new(r, "promptTimeoutMs",
                        json_integer(coerce_int(pt, CDSH_ACP_PROMPT_TIMEOUT_MS)));
    json_object_set_new(r, "idleTimeoutMs", json_integer(coerce_int(it, CDSH_ACP_IDLE_TIMEOUT_MS)));
    json_object_set_new(r, "disposeGraceMs",
                        json_integer(coerce_int(json_object_get(row, "disposeGraceMs"),
                                                CDSH_ACP_DISPOSE_GRACE_MS)));
    json_object_set_new(r, "cancelGraceMs",
                        json_integer(coerce_int(json_object_get(row, "cancelGraceMs"),
                                                CDSH_ACP_CANCEL_GRACE_MS)));
    json_object_set_new(
        r, "idleDisposeMs",
        json_integer(coerce_int(json_object_get(row, "idleDisposeMs"), CDSH_ACP_IDLE_DISPOSE_MS)));
    json_object_set_new(r, "enabled",
                        json_boolean(!json_is_false(json_object_get(row, "enabled"))));
    json_object_set_new(
        r, "sortOrder",
        json_integer(coerce_int(json_object_get(row, "sortOrder"), CDSH_ACP_SORT_ORDER)));
    /* Probed / runtime fields: carried through only for trusted rows. */
    json_t *caps = from_user ? NULL : json_object_get(row, "capabilities");
    json_object_set_new(r, "capabilities",
                        json_is_object(caps)
                            ? json_deep_copy(caps)
                            : json_pack("{s:n,s:n,s:n,s:n,s:n,s:n}", "fs", "terminal",
                                        "permissionRequests", "configOptions", "models", "modes"));
    json_t *health = from_user ? NULL : json_object_get(row, "health");
    json_object_set_new(r, "health",
                        json_is_object(health)
                            ? json_deep_copy(health)
                            : json_pack("{s:n,s:s,s:n,s:n}", "lastCheckAt", "status", "unknown",
                                        "latencyMs", "error"));
    json_t *warm = from_user ? NULL : json_object_get(row, "warm");
    if (json_is_object(warm))
        json_object_set_new(r, "warm", json_deep_copy(warm));
}

int cdsh_acp_engine_normalize(const json_t *row, const char *source, bool from_user, json_t **out,
                              cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "normalize needs an output");
    *out = NULL;
    if (!json_is_object(row))
        return invalid(err, "INVALID_ENGINE", "an engine must be a JSON object%s", "");
    if (from_user) {
        static const char *const ro[] = {"capabilities", "health", "warm", NULL};
        for (const char *const *k = ro; *k; k++)
            if (json_object_get(row, *k))
                return cdsh_error_set(err, CDSH_EPERM, "READ_ONLY_FIELD",
                                      "field \"%s\" is measured by cdsh (probe / runtime) and "
                                      "cannot be set by the user",
                                      *k);
    }
    const char *raw_id = json_string_value(json_object_get(row, "id"));
    char id[128] = "";
    if (raw_id) {
        while (isspace((unsigned char)*raw_id))
            raw_id++;
        snprintf(id, sizeof id, "%s", raw_id);
        for (size_t n = strlen(id); n > 0 && isspace((unsigned char)id[n - 1]); n--)
            id[n - 1] = '\0';
    }
    if (!id[0])
        return invalid(err, "INVALID_ENGINE", "engine id is required%s", "");
    if (!id_ok(id))
        return invalid(err, "INVALID_ENGINE", "engine id \"%s\" must match ^[a-z0-9][a-z0-9-]*$",
                       id);
    const char *command = json_string_value(json_object_get(row, "command"));
    if (!command || !*command)
        return invalid(err, "INVALID_ENGINE", "engine \"%s\": command is required", id);
    json_t *dialect = json_object_get(row, "dialect");
    if (dialect && !json_is_null(dialect) &&
        !(json_is_string(dialect) && strcmp(json_string_value(dialect), "canonical") == 0))
        return cdsh_error_set(err, CDSH_EINVAL, "UNKNOWN_DIALECT",
                              "engine \"%s\": unknown dialect \"%s\" (only \"canonical\" exists)",
                              id, json_is_string(dialect) ? json_string_value(dialect) : "?");

    json_t *r = json_object();
    json_object_set_new(r, "id", json_string(id));
    json_object_set_new(r, "label", i18n(json_object_get(row, "label"), id));
    json_object_set_new(r, "description", i18n(json_object_get(row, "description"), NULL));
    const char *icon = json_string_value(json_object_get(row, "icon"));
    json_object_set_new(r, "icon", json_string(icon ? icon : id));
    json_object_set_new(r, "command", json_string(command));
    launch_fields(row, r);
    json_t *polv = json_object_get(row, "cwdPolicy");
    const char *pol = json_string_value(polv);
    if ((polv && !json_is_null(polv) && !pol) ||
        (pol && strcmp(pol, "fixed") != 0 && strcmp(pol, "session") != 0)) {
        json_decref(r);
        return cdsh_error_set(err, CDSH_EINVAL, "UNKNOWN_VALUE",
                              "engine \"%s\": cwdPolicy must be \"session\" or \"fixed\", not %s",
                              id, pol ? pol : "a non-string");
    }
    json_object_set_new(r, "cwdPolicy",
                        json_string(pol && strcmp(pol, "fixed") == 0 ? "fixed" : "session"));
    if (skills_and_permissions(row, id, r, err) < 0) {
        json_decref(r);
        return err ? err->rc : CDSH_EINVAL;
    }
    const char *cwd = json_string_value(json_object_get(row, "cwd"));
    json_object_set_new(r, "cwd", cwd && *cwd ? json_string(cwd) : json_null());
    json_t *ib = json_object_get(row, "initBudget");
    const char *probe = json_string_value(json_object_get(ib, "coldProbe"));
    if (probe && strcmp(probe, "npx-cache") != 0 && strcmp(probe, "first-start") != 0 &&
        strcmp(probe, "none") != 0) {
        json_decref(r);
        return cdsh_error_set(err, CDSH_EINVAL, "UNKNOWN_VALUE",
                              "engine \"%s\": initBudget.coldProbe must be \"first-start\", "
                              "\"npx-cache\" or \"none\", not \"%s\"",
                              id, probe);
    }
    int64_t steady = coerce_int(json_object_get(ib, "steadySecs"), CDSH_ACP_INIT_STEADY_SECS);
    json_object_set_new(
        r, "initBudget",
        json_pack("{s:I,s:I,s:s}", "steadySecs", (json_int_t)steady, "coldSecs",
                  (json_int_t)coerce_int(json_object_get(ib, "coldSecs"),
                                         steady * CDSH_ACP_INIT_COLD_FACTOR),
                  "coldProbe", probe ? probe : "first-start"));
    json_object_set_new(r, "dialect", json_string("canonical"));
    json_t *ico = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(row, "initialConfigOptions"), i, v) {
        json_t *cid = coerce_string(json_object_get(v, "configId"));
        json_t *val = coerce_string(json_object_get(v, "value"));
        if (cid && val)
            json_array_append_new(ico, json_pack("{s:o,s:o}", "configId", cid, "value", val));
        else {
            json_decref(cid);
            json_decref(val);
        }
    }
    json_object_set_new(r, "initialConfigOptions", ico);
    json_t *mcp = json_object_get(row, "mcp");
    if (json_is_array(mcp))
        json_object_set(r, "mcp", mcp);
    else if (!mcp || json_is_true(mcp) ||
             (json_is_string(mcp) && strcmp(json_string_value(mcp), "inherit") == 0))
        json_object_set_new(r, "mcp", json_string("inherit"));
    else
        json_object_set_new(r, "mcp", json_string("none"));
    lifecycle_fields(row, from_user, r);
    json_object_set_new(r, "source", json_string(source ? source : "user-file"));
    *out = r;
    return 0;
}

json_t *cdsh_acp_engine_builtins_dup(void)
{
    json_t *raw = json_loads(builtins_json, 0, NULL);
    json_t *out = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(raw, i, row) {
        json_t *n = NULL;
        if (cdsh_acp_engine_normalize(row, "builtin", false, &n, NULL) == 0)
            json_array_append_new(out, n);
    }
    json_decref(raw);
    return out;
}

int cdsh_acp_engine_patch(const json_t *current, const json_t *patch, json_t **merged,
                          cdsh_error *err)
{
    static const char *const plain[] = {"args",
                                        "resolvedCommand",
                                        "commandOverrides",
                                        "fallbackPaths",
                                        "cwdPolicy",
                                        "cwd",
                                        "enabled",
                                        "sortOrder",
                                        "initBudget",
                                        "initialConfigOptions",
                                        "disposeGraceMs",
                                        "cancelGraceMs",
                                        "idleDisposeMs",
                                        "label",
                                        "description",
                                        "icon",
                                        "command",
                                        "dialect",
                                        "mcp",
                                        "skillsDirs",
                                        "skillArgsTemplate",
                                        "permissionMode",
                                        "permissionTemplates",
                                        NULL};
    if (!json_is_object(current) || !json_is_object(patch) || !merged)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "a patch must be a JSON object");
    *merged = NULL;
    json_t *row = json_deep_copy(current);
    json_object_del(row, "capabilities");
    json_object_del(row, "health");
    json_object_del(row, "warm");
    json_object_del(row, "poolKey");
    const char *k;
    json_t *v;
    int rc = 0;
    json_object_foreach((json_t *)patch, k, v) {
        bool known = false;
        if (strcmp(k, "skillDelivery") == 0) {
            /* A vendor declaration (seed 003 §1), not a preference. */
            rc = cdsh_error_set(err, CDSH_EPERM, "READ_ONLY_FIELD",
                                "field \"skillDelivery\" is the engine's declaration (its row), "
                                "not a preference a patch can change");
            goto done;
        }
        if (strcmp(k, "capabilities") == 0 || strcmp(k, "health") == 0 ||
            strcmp(k, "poolKey") == 0 || strcmp(k, "warm") == 0) {
            rc = cdsh_error_set(err, CDSH_EPERM, "READ_ONLY_FIELD",
                                "field \"%s\" is measured by cdsh (probe / runtime) and cannot be "
                                "set by the user",
                                k);
            goto done;
        }
        if (strcmp(k, "id") == 0) {
            if (!json_is_string(v) ||
                strcmp(json_string_value(v), json_string_value(json_object_get(row, "id"))) != 0) {
                rc = cdsh_error_set(err, CDSH_EINVAL, "INVALID_ENGINE",
                                    "a patch cannot change the engine id");
                goto done;
            }
            continue;
        }
        if (strcmp(k, "env") == 0) {
            json_t *env = json_object_get(row, "env");
            const char *ek;
            json_t *ev;
            json_object_foreach(v, ek, ev) {
                if (json_is_null(ev))
                    json_object_del(env, ek);
                else
                    json_object_set(env, ek, ev);
            }
            continue;
        }
        if (strcmp(k, "promptTimeoutMs") == 0 || strcmp(k, "idleTimeoutMs") == 0) {
            if (json_is_null(v) || (json_is_string(v) && !*json_string_value(v)))
                continue; /* null / "" keep the current value (digest §3.1) */
            json_object_set(row, k, v);
            continue;
        }
        for (const char *const *p = plain; *p; p++)
            if (strcmp(*p, k) == 0)
                known = true;
        if (!known) {
            rc =
                cdsh_error_set(err, CDSH_EINVAL, "UNKNOWN_FIELD", "unknown engine field \"%s\"", k);
            goto done;
        }
        json_object_set(row, k, v);
    }
    rc = cdsh_acp_engine_normalize(row, "user-file", true, merged, err);
done:
    json_decref(row);
    return rc;
}

char *cdsh_acp_engine_expand_path_dup(const char *tmpl)
{
    if (!tmpl)
        return NULL;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    const char *p = tmpl;
    if (p[0] == '~' && (p[1] == '/' || p[1] == '\0')) {
        const char *home = getenv("HOME");
        cdsh_strbuf_append_str(&sb, home ? home : "");
        p++;
    }
    while (*p) {
        const char *end = NULL;
        size_t skip = 0;
        if (p[0] == '$' && p[1] == '{' && (end = strchr(p + 2, '}')))
            skip = 2;
        else if (p[0] == '%' && (end = strchr(p + 1, '%')) && end > p + 1)
            skip = 1;
        if (end) {
            char name[128];
            size_t n = (size_t)(end - p) - skip;
            if (n < sizeof name) {
                memcpy(name, p + skip, n);
                name[n] = '\0';
                const char *val = getenv(name);
                cdsh_strbuf_append_str(&sb, val ? val : "");
                p = end + 1;
                continue;
            }
        }
        cdsh_strbuf_append_char(&sb, *p++);
    }
    return cdsh_strbuf_take(&sb, NULL);
}

static bool executable(const char *path)
{
    return path && access(path, X_OK) == 0;
}

int cdsh_acp_engine_resolve(const json_t *row, char **resolved, const char **via, cdsh_error *err)
{
    if (!json_is_object(row) || !resolved)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "resolve needs an engine row");
    *resolved = NULL;
    cdsh_strbuf tried;
    cdsh_strbuf_init(&tried);
    const char *cand[2] = {
        json_string_value(json_object_get(row, "resolvedCommand")),
        json_string_value(json_object_get(json_object_get(row, "commandOverrides"), PLATFORM))};
    const char *names[2] = {"resolvedCommand", "commandOverrides"};
    for (int i = 0; i < 2; i++) {
        if (!cand[i] || !*cand[i])
            continue;
        char *p = cdsh_acp_engine_expand_path_dup(cand[i]);
        if (p && strchr(p, '/') ? executable(p) : false) {
            *resolved = p;
            if (via)
                *via = names[i];
            cdsh_strbuf_deinit(&tried);
            return 0;
        }
        if (p && !strchr(p, '/') && cdsh_process_find_program(p, NULL, resolved, NULL) == 0) {
            free(p);
            if (via)
                *via = names[i];
            cdsh_strbuf_deinit(&tried);
            return 0;
        }
        cdsh_strbuf_appendf(&tried, "%s%s", tried.len ? ", " : "", p ? p : cand[i]);
        free(p);
    }
    size_t i;
    json_t *fp;
    json_array_foreach(json_object_get(row, "fallbackPaths"), i, fp) {
        char *p = cdsh_acp_engine_expand_path_dup(json_string_value(fp));
        if (p && strchr(p, '/') && executable(p)) {
            *resolved = p;
            if (via)
                *via = "fallbackPaths";
            cdsh_strbuf_deinit(&tried);
            return 0;
        }
        if (p)
            cdsh_strbuf_appendf(&tried, "%s%s", tried.len ? ", " : "", p);
        free(p);
    }
    const char *command = json_string_value(json_object_get(row, "command"));
    const char *path_env = json_string_value(json_object_get(json_object_get(row, "env"), "PATH"));
    if (command && cdsh_process_find_program(command, path_env, resolved, NULL) == 0) {
        if (via)
            *via = strchr(command, '/') ? "command" : "PATH";
        cdsh_strbuf_deinit(&tried);
        return 0;
    }
    int rc = cdsh_error_set(err, CDSH_ENOTFOUND, "COMMAND_NOT_FOUND",
                            "engine \"%s\": command \"%s\" not found on PATH%s%s",
                            json_string_value(json_object_get(row, "id")), command ? command : "?",
                            tried.len ? "; also tried " : "", tried.len ? tried.data : "");
    cdsh_strbuf_deinit(&tried);
    return rc;
}

/* ---- cold-start detection (initBudget.coldProbe "npx-cache") ------------------------- */

/* Collation weight of one byte as ICU's root order (what JavaScript's
 * localeCompare(…, "en") uses) ranks the characters of npm specs:
 * punctuation in ICU's order, then digits, then letters case-folded; other
 * bytes after them by value. Checked against node for these characters. */
static int collate_primary(unsigned char ch)
{
    static const char punct[] = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";
    const char *p = ch ? strchr(punct, ch) : NULL;
    if (p)
        return 1 + (int)(p - punct);
    if (ch >= '0' && ch <= '9')
        return 100 + (ch - '0');
    if (isalpha(ch))
        return 200 + (tolower(ch) - 'a');
    return 300 + ch;
}

/* Primary weights over the whole strings first (a prefix sorts first),
 * then lowercase before uppercase at the first case difference. */
static int collate_cmp(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    size_t i = 0;
    for (; x[i] && y[i]; i++) {
        int d = collate_primary((unsigned char)x[i]) - collate_primary((unsigned char)y[i]);
        if (d)
            return d;
    }
    if (x[i] || y[i])
        return x[i] ? 1 : -1;
    for (i = 0; x[i]; i++)
        if (x[i] != y[i])
            return islower((unsigned char)x[i]) ? -1 : 1;
    return 0;
}

/* Verified against npm 11's npx here: `npx -y -p is-number true` created
 * _npx/17faac598b938cd5 = sha512("is-number")[0:16], and `npx -y -p is-odd
 * -p is-number@7.0.0 true` created _npx/82596afa42b8ad2e =
 * sha512("is-number@7.0.0\nis-odd")[0:16] (libnpmexec: specs as given,
 * directory specs resolved, sorted with localeCompare "en", "\n"-joined). */
int cdsh_acp_npx_cache_key(const char *const *specs, size_t n, char key[17])
{
    const char **sorted = calloc(n ? n : 1, sizeof *sorted);
    if (!sorted)
        return CDSH_ENOMEM;
    memcpy(sorted, specs, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, collate_cmp);
    cdsh_strbuf joined;
    cdsh_strbuf_init(&joined);
    for (size_t i = 0; i < n; i++) {
        if (i)
            cdsh_strbuf_append_char(&joined, '\n');
        cdsh_strbuf_append_str(&joined, sorted[i]);
    }
    char hex[CDSH_SHA512_HEX_LEN + 1];
    /* A join cut short by ENOMEM would name another directory. */
    int rc = joined.failed ? CDSH_ENOMEM
                           : cdsh_hash_sha512_hex(joined.data ? joined.data : "", joined.len, hex);
    cdsh_strbuf_deinit(&joined);
    free(sorted);
    if (rc == 0) {
        memcpy(key, hex, 16);
        key[16] = '\0';
    }
    return rc;
}

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path ? path : "";
}

/* The package name of a registry spec ("@scope/pkg@^1" → "@scope/pkg"),
 * written into out; false for git / path / URL / alias specs. */
static bool spec_name(const char *spec, char *out, size_t size)
{
    if (!*spec || spec[0] == '.' || spec[0] == '/' || spec[0] == '~' || strchr(spec, ':'))
        return false;
    const char *at = strchr(spec[0] == '@' ? spec + 1 : spec, '@');
    size_t len = at ? (size_t)(at - spec) : strlen(spec);
    const char *slash = memchr(spec, '/', len);
    if (spec[0] == '@' ? !slash || slash == spec + 1 || slash + 1 == spec + len
                       : slash != NULL) /* user/repo is a GitHub spec */
        return false;
    if (len == 0 || len >= size)
        return false;
    memcpy(out, spec, len);
    out[len] = '\0';
    return true;
}

/* npm_config_cache from the row's env (npm reads npm_config_* case-insensitively). */
static const char *row_npm_cache(const json_t *row)
{
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(row, "env"), k, v) {
        if (strcasecmp(k, "npm_config_cache") == 0 && json_is_string(v))
            return json_string_value(v);
    }
    return NULL;
}

json_t *cdsh_acp_engine_warm_marker_dup(const char *resolved)
{
    struct stat st;
    if (!resolved || stat(resolved, &st) != 0)
        return NULL;
    char iso[CDSH_ISO8601_MAX];
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), iso, sizeof iso);
    char change[64];
    snprintf(change, sizeof change, "%lld.%09ld", (long long)st.st_ctim.tv_sec,
             (long)st.st_ctim.tv_nsec);
    return json_pack("{s:s,s:I,s:s,s:s}", "path", resolved, "inode", (json_int_t)st.st_ino,
                     "changed", change, "at", iso);
}

/* coldProbe "first-start": cold until an initialize of this very
 * executable succeeded (the marker names its path, inode and change time,
 * so an install or update makes the next start cold again). */
static void first_start_check(const json_t *row, cdsh_acp_cold_check *out)
{
    char *resolved = NULL;
    if (cdsh_acp_engine_resolve(row, &resolved, NULL, NULL) < 0) {
        snprintf(out->reason, sizeof out->reason, "command not found: nothing to start");
        return;
    }
    const json_t *warm = json_object_get(row, "warm");
    json_t *now = cdsh_acp_engine_warm_marker_dup(resolved);
    const char *path = json_string_value(json_object_get(warm, "path"));
    if (!warm || !path) {
        out->cold = true;
        snprintf(out->reason, sizeof out->reason,
                 "first start: no initialize of %.500s has succeeded yet", resolved);
    } else if (!now || strcmp(path, resolved) != 0 ||
               json_integer_value(json_object_get(warm, "inode")) !=
                   json_integer_value(json_object_get(now, "inode")) ||
               !json_equal(json_object_get(warm, "changed"), json_object_get(now, "changed"))) {
        out->cold = true;
        snprintf(out->reason, sizeof out->reason,
                 "first start since %.500s was installed or changed", resolved);
    } else {
        snprintf(out->reason, sizeof out->reason, "warm: %.500s started before (%.40s)",
                 resolved, json_string_value(json_object_get(warm, "at")));
    }
    json_decref(now);
    free(resolved);
}

void cdsh_acp_engine_cold_check(const json_t *row, cdsh_acp_cold_check *out)
{
    out->cold = false;
    const char *probe =
        json_string_value(json_object_get(json_object_get(row, "initBudget"), "coldProbe"));
    if (!probe || strcmp(probe, "none") == 0) {
        snprintf(out->reason, sizeof out->reason, "coldProbe is none");
        return;
    }
    if (strcmp(probe, "first-start") == 0) {
        first_start_check(row, out);
        return;
    }
    const char *cmd = json_string_value(json_object_get(row, "command"));
    const char *bn = base_name(cmd);
    json_t *args = json_object_get(row, "args");
    size_t i = 0, nargs = json_array_size(args);
    if (strcmp(bn, "npm") == 0) {
        const char *sub = json_string_value(json_array_get(args, 0));
        if (!sub || (strcmp(sub, "exec") != 0 && strcmp(sub, "x") != 0))
            bn = "";
        i = 1;
    } else if (strcmp(bn, "npx") != 0) {
        bn = "";
    }
    if (!*bn) {
        snprintf(out->reason, sizeof out->reason, "%s is not npx: nothing to install",
                 cmd ? cmd : "the command");
        return;
    }
    const char *specs[64], *first = NULL, *cache = NULL;
    size_t n = 0;
    for (bool opts = true; i < nargs; i++) {
        const char *a = json_string_value(json_array_get(args, i));
        const char *next = json_string_value(json_array_get(args, i + 1));
        if (!a)
            continue;
        if (opts && strcmp(a, "--") == 0) {
            opts = false;
        } else if (opts && (strcmp(a, "-p") == 0 || strcmp(a, "--package") == 0) && next) {
            if (n < 64)
                specs[n++] = next;
            i++;
        } else if (opts && strncmp(a, "--package=", 10) == 0) {
            if (n < 64)
                specs[n++] = a + 10;
        } else if (opts && strcmp(a, "--cache") == 0 && next) {
            cache = next;
            i++;
        } else if (opts && strncmp(a, "--cache=", 8) == 0) {
            cache = a + 8;
        } else if (opts &&
                   (strcmp(a, "-c") == 0 || strcmp(a, "--call") == 0 ||
                    strcmp(a, "--registry") == 0 || strcmp(a, "--userconfig") == 0 ||
                    strcmp(a, "-w") == 0 || strcmp(a, "--workspace") == 0) &&
                   next) {
            i++; /* options with a value */
        } else if (opts && a[0] == '-') {
            continue; /* -y, --yes, --quiet, --foo=bar ... */
        } else {
            first = a; /* the command; also the package when no --package is given */
            break;
        }
    }
    if (n == 0 && first)
        specs[n++] = first;
    if (n == 0) {
        snprintf(out->reason, sizeof out->reason, "npx names no package: nothing to install");
        return;
    }
    if (!cache)
        cache = row_npm_cache(row);
    if (!cache)
        cache = getenv("npm_config_cache");
    if (!cache)
        cache = getenv("NPM_CONFIG_CACHE");
    char dir[4096], name[512];
    if (cache && *cache) {
        char *exp = cdsh_acp_engine_expand_path_dup(cache);
        snprintf(dir, sizeof dir, "%s/_npx/", exp ? exp : cache);
        free(exp);
    } else {
        const char *home = getenv("HOME");
        snprintf(dir, sizeof dir, "%s/.npm/_npx/", home && *home ? home : "/root");
    }
    char key[17];
    if (cdsh_acp_npx_cache_key(specs, n, key) < 0) {
        out->cold = true;
        snprintf(out->reason, sizeof out->reason, "cannot compute the npx cache key: cold");
        return;
    }
    size_t dl = strlen(dir);
    snprintf(dir + dl, sizeof dir - dl, "%s", key);
    for (size_t k = 0; k < n; k++) {
        if (!spec_name(specs[k], name, sizeof name)) {
            out->cold = true;
            snprintf(out->reason, sizeof out->reason,
                     "npx package %.200s is not a registry name: assuming cold", specs[k]);
            return;
        }
        char pj[4800];
        snprintf(pj, sizeof pj, "%s/node_modules/%s/package.json", dir, name);
        if (access(pj, F_OK) != 0) {
            out->cold = true;
            snprintf(out->reason, sizeof out->reason,
                     "npx cache miss: %.200s not installed in %.300s", name, dir);
            return;
        }
    }
    snprintf(out->reason, sizeof out->reason, "npx cache hit: %.500s", dir);
}

int64_t cdsh_acp_engine_init_budget_ms(const json_t *row, cdsh_acp_cold_check *check)
{
    cdsh_acp_cold_check local = {0};
    cdsh_acp_cold_check *c = check ? check : &local;
    cdsh_acp_engine_cold_check(row, c);
    const json_t *ib = json_object_get(row, "initBudget");
    int64_t secs = coerce_int(json_object_get(ib, c->cold ? "coldSecs" : "steadySecs"),
                              c->cold ? CDSH_ACP_INIT_COLD_SECS : CDSH_ACP_INIT_STEADY_SECS);
    return secs > 0 ? secs * 1000 : CDSH_ACP_INIT_STEADY_SECS * 1000;
}

int64_t cdsh_acp_engine_prompt_timeout_ms(const json_t *row)
{
    return coerce_int(json_object_get(row, "promptTimeoutMs"), CDSH_ACP_PROMPT_TIMEOUT_MS);
}

int64_t cdsh_acp_engine_idle_timeout_ms(const json_t *row)
{
    return coerce_int(json_object_get(row, "idleTimeoutMs"), CDSH_ACP_IDLE_TIMEOUT_MS);
}

char **cdsh_acp_engine_env_dup(const json_t *row)
{
    json_t *env = json_object_get(row, "env");
    char **v = calloc(json_object_size(env) + 1, sizeof *v);
    size_t n = 0;
    const char *k;
    json_t *val;
    if (!v)
        return NULL;
    json_object_foreach(env, k, val) {
        if (!json_is_string(val))
            continue;
        size_t len = strlen(k) + strlen(json_string_value(val)) + 2;
        v[n] = malloc(len);
        if (v[n])
            snprintf(v[n++], len, "%s=%s", k, json_string_value(val));
    }
    return v;
}

static json_t *engine_extra_args_dup(const json_t *row);

char **cdsh_acp_engine_argv_dup(const json_t *row, const char *resolved)
{
    json_t *args = json_object_get(row, "args");
    char **v = calloc(json_array_size(args) + 2, sizeof *v);
    size_t n = 0, i;
    json_t *a;
    if (!v)
        return NULL;
    v[n++] = strdup(resolved ? resolved : json_string_value(json_object_get(row, "command")));
    json_array_foreach(args, i, a) {
        if (json_is_string(a))
            v[n++] = strdup(json_string_value(a));
    }
    json_t *extra = engine_extra_args_dup(row);
    char **grown = realloc(v, (n + json_array_size(extra) + 1) * sizeof *v);
    if (grown) {
        v = grown;
        json_array_foreach(extra, i, a)
            v[n++] = strdup(json_string_value(a));
        v[n] = NULL;
    }
    json_decref(extra);
    return v;
}

/* The arguments cdsh adds after the row's args (owned array), as the
 * original builds argv (digest §1.3): with skillDelivery "args", the
 * skillArgsTemplate once per skillsDirs entry that is an existing
 * directory ({dir} replaced by its expanded path); then, for a
 * permissionMode other than default, permissionTemplates[mode]. */
static json_t *engine_extra_args_dup(const json_t *row)
{
    json_t *out = json_array();
    size_t i, j;
    json_t *d, *t;
    const char *delivery = json_string_value(json_object_get(row, "skillDelivery"));
    if (delivery && strcmp(delivery, "args") == 0) {
        json_array_foreach(json_object_get(row, "skillsDirs"), i, d) {
            char *dir = cdsh_acp_engine_expand_path_dup(json_string_value(d));
            struct stat st;
            if (dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
                json_array_foreach(json_object_get(row, "skillArgsTemplate"), j, t) {
                    const char *tm = json_string_value(t);
                    const char *at = tm ? strstr(tm, "{dir}") : NULL;
                    if (!at) {
                        json_array_append(out, t);
                        continue;
                    }
                    cdsh_strbuf sb;
                    cdsh_strbuf_init(&sb);
                    cdsh_strbuf_append(&sb, tm, (size_t)(at - tm));
                    cdsh_strbuf_append_str(&sb, dir);
                    cdsh_strbuf_append_str(&sb, at + 5);
                    char *arg = cdsh_strbuf_take(&sb, NULL);
                    if (arg)
                        json_array_append_new(out, json_string(arg));
                    free(arg);
                }
            }
            free(dir);
        }
    }
    const char *mode = json_string_value(json_object_get(row, "permissionMode"));
    if (mode && strcmp(mode, "default") != 0)
        json_array_extend(out,
                          json_object_get(json_object_get(row, "permissionTemplates"), mode));
    return out;
}

void cdsh_acp_engine_strv_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

/* ---- what may be shown of a row (issue: secrets in listings and evidence) ---------- */

/* The option name of an argument ("--api-key=x" → "api-key", "-t" → "t"),
 * its length; 0 for a non-option. */
static size_t option_name(const char *a, const char **name)
{
    if (!a || a[0] != '-' || !a[1])
        return 0;
    const char *p = a + (a[1] == '-' ? 2 : 1);
    size_t n = strcspn(p, "=");
    *name = p;
    return n;
}

/* Calls fn for each argument value that a secret-looking option carries:
 * "--api-key V", "--token=V" (the option name matched as a JSON key is). */
static void each_secret_arg(const json_t *args, void (*fn)(void *ud, size_t index, const char *value),
                            void *ud)
{
    size_t n = json_array_size(args);
    for (size_t i = 0; i < n; i++) {
        const char *a = json_string_value(json_array_get(args, i));
        const char *name = NULL;
        size_t len = option_name(a, &name);
        if (!len || !cdsh_redact_key_is_secret(name, len))
            continue;
        if (name[len] == '=') {
            fn(ud, i, name + len + 1);
        } else if (i + 1 < n) {
            const char *next = json_string_value(json_array_get(args, i + 1));
            if (next && next[0] != '-') {
                fn(ud, i + 1, next);
                i++;
            }
        }
    }
}

static void redact_arg(void *ud, size_t index, const char *value)
{
    json_t *out = ud;
    const char *cur = json_string_value(json_array_get(out, index));
    if (!cur)
        return;
    size_t keep = strlen(cur) - strlen(value); /* "--token=" of "--token=V", "" of "V" */
    char *r = malloc(keep + sizeof CDSH_REDACTED);
    if (!r)
        return;
    memcpy(r, cur, keep);
    memcpy(r + keep, CDSH_REDACTED, sizeof CDSH_REDACTED);
    json_array_set_new(out, index, json_string(r));
    free(r);
}

json_t *cdsh_acp_engine_args_public_dup(const json_t *args)
{
    json_t *out = json_deep_copy(args);
    if (!json_is_array(out)) {
        json_decref(out);
        return json_array();
    }
    each_secret_arg(args, redact_arg, out); /* option values first, then patterns */
    size_t i;
    json_t *a;
    json_array_foreach(out, i, a) {
        char *r = json_is_string(a) ? cdsh_redact_dup(json_string_value(a)) : NULL;
        if (r)
            json_array_set_new(out, i, json_string(r));
        free(r);
    }
    return out;
}

json_t *cdsh_acp_engine_public_dup(const json_t *row)
{
    json_t *out = json_deep_copy(row);
    if (!out)
        return NULL;
    json_t *env = json_object_get(out, "env");
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v) {
        json_object_set_new(env, k, json_string(CDSH_REDACTED));
    }
    if (json_is_array(json_object_get(out, "args")))
        json_object_set_new(out, "args", cdsh_acp_engine_args_public_dup(json_object_get(row, "args")));
    return out;
}

typedef struct strv {
    char **v;
    size_t n, cap;
} strv;

static void strv_add(void *ud, size_t index, const char *value)
{
    (void)index;
    strv *s = ud;
    if (!value || strlen(value) < 4)
        return;
    if (s->n + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        char **nv = realloc(s->v, cap * sizeof *nv);
        if (!nv)
            return;
        s->v = nv;
        s->cap = cap;
    }
    char *d = strdup(value);
    if (!d)
        return;
    s->v[s->n++] = d;
    s->v[s->n] = NULL;
}

/* A value that looks like a credential although its name does not say so:
 * long, one word, not a path or URL. */
static bool token_like(const char *v)
{
    size_t n = strlen(v);
    if (n < 16 || strchr(v, '/'))
        return false;
    for (const char *p = v; *p; p++)
        if (isspace((unsigned char)*p))
            return false;
    return true;
}

char **cdsh_acp_engine_secrets_dup(const json_t *row)
{
    strv s = {0};
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(row, "env"), k, v) {
        const char *val = json_string_value(v);
        if (val && (cdsh_redact_key_is_secret(k, strlen(k)) || token_like(val)))
            strv_add(&s, 0, val);
    }
    each_secret_arg(json_object_get(row, "args"), strv_add, &s);
    if (!s.v)
        s.v = calloc(1, sizeof *s.v);
    return s.v;
}
