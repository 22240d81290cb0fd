/* commands.c — Markdown command/prompt files → command IR, and placeholder
 * expansion at run time. Registration is register.c's job; this file is pure. */
#include "plugins/mcpimport/commands.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/utf8.h"
#include "plugins/mcpimport/cmdir.h"
#include "plugins/mcpimport/frontmatter.h"
#include "plugins/mcpimport/vars.h"

char *cdsh_mcpimport_command_name_dup(const char *ns, const char *stem)
{
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    char full[512];
    snprintf(full, sizeof full, "%s%s%s", ns && *ns ? ns : "", ns && *ns ? "_" : "",
             stem ? stem : "");
    if (!isalpha((unsigned char)full[0]) || (unsigned char)full[0] >= 128)
        cdsh_strbuf_append_str(&b, "cmd-");
    for (const char *p = full; *p; p++) {
        unsigned char c = (unsigned char)tolower((unsigned char)*p);
        bool ok = c < 128 && (isalnum(c) || c == '_' || c == '-');
        cdsh_strbuf_append_char(&b, ok ? (char)c : '-');
    }
    return cdsh_strbuf_take(&b, NULL);
}

static void add_unique(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (strcmp(json_string_value(v), s) == 0)
            return;
    }
    json_array_append_new(arr, json_string(s));
}

char *cdsh__mcpimport_meta_text_dup(const json_t *v)
{
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (json_is_integer(v) || json_is_real(v) || json_is_boolean(v))
        return json_dumps(v, JSON_ENCODE_ANY);
    return NULL;
}

json_t *cdsh__mcpimport_meta_list(const json_t *v, const char *seps)
{
    json_t *out = json_array();
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            char *s = cdsh__mcpimport_meta_text_dup(e);
            if (s)
                json_array_append_new(out, json_string(s));
            free(s);
        }
        return out;
    }
    char *s = cdsh__mcpimport_meta_text_dup(v);
    if (!s)
        return out;
    /* Split on seps, but not inside parentheses: Bash(git add:*), Read */
    int depth = 0;
    const char *start = s;
    for (const char *p = s;; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')' && depth > 0)
            depth--;
        if (*p == '\0' || (depth == 0 && strchr(seps, *p))) {
            const char *a = start, *e = p;
            while (a < e && isspace((unsigned char)*a))
                a++;
            while (e > a && isspace((unsigned char)e[-1]))
                e--;
            if (e > a)
                json_array_append_new(out, json_stringn(a, (size_t)(e - a)));
            if (*p == '\0')
                break;
            start = p + 1;
        }
    }
    free(s);
    return out;
}

static bool name_in(const json_t *list, const char *s, size_t n)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        const char *t = json_string_value(v);
        if (t && strlen(t) == n && strncmp(t, s, n) == 0)
            return true;
    }
    return false;
}

/* Finds placeholders in body; fills `found` and returns flags. */
static void scan_placeholders(const char *body, bool codex, const json_t *named, json_t *found,
                              bool *has0, bool *has_pos)
{
    for (const char *p = body; *p; p++) {
        if (strncmp(p, "{{args}}", 8) == 0) {
            add_unique(found, "{{args}}");
            p += 7;
            continue;
        }
        if (*p != '$')
            continue;
        if (p[1] == '$' && codex) {
            p++;
            continue;
        }
        if (strncmp(p + 1, "ARGUMENTS", 9) == 0) {
            const char *q = p + 10;
            if (!codex && *q == '[' && isdigit((unsigned char)q[1])) {
                const char *r = q + 1;
                while (isdigit((unsigned char)*r))
                    r++;
                if (*r == ']') {
                    char tok[32];
                    snprintf(tok, sizeof tok, "$ARGUMENTS[%.*s]", (int)(r - q - 1), q + 1);
                    add_unique(found, tok);
                    *has_pos = true;
                    if (r - q - 1 == 1 && q[1] == '0')
                        *has0 = true;
                    p = r;
                    continue;
                }
            }
            if (!(isalnum((unsigned char)*q) || *q == '_')) {
                add_unique(found, "$ARGUMENTS");
                p += 9;
                continue;
            }
        }
        if (isdigit((unsigned char)p[1])) {
            char tok[4] = {'$', p[1], '\0', '\0'};
            if (codex && p[1] == '0')
                continue;
            add_unique(found, tok);
            *has_pos = true;
            if (p[1] == '0')
                *has0 = true;
            p++;
            continue;
        }
        const char *q = p + 1;
        if (codex) {
            if (!isupper((unsigned char)*q))
                continue;
            while (isupper((unsigned char)*q) || isdigit((unsigned char)*q) || *q == '_')
                q++;
        } else {
            while (isalnum((unsigned char)*q) || *q == '_')
                q++;
            if (q == p + 1 || !name_in(named, p + 1, (size_t)(q - p - 1)))
                continue;
        }
        char tok[128];
        snprintf(tok, sizeof tok, "$%.*s", (int)(q - p - 1), p + 1);
        add_unique(found, tok);
        p = q - 1;
    }
}

