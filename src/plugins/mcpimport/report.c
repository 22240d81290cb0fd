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
#include "plugins/mcpimport/cmdir.h"
#include "plugins/mcpimport/redact.h"
#include "plugins/mcpimport/service.h"

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

/* ---- redaction, once per distinct string ----------------------------------- */

/* A report repeats most of its strings (sources, scopes, verdicts, reason
 * texts, a description shared by many files, a file named twice in one
 * command): each distinct string is redacted once and its JSON string
 * shared by every place it appears. Keys are borrowed from the IR being
 * reported, which outlives the memo. */
typedef struct memo {
    cdsh__mcpimport_index ix;     /* string -> its redacted JSON string */
    cdsh__mcpimport_index arrays; /* content key (copied to keys) -> a command's array */
    cdsh__mcpimport_arena keys;
} memo;

static json_t *memo_shared(void *ud, const char *key)
{
    memo *m = ud;
    json_t *a = cdsh__mcpimport_index_get(&m->arrays, key);
    return a ? json_incref(a) : NULL;
}

static void memo_share(void *ud, const char *key, json_t *array)
{
    memo *m = ud;
    char *k = cdsh__mcpimport_arena_strdup(&m->keys, key);
    size_t before = m->arrays.n;
    if (k)
        cdsh__mcpimport_index_first(&m->arrays, k, array);
    if (m->arrays.n != before)
        json_incref(array); /* the memo's reference */
}

static json_t *memo_str(void *ud, const char *s)
{
    memo *m = ud;
    if (!s)
        return NULL;
    json_t *hit = cdsh__mcpimport_index_get(&m->ix, s);
    if (hit)
        return json_incref(hit);
    char *r = cdsh_mcpimport_redact_text_dup(s);
    json_t *v = json_string_nocheck(r ? r : CDSH_REDACTED);
    free(r);
    if (v && !cdsh__mcpimport_index_get(&m->ix, s)) {
        /* index_first returns NULL both when it stored and on ENOMEM */
        size_t before = m->ix.n;
        cdsh__mcpimport_index_first(&m->ix, s, v);
        if (m->ix.n != before)
            json_incref(v); /* the memo's reference */
    }
    return v;
}

/* Redacted copy of v with every string value redacted as free text, keys
 * kept: cdsh_mcpimport_redact_json_dup (the same depth limit), memoised, and
 * where redaction changes nothing the value itself (a new reference): the
 * report shares what it would only have copied. */
static json_t *memo_walk(memo *m, const json_t *v, int depth)
{
    if (depth >= CDSH_MCPIMPORT_REDACT_MAX_DEPTH && (json_is_array(v) || json_is_object(v)))
        return json_string(CDSH_REDACTED);
    if (json_is_string(v)) {
        json_t *r = memo_str(m, json_string_value(v));
        if (r && json_equal(r, v)) {
            json_decref(r);
            return json_incref((json_t *)v);
        }
        return r;
    }
    bool same = true;
    if (json_is_array(v)) {
        json_t *out = json_array();
        for (size_t i = 0; out && i < json_array_size(v); i++) {
            json_t *x = memo_walk(m, json_array_get(v, i), depth + 1);
            same = same && x == json_array_get(v, i);
            if (json_array_append_new(out, x) != 0) {
                json_decref(out);
                out = NULL;
            }
        }
        if (out && same) {
            json_decref(out);
            return json_incref((json_t *)v);
        }
        return out;
    }
    if (json_is_object(v)) {
        json_t *out = json_object();
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            json_t *y = out ? memo_walk(m, x, depth + 1) : NULL;
            same = same && y == x;
            if (out && json_object_set_new_nocheck(out, k, y) != 0) {
                json_decref(out);
                out = NULL;
            }
        }
        if (out && same) {
            json_decref(out);
            return json_incref((json_t *)v);
        }
        return out;
    }
    return json_incref((json_t *)v); /* numbers, true, false, null: never changed */
}

static json_t *memo_value(void *ud, const json_t *v)
{
    return v ? memo_walk(ud, v, 0) : NULL;
}

static void index_free(cdsh__mcpimport_index *ix)
{
    for (size_t i = 0; i < ix->cap; i++)
        if (ix->keys[i])
            json_decref(ix->vals[i]);
    cdsh__mcpimport_index_deinit(ix);
}

static void memo_deinit(memo *m)
{
    index_free(&m->ix);
    index_free(&m->arrays);
    cdsh__mcpimport_arena_deinit(&m->keys);
}

/* ---- the report ----------------------------------------------------------- */

