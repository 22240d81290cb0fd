/* ops.c — the importer's operations table (host/ops.h): scan, enable,
 * disable and list, each a row with its argument schema, handler and result
 * shape; `cdsh import <row>` is built from the CLI rows (cmd_import.c turns
 * argv into the arguments and prints the values). The handlers read and
 * write the profile's "import" plugin config; the pipeline is service.h. */
#include "plugins/mcpimport/ops.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/home.h"
#include "host/cli.h"
#include "plugins/mcpimport/cmd_import.h"
#include "plugins/mcpimport/plugin.h"
#include "plugins/mcpimport/preflight.h"
#include "plugins/mcpimport/probe.h"
#include "plugins/mcpimport/redact.h"
#include "plugins/mcpimport/report.h"
#include "plugins/mcpimport/service.h"

#define MAXV 64

/* The arguments of a row as C (strings borrowed from the args object). */
typedef struct opts {
    const char *roots[MAXV + 1];
    int nroots;
    const char *allow[MAXV + 1];
    int nallow;
    const char *claude_dir, *codex_home, *profile;
    bool json, all;
    const char *names[MAXV + 1];
    int nnames;
} opts;

static int strings(const json_t *args, const char *key, const char **out)
{
    int n = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(args, key), i, v) {
        if (n < MAXV && json_is_string(v))
            out[n++] = json_string_value(v);
    }
    return n;
}

static void opts_of(const json_t *args, opts *o)
{
    memset(o, 0, sizeof *o);
    o->nroots = strings(args, "roots", o->roots);
    o->nallow = strings(args, "keyringAllow", o->allow);
    o->nnames = strings(args, "names", o->names);
    o->claude_dir = json_string_value(json_object_get(args, "claudeDir"));
    o->codex_home = json_string_value(json_object_get(args, "codexHome"));
    o->profile = json_string_value(json_object_get(args, "profile"));
    o->json = json_is_true(json_object_get(args, "json"));
    o->all = json_is_true(json_object_get(args, "all"));
}

/* The profile (locked when lock is given), as cdsh_cli_profile_open opens
 * it but with the failure in err. */
static int profile_open(const opts *o, cdsh_fs_lock **lock, cdsh_profile **out, cdsh_error *err)
{
    char *home = NULL;
    *out = NULL;
    if (lock)
        *lock = NULL;
    int rc = cdsh_home_dir_dup(cdsh_cli_home(), &home, err);
    if (rc == 0 && lock)
        rc = cdsh_profile_lock(home, o->profile, 10000, lock, err);
    if (rc == 0)
        rc = cdsh_profile_load(home, o->profile, out, err);
    free(home);
    if (rc && lock) {
        cdsh_fs_lock_close(*lock);
        *lock = NULL;
    }
    return rc;
}

/* Runs the scan with the options (and the profile's keyringAllow). */
static int run_scan(const opts *o, const json_t *cfg, cdsh_mcpimport_scan *scan, cdsh_error *err)
{
    const char *roots[MAXV + 1] = {0};
    char cwd[4096];
    for (int i = 0; i < o->nroots; i++)
        roots[i] = o->roots[i];
    if (o->nroots == 0 && getcwd(cwd, sizeof cwd))
        roots[0] = cwd;
    const char *allow[2 * MAXV + 1] = {0};
    int na = 0;
    for (int i = 0; i < o->nallow; i++)
        allow[na++] = o->allow[i];
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(cfg, "keyringAllow"), i, v) {
        if (na < 2 * MAXV && json_is_string(v))
            allow[na++] = json_string_value(v);
    }
    const char *cd =
        o->claude_dir ? o->claude_dir : json_string_value(json_object_get(cfg, "claudeDir"));
    const char *ch =
        o->codex_home ? o->codex_home : json_string_value(json_object_get(cfg, "codexHome"));
    cdsh_mcpimport_rootset set;
    int rc = cdsh_mcpimport_rootset_init(&set, cd, ch, roots, err);
    if (rc != 0)
        return rc;
    cdsh_mcpimport_roots view = cdsh_mcpimport_rootset_view(&set);
    cdsh_mcpimport_machine machine;
    cdsh_mcpimport_probe probe;
    cdsh_mcpimport_probe_machine(&probe, &machine);
    cdsh_mcpimport_secret_opts so = {.keyring_allow = allow};
    rc = cdsh_mcpimport_scan_run(&view, &probe, &so, scan, err);
    cdsh_mcpimport_rootset_deinit(&set);
    return rc;
}

