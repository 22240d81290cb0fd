/* macros_registry.c — SillyTavern 1.19's macro registry as a table: one row
 * per macro (name, '|'-separated aliases, arity, argument types, flags,
 * handler), 136 names with aliases: core, env, state, chat, time, variable
 * and instruct macros plus those ST's built-in extensions register
 * (summary, author's note, reasoning, expressions, image prompts). A row
 * marked MF_UNSUPPORTED names why cdsh cannot evaluate it (docs/tavern.md
 * lists them); such a macro stays verbatim and is listed in unknownMacros. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/tavern/macros_priv.h"

static const char *nz(const char *s)
{
    return s ? s : "";
}

static bool put(cdsh_strbuf *out, const char *s)
{
    cdsh_strbuf_append_str(out, nz(s));
    return true;
}

static bool put_long(cdsh_strbuf *out, long v, bool show)
{
    if (show)
        cdsh_strbuf_appendf(out, "%ld", v);
    return true;
}

/* ---- card fields: ST's baseChatReplace (trimmed, macros expanded without
 * card fields, \r removed) ---------------------------------------------------- */

static bool card_field(mx *x, const char *raw, cdsh_strbuf *out)
{
    if (x->no_card || !raw)
        return true;
    const char *s = raw;
    size_t n = strlen(raw);
    cdsh__js_trim(&s, &n);
    if (!n)
        return true;
    mx sub = *x;
    sub.no_card = true;
    sub.original_used = true; /* a nested substituteParams has no {{original}} */
    sub.content_hash = cdsh__js_string_hash(s, n);
    cdsh_strbuf tmp;
    cdsh_strbuf_init(&tmp);
    cdsh__macro_evaluate(&sub, s, n, 0, &tmp);
    x->env->flags |= sub.env->flags;
    for (size_t i = 0; i < tmp.len; i++)
        if (tmp.data[i] != '\r')
            cdsh_strbuf_append_char(out, tmp.data[i]);
    cdsh_strbuf_deinit(&tmp);
    return true;
}

#define ENV (x->env)
#define H(fn) static bool fn(mx *x, const macro_call *c, cdsh_strbuf *out)
#define UNUSED_ARGS (void)x, (void)c

/* ---- core ------------------------------------------------------------------- */

static bool repeat(const macro_call *c, const char *unit, cdsh_strbuf *out)
{
    double n = 1;
    if (c->argc && !cdsh__js_to_number(c->args[0], strlen(c->args[0]), &n))
        return false;
    if (n < 0 || n > CDSH_TAVERN_MACRO_MAX_BYTES)
        return false; /* ST: RangeError from String#repeat */
    for (long i = 0; i < (long)n; i++)
        cdsh_strbuf_append_str(out, unit);
    return true;
}

H(m_space)
{
    (void)x;
    return repeat(c, " ", out);
}

H(m_newline)
{
    (void)x;
    return repeat(c, "\n", out);
}

H(m_empty)
{
    UNUSED_ARGS;
    (void)out;
    return true;
}

H(m_trim)
{
    (void)x;
    if (c->scoped)
        return put(out, c->args[c->argc - 1]);
    return put(out, "{{trim}}");
}

static bool var_shorthand_name(const char *s, size_t n)
{
    if (n < 2 || (s[0] != '.' && s[0] != '$'))
        return false;
    if (!((s[1] >= 'a' && s[1] <= 'z') || (s[1] >= 'A' && s[1] <= 'Z')))
        return false;
    for (size_t i = 2; i < n; i++) {
        char ch = s[i];
        bool w = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '_';
        if (!w && !(ch == '-' && i + 1 < n))
            return false;
    }
    return true;
}

static char *resolve_dup(mx *x, const char *s, size_t n, uint64_t off)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh__macro_evaluate(x, s, n, off, &sb);
    char *r = cdsh_strbuf_take(&sb, NULL);
    return r ? r : strdup("");
}

H(m_if)
{
    const char *cond = c->args[0], *content = c->args[1];
    bool inverted = false;
    const char *p = cond;
    size_t w;
    while ((w = cdsh__js_space(p, p + strlen(p))))
        p += w;
    if (*p == '!') {
        inverted = true;
        p++;
        while ((w = cdsh__js_space(p, p + strlen(p))))
            p += w;
        cond = p;
    }
    char *r = resolve_dup(x, cond, strlen(cond), c->global_offset);
    size_t rl = strlen(r);
    if (var_shorthand_name(r, rl)) {
        char *m = NULL;
        if (asprintf(&m, "{{%s::%s}}", r[0] == '.' ? "getvar" : "getglobalvar", r + 1) < 0)
            m = NULL;
        free(r);
        r = m ? resolve_dup(x, m, strlen(m), c->global_offset) : strdup("");
        free(m);
    } else {
        const char *t = r;
        size_t tl = rl;
        cdsh__js_trim(&t, &tl);
        const macro_def *d = tl ? cdsh__macro_find(t, tl) : NULL;
        if (d && d->min_args == 0) {
            char *m = NULL;
            if (asprintf(&m, "{{%s}}", r) < 0)
                m = NULL;
            free(r);
            r = m ? resolve_dup(x, m, strlen(m), c->global_offset) : strdup("");
            free(m);
        }
    }
    if (!r)
        return false;
    bool falsy = !*r || cdsh__js_false_bool(r, strlen(r));
    free(r);
    if (inverted)
        falsy = !falsy;
    size_t then_len, else_at;
    size_t cl = strlen(content);
    bool has_else = cdsh__macro_split_else(content, cl, &then_len, &else_at);
    const char *branch = !falsy ? content : has_else ? content + else_at : NULL;
    size_t bl = !falsy ? then_len : has_else ? cl - else_at : 0;
    if (!branch)
        return true;
    char *v = resolve_dup(x, branch, bl, c->global_offset);
    if (!v)
        return false;
    if (c->preserve)
        cdsh_strbuf_append_str(out, v);
    else
        cdsh__macro_trim_scoped(v, strlen(v), out);
    free(v);
    return true;
}

