/* normalise.c — server configs (Claude JSON dialects, Codex TOML) → server IR.
 * Pure: no file, environment or PATH access; secrets.c resolves references
 * and preflight.c judges the result. */
#include "plugins/mcpimport/normalise.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "plugins/mcpimport/vars.h"

typedef struct norm {
    json_t *ir;
    json_t *warnings;
    json_t *unresolved;
    bool codex;
    const char *root; /* plugin install dir, or NULL */
    const char *data; /* plugin data dir, or NULL */
} norm;

char *cdsh_mcpimport_server_name_dup(const char *raw)
{
    size_t n = raw ? strlen(raw) : 0;
    if (n > 32)
        n = 32;
    if (n == 0)
        return strdup("server");
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)raw[i];
        s[i] = (isalnum(c) && c < 128) || c == '_' || c == '-' ? (char)c : '-';
    }
    s[n] = '\0';
    return s;
}

/* ${CLAUDE_PLUGIN_ROOT} / ${CLAUDE_PLUGIN_DATA} substitution (plugins only). */
static char *plugin_subst_dup(const norm *n, const char *s)
{
    char *a = n->root ? cdsh_mcpimport_vars_subst_dup(s, "CLAUDE_PLUGIN_ROOT", n->root) : strdup(s);
    if (!a || !n->data)
        return a;
    char *b = cdsh_mcpimport_vars_subst_dup(a, "CLAUDE_PLUGIN_DATA", n->data);
    free(a);
    return b;
}

/* A string value of the IR: plugin variables substituted, references
 * recorded (Claude) or flagged as literal (Codex does no expansion). */
static json_t *text_value(norm *n, const char *s, const char *kind, const char *field)
{
    char *v = plugin_subst_dup(n, s);
    if (!v)
        return NULL;
    if (n->codex) {
        if (strstr(v, "${"))
            cdsh__mcpimport_warnf(
                n->warnings,
                "%s contains \"${\": Codex passes it literally (no expansion); so does cdsh",
                field);
    } else {
        cdsh_mcpimport_vars_scan(v, kind, field, n->unresolved);
        if (strstr(v, "${CLAUDE_PLUGIN_ROOT}") || strstr(v, "${CLAUDE_PLUGIN_DATA}"))
            cdsh__mcpimport_warnf(
                n->warnings, "%s uses a plugin variable outside a plugin; left unresolved", field);
    }
    json_t *out = json_string(v);
    free(v);
    return out;
}

/* A scalar as text for args/env/headers, with a warning when it was not a string. */
static json_t *scalar_text(norm *n, const json_t *v, const char *kind, const char *field,
                           const char *what)
{
    if (json_is_string(v))
        return text_value(n, json_string_value(v), kind, field);
    char buf[64];
    if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, sizeof buf, "%g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, sizeof buf, "%s", json_is_true(v) ? "true" : "false");
    else {
        cdsh__mcpimport_warnf(n->warnings, "%s is %s, not a string; dropped", field,
                              json_is_null(v)    ? "null"
                              : json_is_array(v) ? "an array"
                                                 : "an object");
        return NULL;
    }
    cdsh__mcpimport_warnf(n->warnings, "%s is a %s (%s), not a string; passed as the string \"%s\"",
                          field, json_is_boolean(v) ? "boolean" : "number", buf, buf);
    (void)what;
    return json_string(buf);
}

static void set_args(norm *n, const json_t *v)
{
    if (!json_is_array(v)) {
        cdsh__mcpimport_warnf(n->warnings, "args is not an array; ignored");
        return;
    }
    json_t *args = json_object_get(n->ir, "args");
    size_t i;
    json_t *a;
    json_array_foreach(v, i, a) {
        char field[32];
        snprintf(field, sizeof field, "args[%zu]", i);
        json_t *s = scalar_text(n, a, "arg", field, "argument");
        if (s)
            json_array_append_new(args, s);
    }
}

