/* preflight.c — verdicts with reasons for server, command and skill IR. No I/O:
 * machine facts come through the probe. */
#include "plugins/mcpimport/preflight.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "plugins/mcpimport/skills.h"

static const char *str(const json_t *o, const char *k);
static void reason(json_t *ir, const char *level, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reason(json_t *ir, const char *level, const char *code, const char *fmt, ...)
{
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_t *reasons = json_object_get(ir, "reasons");
    size_t i;
    json_t *r;
    json_array_foreach(reasons, i, r) { /* an identical reason is given once */
        if (strcmp(str(r, "message"), buf) == 0 && strcmp(str(r, "code"), code) == 0 &&
            strcmp(str(r, "level"), level) == 0)
            return;
    }
    /* Built by hand, not with json_pack: a scan of 20 000 servers makes several
     * per server. level and code are this file's constants; the message is
     * checked (a reason quoting a path that is not UTF-8 is dropped, as
     * json_pack dropped it). */
    json_t *m = json_string(buf);
    json_t *o = m ? json_object() : NULL;
    if (o && json_object_set_new_nocheck(o, "level", json_string_nocheck(level)) == 0 &&
        json_object_set_new_nocheck(o, "code", json_string_nocheck(code)) == 0 &&
        json_object_set_new_nocheck(o, "message", json_incref(m)) == 0)
        json_array_append(reasons, o);
    json_decref(o);
    json_decref(m);
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static const char *base_name(const char *cmd)
{
    const char *s = strrchr(cmd, '/');
    return s ? s + 1 : cmd;
}

static void where_prov(const json_t *p, char *buf, size_t n)
{
    const char *plugin = str(p, "plugin");
    snprintf(buf, n, "%s (%s, %s%s%s)", str(p, "file") ? str(p, "file") : "?",
             str(p, "source") ? str(p, "source") : "?", str(p, "scope") ? str(p, "scope") : "?",
             plugin ? ", " : "", plugin ? plugin : "");
}

static void where(const json_t *ir, char *buf, size_t n)
{
    where_prov(json_object_get(ir, "provenance"), buf, n);
}

static void check_stdio(json_t *ir, const cdsh_mcpimport_probe *probe)
{
    const char *cmd = str(ir, "command");
    if (!cmd || !*cmd) {
        reason(ir, "blocked", "NO_COMMAND", "stdio server without a command");
        return;
    }
    if (strstr(cmd, "${") || !probe || !probe->program_found)
        return;
    const char *b = base_name(cmd);
    bool runtime = strcmp(b, "npx") == 0 || strcmp(b, "uvx") == 0 || strcmp(b, "docker") == 0;
    if (!probe->program_found(probe->ud, cmd)) {
        if (runtime)
            reason(ir, "blocked", "RUNTIME_MISSING", "%s is not installed (not on PATH): %s", b,
                   strcmp(b, "npx") == 0   ? "install Node.js"
                   : strcmp(b, "uvx") == 0 ? "install uv (https://docs.astral.sh/uv/)"
                                           : "install Docker");
        else if (strchr(cmd, '\\') || (cmd[0] && cmd[1] == ':'))
            reason(ir, "blocked", "COMMAND_NOT_FOUND",
                   "command \"%s\" is a Windows path; it does not exist on this machine", cmd);
        else if (strchr(cmd, '/'))
            reason(ir, "blocked", "COMMAND_NOT_FOUND",
                   "command \"%s\" does not exist or is not "
                   "executable",
                   cmd);
        else
            reason(ir, "blocked", "COMMAND_NOT_FOUND", "command \"%s\" is not on PATH", cmd);
        return;
    }
    if (strcmp(b, "docker") == 0 && probe->docker_reachable && !probe->docker_reachable(probe->ud))
        reason(ir, "blocked", "DOCKER_UNREACHABLE",
               "the Docker daemon is not reachable (docker info failed); start Docker first");
}

static bool url_valid(const char *u)
{
    const char *rest = strncmp(u, "https://", 8) == 0  ? u + 8
                       : strncmp(u, "http://", 7) == 0 ? u + 7
                                                       : NULL;
    if (!rest || !*rest || *rest == '/' || *rest == ':')
        return false;
    for (const char *p = u; *p; p++)
        if ((unsigned char)*p <= ' ')
            return false;
    return true;
}

static void check_secrets(json_t *ir)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(ir, "unresolved"), i, r) {
        const char *from = str(r, "resolvedFrom");
        const char *var = str(r, "envVar"), *field = str(r, "field");
        if (from && (strcmp(from, "env") == 0 || strcmp(from, "keyring") == 0))
            continue;
        if (json_is_string(json_object_get(r, "fallback")))
            reason(ir, "info", "DEFAULT_USED",
                   "${%s} (%s) is not set; its default is used, as Claude Code does", var, field);
        else if (json_is_true(json_object_get(r, "optional")))
            reason(ir, "info", "OPTIONAL_UNSET",
                   "${%s} (%s) is not set; %s is left out, as Codex does", var, field, field);
        else
            reason(ir, "blocked", "UNRESOLVED_SECRET",
                   "${%s} (%s) is not set: export %s, or store it in the keyring and allow it "
                   "(keyringAllow)",
                   var, field, var);
    }
}