H(m_input)
{
    (void)c;
    return put(out, ENV->input);
}

H(m_max_prompt)
{
    (void)c;
    return put_long(out, ENV->max_context - ENV->max_response, true);
}

H(m_max_context)
{
    (void)c;
    return put_long(out, ENV->max_context, true);
}

H(m_max_response)
{
    (void)c;
    return put_long(out, ENV->max_response, true);
}

H(m_reverse)
{
    (void)x;
    const char *s = c->args[0];
    size_t i = strlen(s);
    while (i > 0) {
        size_t j = i - 1;
        while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80)
            j--;
        cdsh_strbuf_append(out, s + j, i - j);
        i = j;
    }
    return true;
}

/* droll's formula: [N]dM[+-K]; a bare number means 1dN. */
H(m_roll)
{
    const char *f = c->args[0];
    char buf[80];
    size_t fl = strlen(f);
    if (fl && strspn(f, "0123456789") == fl) {
        if (fl + 3 > sizeof buf)
            return true; /* invalid formula: "" (ST warns) */
        snprintf(buf, sizeof buf, "1d%s", f);
        f = buf;
        fl = strlen(f);
    }
    size_t i = 0;
    double dice = 1, sides = 0, mod = 0;
    if (i < fl && f[i] >= '1' && f[i] <= '9') {
        dice = 0;
        while (i < fl && f[i] >= '0' && f[i] <= '9')
            dice = dice * 10 + (f[i++] - '0');
    }
    if (i >= fl || (f[i] != 'd' && f[i] != 'D'))
        return true;
    i++;
    if (i >= fl || f[i] < '1' || f[i] > '9')
        return true;
    while (i < fl && f[i] >= '0' && f[i] <= '9')
        sides = sides * 10 + (f[i++] - '0');
    if (i < fl && (f[i] == '+' || f[i] == '-')) {
        int sign = f[i++] == '-' ? -1 : 1;
        if (i >= fl || f[i] < '0' || f[i] > '9')
            return true;
        while (i < fl && f[i] >= '0' && f[i] <= '9')
            mod = mod * 10 + (f[i++] - '0');
        mod *= sign;
    }
    if (i != fl)
        return true;
    if (dice > 1e6)
        return false; /* ST would spin for minutes; cdsh leaves it verbatim */
    if (!ENV->roll_started) {
        cdsh_tavern_rng_init(&ENV->roll_rng, ENV->seed);
        ENV->roll_started = true;
    }
    double total = 0;
    for (double k = 0; k < dice; k++)
        total += 1 + floor(cdsh_tavern_rng_next(&ENV->roll_rng) * sides);
    total += mod;
    char nb[40];
    cdsh__js_number_str(total, nb);
    return put(out, nb);
}

/* readSingleArgsRandomList: "::" wins, else commas with "\," escapes; trimmed. */
static json_t *choice_list(const macro_call *c)
{
    json_t *items = json_array();
    if (c->argc != 1) {
        for (size_t i = 0; i < c->argc; i++)
            json_array_append_new(items, json_string(c->args[i]));
        return items;
    }
    const char *s = c->args[0];
    size_t n = strlen(s);
    bool dbl = strstr(s, "::") != NULL;
    cdsh_strbuf cur;
    cdsh_strbuf_init(&cur);
    for (size_t i = 0; i <= n; i++) {
        bool sep = i == n || (dbl ? (s[i] == ':' && s[i + 1] == ':') : s[i] == ',');
        if (!dbl && i < n && s[i] == '\\' && s[i + 1] == ',') {
            cdsh_strbuf_append_char(&cur, ',');
            i++;
            continue;
        }
        if (sep) {
            const char *p = cur.data ? cur.data : "";
            size_t l = cur.len;
            cdsh__js_trim(&p, &l);
            json_array_append_new(items, json_stringn(p, l));
            cdsh_strbuf_reset(&cur);
            if (dbl && i < n)
                i++;
            continue;
        }
        cdsh_strbuf_append_char(&cur, s[i]);
    }
    cdsh_strbuf_deinit(&cur);
    return items;
}

