/* report.c — scan report object and text. Pure: takes judged IR, returns
 * values; printing is the CLI's job. */
#include "plugins/mcpimport/report.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

#include "base/process.h"
#include "base/redact.h"
#include "base/strbuf.h"
#include "plugins/mcpimport/redact.h"

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void redact_map(json_t *map)
{
    const char *k;
    json_t *v;
    json_object_foreach(map, k, v) {
        char *r = json_is_string(v) ? cdsh_mcpimport_redact_value_dup(k, json_string_value(v))
                                    : NULL;
        if (r)
            json_object_set_new(map, k, json_string(r));
        free(r);
    }
}

static void redact_field(json_t *o, const char *k)
{
    const char *s = str(o, k);
    char *r = s ? cdsh_mcpimport_redact_text_dup(s) : NULL;
    if (r)
        json_object_set_new(o, k, json_string(r));
    free(r);
}

/* Every string of every key but the ones already handled, as free text. */
static void redact_rest(json_t *o, const char *const *skip)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        bool skipped = false;
        for (const char *const *x = skip; *x && !skipped; x++)
            skipped = strcmp(*x, k) == 0;
        if (!skipped)
            json_object_set_new(o, k, cdsh_mcpimport_redact_json_dup(v));
    }
}

/* A copy of a judged server IR fit to print: references as written, literal
 * secrets redacted wherever they are (env, headers, url, args, messages). */
static json_t *sanitise_server(const json_t *ir)
{
    json_t *c = json_deep_copy(ir);
    redact_map(json_object_get(c, "env"));
    redact_map(json_object_get(c, "headers"));
    json_t *args = json_object_get(c, "args");
    size_t i;
    json_t *a;
    bool next_secret = false;
    json_array_foreach(args, i, a) {
        const char *s = json_string_value(a);
        if (next_secret) {
            char *r = cdsh_mcpimport_redact_value_dup("token", s);
            json_array_set_new(args, i, json_string(r ? r : CDSH_REDACTED));
            free(r);
            next_secret = false;
            continue;
        }
        const char *eq = strchr(s, '=');
        if (s[0] == '-' && cdsh_process_env_name_is_secret(s)) {
            if (eq) {
                char key[256];
                snprintf(key, sizeof key, "%.*s", (int)(eq - s), s);
                char *r = cdsh_mcpimport_redact_value_dup("token", eq + 1);
                char *buf = NULL;
                if (r && asprintf(&buf, "%.*s%s", (int)(eq + 1 - s), s, r) >= 0)
                    json_array_set_new(args, i, json_string(buf));
                free(buf);
                free(r);
            } else
                next_secret = true;
            continue;
        }
        char *r = cdsh_mcpimport_redact_text_dup(s);
        if (r)
            json_array_set_new(args, i, json_string(r));
        free(r);
    }
    redact_field(c, "url");
    redact_field(c, "command");
    redact_field(c, "cwd");
    json_array_foreach(json_object_get(c, "unresolved"), i, a) {
        const char *fb = str(a, "fallback");
        if (fb && *fb && cdsh_process_env_name_is_secret(str(a, "envVar")))
            json_object_set_new(a, "fallback", json_string(CDSH_REDACTED));
        else
            redact_field(a, "fallback");
    }
    static const char *const done[] = {"env", "headers", "args", "url", "command", "cwd",
                                       "unresolved", NULL};
    redact_rest(c, done);
    return c;
}

static json_t *section(json_t *sources, const char *source)
{
    size_t i;
    json_t *s;
    json_array_foreach(sources, i, s) {
        if (strcmp(str(s, "source"), source) == 0)
            return s;
    }
    s = json_pack("{s:s, s:[], s:[], s:[], s:[], s:[]}", "source", source, "servers", "commands",
                  "skills", "agents", "notes");
    json_array_append_new(sources, s);
    return s;
}

static const char *src_of(const json_t *x)
{
    const char *s = str(json_object_get(x, "provenance"), "source");
    return s ? s : "claude";
}

/* The judged kinds, in report order: each has {ok, warn, blocked} in the summary. */
static const char *const judged[] = {"servers", "commands", "skills", "agents"};

static void count(json_t *summary, const char *what, const char *verdict)
{
    json_t *o = json_object_get(summary, what);
    json_t *n = json_object_get(o, verdict);
    json_object_set_new(o, verdict, json_integer(json_integer_value(n) + 1));
}

json_t *cdsh_mcpimport_report_new(const json_t *servers, const json_t *commands,
                                  const json_t *skills, const json_t *notes)
{
    json_t *sources = json_array();
    json_t *summary = json_object();
    for (size_t k = 0; k < sizeof judged / sizeof judged[0]; k++)
        json_object_set_new(summary, judged[k],
                            json_pack("{s:i, s:i, s:i}", "ok", 0, "warn", 0, "blocked", 0));
    section(sources, "claude");
    section(sources, "codex");
    size_t i;
    json_t *x;
    json_array_foreach(servers, i, x) {
        json_array_append_new(json_object_get(section(sources, src_of(x)), "servers"),
                              sanitise_server(x));
        count(summary, "servers", str(x, "verdict") ? str(x, "verdict") : "ok");
    }
    json_array_foreach(commands, i, x) {
        json_array_append_new(json_object_get(section(sources, src_of(x)), "commands"),
                              cdsh_mcpimport_redact_json_dup(x));
        count(summary, "commands", str(x, "verdict") ? str(x, "verdict") : "ok");
    }
    json_array_foreach(skills, i, x) {
        const char *k = strcmp(str(x, "kind"), "agent") == 0 ? "agents" : "skills";
        json_array_append_new(json_object_get(section(sources, src_of(x)), k),
                              cdsh_mcpimport_redact_json_dup(x));
        count(summary, k, str(x, "verdict") ? str(x, "verdict") : "ok");
    }
    json_array_foreach(notes, i, x) {
        char *m = cdsh_mcpimport_redact_text_dup(str(x, "message"));
        json_t *n = json_pack("{s:s, s:O}", "message", m ? m : CDSH_REDACTED, "provenance",
                              json_object_get(x, "provenance"));
        free(m);
        json_array_append_new(json_object_get(section(sources, src_of(x)), "notes"), n);
    }
    json_object_set_new(summary, "notes", json_integer((json_int_t)json_array_size(notes)));
    return json_pack("{s:o, s:o, s:b}", "sources", sources, "summary", summary, "registered", 0);
}