static void finish(json_t *ir)
{
    const char *v = "ok";
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(ir, "info"), i, r) {
        reason(ir, "info", "MAPPING", "%s", json_string_value(r));
    }
    json_array_foreach(json_object_get(ir, "reasons"), i, r) {
        if (strcmp(str(r, "level"), "blocked") == 0)
            v = "blocked";
        else if (strcmp(str(r, "level"), "warn") == 0 && strcmp(v, "ok") == 0)
            v = "warn";
    }
    json_object_set_new(ir, "verdict", json_string(v));
}

static const char *raw_name(const json_t *ir, const char *orig_key)
{
    const char *o = str(json_object_get(ir, "provenance"), orig_key);
    if (!o)
        o = str(ir, orig_key);
    return o ? o : str(ir, "name");
}

/* Collisions: the first of a name wins, later ones are blocked. One pass
 * with a name index (linear in the number of items). */
static void check_names(json_t *list, const char *orig_key, const char *dup_code, const char *what)
{
    size_t i;
    json_t *a, *b;
    json_t *first = json_object();
    json_array_foreach(list, i, a) {
        const char *name = str(a, "name");
        if (!name)
            continue;
        b = json_object_get(first, name);
        if (!b) {
            json_object_set(first, name, a);
            continue;
        }
        {
            char wa[512], wb[512];
            where(a, wa, sizeof wa);
            where(b, wb, sizeof wb);
            if (strcmp(raw_name(a, orig_key), raw_name(b, orig_key)) != 0)
                reason(a, "blocked", "NAME_COLLISION",
                       "\"%s\" and \"%s\" (%s) both become %s \"%s\"", raw_name(a, orig_key),
                       raw_name(b, orig_key), wb, what, str(a, "name"));
            else {
                reason(a, "blocked", dup_code,
                       "%s \"%s\" is also defined in %s, which takes "
                       "precedence",
                       what, str(a, "name"), wb);
                reason(b, "info", dup_code,
                       "%s \"%s\" is also defined in %s, which this one shadows (as in Claude "
                       "Code)",
                       what, str(a, "name"), wa);
            }
        }
    }
    json_decref(first);
}

/* Every `` !`cmd` `` / `@file` and every warning of command or skill IR as a
 * warn reason (a warning that restates an unsupported feature is not repeated). */
static void loss_reasons(json_t *ir)
{
    size_t k;
    json_t *w;
    json_array_foreach(json_object_get(ir, "unsupported"), k, w) {
        reason(ir, "warn", "UNSUPPORTED_FEATURE", "%s \"%s\" is not supported",
               strcmp(str(w, "feature"), "shell") == 0 ? "!`cmd`" : "@file", str(w, "text"));
    }
    json_array_foreach(json_object_get(ir, "warnings"), k, w) {
        const char *m = json_string_value(w);
        if (!strstr(m, "is not supported: ")) /* already a reason above */
            reason(ir, "warn", "SEMANTIC_LOSS", "%s", m);
    }
}