static void set_map(norm *n, const char *key, const char *kind, const json_t *v)
{
    if (!json_is_object(v)) {
        cdsh__mcpimport_warnf(n->warnings, "%s is not an object; ignored", key);
        return;
    }
    json_t *dst = json_object_get(n->ir, key);
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        char field[160];
        snprintf(field, sizeof field, "%s.%s", key, k);
        json_t *s = scalar_text(n, x, kind, field, "value");
        if (s)
            json_object_set_new(dst, k, s);
    }
}

static void set_text(norm *n, const char *key, const char *kind, const json_t *v)
{
    if (!json_is_string(v)) {
        cdsh__mcpimport_warnf(n->warnings, "%s is not a string; ignored", key);
        return;
    }
    json_t *s = text_value(n, json_string_value(v), kind, key);
    if (s)
        json_object_set_new(n->ir, key, s);
}

static void set_string_list(norm *n, const char *key, const char *src_key, const json_t *v)
{
    if (!json_is_array(v)) {
        cdsh__mcpimport_warnf(n->warnings, "%s is not an array of strings; ignored", src_key);
        return;
    }
    json_t *list = json_array();
    size_t i;
    json_t *a;
    json_array_foreach(v, i, a) {
        if (json_is_string(a))
            json_array_append(list, a);
        else
            cdsh__mcpimport_warnf(n->warnings, "%s[%zu] is not a string; dropped", src_key, i);
    }
    json_object_set_new(n->ir, key, list);
}

static void set_timeout(norm *n, const char *key, const char *src_key, const json_t *v,
                        double scale)
{
    if (!json_is_number(v) || json_number_value(v) <= 0 || !isfinite(json_number_value(v))) {
        cdsh__mcpimport_warnf(n->warnings, "%s is not a positive number; ignored", src_key);
        return;
    }
    json_object_set_new(n->ir, key,
                        json_integer((json_int_t)llround(json_number_value(v) * scale)));
}

/* Resolves a relative command path against the plugin directory. */
static void resolve_command(norm *n)
{
    const char *cmd = json_string_value(json_object_get(n->ir, "command"));
    if (!cmd || cmd[0] == '/' || !strchr(cmd, '/'))
        return;
    if (!n->root) {
        cdsh__mcpimport_warnf(
            n->warnings,
            "command \"%s\" is a relative path outside a plugin; it is resolved against the "
            "working directory at start",
            cmd);
        return;
    }
    char *abs = cdsh_fs_path_join_dup(n->root, cmd);
    if (abs)
        json_object_set_new(n->ir, "command", json_string(abs));
    free(abs);
}

/* The IR with every field at its default, in the documented key order.
 * Built without json_pack (a scan of 20 000 servers builds one per server)
 * and with the file's provenance shared, not copied, unless the name was
 * mapped (then the copy says the original name). */
static json_t *new_ir(const char *raw, const json_t *prov)
{
    char *name = cdsh_mcpimport_server_name_dup(raw);
    bool mapped = name && strcmp(name, raw) != 0;
    json_t *p = mapped ? json_deep_copy(prov) : json_incref((json_t *)prov);
    if (mapped && p)
        json_object_set_new(p, "originalName", json_string(raw));
    static const char *const keys[] = {
        "name",          "transport",  "url",      "headers",     "command",
        "args",          "env",        "cwd",      "toolCallTimeoutMs",
        "startupTimeoutMs", "enabledTools", "disabledTools", "unresolved",
        "warnings",      "info",       "provenance"};
    json_t *ir = json_object();
    json_t *nm = name ? json_string(name) : NULL;
    bool ok = ir && nm && p;
    for (size_t i = 0; ok && i < sizeof keys / sizeof *keys; i++) {
        const char *k = keys[i];
        json_t *v = i == 0                                                  ? json_incref(nm)
                    : i == 15                                               ? json_incref(p)
                    : strcmp(k, "headers") == 0 || strcmp(k, "env") == 0    ? json_object()
                    : strcmp(k, "args") == 0 || i >= 12                     ? json_array()
                                                                            : json_null();
        ok = v && json_object_set_new_nocheck(ir, k, v) == 0;
    }
    json_decref(nm);
    json_decref(p);
    if (!ok) {
        json_decref(ir);
        free(name);
        return NULL;
    }
    if (mapped)
        cdsh__mcpimport_warnf(json_object_get(ir, "info"),
                              "server name \"%s\" is not a valid DSH server name; mapped to \"%s\"",
                              raw, name);
    free(name);
    return ir;
}