H(m_random)
{
    json_t *items = choice_list(c);
    size_t cnt = json_array_size(items);
    if (cnt) {
        uint32_t h = cdsh_tavern_seed_fnv1a(CDSH_TAVERN_FNV_BASIS, &ENV->seed, sizeof ENV->seed);
        h = cdsh_tavern_seed_fnv1a(h, &ENV->draws, sizeof ENV->draws);
        ENV->draws++;
        cdsh_tavern_rng rng;
        cdsh_tavern_rng_init(&rng, h);
        size_t i = (size_t)(cdsh_tavern_rng_next(&rng) * (double)cnt);
        put(out, json_string_value(json_array_get(items, i < cnt ? i : cnt - 1)));
    }
    json_decref(items);
    return true;
}

/* ST's pick: seedrandom(getStringHash("chatIdHash-contentHash-offset")). */
H(m_pick)
{
    json_t *items = choice_list(c);
    size_t cnt = json_array_size(items);
    if (cnt) {
        double chat = ENV->chat_id ? cdsh__js_string_hash(ENV->chat_id, strlen(ENV->chat_id)) : 0;
        char seed[96], fin[40];
        snprintf(seed, sizeof seed, "%.0f-%.0f-%llu", chat, x->content_hash,
                 (unsigned long long)c->global_offset);
        snprintf(fin, sizeof fin, "%.0f", cdsh__js_string_hash(seed, strlen(seed)));
        js_arc4 a;
        cdsh__js_arc4_seed(&a, fin, strlen(fin));
        size_t i = (size_t)floor(cdsh__js_arc4_next(&a) * (double)cnt);
        put(out, json_string_value(json_array_get(items, i < cnt ? i : cnt - 1)));
    }
    json_decref(items);
    return true;
}

H(m_outlet)
{
    const char *k = c->args[0];
    if (!*k)
        return true;
    return put(out, json_string_value(json_object_get(ENV->outlets, k)));
}

/* ---- names and card --------------------------------------------------------- */

H(m_user)
{
    (void)c;
    return put(out, ENV->user);
}

H(m_char)
{
    (void)c;
    return put(out, ENV->chr);
}

H(m_group)
{
    (void)c;
    return put(out, ENV->group ? ENV->group : ENV->chr);
}

H(m_group_not_muted)
{
    (void)c;
    return put(out, ENV->group_not_muted ? ENV->group_not_muted : ENV->group ? ENV->group : ENV->chr);
}

H(m_not_char)
{
    (void)c;
    return put(out, ENV->not_char ? ENV->not_char : ENV->user);
}

H(m_char_prompt)
{
    (void)c;
    return card_field(x, ENV->char_prompt, out);
}

H(m_char_instruction)
{
    (void)c;
    return card_field(x, ENV->char_jailbreak, out);
}

H(m_description)
{
    (void)c;
    return card_field(x, ENV->description, out);
}

H(m_personality)
{
    (void)c;
    return card_field(x, ENV->personality, out);
}

H(m_scenario)
{
    (void)c;
    return card_field(x, ENV->scenario, out);
}

H(m_persona)
{
    (void)c;
    return card_field(x, ENV->persona, out);
}

H(m_mes_examples_raw)
{
    (void)c;
    return card_field(x, ENV->mes_examples, out);
}

/* parseMesExamples for chat completion: each <START> block as
 * "<START>\n" + block.trim() + "\n". */
H(m_mes_examples)
{
    (void)c;
    cdsh_strbuf raw;
    cdsh_strbuf_init(&raw);
    card_field(x, ENV->mes_examples, &raw);
    const char *s = raw.data ? raw.data : "";
    size_t n = raw.len;
    if (!n || (n == 7 && !memcmp(s, "<START>", 7))) {
        cdsh_strbuf_deinit(&raw);
        return true;
    }
    cdsh_strbuf ex;
    cdsh_strbuf_init(&ex);
    if (strncmp(s, "<START>", 7)) {
        const char *t = s;
        size_t tl = n;
        cdsh__js_trim(&t, &tl);
        cdsh_strbuf_append_str(&ex, "<START>\n");
        cdsh_strbuf_append(&ex, t, tl);
    } else {
        cdsh_strbuf_append(&ex, s, n);
    }
    const char *p = ex.data;
    size_t len = ex.len;
    /* split on <START> (any case), drop the part before the first */
    size_t i = 0;
    while (i + 7 <= len && strncasecmp(p + i, "<START>", 7))
        i++;
    while (i + 7 <= len) {
        size_t b = i + 7, e = b;
        while (e + 7 <= len && strncasecmp(p + e, "<START>", 7))
            e++;
        if (e + 7 > len)
            e = len;
        const char *blk = p + b;
        size_t bl = e - b;
        cdsh__js_trim(&blk, &bl);
        cdsh_strbuf_append_str(out, "<START>\n");
        cdsh_strbuf_append(out, blk, bl);
        cdsh_strbuf_append_char(out, '\n');
        i = e;
    }
    cdsh_strbuf_deinit(&ex);
    cdsh_strbuf_deinit(&raw);
    return true;
}

H(m_depth_prompt)
{
    (void)c;
    return card_field(x, ENV->char_depth_prompt, out);
}

H(m_creator_notes)
{
    (void)c;
    return card_field(x, ENV->creator_notes, out);
}