/* The fields judging reads of JSON command IR ir, as a struct in l. */
static bool cmd_of_json(cdsh__mcpimport_cmds *l, const json_t *ir)
{
    cdsh__mcpimport_arena *a = &l->arena;
    cdsh__mcpimport_cmd *c = cdsh__mcpimport_arena_alloc(a, sizeof *c);
    if (!c)
        return false;
    memset(c, 0, sizeof *c);
    c->name = cdsh__mcpimport_arena_strdup(a, str(ir, "name"));
    c->original = cdsh__mcpimport_arena_strdup(a, str(ir, "originalName"));
    c->prompt = cdsh__mcpimport_arena_strdup(a, str(ir, "prompt"));
    const json_t *uns = json_object_get(ir, "unsupported");
    size_t n = json_array_size(uns);
    c->unsupported.v = n ? cdsh__mcpimport_arena_alloc(a, 2 * n * sizeof(char *)) : NULL;
    for (size_t i = 0; c->unsupported.v && i < n; i++) {
        const json_t *w = json_array_get(uns, i);
        c->unsupported.v[c->unsupported.n++] = str(w, "feature"); /* borrowed from ir */
        c->unsupported.v[c->unsupported.n++] = str(w, "text");
    }
    if (!cdsh__mcpimport_strv_from_json(a, json_object_get(ir, "warnings"), &c->warnings) ||
        !cdsh__mcpimport_strv_from_json(a, json_object_get(ir, "info"), &c->info) ||
        (n && !c->unsupported.v) || !cdsh__mcpimport_cmds_push(l, c))
        return false;
    c->provenance = json_incref(json_object_get(ir, "provenance"));
    return true;
}

void cdsh_mcpimport_preflight(json_t *servers, json_t *commands, const cdsh_mcpimport_probe *probe)
{
    size_t i;
    json_t *ir;
    json_array_foreach(servers, i, ir) {
        json_object_set_new(ir, "reasons", json_array());
        const char *t = str(ir, "transport");
        if (!t)
            reason(ir, "blocked", "UNSUPPORTED_TRANSPORT",
                   "no supported transport (DSH's client speaks stdio and streamable-http)");
        else if (strcmp(t, "stdio") == 0)
            check_stdio(ir, probe);
        else {
            const char *u = str(ir, "url");
            if (!u || (!strstr(u, "${") && !url_valid(u)))
                reason(ir, "blocked", "INVALID_URL", "url \"%s\" is not an http(s) URL",
                       u ? u : "");
        }
        check_secrets(ir);
        const json_t *ap = json_object_get(ir, "approval");
        const char *state = str(ap, "state");
        if (state && strcmp(state, "rejected") == 0)
            reason(ir, "warn", "DISABLED_IN_SOURCE",
                   "disabled in Claude Code (%s in %s): it does not start this project server",
                   str(ap, "by"), str(ap, "file"));
        else if (state && strcmp(state, "pending") == 0)
            reason(ir, "warn", "NOT_APPROVED",
                   "Claude Code asks before starting a server of a project's .mcp.json, and this "
                   "one is not approved (enabledMcpjsonServers / enableAllProjectMcpServers); "
                   "`cdsh import enable` is the approval here");
        else if (state)
            reason(ir, "info", "APPROVED", "approved for this project (%s in %s)", str(ap, "by"),
                   str(ap, "file"));
    }
    check_names(servers, "originalName", "DUPLICATE_SERVER", "server");
    json_array_foreach(servers, i, ir) {
        size_t k;
        json_t *w;
        json_array_foreach(json_object_get(ir, "warnings"), k, w) {
            const char *m = json_string_value(w);
            reason(ir, "warn",
                   strncmp(m, "disabled in", 11) == 0 ? "DISABLED_IN_SOURCE" : "SEMANTIC_LOSS",
                   "%s", m);
        }
        finish(ir);
    }
    if (!json_array_size(commands))
        return;
    /* Commands are judged as structs (cmdir.h), as the scan holds them. */
    cdsh__mcpimport_cmds l;
    cdsh__mcpimport_cmds_init(&l);
    bool ok = true;
    json_array_foreach(commands, i, ir) {
        ok = ok && cmd_of_json(&l, ir);
    }
    if (ok) {
        cdsh__mcpimport_preflight_cmds(&l);
        for (i = 0; i < l.n; i++) {
            ir = json_array_get(commands, i);
            json_object_set_new(ir, "reasons", cdsh__mcpimport_cmd_reasons_json(l.v[i]));
            json_object_set_new(ir, "verdict", json_string(l.v[i]->verdict));
        }
    }
    cdsh__mcpimport_cmds_deinit(&l);
}