static bool has_feature(const json_t *list, const char *feature, const char *text, size_t n)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        const char *t = json_string_value(json_object_get(v, "text"));
        if (strcmp(json_string_value(json_object_get(v, "feature")), feature) == 0 &&
            strlen(t) == n && strncmp(t, text, n) == 0)
            return true;
    }
    return false;
}

void cdsh__mcpimport_scan_unsupported(const char *body, json_t *unsupported, json_t *warnings,
                                      const json_t *file_refs)
{
    size_t first = json_array_size(unsupported);
    for (const char *p = body; *p; p++) {
        if (p[0] == '!' && p[1] == '`') {
            const char *e = strchr(p + 2, '`');
            if (e) {
                if (!has_feature(unsupported, "shell", p + 2, (size_t)(e - p - 2)))
                    json_array_append_new(unsupported,
                                          json_pack("{s:s, s:s%}", "feature", "shell", "text",
                                                    p + 2, (size_t)(e - p - 2)));
                p = e;
            }
        } else if (p[0] == '@' && (p == body || isspace((unsigned char)p[-1]))) {
            const char *e = p + 1;
            bool pathy = false;
            while (*e && (isalnum((unsigned char)*e) || strchr("_./~-", *e))) {
                if (*e == '/' || *e == '.')
                    pathy = true;
                e++;
            }
            while (e > p + 1 && e[-1] == '.') /* a sentence's full stop */
                e--;
            if (pathy && e > p + 1 && file_refs && !name_in(file_refs, p + 1, (size_t)(e - p - 1)))
                pathy = false; /* not a file of the tree: an npm scope, a decorator, a mail */
            if (pathy && e > p + 1 &&
                !has_feature(unsupported, "file-include", p + 1, (size_t)(e - p - 1)))
                json_array_append_new(unsupported,
                                      json_pack("{s:s, s:s%}", "feature", "file-include", "text",
                                                p + 1, (size_t)(e - p - 1)));
        }
    }
    for (size_t i = first; i < json_array_size(unsupported); i++) {
        const json_t *v = json_array_get(unsupported, i);
        const char *f = json_string_value(json_object_get(v, "feature"));
        cdsh__mcpimport_warnf(warnings, "%s \"%s\" is not supported: %s",
                              strcmp(f, "shell") == 0 ? "!`cmd`" : "@file",
                              json_string_value(json_object_get(v, "text")),
                              strcmp(f, "shell") == 0
                                  ? "the command is not run; the text stays in the prompt"
                                  : "the file is not included; the text stays in the prompt");
    }
}

static const char *const claude_known[] = {"description", "argument-hint",
                                           "arguments",   "allowed-tools",
                                           "model",       "disable-model-invocation",
                                           NULL};
static const char *const claude_ignored[] = {"disallowed-tools", "disallowedTools", "effort",
                                             "shell", NULL};