static void reasons_text(cdsh_strbuf *b, const json_t *ir)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(ir, "reasons"), i, r) {
        cdsh_strbuf_appendf(b, "        - %s %s: %s\n", str(r, "level"), str(r, "code"),
                            str(r, "message"));
    }
}

static void where_text(cdsh_strbuf *b, const json_t *x)
{
    const json_t *p = json_object_get(x, "provenance");
    cdsh_strbuf_appendf(b, "        from %s (%s%s%s)\n", str(p, "file") ? str(p, "file") : "?",
                        str(p, "scope") ? str(p, "scope") : "?", str(p, "plugin") ? ", " : "",
                        str(p, "plugin") ? str(p, "plugin") : "");
}

char *cdsh_mcpimport_report_text_dup(const json_t *report)
{
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    size_t i, j;
    json_t *s, *x;
    json_array_foreach(json_object_get(report, "sources"), i, s) {
        bool claude = strcmp(str(s, "source"), "claude") == 0;
        cdsh_strbuf_appendf(&b, "%s\n", claude ? "Claude Code" : "Codex");
        size_t total = json_array_size(json_object_get(s, "servers")) +
                       json_array_size(json_object_get(s, "commands")) +
                       json_array_size(json_object_get(s, "agents")) +
                       json_array_size(json_object_get(s, "skills")) +
                       json_array_size(json_object_get(s, "notes"));
        if (!total)
            cdsh_strbuf_append_str(&b, "  nothing found\n");
        if (json_array_size(json_object_get(s, "servers")))
            cdsh_strbuf_append_str(&b, "  servers:\n");
        json_array_foreach(json_object_get(s, "servers"), j, x) {
            const char *t = str(x, "transport");
            cdsh_strbuf_appendf(&b, "    %-8s %s  (%s: %s)\n", str(x, "verdict"), str(x, "name"),
                                t ? t : "unsupported",
                                str(x, "command") ? str(x, "command")
                                : str(x, "url")   ? str(x, "url")
                                                  : "-");
            where_text(&b, x);
            reasons_text(&b, x);
        }
        if (json_array_size(json_object_get(s, "commands")))
            cdsh_strbuf_append_str(&b, "  commands:\n");
        json_array_foreach(json_object_get(s, "commands"), j, x) {
            cdsh_strbuf_appendf(&b, "    %-8s /%s", str(x, "verdict"), str(x, "name"));
            if (strcmp(str(x, "name"), str(x, "originalName")) != 0)
                cdsh_strbuf_appendf(&b, "  (was /%s)", str(x, "originalName"));
            cdsh_strbuf_append_str(&b, "\n");
            where_text(&b, x);
            reasons_text(&b, x);
        }
        const char *kinds[] = {"skills", "agents"};
        for (int k = 0; k < 2; k++) {
            if (json_array_size(json_object_get(s, kinds[k])))
                cdsh_strbuf_appendf(&b, "  %s:\n", kinds[k]);
            json_array_foreach(json_object_get(s, kinds[k]), j, x) {
                cdsh_strbuf_appendf(&b, "    %-8s %s", str(x, "verdict"), str(x, "name"));
                if (strcmp(str(x, "name"), str(x, "originalName")) != 0)
                    cdsh_strbuf_appendf(&b, "  (was %s)", str(x, "originalName"));
                cdsh_strbuf_append_str(&b, k ? "  (sub-agent, offered as a skill)\n" : "\n");
                where_text(&b, x);
                reasons_text(&b, x);
            }
        }
        if (json_array_size(json_object_get(s, "notes")))
            cdsh_strbuf_append_str(&b, "  notes:\n");
        json_array_foreach(json_object_get(s, "notes"), j, x) {
            cdsh_strbuf_appendf(&b, "    - %s\n", str(x, "message"));
        }
    }
    const json_t *sum = json_object_get(report, "summary");
    cdsh_strbuf_append_str(&b, "\nSummary:");
    for (size_t k = 0; k < sizeof judged / sizeof judged[0]; k++) {
        const json_t *o = json_object_get(sum, judged[k]);
        cdsh_strbuf_appendf(&b, "%s %s %lld ok, %lld warn, %lld blocked", k ? ";" : "", judged[k],
                            (long long)json_integer_value(json_object_get(o, "ok")),
                            (long long)json_integer_value(json_object_get(o, "warn")),
                            (long long)json_integer_value(json_object_get(o, "blocked")));
    }
    cdsh_strbuf_append_str(&b, ".\n");
    return cdsh_strbuf_take(&b, NULL);
}