/* ---- commands (C structs) ---------------------------------------------------- */

static void cmd_reason(cdsh__mcpimport_cmds *l, cdsh__mcpimport_cmd *c, const char *level,
                       const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void cmd_reason(cdsh__mcpimport_cmds *l, cdsh__mcpimport_cmd *c, const char *level,
                       const char *code, const char *fmt, ...)
{
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!cdsh_utf8_valid(buf, strlen(buf))) /* as the JSON reasons: such a reason is dropped */
        return;
    for (size_t i = 0; i < c->n_reasons; i++) /* an identical reason is given once */
        if (strcmp(c->reasons[i].message, buf) == 0 && strcmp(c->reasons[i].code, code) == 0 &&
            strcmp(c->reasons[i].level, level) == 0)
            return;
    if (c->n_reasons == c->cap_reasons) {
        size_t nc = c->cap_reasons ? c->cap_reasons * 2 : 4;
        cdsh__mcpimport_reason *g = realloc(c->reasons, nc * sizeof *g);
        if (!g)
            return;
        c->reasons = g;
        c->cap_reasons = nc;
    }
    const char *m = cdsh__mcpimport_arena_strdup(&l->arena, buf);
    if (m) /* level and code are this file's constants */
        c->reasons[c->n_reasons++] = (cdsh__mcpimport_reason){level, code, m};
}

static const char *cmd_raw_name(const cdsh__mcpimport_cmd *c)
{
    const char *o = str(c->provenance, "originalName");
    return o ? o : c->original ? c->original : c->name;
}

void cdsh__mcpimport_preflight_cmds(cdsh__mcpimport_cmds *l)
{
    for (size_t i = 0; i < l->n; i++) {
        cdsh__mcpimport_cmd *c = l->v[i];
        c->n_reasons = 0;
        const char *p = c->prompt;
        size_t n = p ? strspn(p, " \t\r\n") : 0;
        if (!p || !p[n])
            cmd_reason(l, c, "blocked", "EMPTY_PROMPT", "the command has no prompt text");
    }
    /* Collisions: the first of a name wins, later ones are blocked. */
    cdsh__mcpimport_index first = {0};
    for (size_t i = 0; i < l->n; i++) {
        cdsh__mcpimport_cmd *a = l->v[i], *b;
        if (!a->name || !(b = cdsh__mcpimport_index_first(&first, a->name, a)))
            continue;
        char wa[512], wb[512];
        where_prov(a->provenance, wa, sizeof wa);
        where_prov(b->provenance, wb, sizeof wb);
        if (strcmp(cmd_raw_name(a), cmd_raw_name(b)) != 0)
            cmd_reason(l, a, "blocked", "NAME_COLLISION",
                       "\"%s\" and \"%s\" (%s) both become command \"%s\"", cmd_raw_name(a),
                       cmd_raw_name(b), wb, a->name);
        else {
            cmd_reason(l, a, "blocked", "DUPLICATE_COMMAND",
                       "command \"%s\" is also defined in %s, which takes precedence", a->name, wb);
            cmd_reason(l, b, "info", "DUPLICATE_COMMAND",
                       "command \"%s\" is also defined in %s, which this one shadows (as in "
                       "Claude Code)",
                       a->name, wa);
        }
    }
    cdsh__mcpimport_index_deinit(&first);
    for (size_t i = 0; i < l->n; i++) {
        cdsh__mcpimport_cmd *c = l->v[i];
        /* as loss_reasons and finish */
        for (size_t k = 0; k + 1 < c->unsupported.n; k += 2)
            cmd_reason(l, c, "warn", "UNSUPPORTED_FEATURE", "%s \"%s\" is not supported",
                       strcmp(c->unsupported.v[k], "shell") == 0 ? "!`cmd`" : "@file",
                       c->unsupported.v[k + 1]);
        for (size_t k = 0; k < c->warnings.n; k++)
            if (!strstr(c->warnings.v[k], "is not supported: "))
                cmd_reason(l, c, "warn", "SEMANTIC_LOSS", "%s", c->warnings.v[k]);
        for (size_t k = 0; k < c->info.n; k++)
            cmd_reason(l, c, "info", "MAPPING", "%s", c->info.v[k]);
        c->verdict = "ok";
        for (size_t k = 0; k < c->n_reasons; k++) {
            if (strcmp(c->reasons[k].level, "blocked") == 0)
                c->verdict = "blocked";
            else if (strcmp(c->reasons[k].level, "warn") == 0 && strcmp(c->verdict, "ok") == 0)
                c->verdict = "warn";
        }
        json_decref(c->json); /* made before judging: made again */
        c->json = NULL;
    }
    json_decref(l->json);
    l->json = NULL;
}