H(m_first_message)
{
    double i = 0;
    if (c->argc)
        cdsh__js_to_number(c->args[0], strlen(c->args[0]), &i);
    if (i == 0)
        return card_field(x, ENV->first_message, out);
    if (x->no_card || i < 1 || i != floor(i))
        return true;
    const json_t *g = json_array_get(ENV->alternate_greetings, (size_t)i - 1);
    return card_field(x, json_string_value(g), out);
}

H(m_char_version)
{
    (void)c;
    return x->no_card ? true : put(out, ENV->char_version);
}

H(m_model)
{
    (void)c;
    return put(out, ENV->model);
}

H(m_original)
{
    (void)c;
    if (x->no_card && x->original_used)
        return false; /* a card field's own substitution has no {{original}} */
    if (!x->original_used)
        put(out, ENV->original);
    x->original_used = true;
    return true;
}

H(m_false)
{
    UNUSED_ARGS;
    return put(out, "false");
}

/* ---- state and chat ------------------------------------------------------------ */

H(m_last_gen_type)
{
    (void)c;
    return put(out, ENV->generation_type);
}

H(m_last_message)
{
    (void)c;
    return put(out, ENV->last_message);
}

H(m_last_message_id)
{
    (void)c;
    return put_long(out, ENV->last_message_id, ENV->last_message_id >= 0);
}

H(m_last_user_message)
{
    (void)c;
    return put(out, ENV->last_user_message);
}

H(m_last_char_message)
{
    (void)c;
    return put(out, ENV->last_char_message);
}

H(m_first_included)
{
    (void)c;
    return put_long(out, ENV->first_included_id, ENV->has_first_included);
}

H(m_last_swipe_id)
{
    (void)c;
    return put_long(out, ENV->swipes, ENV->has_swipes);
}

H(m_current_swipe_id)
{
    (void)c;
    return put_long(out, ENV->swipe_id + 1, ENV->has_swipes);
}

H(m_all_chat_range)
{
    (void)c;
    if (ENV->chat_length > 0)
        cdsh_strbuf_appendf(out, "0-%ld", ENV->chat_length - 1);
    return true;
}

/* ---- time ------------------------------------------------------------------------ */

static bool clock(mx *x, const char *fmt, int off_min, bool utc, cdsh_strbuf *out)
{
    if (ENV->clock_frozen)
        return true;
    cdsh__moment_format(ENV->now_ms, utc ? off_min : ENV->tz_offset_min, fmt, strlen(fmt), out);
    return true;
}

H(m_time)
{
    const char *spec = c->argc ? c->args[0] : "";
    if (!strncmp(spec, "UTC", 3) && (spec[3] == '+' || spec[3] == '-') && spec[4] &&
        strspn(spec + 4, "0123456789") == strlen(spec + 4)) {
        long v = strtol(spec + 4, NULL, 10);
        if (strlen(spec + 4) > 9)
            v = 100000;
        long off = (v < 16 ? v * 60 : v) * (spec[3] == '-' ? -1 : 1);
        if (labs(off) > 16 * 60)
            return clock(x, "LT", 0, false, out); /* moment ignores offsets beyond ±16 h */
        return clock(x, "LT", (int)off, true, out);
    }
    return clock(x, "LT", 0, false, out);
}

H(m_date)
{
    (void)c;
    return clock(x, "LL", 0, false, out);
}

H(m_weekday)
{
    (void)c;
    return clock(x, "dddd", 0, false, out);
}

H(m_isotime)
{
    (void)c;
    return clock(x, "HH:mm", 0, false, out);
}

H(m_isodate)
{
    (void)c;
    return clock(x, "YYYY-MM-DD", 0, false, out);
}

H(m_datetimeformat)
{
    return clock(x, c->args[0], 0, false, out);
}

H(m_idle)
{
    (void)c;
    if (ENV->clock_frozen)
        return true;
    if (!ENV->idle_since_ms)
        return put(out, "just now");
    cdsh__moment_humanize((double)(ENV->now_ms - ENV->idle_since_ms), false, out);
    return true;
}

H(m_time_diff)
{
    double a, b;
    bool ok = cdsh__moment_parse(c->args[0], strlen(c->args[0]), ENV->tz_offset_min, &a) &&
              cdsh__moment_parse(c->args[1], strlen(c->args[1]), ENV->tz_offset_min, &b);
    cdsh__moment_humanize(ok ? a - b : NAN, true, out);
    return true;
}

/* ---- variables ------------------------------------------------------------------- */

static json_t *store(mx *x, bool global)
{
    return global ? x->global : x->local;
}

#define VAR_PAIR(fn_local, fn_global, body)                                                       \
    static bool fn_##body(mx *x, const macro_call *c, cdsh_strbuf *out, json_t *st);              \
    H(fn_local)                                                                                   \
    {                                                                                             \
        return fn_##body(x, c, out, store(x, false));                                             \
    }                                                                                             \
    H(fn_global)                                                                                  \
    {                                                                                             \
        return fn_##body(x, c, out, store(x, true));                                              \
    }                                                                                             \
    static bool fn_##body(mx *x, const macro_call *c, cdsh_strbuf *out, json_t *st)