static void claude_server(norm *n, const json_t *obj)
{
    const json_t *type = json_object_get(obj, "type");
    const char *t = json_string_value(type);
    if (!type || (t && strcmp(t, "stdio") == 0)) {
        if (!json_object_get(obj, "command") && json_object_get(obj, "url")) {
            json_object_set_new(n->ir, "transport", json_string("streamable-http"));
            cdsh__mcpimport_warnf(n->warnings,
                                  "url without \"type\" (Claude Code would treat it as a broken "
                                  "stdio server); assumed streamable-http");
        } else
            json_object_set_new(n->ir, "transport", json_string("stdio"));
    } else if (t && (strcmp(t, "http") == 0 || strcmp(t, "streamable-http") == 0))
        json_object_set_new(n->ir, "transport", json_string("streamable-http"));
    else if (t && strcmp(t, "sse") == 0)
        cdsh__mcpimport_warnf(n->warnings,
                              "transport \"sse\" (deprecated HTTP+SSE) is not supported by DSH's "
                              "MCP client (stdio and streamable-http only)");
    else
        cdsh__mcpimport_warnf(n->warnings,
                              "transport \"%s\" is not supported (stdio and streamable-http only)",
                              t ? t : "?");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        if (strcmp(k, "type") == 0)
            continue;
        if (strcmp(k, "command") == 0)
            set_text(n, "command", "command", v);
        else if (strcmp(k, "args") == 0)
            set_args(n, v);
        else if (strcmp(k, "env") == 0)
            set_map(n, "env", "env", v);
        else if (strcmp(k, "url") == 0 || strcmp(k, "httpUrl") == 0) {
            set_text(n, "url", "url", v);
            if (strcmp(k, "httpUrl") == 0)
                cdsh__mcpimport_warnf(n->warnings,
                                      "\"httpUrl\" (another host's spelling) read as url");
        } else if (strcmp(k, "headers") == 0)
            set_map(n, "headers", "header", v);
        else if (strcmp(k, "timeout") == 0)
            set_timeout(n, "toolCallTimeoutMs", k, v, 1.0);
        else if (strcmp(k, "cwd") == 0) {
            set_text(n, "cwd", "cwd", v);
            cdsh__mcpimport_warnf(n->warnings,
                                  "\"cwd\" is not in Claude Code's schema (Claude ignores it); "
                                  "cdsh uses it as the working directory");
        } else if (strcmp(k, "oauth") == 0)
            cdsh__mcpimport_warnf(n->warnings,
                                  "OAuth (\"oauth\") is not supported: DSH's client sends static "
                                  "headers only");
        else if (strcmp(k, "headersHelper") == 0)
            cdsh__mcpimport_warnf(
                n->warnings, "\"headersHelper\" (a command printing headers) is not supported; "
                             "put the headers in the config instead");
        else if (strcmp(k, "tools") == 0 || strcmp(k, "toolPermissions") == 0)
            cdsh__mcpimport_warnf(n->warnings,
                                  "per-tool permission policies (\"%s\") are not imported", k);
        else if (strcmp(k, "alwaysLoad") == 0 || strcmp(k, "discoveryCache") == 0)
            cdsh__mcpimport_warnf(n->warnings, "\"%s\" has no cdsh equivalent; ignored", k);
        else
            cdsh__mcpimport_warnf(n->warnings, "unknown key \"%s\" ignored", k);
    }
}

