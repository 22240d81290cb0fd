/* verify.c — `cdsh profile verify`: copy the profile into a temporary home,
 * check rows, configs and composition, and optionally one agent turn.
 * Printing is the CLI's (cmd_profile.c). */
#include "plugins/facade/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/session_store.h"
#include "base/fs.h"
#include "base/json.h"
#include "host/config.h"
#include "host/host.h"
#include "plugins/facade/service.h"

/* The smoke turn: a fixed prompt and a small step budget (a tool call or
 * two, then the answer). */
#define SMOKE_PROMPT "cdsh profile verify --smoke: reply with the single word OK."
#define SMOKE_MAX_STEPS 4

typedef struct run {
    json_t *checks, *problems;
} run;

static void check(run *r, const char *name, bool ok, const char *detail)
{
    json_array_append_new(r->checks,
                          json_pack("{s:s, s:b, s:s}", "check", name, "ok", ok, "detail", detail));
}

static void problem(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(run *r, const char *fmt, ...)
{
    char buf[1600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(r->problems, json_string(buf));
}

static const cdsh_plugin_def *find_def(const cdsh_plugin_def *const *defs, const char *name)
{
    for (; defs && *defs; defs++)
        if (strcmp((*defs)->name, name) == 0)
            return *defs;
    return NULL;
}

/* Where the profile comes from and the name it gets in the temporary home. */
static int locate(const char *home, const char *profile, char **path, char name[80],
                  bool *is_file)
{
    size_t n = strlen(profile);
    *is_file = strchr(profile, '/') || (n > 5 && strcmp(profile + n - 5, ".yaml") == 0) ||
               (n > 4 && strcmp(profile + n - 4, ".yml") == 0);
    if (!*is_file) {
        if (!cdsh_profile_name_valid(profile))
            return -1;
        snprintf(name, 80, "%s", profile);
        return asprintf(path, "%s/profiles/%s.yaml", home, profile) < 0 ? -1 : 0;
    }
    const char *base = strrchr(profile, '/') ? strrchr(profile, '/') + 1 : profile;
    snprintf(name, 80, "%.*s", (int)strcspn(base, "."), base);
    if (!cdsh_profile_name_valid(name))
        snprintf(name, 80, "verify");
    *path = strdup(profile);
    return *path ? 0 : -1;
}

static void check_rows(run *r, const cdsh_profile *prof, const cdsh_plugin_def *const *defs)
{
    const json_t *plugins = json_object_get(cdsh_profile_json(prof), "plugins");
    const char *name;
    json_t *row;
    size_t bad_rows = 0, bad_configs = 0;
    json_object_foreach((json_t *)plugins, name, row) {
        const cdsh_plugin_def *def = find_def(defs, name);
        if (!def) {
            char known[512] = "";
            for (const cdsh_plugin_def *const *d = defs; d && *d; d++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                         d == defs ? "" : ", ", (*d)->name);
            problem(r, "plugin \"%s\": no such plugin (known: %s)", name, known);
            bad_rows++;
            continue;
        }
        json_t *schema = def->config_schema ? json_loads(def->config_schema, 0, NULL)
                                            : json_pack("{s:s}", "type", "object");
        json_t *out = NULL;
        cdsh_error cerr = {0};
        if (cdsh_config_resolve(schema, cdsh_profile_config(prof, name), &out, NULL, &cerr)) {
            problem(r, "plugin \"%s\": %s", name, cerr.message);
            bad_configs++;
        }
        json_decref(out);
        json_decref(schema);
    }
    char detail[128];
    snprintf(detail, sizeof detail, "%zu row(s)", json_object_size(plugins));
    check(r, "plugins resolve", bad_rows == 0, bad_rows ? "unknown plugin rows" : detail);
    check(r, "configs validate", bad_configs == 0, bad_configs ? "invalid config" : detail);
}

/* Loads the host and reports plugins that failed or wait, and capability
 * declarations the facade refused. */
static cdsh_host *compose(run *r, const char *tmp, const cdsh_profile *prof,
                          const cdsh_plugin_def *const *defs, json_t *report)
{
    cdsh_home *home = NULL;
    cdsh_error herr = {0};
    if (cdsh_home_new(tmp, &home, &herr) != 0) {
        problem(r, "compose: %s", herr.message);
        return NULL;
    }
    cdsh_host *host = cdsh_host_new_at(home);
    if (!host)
        return NULL;
    cdsh_host_load_plugins(host, defs, prof, NULL);
    json_t *list = cdsh_host_plugins_list(host);
    size_t i, failed = 0;
    json_t *p;
    json_array_foreach(list, i, p) {
        const char *name = json_string_value(json_object_get(p, "name"));
        const char *state = json_string_value(json_object_get(p, "state"));
        const char *error = json_string_value(json_object_get(p, "error"));
        if (strcmp(state, "failed") == 0) {
            failed++;
            if (error && strncmp(error, "invalid config", 14) == 0)
                continue; /* already reported by the config check */
            if (error && strncmp(error, "plugin \"", 8) == 0)
                problem(r, "%s", error);
            else
                problem(r, "plugin \"%s\" failed to apply: %s", name, error ? error : "");
        } else if (strcmp(state, "pending") == 0) {
            failed++;
            problem(r, "plugin \"%s\" is pending: a service it requires is not provided", name);
        }
    }
    json_object_set_new(report, "plugins", list);
    cdsh_facade *facade = cdsh_host_service(host, CDSH_FACADE_SERVICE);
    json_t *probs = cdsh_facade_problems(facade);
    json_t *x;
    json_array_foreach(probs, i, x) {
        problem(r, "plugin \"facade\": capability %lld: %s",
                (long long)json_integer_value(json_object_get(x, "index")),
                json_string_value(json_object_get(x, "message")));
    }
    json_t *names = cdsh_tools_names(cdsh_host_tools(host), NULL);
    json_object_set_new(report, "tools", names);
    json_object_set_new(report, "capabilities", cdsh_facade_list(facade));
    char detail[160];
    snprintf(detail, sizeof detail, "%zu plugin(s) loaded, %zu tool(s), %zu capability(ies)",
             json_array_size(list) - failed, json_array_size(names), cdsh_facade_count(facade));
    check(r, "compose", failed == 0 && json_array_size(probs) == 0, detail);
    json_decref(probs);
    return host;
}

/* The last notice of the smoke turn: why it stopped, in the agent's words. */
typedef struct smoke_seen {
    char code[64];
    char text[1200];
} smoke_seen;

static void smoke_event(void *arg, const json_t *event)
{
    smoke_seen *seen = arg;
    if (strcmp(cdsh_json_str_or(event, "type", ""), "notice") != 0)
        return;
    snprintf(seen->code, sizeof seen->code, "%s", cdsh_json_str_or(event, "code", ""));
    snprintf(seen->text, sizeof seen->text, "%s", cdsh_json_str_or(event, "text", ""));
}

/* One real agent turn in the temporary home: its own session store, a
 * throwaway session, a fixed prompt; the turn must end "done" with text. */
static void smoke(run *r, cdsh_host *host, const char *tmp, json_t *report)
{
    cdsh_error err = {0};
    cdsh_session_store *store = NULL;
    cdsh_agent *agent = NULL;
    char *db = NULL, *sid = NULL;
    smoke_seen seen = {{0}, {0}};
    cdsh_agent_outcome out = {0};
    bool ran = false, ok = false;
    json_int_t ntools = 0;
    int rc;
    if (asprintf(&db, "%s/sessions.db", tmp) < 0) {
        db = NULL;
        rc = cdsh_error_set(&err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto report;
    }
    rc = cdsh_session_store_open(cdsh_host_home(host), db, &store, &err);
    if (rc == 0) {
        cdsh_session_spec spec = {.title = "cdsh profile verify --smoke"};
        rc = cdsh_session_store_create(store, &spec, &sid, &err);
    }
    if (rc == 0) {
        cdsh_agent_options opts = {.host = host, .store = store, .max_steps = SMOKE_MAX_STEPS};
        rc = cdsh_agent_new(&opts, &agent, &err);
    }
    if (rc == 0) {
        json_t *tools = cdsh_agent_request_tools(agent);
        ntools = (json_int_t)json_array_size(tools);
        json_decref(tools);
        rc = cdsh_agent_run_turn(agent, sid, SMOKE_PROMPT, NULL, smoke_event, &seen, &out, &err);
        ran = rc == 0;
    }
report:
    ok = ran && strcmp(out.reason, "done") == 0 && out.text && *out.text;
    if (rc)
        problem(r, "smoke: %s: %s", err.code, err.message);
    else if (strcmp(out.reason, "error") == 0)
        problem(r, "smoke: %s: %s", out.code[0] ? out.code : seen.code,
                seen.text[0] ? seen.text : "the turn failed");
    else if (strcmp(out.reason, "done") != 0)
        problem(r, "smoke: the turn ended \"%s\"%s%s", out.reason, seen.text[0] ? ": " : "",
                seen.text);
    else if (!ok)
        problem(r, "smoke: the model's reply had no text");
    json_object_set_new(report, "smoke",
                        json_pack("{s:b, s:I, s:i, s:s, s:s?, s:s?}", "ok", ok, "tools", ntools,
                                  "steps", out.steps, "reason", ran ? out.reason : "not-run",
                                  "code", out.code[0] ? out.code : NULL, "reply", out.text));
    char detail[300];
    if (ok)
        snprintf(detail, sizeof detail, "one turn answered: \"%.80s\"", out.text);
    else
        snprintf(detail, sizeof detail, "one turn failed (%s)", ran ? out.reason : "not run");
    check(r, "smoke", ok, detail);
    cdsh_agent_outcome_deinit(&out);
    cdsh_agent_free(agent);
    cdsh_session_store_close(store);
    free(sid);
    free(db);
}

int cdsh_facade_verify(const char *home, const char *profile, const cdsh_plugin_def *const *defs,
                       bool do_smoke, json_t **report, cdsh_error *err)
{
    *report = NULL;
    char name[80];
    char *src = NULL, *text = NULL, *dst = NULL;
    const char *tmpdir = getenv("TMPDIR");
    char *tmp = NULL;
    if (asprintf(&tmp, "%s/cdsh-verify-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp") < 0)
        tmp = NULL;
    run r = {json_array(), json_array()};
    json_t *rep = json_pack("{s:s}", "profile", profile ? profile : "");
    cdsh_profile *prof = NULL;
    cdsh_host *host = NULL;
    int rc = 0;
    if (!tmp || !r.checks || !r.problems || !rep) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto done;
    }
    if (!mkdtemp(tmp)) {
        rc = cdsh_error_set(err, CDSH_EIO, "NO_TEMP_HOME", "cannot create a temporary home: %s",
                            tmp);
        free(tmp);
        tmp = NULL;
        goto done;
    }
    bool is_file = false;
    if (!profile || locate(home ? home : "", profile, &src, name, &is_file) != 0) {
        problem(&r, "profile \"%s\": not a profile name or a YAML file path",
                profile ? profile : "");
        check(&r, "parse", false, "bad profile argument");
        goto finish;
    }
    json_object_set_new(rep, "path", json_string(src));
    cdsh_error ferr = {0};
    size_t len = 0;
    if (cdsh_fs_read_file(src, 4u << 20, &text, &len, &ferr) != 0) {
        problem(&r, "profile \"%s\": cannot read %s: %s", name, src, ferr.message);
        check(&r, "parse", false, "unreadable");
        goto finish;
    }
    /* The loader itself judges the file where it is (no second, weaker
     * validator): what it refuses, `cdsh web` and `cdsh chat` refuse too. */
    int lrc = is_file ? cdsh_profile_load_file(src, name, &prof, &ferr)
                      : cdsh_profile_load(home, name, &prof, &ferr);
    if (lrc != 0) {
        problem(&r, "profile \"%s\": %s", name, ferr.message);
        check(&r, "parse", false, "not a profile");
        goto finish;
    }
    /* The copy lives in the temporary home; the user's home is only read. */
    if (asprintf(&dst, "%s/profiles", tmp) < 0 || cdsh_fs_mkdir_p(dst, 0700, &ferr) != 0) {
        problem(&r, "profile \"%s\": cannot stage it: %s", name, ferr.message);
        check(&r, "parse", false, "cannot stage");
        goto finish;
    }
    free(dst);
    dst = NULL;
    if (asprintf(&dst, "%s/profiles/%s.yaml", tmp, name) < 0 ||
        cdsh_fs_write_atomic(dst, text, len, 0600, &ferr) != 0) {
        problem(&r, "profile \"%s\": cannot stage it: %s", name, ferr.message);
        check(&r, "parse", false, "cannot stage");
        goto finish;
    }
    check(&r, "parse", true, src);
    check_rows(&r, prof, defs);
    host = compose(&r, tmp, prof, defs, rep);
    if (do_smoke && host && json_array_size(r.problems) == 0)
        smoke(&r, host, tmp, rep);
    else if (do_smoke)
        check(&r, "smoke", false, "skipped: fix the problems above first");
finish:
    json_object_set(rep, "checks", r.checks);
    json_object_set(rep, "problems", r.problems);
    json_object_set_new(rep, "ok", json_boolean(json_array_size(r.problems) == 0));
    *report = json_incref(rep);
done:
    cdsh_host_free(host);
    cdsh_profile_free(prof);
    if (tmp)
        cdsh_fs_remove_tree(tmp, NULL);
    free(tmp);
    free(src);
    free(text);
    free(dst);
    json_decref(r.checks);
    json_decref(r.problems);
    json_decref(rep);
    return rc;
}