VAR_PAIR(m_setvar, m_setglobalvar, set)
{
    (void)x, (void)out;
    if (!*c->args[0])
        return false; /* ST throws: the variable name cannot be empty */
    json_object_set_new(st, c->args[0], json_string(c->args[1]));
    return true;
}

VAR_PAIR(m_addvar, m_addglobalvar, add)
{
    (void)x, (void)out;
    if (!*c->args[0])
        return false;
    json_t *v = json_string(c->args[1]);
    json_decref(cdsh__macro_var_add(st, c->args[0], v));
    json_decref(v);
    return true;
}

static bool step(const macro_call *c, cdsh_strbuf *out, json_t *st, double by)
{
    if (!*c->args[0])
        return false;
    json_t *v = json_real(by);
    json_t *r = cdsh__macro_var_add(st, c->args[0], v);
    cdsh__macro_js_str(out, r);
    json_decref(r);
    json_decref(v);
    return true;
}

VAR_PAIR(m_incvar, m_incglobalvar, inc)
{
    (void)x;
    return step(c, out, st, 1);
}

VAR_PAIR(m_decvar, m_decglobalvar, dec)
{
    (void)x;
    return step(c, out, st, -1);
}

VAR_PAIR(m_getvar, m_getglobalvar, get)
{
    (void)x;
    json_t *v = cdsh__macro_var_dup(st, c->args[0]);
    cdsh__macro_js_str(out, v);
    json_decref(v);
    return true;
}

VAR_PAIR(m_hasvar, m_hasglobalvar, has)
{
    (void)x;
    return put(out, json_object_get(st, c->args[0]) ? "true" : "false");
}

VAR_PAIR(m_deletevar, m_deleteglobalvar, del)
{
    (void)x, (void)out;
    json_object_del(st, c->args[0]);
    return true;
}

VAR_PAIR(m_setvarkey, m_setglobalvarkey, setkey)
{
    (void)x, (void)out;
    if (!*c->args[0])
        return false;
    cdsh__macro_var_key_set(st, c->args[0], c->args[1], c->args[2]);
    return true;
}

VAR_PAIR(m_getvarkey, m_getglobalvarkey, getkey)
{
    (void)x;
    cdsh__macro_var_key_get(st, c->args[0], c->args[1], out);
    return true;
}

/* ---- instruct, context and system prompt (ST's power_user settings) -------------- */

static const char *setting(const json_t *obj, const char *key, const char *dflt)
{
    const json_t *v = obj ? json_object_get(obj, key) : NULL;
    return v ? nz(json_string_value(v)) : dflt;
}

static bool instruct_on(mx *x)
{
    return ENV->instruct && json_is_true(json_object_get(ENV->instruct, "enabled"));
}

/* An instruct sequence: the key, or its fallback when the key is empty. */
static bool instruct_seq(mx *x, const char *key, const char *fallback, cdsh_strbuf *out)
{
    if (!instruct_on(x))
        return true;
    const char *v = setting(ENV->instruct, key, "");
    if (!*v && fallback)
        v = setting(ENV->instruct, fallback, "");
    return put(out, v);
}

#define INSTRUCT(fn, key, fallback)                                                               \
    H(fn)                                                                                         \
    {                                                                                             \
        (void)c;                                                                                  \
        return instruct_seq(x, key, fallback, out);                                               \
    }

INSTRUCT(m_i_story_prefix, "story_string_prefix", NULL)
INSTRUCT(m_i_story_suffix, "story_string_suffix", NULL)
INSTRUCT(m_i_user_prefix, "input_sequence", NULL)
INSTRUCT(m_i_user_suffix, "input_suffix", NULL)
INSTRUCT(m_i_asst_prefix, "output_sequence", NULL)
INSTRUCT(m_i_asst_suffix, "output_suffix", NULL)
INSTRUCT(m_i_sys_prefix, "system_sequence", NULL)
INSTRUCT(m_i_sys_suffix, "system_suffix", NULL)
INSTRUCT(m_i_first_asst, "first_output_sequence", "output_sequence")
INSTRUCT(m_i_last_asst, "last_output_sequence", "output_sequence")
INSTRUCT(m_i_stop, "stop_sequence", NULL)
INSTRUCT(m_i_user_filler, "user_alignment_message", NULL)
INSTRUCT(m_i_sys_instruction, "last_system_sequence", NULL)
INSTRUCT(m_i_first_user, "first_input_sequence", "input_sequence")
INSTRUCT(m_i_last_user, "last_input_sequence", "input_sequence")

static bool sysprompt_on(mx *x)
{
    const json_t *e = ENV->sysprompt ? json_object_get(ENV->sysprompt, "enabled") : NULL;
    return !ENV->sysprompt || !e || json_is_true(e);
}

static const char *const ST_SYSPROMPT =
    "Write {{char}}'s next reply in a fictional chat between {{char}} and {{user}}.";

H(m_default_sysprompt)
{
    (void)c;
    return sysprompt_on(x) ? put(out, setting(ENV->sysprompt, "content", ST_SYSPROMPT)) : true;
}