static bool is_ignored_codex_key(const char *k)
{
    static const char *const keys[] = {"required",
                                       "default_tools_approval_mode",
                                       "tools",
                                       "supports_parallel_tool_calls",
                                       "omit_tools_from",
                                       "environment_id",
                                       NULL};
    for (const char *const *p = keys; *p; p++)
        if (strcmp(*p, k) == 0)
            return true;
    return false;
}

static void codex_env_vars(norm *n, const json_t *v)
{
    if (!json_is_array(v)) {
        cdsh__mcpimport_warnf(n->warnings, "env_vars is not an array; ignored");
        return;
    }
    json_t *env = json_object_get(n->ir, "env");
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        const char *name = json_string_value(e);
        const char *src = "local";
        if (json_is_object(e)) {
            name = json_string_value(json_object_get(e, "name"));
            if (json_is_string(json_object_get(e, "source")))
                src = json_string_value(json_object_get(e, "source"));
        }
        if (!name || strcmp(src, "local") != 0) {
            cdsh__mcpimport_warnf(n->warnings,
                                  "env_vars[%zu] is not a local variable name; ignored", i);
            continue;
        }
        char ref[300], field[300];
        snprintf(ref, sizeof ref, "${%s}", name);
        snprintf(field, sizeof field, "env.%s", name);
        json_object_set_new(env, name, json_string(ref));
        json_t *list = json_array();
        cdsh_mcpimport_vars_scan(ref, "env", field, list);
        json_t *r = json_array_get(list, 0);
        if (r) {
            json_object_set_new(r, "optional", json_true());
            json_array_append(n->unresolved, r);
        }
        json_decref(list);
    }
}

/* A header whose value comes from an environment variable (Codex). */
static void header_ref(norm *n, const char *header, const char *prefix, const char *var,
                       bool optional)
{
    if (!var || !*var) {
        cdsh__mcpimport_warnf(n->warnings, "header \"%s\": the variable name is empty; ignored",
                              header);
        return;
    }
    char val[400], field[300];
    snprintf(val, sizeof val, "%s${%s}", prefix, var);
    snprintf(field, sizeof field, "headers.%s", header);
    json_object_set_new(json_object_get(n->ir, "headers"), header, json_string(val));
    json_t *list = json_array();
    cdsh_mcpimport_vars_scan(val, "header", field, list);
    json_t *r = json_array_get(list, 0);
    if (r) {
        if (optional)
            json_object_set_new(r, "optional", json_true());
        json_array_append(n->unresolved, r);
    }
    json_decref(list);
}