static int op_scan(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    (void)ud;
    opts o;
    opts_of(call->args, &o);
    cdsh_profile *profile = NULL;
    int rc = profile_open(&o, NULL, &profile, err);
    if (rc)
        return rc;
    cdsh_mcpimport_scan scan;
    rc = run_scan(&o, cdsh_profile_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME), &scan, err);
    cdsh_profile_free(profile);
    if (rc)
        return rc;
    *value = cdsh_mcpimport_report_of_scan(&scan);
    cdsh_mcpimport_scan_deinit(&scan);
    return *value ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
}

static bool list_has(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    }
    return false;
}

static json_t *cfg_list(const json_t *cfg, const char *key)
{
    const json_t *v = json_object_get(cfg, key);
    return json_is_array(v) ? json_deep_copy(v) : json_array();
}

/* The profile's lists of enabled names, one per kind (owned copies). */
typedef struct enabled {
    json_t *servers, *commands, *skills;
} enabled;

static void enabled_load(enabled *en, const json_t *cfg, bool empty)
{
    en->servers = empty ? json_array() : cfg_list(cfg, "servers");
    en->commands = empty ? json_array() : cfg_list(cfg, "commands");
    en->skills = empty ? json_array() : cfg_list(cfg, "skills");
}

static void enabled_deinit(enabled *en)
{
    json_decref(en->servers), json_decref(en->commands), json_decref(en->skills);
}

static int save(cdsh_profile *profile, const enabled *en, json_t *projects, const opts *o,
                cdsh_error *err)
{
    bool any = json_array_size(en->servers) || json_array_size(en->commands) ||
               json_array_size(en->skills);
    int rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "servers",
                                     json_incref(en->servers), err);
    if (!rc)
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "commands",
                                     json_incref(en->commands), err);
    if (!rc)
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "skills",
                                     json_incref(en->skills), err);
    if (!rc && projects)
        rc =
            cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "projects", projects, err);
    else
        json_decref(projects);
    if (!rc && o->claude_dir)
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "claudeDir",
                                     json_string(o->claude_dir), err);
    if (!rc && o->codex_home)
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "codexHome",
                                     json_string(o->codex_home), err);
    if (!rc && o->nallow) {
        json_t *allow =
            cfg_list(cdsh_profile_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME), "keyringAllow");
        for (int i = 0; i < o->nallow; i++)
            if (!list_has(allow, o->allow[i]))
                json_array_append_new(allow, json_string(o->allow[i]));
        rc = cdsh_profile_set_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME, "keyringAllow", allow,
                                     err);
    }
    if (!rc)
        rc = cdsh_profile_set_enabled(profile, CDSH_MCPIMPORT_PLUGIN_NAME, any);
    if (!rc)
        rc = cdsh_profile_save(profile, err);
    if (rc && !err->message[0])
        cdsh_error_set(err, rc, "SAVE_FAILED", "cannot save");
    return rc;
}

/* One kind of importable item: its IR in the scan, its profile list. A bare
 * NAME is looked up in this order. */
enum { KIND_SERVER, KIND_SKILL, KIND_COMMAND, KIND_COUNT };
typedef struct kind {
    const char *what;
    json_t *(*lookup)(const cdsh_mcpimport_scan *, const char *);
    const json_t *irs;
    json_t *list;
} kind;

static void kinds_init(kind k[KIND_COUNT], cdsh_mcpimport_scan *scan, enabled *en)
{
    k[KIND_SERVER] = (kind){"server", cdsh_mcpimport_scan_server, scan->servers, en->servers};
    k[KIND_SKILL] = (kind){"skill", cdsh_mcpimport_scan_skill, scan->skills, en->skills};
    k[KIND_COMMAND] = (kind){"command", cdsh_mcpimport_scan_command,
                             cdsh_mcpimport_scan_commands_json(scan), en->commands};
}

static void add_name(kind *k, const char *name, json_t *added)
{
    if (list_has(k->list, name))
        return;
    json_array_append_new(k->list, json_string(name));
    json_array_append_new(added, json_pack("[s,s]", k->what, name));
}

/* --all-ok for one kind: every ok item that wins its name (the first of
 * that name, as lookup finds it) and is not listed yet, in scan order.
 * Linear: name indexes instead of a lookup per item. */