H(m_system_prompt)
{
    (void)c;
    if (!sysprompt_on(x))
        return true;
    cdsh_strbuf cp;
    cdsh_strbuf_init(&cp);
    card_field(x, ENV->char_prompt, &cp); /* cdsh always prefers the card's prompt */
    if (cp.len)
        cdsh_strbuf_append(out, cp.data, cp.len);
    else
        put(out, setting(ENV->sysprompt, "content", ST_SYSPROMPT));
    cdsh_strbuf_deinit(&cp);
    return true;
}

H(m_example_separator)
{
    (void)c;
    return put(out, setting(ENV->context_template, "example_separator", "***"));
}

H(m_chat_start)
{
    (void)c;
    return put(out, setting(ENV->context_template, "chat_start", "***"));
}

/* ---- built-in extensions --------------------------------------------------------- */

H(m_summary)
{
    (void)c;
    return put(out, ENV->summary);
}

H(m_authors_note)
{
    (void)c;
    return put(out, ENV->authors_note);
}

H(m_char_authors_note)
{
    (void)c;
    return put(out, ENV->char_authors_note);
}

H(m_default_authors_note)
{
    (void)c;
    return put(out, ENV->default_authors_note);
}

H(m_reasoning_prefix)
{
    (void)c;
    return put(out, setting(ENV->reasoning, "prefix", "<think>"));
}

H(m_reasoning_suffix)
{
    (void)c;
    return put(out, setting(ENV->reasoning, "suffix", "</think>"));
}

H(m_reasoning_separator)
{
    (void)c;
    return put(out, setting(ENV->reasoning, "separator", "\n"));
}

/* ---- the table --------------------------------------------------------------------- */

#define S AT_STR
#define I AT_INT
#define SN AT_STR_NUM
#define T MF_TURN
#define V MF_VARS
#define NO_EXPRESSIONS "needs ST's expressions extension (a sprite classifier cdsh does not run)"
#define NO_IMAGES "needs ST's image-generation extension (cdsh generates no images)"