/* The judged kinds, in report order: each has {ok, warn, blocked} in the summary. */
static const char *const judged[] = {"servers", "commands", "skills", "agents"};
static const char *const verdicts[] = {"ok", "warn", "blocked"};
#define N_JUDGED (sizeof judged / sizeof judged[0])
#define N_VERDICTS (sizeof verdicts / sizeof verdicts[0])

typedef struct builder {
    json_t *sources, *summary;
    size_t counts[N_JUDGED][N_VERDICTS];
    memo m;
} builder;

/* Counts one item of kind k (an index in judged) with verdict v (NULL: ok). */
static void count(builder *b, size_t k, const char *v)
{
    v = v ? v : "ok";
    for (size_t i = 0; i < N_VERDICTS; i++)
        if (strcmp(verdicts[i], v) == 0) {
            b->counts[k][i]++;
            return;
        }
    json_t *o = json_object_get(b->summary, judged[k]); /* a verdict of another name */
    json_t *n = json_object_get(o, v);
    json_object_set_new(o, v, json_integer(json_integer_value(n) + 1));
}

static void builder_init(builder *b)
{
    memset(b, 0, sizeof *b);
    b->sources = json_array();
    b->summary = json_object();
    for (size_t k = 0; k < N_JUDGED; k++)
        json_object_set_new(b->summary, judged[k],
                            json_pack("{s:i, s:i, s:i}", "ok", 0, "warn", 0, "blocked", 0));
    section(b->sources, "claude");
    section(b->sources, "codex");
}

static void add(builder *b, size_t k, const char *source, json_t *entry, const char *verdict)
{
    json_array_append_new(json_object_get(section(b->sources, source), judged[k]), entry);
    count(b, k, verdict);
}

static void add_servers(builder *b, const json_t *servers)
{
    size_t i;
    json_t *x;
    json_array_foreach(servers, i, x) {
        add(b, 0, src_of(x), sanitise_server(x), str(x, "verdict"));
    }
}

static void add_skills(builder *b, const json_t *skills)
{
    size_t i;
    json_t *x;
    json_array_foreach(skills, i, x) {
        size_t k = strcmp(str(x, "kind"), "agent") == 0 ? 3 : 2;
        add(b, k, src_of(x), memo_walk(&b->m, x, 0), str(x, "verdict"));
    }
}

/* Adds the notes and the counts; returns the report (b is spent). */
static json_t *finish(builder *b, const json_t *notes)
{
    size_t i;
    json_t *x;
    json_array_foreach(notes, i, x) {
        char *m = cdsh_mcpimport_redact_text_dup(str(x, "message"));
        json_t *n = json_pack("{s:s, s:O}", "message", m ? m : CDSH_REDACTED, "provenance",
                              json_object_get(x, "provenance"));
        free(m);
        json_array_append_new(json_object_get(section(b->sources, src_of(x)), "notes"), n);
    }
    for (size_t k = 0; k < N_JUDGED; k++)
        for (size_t v = 0; v < N_VERDICTS; v++)
            json_object_set_new(json_object_get(b->summary, judged[k]), verdicts[v],
                                json_integer((json_int_t)b->counts[k][v]));
    json_object_set_new(b->summary, "notes", json_integer((json_int_t)json_array_size(notes)));
    memo_deinit(&b->m);
    return json_pack("{s:o, s:o, s:b}", "sources", b->sources, "summary", b->summary,
                     "registered", 0);
}

json_t *cdsh_mcpimport_report_new(const json_t *servers, const json_t *commands,
                                  const json_t *skills, const json_t *notes)
{
    builder b;
    builder_init(&b);
    add_servers(&b, servers);
    size_t i;
    json_t *x;
    json_array_foreach(commands, i, x) {
        add(&b, 1, src_of(x), memo_walk(&b.m, x, 0), str(x, "verdict"));
    }
    add_skills(&b, skills);
    return finish(&b, notes);
}

json_t *cdsh_mcpimport_report_of_scan(const cdsh_mcpimport_scan *scan)
{
    builder b;
    builder_init(&b);
    add_servers(&b, scan->servers);
    const cdsh__mcpimport_jmap map = {memo_str, memo_value, memo_shared, memo_share, &b.m};
    for (size_t i = 0; i < scan->commands.n; i++) {
        const cdsh__mcpimport_cmd *c = scan->commands.v[i];
        const char *source = str(c->provenance, "source");
        add(&b, 1, source ? source : "claude", cdsh__mcpimport_cmd_json_mapped(c, &map),
            c->verdict);
    }
    add_skills(&b, scan->skills);
    return finish(&b, scan->notes);
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