static void add_all_ok(kind *k, json_t *added)
{
    cdsh__mcpimport_index first = {0}, listed = {0};
    size_t i;
    json_t *v;
    json_array_foreach(k->list, i, v) {
        if (json_is_string(v))
            cdsh__mcpimport_index_first(&listed, json_string_value(v), v);
    }
    json_array_foreach(k->irs, i, v) {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (!n || cdsh__mcpimport_index_first(&first, n, v) != NULL)
            continue; /* a later item of a name */
        if (strcmp(cdsh_mcpimport_verdict(v), "ok") != 0 ||
            cdsh__mcpimport_index_first(&listed, n, v) != NULL)
            continue;
        json_array_append_new(k->list, json_string(n));
        json_array_append_new(added, json_pack("[s,s]", k->what, n));
    }
    cdsh__mcpimport_index_deinit(&first);
    cdsh__mcpimport_index_deinit(&listed);
}

/* "/x" a command (KIND 2), "skill:x" a skill (1), a bare name any kind
 * (-1); *name without the prefix. */
static int name_kind(const char *arg, const char **name)
{
    *name = arg;
    if (arg[0] == '/') {
        *name = arg + 1;
        return KIND_COMMAND;
    }
    if (strncmp(arg, "skill:", 6) == 0) {
        *name = arg + 6;
        return KIND_SKILL;
    }
    return -1;
}

/* {why: "blocked", what, name, reasons: [{code, message}]} of a blocked IR,
 * the messages redacted. */
static json_t *blocked(const char *what, const json_t *ir)
{
    json_t *reasons = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(ir, "reasons"), i, r) {
        if (strcmp(json_string_value(json_object_get(r, "level")), "blocked") != 0)
            continue;
        char *m = cdsh_mcpimport_redact_text_dup(json_string_value(json_object_get(r, "message")));
        json_array_append_new(reasons, json_pack("{s:O, s:s}", "code", json_object_get(r, "code"),
                                                 "message", m ? m : "[REDACTED]"));
        free(m);
    }
    return json_pack("{s:s, s:s, s:O, s:o}", "why", "blocked", "what", what, "name",
                     json_object_get(ir, "name"), "reasons", reasons);
}

/* The projects the scan looked at, added to the profile's list. */
static json_t *projects_with(const json_t *cfg, const opts *o)
{
    json_t *projects = cfg_list(cfg, "projects");
    char cwd[4096];
    for (size_t r = 0; r < (size_t)(o->nroots ? o->nroots : 1); r++) {
        const char *root = o->nroots ? o->roots[r] : getcwd(cwd, sizeof cwd);
        char *abs = root && root[0] != '/' && getcwd(cwd, sizeof cwd)
                        ? cdsh_fs_path_join_dup(cwd, root)
                        : (root ? strdup(root) : NULL);
        if (abs && !list_has(projects, abs))
            json_array_append_new(projects, json_string(abs));
        free(abs);
    }
    return projects;
}

/* Records the names (or, with all, every ok item) in the lists of en; a
 * refusal (unknown name, blocked item) as *refused. Returns `added`. */
static json_t *enable_names(const opts *o, cdsh_mcpimport_scan *scan, enabled *en, json_t **refused)
{
    kind kinds[KIND_COUNT];
    kinds_init(kinds, scan, en);
    json_t *added = json_array();
    json_t *ir;
    for (int k = 0; o->all && k < KIND_COUNT; k++)
        add_all_ok(&kinds[k], added);
    for (int a = 0; a < o->nnames && !*refused; a++) {
        const char *n;
        int want = name_kind(o->names[a], &n);
        int k = want >= 0 ? want : KIND_SERVER;
        ir = kinds[k].lookup(scan, n);
        while (!ir && want < 0 && ++k < KIND_COUNT)
            ir = kinds[k].lookup(scan, n);
        if (!ir)
            *refused =
                json_pack("{s:s, s:s, s:s}", "why", "unknown", "what",
                          want < 0 ? "server, skill or command" : kinds[want].what, "name", n);
        else if (strcmp(cdsh_mcpimport_verdict(ir), "blocked") == 0)
            *refused = blocked(kinds[k].what, ir);
        else
            add_name(&kinds[k], json_string_value(json_object_get(ir, "name")), added);
    }
    return added;
}