void cdsh_mcpimport_preflight_skills(json_t *skills)
{
    size_t i;
    json_t *ir;
    json_array_foreach(skills, i, ir) {
        json_object_set_new(ir, "reasons", json_array());
        bool agent = strcmp(str(ir, "kind"), "agent") == 0;
        const char *what = agent ? "sub-agent" : "skill";
        if (str(ir, "error")) {
            reason(ir, "blocked", "UNREADABLE_FILE", "%s", str(ir, "error"));
            continue; /* nothing else can be judged */
        }
        if (agent && !json_is_true(json_object_get(ir, "hasName")))
            reason(ir, "blocked", "MISSING_NAME",
                   "the sub-agent has no name (Claude Code requires name and description)");
        if (agent && !str(ir, "descriptionFrom"))
            reason(ir, "blocked", "MISSING_DESCRIPTION",
                   "the sub-agent has no description (Claude Code requires name and "
                   "description)");
        else if (!agent && !str(ir, "descriptionFrom"))
            reason(ir, "blocked", "MISSING_DESCRIPTION",
                   "the skill has no description and no body to take one from");
        else if (!agent && strcmp(str(ir, "descriptionFrom"), "body") == 0)
            reason(ir, "warn", "MISSING_DESCRIPTION",
                   "no description in the front matter; the body's first line is used");
        json_int_t bytes = json_integer_value(json_object_get(ir, "bodyBytes"));
        const char *c = str(ir, "content");
        if (!json_is_true(json_object_get(ir, "hasBody")))
            reason(ir, "blocked", "EMPTY_BODY", "the %s has no %s", what,
                   agent ? "system prompt" : "instructions");
        else if (bytes > CDSH_MCPIMPORT_SKILL_MAX_BYTES)
            reason(ir, "blocked", "OVERSIZED_BODY",
                   "the %s body is %lld bytes; more than %d bytes is too large to load as a "
                   "skill",
                   what, (long long)bytes, CDSH_MCPIMPORT_SKILL_MAX_BYTES);
        else if (c && strlen(c) > CDSH_MCPIMPORT_SKILL_WARN_BYTES)
            reason(ir, "warn", "OVERSIZED_BODY",
                   "the %s text is %zu bytes; the skill tool hands the model the first %d "
                   "(its default maxBodyBytes)",
                   what, strlen(c), CDSH_MCPIMPORT_SKILL_WARN_BYTES);
        size_t k;
        json_t *w;
        json_array_foreach(json_object_get(ir, "unreadableFiles"), k, w) {
            reason(ir, "warn", "UNREADABLE_FILE",
                   "supporting file %s cannot be read; it is listed anyway", json_string_value(w));
        }
    }
    check_names(skills, "originalName", "DUPLICATE_SKILL", "skill");
    json_array_foreach(skills, i, ir) {
        loss_reasons(ir);
        finish(ir);
    }
}

const char *cdsh_mcpimport_verdict(const json_t *ir)
{
    const char *v = str(ir, "verdict");
    return v ? v : "ok";
}