static const macro_def DEFS[] = {
    /* core */
    {"space", NULL, 0, 1, {I}, 0, m_space, NULL},
    {"newline", NULL, 0, 1, {I}, 0, m_newline, NULL},
    {"noop", NULL, 0, 0, {0}, 0, m_empty, NULL},
    {"trim", NULL, 0, 1, {S}, 0, m_trim, NULL},
    {"if", NULL, 2, 2, {S, S}, MF_DELAY, m_if, NULL},
    {"else", NULL, 0, 0, {0}, 0, m_empty, NULL},
    {"input", NULL, 0, 0, {0}, T, m_input, NULL},
    {"maxPrompt", "maxPromptTokens", 0, 0, {0}, 0, m_max_prompt, NULL},
    {"maxContext", "maxContextTokens", 0, 0, {0}, 0, m_max_context, NULL},
    {"maxResponse", "maxResponseTokens", 0, 0, {0}, 0, m_max_response, NULL},
    {"reverse", NULL, 1, 1, {S}, 0, m_reverse, NULL},
    {"//", "comment", 1, 1, {S}, 0, m_empty, NULL},
    {"roll", NULL, 1, 1, {S}, T, m_roll, NULL},
    {"random", NULL, 0, 0, {0}, T | MF_LIST, m_random, NULL},
    {"pick", NULL, 0, 0, {0}, T | MF_LIST, m_pick, NULL},
    {"banned", NULL, 1, 1, {S}, 0, m_empty, NULL},
    {"outlet", NULL, 1, 1, {S}, T, m_outlet, NULL},
    /* env */
    {"user", NULL, 0, 0, {0}, 0, m_user, NULL},
    {"char", NULL, 0, 0, {0}, 0, m_char, NULL},
    {"group", "charIfNotGroup", 0, 0, {0}, 0, m_group, NULL},
    {"groupNotMuted", NULL, 0, 0, {0}, 0, m_group_not_muted, NULL},
    {"notChar", NULL, 0, 0, {0}, 0, m_not_char, NULL},
    {"charPrompt", NULL, 0, 0, {0}, 0, m_char_prompt, NULL},
    {"charInstruction", NULL, 0, 0, {0}, 0, m_char_instruction, NULL},
    {"charDescription", "description", 0, 0, {0}, 0, m_description, NULL},
    {"charPersonality", "personality", 0, 0, {0}, 0, m_personality, NULL},
    {"charScenario", "scenario", 0, 0, {0}, 0, m_scenario, NULL},
    {"persona", NULL, 0, 0, {0}, 0, m_persona, NULL},
    {"mesExamplesRaw", NULL, 0, 0, {0}, 0, m_mes_examples_raw, NULL},
    {"mesExamples", NULL, 0, 0, {0}, 0, m_mes_examples, NULL},
    {"charDepthPrompt", NULL, 0, 0, {0}, 0, m_depth_prompt, NULL},
    {"charCreatorNotes", "creatorNotes", 0, 0, {0}, 0, m_creator_notes, NULL},
    {"charFirstMessage", "greeting", 0, 1, {I}, 0, m_first_message, NULL},
    {"charVersion", "version|char_version", 0, 0, {0}, 0, m_char_version, NULL},
    {"model", NULL, 0, 0, {0}, 0, m_model, NULL},
    {"original", NULL, 0, 0, {0}, 0, m_original, NULL},
    {"isMobile", NULL, 0, 0, {0}, 0, m_false, NULL},
    /* state */
    {"lastGenerationType", NULL, 0, 0, {0}, T, m_last_gen_type, NULL},
    {"hasExtension", NULL, 1, 1, {S}, MF_UNSUPPORTED, NULL,
     "cdsh runs none of ST's UI extensions, so no extension name can be answered truthfully"},
    /* chat */
    {"lastMessage", NULL, 0, 0, {0}, T, m_last_message, NULL},
    {"lastMessageId", NULL, 0, 0, {0}, T, m_last_message_id, NULL},
    {"lastUserMessage", NULL, 0, 0, {0}, T, m_last_user_message, NULL},
    {"lastCharMessage", NULL, 0, 0, {0}, T, m_last_char_message, NULL},
    {"firstIncludedMessageId", NULL, 0, 0, {0}, T, m_first_included, NULL},
    {"firstDisplayedMessageId", NULL, 0, 0, {0}, MF_UNSUPPORTED, NULL,
     "reads ST's chat DOM (the first rendered message); cdsh renders no ST page"},
    {"lastSwipeId", NULL, 0, 0, {0}, T, m_last_swipe_id, NULL},
    {"currentSwipeId", NULL, 0, 0, {0}, T, m_current_swipe_id, NULL},
    {"allChatRange", NULL, 0, 0, {0}, T, m_all_chat_range, NULL},
    /* time */
    {"time", NULL, 0, 1, {S}, T, m_time, NULL},
    {"date", NULL, 0, 0, {0}, T, m_date, NULL},
    {"weekday", NULL, 0, 0, {0}, T, m_weekday, NULL},
    {"isotime", NULL, 0, 0, {0}, T, m_isotime, NULL},
    {"isodate", NULL, 0, 0, {0}, T, m_isodate, NULL},
    {"datetimeformat", NULL, 1, 1, {S}, T, m_datetimeformat, NULL},
    {"idleDuration", "idle_duration", 0, 0, {0}, T, m_idle, NULL},
    {"timeDiff", NULL, 2, 2, {S, S}, 0, m_time_diff, NULL},
    /* variables */
    {"setvar", NULL, 2, 2, {S, SN}, V, m_setvar, NULL},
    {"addvar", NULL, 2, 2, {S, SN}, V, m_addvar, NULL},
    {"incvar", NULL, 1, 1, {S}, V, m_incvar, NULL},
    {"decvar", NULL, 1, 1, {S}, V, m_decvar, NULL},
    {"getvar", NULL, 1, 1, {S}, V, m_getvar, NULL},
    {"hasvar", "varexists", 1, 1, {S}, V, m_hasvar, NULL},
    {"deletevar", "flushvar", 1, 1, {S}, V, m_deletevar, NULL},
    {"setvarkey", "setvarindex", 3, 3, {S, SN, SN}, V, m_setvarkey, NULL},
    {"getvarkey", "getvarindex", 2, 2, {S, SN}, V, m_getvarkey, NULL},
    {"setglobalvar", NULL, 2, 2, {S, SN}, V, m_setglobalvar, NULL},
    {"addglobalvar", NULL, 2, 2, {S, SN}, V, m_addglobalvar, NULL},
    {"incglobalvar", NULL, 1, 1, {S}, V, m_incglobalvar, NULL},
    {"decglobalvar", NULL, 1, 1, {S}, V, m_decglobalvar, NULL},
    {"getglobalvar", NULL, 1, 1, {S}, V, m_getglobalvar, NULL},
    {"hasglobalvar", "globalvarexists", 1, 1, {S}, V, m_hasglobalvar, NULL},
    {"deleteglobalvar", "flushglobalvar", 1, 1, {S}, V, m_deleteglobalvar, NULL},
    {"setglobalvarkey", "setglobalvarindex", 3, 3, {S, SN, SN}, V, m_setglobalvarkey, NULL},
    {"getglobalvarkey", "getglobalvarindex", 2, 2, {S, SN}, V, m_getglobalvarkey, NULL},
    /* instruct, context, system prompt */
    {"instructStoryStringPrefix", NULL, 0, 0, {0}, 0, m_i_story_prefix, NULL},
    {"instructStoryStringSuffix", NULL, 0, 0, {0}, 0, m_i_story_suffix, NULL},
    {"instructUserPrefix", "instructInput", 0, 0, {0}, 0, m_i_user_prefix, NULL},
    {"instructUserSuffix", NULL, 0, 0, {0}, 0, m_i_user_suffix, NULL},
    {"instructAssistantPrefix", "instructOutput", 0, 0, {0}, 0, m_i_asst_prefix, NULL},
    {"instructAssistantSuffix", "instructSeparator", 0, 0, {0}, 0, m_i_asst_suffix, NULL},
    {"instructSystemPrefix", NULL, 0, 0, {0}, 0, m_i_sys_prefix, NULL},
    {"instructSystemSuffix", NULL, 0, 0, {0}, 0, m_i_sys_suffix, NULL},
    {"instructFirstAssistantPrefix", "instructFirstOutputPrefix", 0, 0, {0}, 0, m_i_first_asst, NULL},
    {"instructLastAssistantPrefix", "instructLastOutputPrefix", 0, 0, {0}, 0, m_i_last_asst, NULL},
    {"instructStop", NULL, 0, 0, {0}, 0, m_i_stop, NULL},
    {"instructUserFiller", NULL, 0, 0, {0}, 0, m_i_user_filler, NULL},
    {"instructSystemInstructionPrefix", NULL, 0, 0, {0}, 0, m_i_sys_instruction, NULL},
    {"instructFirstUserPrefix", "instructFirstInput", 0, 0, {0}, 0, m_i_first_user, NULL},
    {"instructLastUserPrefix", "instructLastInput", 0, 0, {0}, 0, m_i_last_user, NULL},
    {"defaultSystemPrompt", "instructSystem|instructSystemPrompt", 0, 0, {0}, 0, m_default_sysprompt,
     NULL},
    {"systemPrompt", NULL, 0, 0, {0}, 0, m_system_prompt, NULL},
    {"exampleSeparator", "chatSeparator", 0, 0, {0}, 0, m_example_separator, NULL},
    {"chatStart", NULL, 0, 0, {0}, 0, m_chat_start, NULL},
    /* ST's built-in extensions */
    {"summary", NULL, 0, 0, {0}, T, m_summary, NULL},
    {"authorsNote", NULL, 0, 0, {0}, 0, m_authors_note, NULL},
    {"charAuthorsNote", NULL, 0, 0, {0}, 0, m_char_authors_note, NULL},
    {"defaultAuthorsNote", NULL, 0, 0, {0}, 0, m_default_authors_note, NULL},
    {"reasoningPrefix", NULL, 0, 0, {0}, 0, m_reasoning_prefix, NULL},
    {"reasoningSuffix", NULL, 0, 0, {0}, 0, m_reasoning_suffix, NULL},
    {"reasoningSeparator", NULL, 0, 0, {0}, 0, m_reasoning_separator, NULL},
    {"defaultExpression", NULL, 0, 0, {0}, MF_UNSUPPORTED, NULL, NO_EXPRESSIONS},
    {"lastExpression", NULL, 0, 1, {S}, MF_UNSUPPORTED | MF_DELAY, NULL, NO_EXPRESSIONS},
    {"availableExpressions", NULL, 0, 0, {0}, MF_UNSUPPORTED, NULL, NO_EXPRESSIONS},
    {"charPrefix", NULL, 0, 0, {0}, MF_UNSUPPORTED, NULL, NO_IMAGES},
    {"charNegativePrefix", NULL, 0, 0, {0}, MF_UNSUPPORTED, NULL, NO_IMAGES},
};