/* What enable and disable start from: the call's options, the profile
 * locked for the change, and its import config (borrowed from it). */
typedef struct change {
    opts o;
    cdsh_fs_lock *lock;
    cdsh_profile *profile;
    const json_t *cfg;
} change;

static int change_open(const cdsh_op_call *call, change *ch, cdsh_error *err)
{
    opts_of(call->args, &ch->o);
    ch->lock = NULL;
    ch->profile = NULL;
    int rc = profile_open(&ch->o, &ch->lock, &ch->profile, err);
    ch->cfg = rc ? NULL : cdsh_profile_config(ch->profile, CDSH_MCPIMPORT_PLUGIN_NAME);
    return rc;
}

static void change_close(change *ch)
{
    cdsh_profile_free(ch->profile);
    cdsh_fs_lock_close(ch->lock);
}

static int op_enable(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    (void)ud;
    change ch;
    int rc = change_open(call, &ch, err);
    if (rc)
        return rc;
    cdsh_mcpimport_scan scan;
    rc = run_scan(&ch.o, ch.cfg, &scan, err);
    if (rc) {
        change_close(&ch);
        return rc;
    }
    enabled en;
    enabled_load(&en, ch.cfg, false);
    json_t *refused = NULL;
    json_t *added = enable_names(&ch.o, &scan, &en, &refused);
    if (!refused)
        rc = save(ch.profile, &en, projects_with(ch.cfg, &ch.o), &ch.o, err);
    if (rc == 0)
        *value = json_pack("{s:s, s:o, s:o*}", "profile", cdsh_profile_name(ch.profile), "added",
                           added, "refused", refused);
    else
        json_decref(added);
    enabled_deinit(&en);
    cdsh_mcpimport_scan_deinit(&scan);
    change_close(&ch);
    if (rc == 0 && !*value)
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return rc;
}

/* Removes name from *list (replacing it); true when it was there. */
static bool remove_name(json_t **list, const char *name)
{
    json_t *out = json_array();
    bool removed = false;
    size_t i;
    json_t *v;
    json_array_foreach(*list, i, v) {
        if (strcmp(json_string_value(v), name) == 0)
            removed = true;
        else
            json_array_append(out, v);
    }
    json_decref(*list);
    *list = out;
    return removed;
}

static int op_disable(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    (void)ud;
    change ch;
    int rc = change_open(call, &ch, err);
    if (rc)
        return rc;
    const opts o = ch.o;
    enabled en;
    enabled_load(&en, ch.cfg, o.all);
    json_t **lists[KIND_COUNT] = {
        [KIND_SERVER] = &en.servers, [KIND_SKILL] = &en.skills, [KIND_COMMAND] = &en.commands};
    json_t *disabled = json_array();
    const char *missing = NULL;
    for (int a = 0; a < o.nnames && !missing; a++) {
        const char *n;
        int want = name_kind(o.names[a], &n);
        bool removed = false;
        for (int k = 0; k < KIND_COUNT; k++)
            if (want < 0 || want == k)
                removed |= remove_name(lists[k], n);
        if (!removed)
            missing = o.names[a];
        else
            json_array_append_new(disabled, json_string(o.names[a]));
    }
    cdsh_error save_err = {0};
    bool saved = !missing && save(ch.profile, &en, NULL, &o, &save_err) == 0;
    /* a failed save is part of the value: the names before it are reported */
    *value =
        json_pack("{s:o, s:b, s:s*, s:s*}", "disabled", disabled, "all", o.all && saved,
                  "notEnabled", missing, "saveError", !missing && !saved ? save_err.message : NULL);
    enabled_deinit(&en);
    change_close(&ch);
    return *value ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
}

static int op_list(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    (void)ud;
    opts o;
    opts_of(call->args, &o);
    cdsh_profile *profile = NULL;
    int rc = profile_open(&o, NULL, &profile, err);
    if (rc)
        return rc;
    const json_t *cfg = cdsh_profile_config(profile, CDSH_MCPIMPORT_PLUGIN_NAME);
    enabled en;
    enabled_load(&en, cfg, false);
    *value = json_pack("{s:b, s:O, s:O, s:O}", "enabled",
                       cdsh_profile_enabled(profile, CDSH_MCPIMPORT_PLUGIN_NAME) == 1, "servers",
                       en.servers, "commands", en.commands, "skills", en.skills);
    enabled_deinit(&en);
    cdsh_profile_free(profile);
    return *value ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
}