/* Metadata only: nothing behaves differently without it. */
static const char *const claude_metadata[] = {"name", "version", NULL};

char *cdsh__mcpimport_hint_dup(const json_t *v, json_t *info)
{
    if (!json_is_array(v))
        return cdsh__mcpimport_meta_text_dup(v);
    /* a YAML list: Claude Code shows the JavaScript string of the array,
     * the items joined by "," ("[message]" shows as "message") */
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        char *t = cdsh__mcpimport_meta_text_dup(e);
        cdsh_strbuf_appendf(&b, "%s%s", i ? "," : "", t ? t : "");
        free(t);
    }
    char *s = cdsh_strbuf_take(&b, NULL);
    if (s && info)
        cdsh__mcpimport_warnf(info,
                              "argument-hint is a YAML list (unquoted [...]); shown as \"%s\" as "
                              "Claude Code shows it (quote the value to keep the brackets)",
                              s);
    return s;
}

bool cdsh__mcpimport_in_list(const char *const *l, const char *k)
{
    for (; *l; l++)
        if (strcmp(*l, k) == 0)
            return true;
    return false;
}

char *cdsh__mcpimport_first_line_dup(const char *body, const char *fallback)
{
    const char *p = body;
    while (*p == '\n' || *p == '\r' || *p == ' ' || *p == '#')
        p++;
    size_t n = strcspn(p, "\r\n");
    n = cdsh_utf8_valid_prefix(p, n > 100 ? 100 : n); /* never half a character */
    return n ? strndup(p, n) : strdup(fallback);
}

void cdsh__mcpimport_claude_placeholders(const char *body, const json_t *named, json_t *found)
{
    bool has0 = false, has_pos = false;
    scan_placeholders(body, false, named, found, &has0, &has_pos);
}

json_t *cdsh_mcpimport_command_from_markdown(const json_t *cand, const char *text, size_t len)
{
    cdsh__mcpimport_md md = cdsh__mcpimport_md_of(cand);
    md.text = text;
    md.len = len;
    cdsh__mcpimport_cmds l;
    cdsh__mcpimport_cmds_init(&l);
    cdsh__mcpimport_cmd *c = cdsh__mcpimport_command_add(&l, &md);
    json_t *ir = c ? json_incref(cdsh__mcpimport_cmd_json(c)) : NULL;
    cdsh__mcpimport_cmds_deinit(&l);
    return ir;
}

/* True when s is UTF-8 (JSON strings must be; a command with a field that
 * is not is left out, as json_pack left it out). */
static bool utf8(const char *s)
{
    return !s || cdsh_utf8_valid(s, strlen(s));
}

/* The (feature, text) pairs of the unsupported objects in arr. */
static bool pairs_from_json(cdsh__mcpimport_arena *a, const json_t *arr, cdsh__mcpimport_strv *out)
{
    size_t n = json_array_size(arr);
    out->n = 0;
    out->v = n ? cdsh__mcpimport_arena_alloc(a, 2 * n * sizeof *out->v) : NULL;
    if (n && !out->v)
        return false;
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(arr, i);
        const char *f =
            cdsh__mcpimport_arena_strdup(a, json_string_value(json_object_get(o, "feature")));
        const char *t =
            cdsh__mcpimport_arena_strdup(a, json_string_value(json_object_get(o, "text")));
        if (!f || !t)
            return false;
        out->v[out->n++] = f;
        out->v[out->n++] = t;
    }
    return true;
}

/* The struct of one command in l's arena, from the facts build found (the
 * JSON arrays are copied). NULL on ENOMEM. */