#define NDEFS (sizeof DEFS / sizeof DEFS[0])

static bool alias_match(const char *aliases, const char *name, size_t n)
{
    for (const char *a = aliases; a && *a;) {
        const char *bar = strchr(a, '|');
        size_t l = bar ? (size_t)(bar - a) : strlen(a);
        if (l == n && !strncasecmp(a, name, n))
            return true;
        a = bar ? bar + 1 : a + l;
    }
    return false;
}

const macro_def *cdsh__macro_find(const char *name, size_t n)
{
    for (size_t i = 0; i < NDEFS; i++) {
        if (strlen(DEFS[i].name) == n && !strncasecmp(DEFS[i].name, name, n))
            return &DEFS[i];
        if (alias_match(DEFS[i].aliases, name, n))
            return &DEFS[i];
    }
    return NULL;
}

static size_t alias_count(const char *aliases)
{
    size_t k = 0;
    for (const char *a = aliases; a && *a; a++)
        if (*a == '|')
            k++;
    return aliases && *aliases ? k + 1 : 0;
}

size_t cdsh_tavern_macros_count(void)
{
    size_t n = 0;
    for (size_t i = 0; i < NDEFS; i++)
        n += 1 + alias_count(DEFS[i].aliases);
    return n;
}

const char *cdsh_tavern_macros_name(size_t i)
{
    static __thread char buf[64];
    for (size_t k = 0; k < NDEFS; k++) {
        if (i == 0)
            return DEFS[k].name;
        i--;
        size_t na = alias_count(DEFS[k].aliases);
        if (i < na) {
            const char *a = DEFS[k].aliases;
            for (size_t j = 0; j < i; j++)
                a = strchr(a, '|') + 1;
            const char *bar = strchr(a, '|');
            size_t l = bar ? (size_t)(bar - a) : strlen(a);
            snprintf(buf, sizeof buf, "%.*s", (int)l, a);
            return buf;
        }
        i -= na;
    }
    return NULL;
}

bool cdsh_tavern_macros_unsupported(const char *name, const char **why)
{
    const macro_def *d = name ? cdsh__macro_find(name, strlen(name)) : NULL;
    if (!d || !(d->flags & MF_UNSUPPORTED))
        return false;
    if (why)
        *why = d->why;
    return true;
}