static void codex_server(norm *n, const json_t *obj)
{
    bool has_cmd = json_object_get(obj, "command") != NULL;
    bool has_url = json_object_get(obj, "url") != NULL;
    if (has_cmd && has_url)
        cdsh__mcpimport_warnf(n->warnings,
                              "both command and url: Codex refuses this (\"url is not supported "
                              "for stdio\")");
    else if (has_cmd)
        json_object_set_new(n->ir, "transport", json_string("stdio"));
    else if (has_url)
        json_object_set_new(n->ir, "transport", json_string("streamable-http"));
    else
        cdsh__mcpimport_warnf(
            n->warnings, "neither command nor url: Codex refuses this (\"invalid transport\")");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        if (strcmp(k, "command") == 0)
            set_text(n, "command", "command", v);
        else if (strcmp(k, "args") == 0)
            set_args(n, v);
        else if (strcmp(k, "env") == 0)
            set_map(n, "env", "env", v);
        else if (strcmp(k, "cwd") == 0)
            set_text(n, "cwd", "cwd", v);
        else if (strcmp(k, "url") == 0)
            set_text(n, "url", "url", v);
        else if (strcmp(k, "http_headers") == 0)
            set_map(n, "headers", "header", v);
        else if (strcmp(k, "bearer_token_env_var") == 0)
            header_ref(n, "Authorization", "Bearer ", json_string_value(v), false);
        else if (strcmp(k, "env_http_headers") == 0 && json_is_object(v)) {
            const char *h;
            json_t *e;
            json_object_foreach(v, h, e) {
                header_ref(n, h, "", json_string_value(e), true);
            }
        } else if (strcmp(k, "env_vars") == 0)
            codex_env_vars(n, v);
        else if (strcmp(k, "startup_timeout_sec") == 0)
            set_timeout(n, "startupTimeoutMs", k, v, 1000.0);
        else if (strcmp(k, "startup_timeout_ms") == 0)
            set_timeout(n, "startupTimeoutMs", k, v, 1.0);
        else if (strcmp(k, "tool_timeout_sec") == 0)
            set_timeout(n, "toolCallTimeoutMs", k, v, 1000.0);
        else if (strcmp(k, "enabled_tools") == 0)
            set_string_list(n, "enabledTools", k, v);
        else if (strcmp(k, "disabled_tools") == 0)
            set_string_list(n, "disabledTools", k, v);
        else if (strcmp(k, "enabled") == 0) {
            if (json_is_false(v))
                cdsh__mcpimport_warnf(n->warnings,
                                      "disabled in the Codex config (enabled = false)");
        } else if (strcmp(k, "http_headers_helper") == 0)
            cdsh__mcpimport_warnf(n->warnings,
                                  "\"http_headers_helper\" (a command printing headers) is not "
                                  "supported; put the headers in the config instead");
        else if (strcmp(k, "auth") == 0 || strcmp(k, "oauth") == 0 || strcmp(k, "scopes") == 0 ||
                 strcmp(k, "oauth_resource") == 0)
            cdsh__mcpimport_warnf(n->warnings,
                                  "OAuth (\"%s\") is not supported: DSH's client sends static "
                                  "headers only",
                                  k);
        else if (strcmp(k, "bearer_token") == 0)
            cdsh__mcpimport_warnf(n->warnings,
                                  "a literal \"bearer_token\" is refused by Codex; ignored (use "
                                  "bearer_token_env_var)");
        else if (strcmp(k, "type") == 0)
            cdsh__mcpimport_warnf(n->warnings,
                                  "\"type\" is not a Codex key (transport follows command/url); "
                                  "ignored");
        else if (strcmp(k, "name") == 0)
            cdsh__mcpimport_warnf(
                n->warnings, "legacy \"name\" key ignored (the table name is the server name)");
        else if (is_ignored_codex_key(k))
            cdsh__mcpimport_warnf(n->warnings, "\"%s\" has no cdsh equivalent; ignored", k);
        else
            cdsh__mcpimport_warnf(n->warnings, "unknown key \"%s\" ignored", k);
    }
}

static int add_server(const json_t *cand, bool codex, const char *raw, const json_t *obj,
                      json_t *servers)
{
    norm n = {0};
    n.codex = codex;
    n.root = json_string_value(json_object_get(cand, "pluginRoot"));
    n.data = json_string_value(json_object_get(cand, "pluginData"));
    n.ir = new_ir(raw, json_object_get(cand, "provenance"));
    n.warnings = json_object_get(n.ir, "warnings");
    n.unresolved = json_object_get(n.ir, "unresolved");
    if (codex)
        codex_server(&n, obj);
    else
        claude_server(&n, obj);
    resolve_command(&n);
    const json_t *ap = json_object_get(cand, "approval");
    if (ap) { /* a project .mcp.json server: Claude Code's approval state (discover.c) */
        const json_t *all = json_object_get(ap, "enableAll");
        const json_t *dis = json_object_get(json_object_get(ap, "disabled"), raw);
        const json_t *en = json_object_get(json_object_get(ap, "enabled"), raw);
        json_t *st = dis ? json_pack("{s:s, s:s, s:O}", "state", "rejected", "by",
                                     "disabledMcpjsonServers", "file", dis)
                     : en ? json_pack("{s:s, s:s, s:O}", "state", "approved", "by",
                                      "enabledMcpjsonServers", "file", en)
                     : json_is_true(json_object_get(all, "value"))
                         ? json_pack("{s:s, s:s, s:O}", "state", "approved", "by",
                                     "enableAllProjectMcpServers", "file",
                                     json_object_get(all, "file"))
                         : json_pack("{s:s}", "state", "pending");
        json_object_set_new(n.ir, "approval", st);
    }
    const char *tr = json_string_value(json_object_get(n.ir, "transport"));
    if (tr && strcmp(tr, "stdio") == 0 && json_object_size(json_object_get(n.ir, "headers")))
        cdsh__mcpimport_warnf(n.warnings, "headers are ignored for a stdio server");
    json_array_append_new(servers, n.ir);
    return 1;
}