static cdsh__mcpimport_cmd *command_struct(cdsh__mcpimport_cmds *l, const cdsh__mcpimport_cmd *f,
                                           const json_t *found, const json_t *named,
                                           const json_t *allowed, const json_t *warnings,
                                           const json_t *unsupported, const json_t *info)
{
    cdsh__mcpimport_arena *a = &l->arena;
    cdsh__mcpimport_cmd *c = cdsh__mcpimport_arena_alloc(a, sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    c->name = cdsh__mcpimport_arena_strdup(a, f->name);
    c->original = cdsh__mcpimport_arena_strdup(a, f->original);
    c->description = cdsh__mcpimport_arena_strdup(a, f->description);
    c->hint = cdsh__mcpimport_arena_strdup(a, f->hint);
    c->prompt = cdsh__mcpimport_arena_strdup(a, f->prompt);
    c->style = f->style; /* a constant */
    c->model = cdsh__mcpimport_arena_strdup(a, f->model);
    c->dmi = f->dmi;
    c->source = cdsh__mcpimport_arena_strdup(a, f->source);
    c->file = cdsh__mcpimport_arena_strdup(a, f->file);
    bool ok = c->name && c->original && c->description && (c->hint || !f->hint) && c->prompt &&
              (c->model || !f->model) && c->source && c->file &&
              cdsh__mcpimport_strv_from_json(a, found, &c->arguments) &&
              cdsh__mcpimport_strv_from_json(a, named, &c->named) &&
              cdsh__mcpimport_strv_from_json(a, allowed, &c->allowed) &&
              cdsh__mcpimport_strv_from_json(a, warnings, &c->warnings) &&
              pairs_from_json(a, unsupported, &c->unsupported) &&
              cdsh__mcpimport_strv_from_json(a, info, &c->info);
    if (!ok || !cdsh__mcpimport_cmds_push(l, c))
        return NULL;
    c->provenance = json_incref(f->provenance);
    return c;
}

/* l's scratch arrays, emptied: every command is built in the same ones (a
 * scan of 100 000 files then makes no JSON array per command). */
static bool scratch(cdsh__mcpimport_cmds *l)
{
    for (size_t i = 0; i < sizeof l->scratch / sizeof l->scratch[0]; i++) {
        if (!l->scratch[i] && !(l->scratch[i] = json_array()))
            return false;
        json_array_clear(l->scratch[i]);
    }
    return true;
}

cdsh__mcpimport_cmd *cdsh__mcpimport_command_add(cdsh__mcpimport_cmds *l,
                                                 const cdsh__mcpimport_md *md)
{
    if (!scratch(l))
        return NULL;
    json_t *warnings = l->scratch[0], *info = l->scratch[1], *found = l->scratch[2];
    json_t *unsupported = l->scratch[3];
    const char *text = md->text;
    size_t len = md->len;
    const json_t *prov = md->provenance;
    const char *source = json_string_value(json_object_get(prov, "source"));
    const char *file = json_string_value(json_object_get(prov, "file"));
    bool codex = source && strcmp(source, "codex") == 0;
    const char *stem = md->stem, *ns = md->ns, *root = md->root;
    json_t *meta = NULL, *named = NULL, *allowed = NULL;
    char *body = NULL, *name = NULL, *description = NULL, *hint = NULL, *model = NULL;
    cdsh__mcpimport_cmd *c = NULL;
    size_t off = 0;
    if (!file || cdsh_mcpimport_frontmatter_parse(text, len, &meta, &off, warnings) != 0)
        goto done;
    if (json_is_object(md->meta)) /* a manifest's inline command */
        json_object_update(meta, (json_t *)md->meta);
    body = strndup(text + off, len - off);
    if (body && root) {
        char *b2 = cdsh_mcpimport_vars_subst_dup(body, "CLAUDE_PLUGIN_ROOT", root);
        free(body);
        body = b2;
    }
    name = cdsh_mcpimport_command_name_dup(ns, stem);
    char original[512];
    snprintf(original, sizeof original, "%s%s%s", ns && *ns ? ns : "", ns && *ns ? ":" : "",
             stem ? stem : "");
    description = cdsh__mcpimport_meta_text_dup(json_object_get(meta, "description"));
    hint = cdsh__mcpimport_hint_dup(json_object_get(meta, "argument-hint"), info);
    model = codex ? NULL : cdsh__mcpimport_meta_text_dup(json_object_get(meta, "model"));
    if (!codex && json_object_get(meta, "arguments"))
        named = cdsh__mcpimport_meta_list(json_object_get(meta, "arguments"), " ,");
    if (!codex && json_object_get(meta, "allowed-tools"))
        allowed = cdsh__mcpimport_meta_list(json_object_get(meta, "allowed-tools"), ",");
    bool dmi = json_is_true(json_object_get(meta, "disable-model-invocation"));
    if (!body || !name)
        goto done;
    if (!description || !*description) {
        free(description);
        description = cdsh__mcpimport_first_line_dup(body, original);
    }
    const char *k;
    json_t *v;
    json_object_foreach(meta, k, v) {
        if (codex ? (strcmp(k, "description") == 0 || strcmp(k, "argument-hint") == 0)
                  : cdsh__mcpimport_in_list(claude_known, k))
            continue;
        if (!codex && cdsh__mcpimport_in_list(claude_metadata, k))
            cdsh__mcpimport_warnf(info, "front matter \"%s\" is metadata only; not used", k);
        else if (!codex && strcmp(k, "user-invocable") == 0 && json_is_false(v))
            cdsh__mcpimport_warnf(warnings,
                                  "user-invocable: false (Claude Code hides it from the person "
                                  "and lets only the model run it); in cdsh the person runs it");
        else if (!codex && strcmp(k, "user-invocable") == 0)
            cdsh__mcpimport_warnf(info, "user-invocable: the person runs it, as in Claude Code");
        else if (!codex && cdsh__mcpimport_in_list(claude_ignored, k))
            cdsh__mcpimport_warnf(warnings, "front matter \"%s\" has no cdsh equivalent; ignored",
                                  k);
        else
            cdsh__mcpimport_warnf(warnings, "unknown front matter key \"%s\" ignored", k);
    }
    if (json_array_size(allowed))
        cdsh__mcpimport_warnf(warnings,
                              "allowed-tools (%s) is not applied: Claude Code pre-approves these "
                              "tools while the command runs; cdsh asks as usual",
                              json_string_value(json_array_get(allowed, 0)));
    if (model && strcmp(model, "inherit") == 0)
        cdsh__mcpimport_warnf(info, "model \"inherit\": the session's model is used, as in "
                                    "Claude Code");
    else if (model)
        cdsh__mcpimport_warnf(warnings, "model \"%s\" is not applied; the session's model is used",
                              model);
    if (!codex && dmi)
        cdsh__mcpimport_warnf(info, "disable-model-invocation: only the person runs it (cdsh's "
                                    "model never runs commands)");
    if (strcmp(name, original) != 0)
        cdsh__mcpimport_warnf(info, "name \"%s\" mapped to \"%s\"", original, name);
    bool has0 = false, has_pos = false;
    scan_placeholders(body, codex, named, found, &has0, &has_pos);
    const char *style = "none";
    if (codex)
        style = json_array_size(found) ? "codex" : "none";
    else if (json_array_size(found)) {
        style = "claude";
        if (has_pos && !has0) {
            /* docs/import.md: a file that never uses $0 was written for the
             * older 1-based numbering, named arguments or not */
            style = "claude-1based";
            cdsh__mcpimport_warnf(warnings,
                                  "uses $1.. without $0: expanded from $1 as older Claude Code did "
                                  "(current Claude Code counts from $0: $1 is the second "
                                  "argument there)");
        }
    }
    if (strstr(body, "${CLAUDE_SKILL_DIR}") || strstr(body, "${CLAUDE_SESSION_ID}") ||
        (!root && strstr(body, "${CLAUDE_PLUGIN_ROOT}")))
        cdsh__mcpimport_warnf(
            warnings, "the body uses a ${CLAUDE_...} variable that cdsh cannot fill; left as "
                      "written");
    cdsh__mcpimport_scan_unsupported(body, unsupported, warnings, md->file_refs);
    if (description && utf8(original) && utf8(description) && utf8(hint) && utf8(body) &&
        utf8(model) && utf8(file)) {
        cdsh__mcpimport_cmd f = {.name = name,
                                 .original = original,
                                 .description = description,
                                 .hint = hint,
                                 .prompt = body,
                                 .style = style,
                                 .model = model,
                                 .dmi = dmi,
                                 .source = source ? source : "claude",
                                 .file = file,
                                 .provenance = (json_t *)prov};
        c = command_struct(l, &f, found, named, allowed, warnings, unsupported, info);
    }
done:
    free(body), free(name), free(description), free(hint), free(model);
    json_decref(meta), json_decref(named), json_decref(allowed);
    return c;
}

/* ---- expansion --------------------------------------------------------------- */

/* Shell-like split: blanks separate, quotes group and are removed. */
static json_t *split_words(const char *s, bool *ok)
{
    json_t *out = json_array();
    cdsh_strbuf w;
    cdsh_strbuf_init(&w);
    *ok = true;
    while (*s) {
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        cdsh_strbuf_reset(&w);
        while (*s && !isspace((unsigned char)*s)) {
            if (*s == '"' || *s == '\'') {
                char q = *s++;
                while (*s && *s != q)
                    cdsh_strbuf_append_char(&w, *s++);
                if (*s != q)
                    *ok = false;
                else
                    s++;
            } else
                cdsh_strbuf_append_char(&w, *s++);
        }
        cdsh_strbuf_append_char(&w, '\0');
        size_t n;
        char *t = cdsh_strbuf_take(&w, &n);
        json_array_append_new(out, json_string(t ? t : ""));
        free(t);
    }
    cdsh_strbuf_deinit(&w);
    return out;
}

int cdsh_mcpimport_command_expand(const json_t *cmd, const char *raw_input, char **out,
                                  cdsh_error *err)
{
    *out = NULL;
    const char *body = json_string_value(json_object_get(cmd, "prompt"));
    const char *style = json_string_value(json_object_get(cmd, "placeholderStyle"));
    const json_t *named = json_object_get(cmd, "namedArguments");
    bool codex = style && strcmp(style, "codex") == 0;
    int base = style && strcmp(style, "claude-1based") == 0 ? 1 : (codex ? 1 : 0);
    const char *a = raw_input ? raw_input : "";
    while (isspace((unsigned char)*a))
        a++;
    size_t alen = strlen(a);
    while (alen && isspace((unsigned char)a[alen - 1]))
        alen--;
    char *args = strndup(a, alen);
    bool ok;
    json_t *words = split_words(args ? args : "", &ok);
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    int rc = 0;
    if (!ok) {
        rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENTS", "unbalanced quote in the arguments");
        goto done;
    }
    json_t *kv = json_object(), *positional = json_array();
    size_t i;
    json_t *w;
    json_array_foreach(words, i, w) {
        const char *s = json_string_value(w);
        const char *eq = strchr(s, '=');
        bool is_kv = codex && eq && eq > s && isupper((unsigned char)s[0]);
        for (const char *p = s; is_kv && p < eq; p++)
            if (!(isupper((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_'))
                is_kv = false;
        if (is_kv) {
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)(eq - s), s);
            json_object_set_new(kv, key, json_string(eq + 1));
        } else
            json_array_append(positional, w);
    }
    if (codex) { /* every named placeholder must be given */
        cdsh_strbuf miss;
        cdsh_strbuf_init(&miss);
        json_array_foreach(json_object_get(cmd, "arguments"), i, w) {
            const char *t = json_string_value(w);
            if (t[0] == '$' && isupper((unsigned char)t[1]) && strcmp(t, "$ARGUMENTS") != 0 &&
                !json_object_get(kv, t + 1))
                cdsh_strbuf_appendf(&miss, "%s%s", miss.len ? ", " : "", t + 1);
        }
        char *m = cdsh_strbuf_take(&miss, NULL);
        if (m && *m)
            rc = cdsh_error_set(err, CDSH_EINVAL, "MISSING_ARGUMENTS",
                                "missing arguments: %s (pass them as KEY=value)", m);
        free(m);
        if (rc) {
            json_decref(kv), json_decref(positional);
            goto done;
        }
    }
    for (const char *p = body ? body : ""; *p;) {
        if (strncmp(p, "{{args}}", 8) == 0) {
            cdsh_strbuf_append_str(&b, args);
            p += 8;
            continue;
        }
        if (*p != '$') {
            cdsh_strbuf_append_char(&b, *p++);
            continue;
        }
        if (codex && p[1] == '$') {
            cdsh_strbuf_append_char(&b, '$');
            p += 2;
            continue;
        }
        if (strncmp(p + 1, "ARGUMENTS", 9) == 0) {
            const char *q = p + 10;
            if (!codex && *q == '[' && isdigit((unsigned char)q[1])) {
                char *end;
                long idx = strtol(q + 1, &end, 10);
                if (*end == ']') {
                    json_t *v = json_array_get(positional, (size_t)idx);
                    if (v)
                        cdsh_strbuf_append_str(&b, json_string_value(v));
                    else
                        cdsh_strbuf_append(&b, p, (size_t)(end + 1 - p));
                    p = end + 1;
                    continue;
                }
            }
            if (!(isalnum((unsigned char)*q) || *q == '_')) {
                if (codex) {
                    json_array_foreach(positional, i, w) {
                        cdsh_strbuf_appendf(&b, "%s%s", i ? " " : "", json_string_value(w));
                    }
                } else
                    cdsh_strbuf_append_str(&b, args);
                p = q;
                continue;
            }
        }
        if (isdigit((unsigned char)p[1]) && !(codex && p[1] == '0')) {
            int idx = p[1] - '0' - base;
            json_t *v = idx >= 0 ? json_array_get(positional, (size_t)idx) : NULL;
            if (v)
                cdsh_strbuf_append_str(&b, json_string_value(v));
            else if (!codex)
                cdsh_strbuf_append(&b, p, 2); /* Claude keeps a missing positional */
            p += 2;
            continue;
        }
        const char *q = p + 1;
        while (isalnum((unsigned char)*q) || *q == '_')
            q++;
        if (codex && q > p + 1 && isupper((unsigned char)p[1])) {
            const char *qq = p + 1;
            while (isupper((unsigned char)*qq) || isdigit((unsigned char)*qq) || *qq == '_')
                qq++;
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)(qq - p - 1), p + 1);
            json_t *v = json_object_get(kv, key);
            if (v) {
                cdsh_strbuf_append_str(&b, json_string_value(v));
                p = qq;
                continue;
            }
        }
        if (!codex && q > p + 1) {
            size_t idx;
            json_t *nm;
            bool done_named = false;
            json_array_foreach(named, idx, nm) {
                const char *t = json_string_value(nm);
                if (strlen(t) == (size_t)(q - p - 1) &&
                    strncmp(t, p + 1, (size_t)(q - p - 1)) == 0) {
                    json_t *v = json_array_get(positional, idx);
                    if (v)
                        cdsh_strbuf_append_str(&b, json_string_value(v));
                    else
                        cdsh_strbuf_append(&b, p, (size_t)(q - p));
                    done_named = true;
                    break;
                }
            }
            if (done_named) {
                p = q;
                continue;
            }
        }
        cdsh_strbuf_append_char(&b, *p++);
    }
    if (!codex && strcmp(style ? style : "none", "none") == 0 && *args)
        cdsh_strbuf_appendf(&b, "\n\nARGUMENTS: %s", args);
    json_decref(kv), json_decref(positional);
    *out = cdsh_strbuf_take(&b, NULL);
    if (!*out)
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
done:
    cdsh_strbuf_deinit(&b);
    json_decref(words);
    free(args);
    return rc;
}