/* ---- the table -------------------------------------------------------------- */

#define STRS "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}"
#define ROOT_PROPS                                                                                 \
    "\"roots\":" STRS ",\"claudeDir\":{\"type\":\"string\"},\"codexHome\":{\"type\":\"string\"},"  \
    "\"keyringAllow\":" STRS ","
#define PROFILE_PROP "\"profile\":{\"type\":\"string\"}"

static const cdsh_op ROWS[] = {
    {.name = "scan",
     .args_schema = "{\"type\":\"object\",\"properties\":{" ROOT_PROPS PROFILE_PROP
                    ",\"json\":{\"type\":\"boolean\"}}}",
     .result_schema = "{\"type\":\"object\",\"properties\":{\"sources\":{\"type\":\"array\"},"
                      "\"summary\":{\"type\":\"object\"},\"registered\":{\"type\":\"boolean\"}},"
                      "\"required\":[\"sources\",\"summary\",\"registered\"]}",
     .handler = op_scan,
     .cli_print = cdsh__mcpimport_print_scan,
     .surfaces = CDSH_OP_CLI,
     .flags = CDSH_OP_READ,
     .cli_parse = cdsh__mcpimport_cli_parse},
    {.name = "enable",
     .args_schema = "{\"type\":\"object\",\"properties\":{" ROOT_PROPS PROFILE_PROP
                    ",\"names\":" STRS ",\"all\":{\"type\":\"boolean\"}}}",
     .result_schema = "{\"type\":\"object\",\"properties\":{\"profile\":{\"type\":\"string\"},"
                      "\"added\":{\"type\":\"array\",\"items\":" STRS "},"
                      "\"refused\":{\"type\":\"object\",\"properties\":{\"why\":{\"type\":"
                      "\"string\",\"enum\":[\"unknown\",\"blocked\"]},\"what\":{\"type\":"
                      "\"string\"},\"name\":{\"type\":\"string\"},\"reasons\":{\"type\":"
                      "\"array\"}},\"required\":[\"why\",\"what\",\"name\"]}},"
                      "\"required\":[\"profile\",\"added\"]}",
     .handler = op_enable,
     .cli_print = cdsh__mcpimport_print_enable,
     .surfaces = CDSH_OP_CLI,
     .cli_parse = cdsh__mcpimport_cli_parse},
    {.name = "disable",
     .args_schema = "{\"type\":\"object\",\"properties\":{" PROFILE_PROP ",\"names\":" STRS
                    ",\"all\":{\"type\":\"boolean\"}}}",
     .result_schema = "{\"type\":\"object\",\"properties\":{\"disabled\":" STRS
                      ",\"all\":{\"type\":\"boolean\"},\"notEnabled\":{\"type\":\"string\"},"
                      "\"saveError\":{\"type\":\"string\"}},\"required\":[\"disabled\",\"all\"]}",
     .handler = op_disable,
     .cli_print = cdsh__mcpimport_print_disable,
     .surfaces = CDSH_OP_CLI,
     .cli_parse = cdsh__mcpimport_cli_parse},
    {.name = "list",
     .args_schema =
         "{\"type\":\"object\",\"properties\":{" PROFILE_PROP ",\"json\":{\"type\":\"boolean\"}}}",
     .result_schema = "{\"type\":\"object\",\"properties\":{\"enabled\":{\"type\":\"boolean\"},"
                      "\"servers\":" STRS ",\"commands\":" STRS ",\"skills\":" STRS "},"
                      "\"required\":[\"enabled\",\"servers\",\"commands\",\"skills\"]}",
     .handler = op_list,
     .cli_print = cdsh__mcpimport_print_list,
     .surfaces = CDSH_OP_CLI,
     .flags = CDSH_OP_READ,
     .cli_parse = cdsh__mcpimport_cli_parse},
};

static const cdsh_ops_table TABLE = {
    .plugin = CDSH_MCPIMPORT_PLUGIN_NAME,
    .ops = ROWS,
    .n_ops = sizeof ROWS / sizeof ROWS[0],
    .cli_group = "import",
    .cli_usage = cdsh__mcpimport_cli_usage,
};

const cdsh_ops_table *cdsh_mcpimport_ops_table(void)
{
    return &TABLE;
}