static bool looks_like_server(const json_t *v)
{
    return json_is_object(v) && (json_object_get(v, "command") || json_object_get(v, "url") ||
                                 json_object_get(v, "type") || json_object_get(v, "httpUrl"));
}

static int add_map(const json_t *cand, const json_t *map, json_t *servers, json_t *notes,
                   const char *where)
{
    int count = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)map, k, v) {
        if (looks_like_server(v))
            count += add_server(cand, false, k, v, servers);
        else
            cdsh__mcpimport_warnf(
                notes, "%s\"%s\" is not a server (no command, url or type); ignored", where, k);
    }
    return count;
}

int cdsh_mcpimport_normalise(const json_t *cand, json_t *servers, json_t *notes)
{
    const char *format = json_string_value(json_object_get(cand, "format"));
    const json_t *doc = json_object_get(cand, "document");
    if (!format || !doc)
        return 0;
    if (strcmp(format, "codex-toml") == 0) {
        const json_t *t = json_object_get(doc, "mcp_servers");
        if (!t)
            return 0;
        if (!json_is_object(t)) {
            cdsh__mcpimport_warnf(notes, "mcp_servers is not a table; ignored");
            return 0;
        }
        int count = 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)t, k, v) {
            if (json_is_object(v))
                count += add_server(cand, true, k, v, servers);
            else
                cdsh__mcpimport_warnf(notes, "mcp_servers.%s is not a table; ignored", k);
        }
        return count;
    }
    if (json_is_array(doc)) { /* array dialect: server objects with "name", or maps */
        int count = 0;
        size_t i;
        json_t *e;
        json_array_foreach(doc, i, e) {
            const char *name = json_string_value(json_object_get(e, "name"));
            if (name && looks_like_server(e)) {
                json_t *copy = json_deep_copy(e);
                json_object_del(copy, "name");
                count += add_server(cand, false, name, copy, servers);
                json_decref(copy);
            } else if (json_is_object(e))
                count += add_map(cand, e, servers, notes, "");
            else
                cdsh__mcpimport_warnf(notes,
                                      "entry %zu of the server array is not an object; ignored", i);
        }
        return count;
    }
    if (!json_is_object(doc)) {
        cdsh__mcpimport_warnf(notes, "the document is not an object or array of servers; ignored");
        return 0;
    }
    const json_t *wrapped = json_object_get(doc, "mcpServers");
    const char *wrap_key = "mcpServers";
    if (!wrapped && json_is_object(json_object_get(doc, "servers"))) {
        wrapped = json_object_get(doc, "servers");
        wrap_key = "servers";
        cdsh__mcpimport_warnf(notes, "VS Code dialect (\"servers\") read best effort");
    }
    if (!wrapped)
        return add_map(cand, doc, servers, notes, "top-level key ");
    if (!json_is_object(wrapped)) {
        cdsh__mcpimport_warnf(notes, "%s is not an object; ignored", wrap_key);
        return 0;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)doc, k, v) {
        if (strcmp(k, wrap_key) != 0)
            cdsh__mcpimport_warnf(notes, "top-level key \"%s\" ignored", k);
    }
    return add_map(cand, wrapped, servers, notes, "");
}
