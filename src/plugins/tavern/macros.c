/* macros.c — SillyTavern macro expansion (see macros.h). Innermost-first
 * passes over {{...}}; one evaluator per macro name. Knows nothing about
 * where the text goes (channels are the assembler's business). */
#include "plugins/tavern/macros.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/json.h"
#include "base/strbuf.h"
#include "plugins/tavern/seed.h"

#define FROZEN_MARK '\x1a'

typedef struct xp {
    cdsh_tavern_macro_env *env;
    json_t *local, *global; /* the stores in use (env's or scratch) */
    const char *raw;        /* the text as given (seeds {{pick}}) */
    bool original_used;
    char **frozen;
    size_t nfrozen;
} xp;

typedef struct arg {
    const char *p;
    size_t n;
} arg;

static const char *nz(const char *s)
{
    return s ? s : "";
}

static bool name_is(const char *body, size_t nlen, const char *name)
{
    return strlen(name) == nlen && !strncasecmp(body, name, nlen);
}

/* Splits s[0..n) on "::" into at most max args; returns the count. */
static size_t split2(const char *s, size_t n, arg *out, size_t max)
{
    size_t k = 0, start = 0;
    for (size_t i = 0; i + 1 < n && k + 1 < max; i++) {
        if (s[i] == ':' && s[i + 1] == ':') {
            out[k++] = (arg){s + start, i - start};
            start = i + 2;
            i++;
        }
    }
    out[k++] = (arg){s + start, n - start};
    return k;
}

static char *arg_dup(arg a)
{
    return strndup(a.p, a.n);
}

static json_t *store_for(xp *x, bool global)
{
    return global ? x->global : x->local;
}

/* JavaScript's String(value) for a stored variable. */
static void append_value(cdsh_strbuf *out, const json_t *v)
{
    if (!v || json_is_null(v))
        return;
    if (json_is_string(v)) {
        cdsh_strbuf_append(out, json_string_value(v), json_string_length(v));
    } else if (json_is_integer(v)) {
        cdsh_strbuf_appendf(out, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        char buf[CDSH_JSON_DOUBLE_MAX];
        cdsh_json_format_double(json_real_value(v), false, buf);
        cdsh_strbuf_append_str(out, buf);
    } else if (json_is_boolean(v)) {
        cdsh_strbuf_append_str(out, json_is_true(v) ? "true" : "false");
    } else {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        cdsh_strbuf_append_str(out, s);
        free(s);
    }
}

/* Number(text) as JavaScript reads it (whitespace-trimmed; "" is 0). */
static bool js_number(const char *s, size_t n, double *out)
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (!n) {
        *out = 0;
        return true;
    }
    char buf[64];
    if (n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    double d = strtod(buf, &end);
    if (*end || isnan(d) || strpbrk(buf, "xXnNiI"))
        return false;
    *out = d;
    return true;
}

json_t *cdsh__tavern_var_number_json(double d)
{
    if (d == floor(d) && fabs(d) < 9e15)
        return json_integer((json_int_t)d);
    return json_real(d);
}

bool cdsh__tavern_var_number(const json_t *v, double *out)
{
    if (!v || json_is_null(v)) {
        *out = 0;
        return true;
    }
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return true;
    }
    if (json_is_string(v))
        return js_number(json_string_value(v), json_string_length(v), out);
    return false;
}

/* addvar as ST does it: numeric sum when both are numbers, else string append. */
static void var_add(json_t *store, const char *name, const char *val, size_t vlen)
{
    json_t *cur = json_object_get(store, name);
    double a, b;
    if (json_is_array(cur)) {
        json_array_append_new(cur, json_stringn(val, vlen));
        return;
    }
    if (cdsh__tavern_var_number(cur, &a) && js_number(val, vlen, &b)) {
        json_object_set_new(store, name, cdsh__tavern_var_number_json(a + b));
        return;
    }
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    append_value(&sb, cur);
    cdsh_strbuf_append(&sb, val, vlen);
    json_object_set_new(store, name, json_stringn(sb.data, sb.len));
    cdsh_strbuf_deinit(&sb);
}

static void var_set(json_t *store, const char *name, const char *val, size_t vlen)
{
    /* Stored as the string it is; addvar reads numbers back (as ST does). */
    json_object_set_new(store, name, json_stringn(val, vlen));
}

static uint32_t next_seed(xp *x)
{
    cdsh_tavern_macro_env *e = x->env;
    uint32_t h = cdsh_tavern_seed_fnv1a(CDSH_TAVERN_FNV_BASIS, &e->seed, sizeof e->seed);
    h = cdsh_tavern_seed_fnv1a(h, &e->draws, sizeof e->draws);
    e->draws++;
    return h;
}

/* The item list of random/pick: "::"-separated, else comma-separated with
 * "\," escapes and items trimmed. Returns an owned array of strings. */
static json_t *choice_list(const char *s, size_t n)
{
    json_t *items = json_array();
    if (memmem(s, n, "::", 2)) {
        arg a[256];
        size_t k = split2(s, n, a, 256);
        for (size_t i = 0; i < k; i++)
            json_array_append_new(items, json_stringn(a[i].p, a[i].n));
        return items;
    }
    cdsh_strbuf cur;
    cdsh_strbuf_init(&cur);
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] == '\\' && i + 1 < n && s[i + 1] == ',') {
            cdsh_strbuf_append_char(&cur, ',');
            i++;
            continue;
        }
        if (i == n || s[i] == ',') {
            const char *p = cur.data;
            size_t l = cur.len;
            while (l && isspace((unsigned char)*p))
                p++, l--;
            while (l && isspace((unsigned char)p[l - 1]))
                l--;
            json_array_append_new(items, json_stringn(p, l));
            cdsh_strbuf_reset(&cur);
            continue;
        }
        cdsh_strbuf_append_char(&cur, s[i]);
    }
    cdsh_strbuf_deinit(&cur);
    return items;
}

/* droll: NdM(+|-)K or a bare N meaning 1dN. false if invalid. */
static bool roll(const char *s, size_t n, cdsh_tavern_rng *rng, long long *out)
{
    char buf[64];
    size_t l = 0;
    for (size_t i = 0; i < n && l + 1 < sizeof buf; i++)
        if (!isspace((unsigned char)s[i]))
            buf[l++] = (char)tolower((unsigned char)s[i]);
    buf[l] = 0;
    if (!l)
        return false;
    long cnt = 1, sides = 0, mod = 0;
    char *p = buf, *end;
    if (strspn(buf, "0123456789") == l) {
        sides = strtol(buf, NULL, 10);
    } else {
        if (*p != 'd') {
            cnt = strtol(p, &end, 10);
            if (end == p)
                return false;
            p = end;
        }
        if (*p++ != 'd')
            return false;
        sides = strtol(p, &end, 10);
        if (end == p)
            return false;
        p = end;
        if (*p == '+' || *p == '-') {
            mod = strtol(p + 1, &end, 10);
            if (end == p + 1)
                return false;
            if (*p == '-')
                mod = -mod;
            p = end;
        }
        if (*p)
            return false;
    }
    if (cnt < 1 || cnt > 1000 || sides < 1 || sides > 1000000)
        return false;
    long long total = mod;
    for (long i = 0; i < cnt; i++)
        total += 1 + (long long)(cdsh_tavern_rng_next(rng) * (double)sides);
    *out = total;
    return true;
}

static const char *const WEEKDAYS[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                       "Thursday", "Friday", "Saturday"};

static void clock_tm(const cdsh_tavern_macro_env *e, int extra_min, struct tm *tm)
{
    time_t t = (time_t)(e->now_ms / 1000) + (time_t)(e->tz_offset_min + extra_min) * 60;
    gmtime_r(&t, tm);
}

/* A small moment.js format subset: YYYY YY MM M DD D HH H mm ss dddd ddd A. */
static void format_moment(const struct tm *tm, const char *f, size_t n, cdsh_strbuf *out)
{
    static const struct {
        const char *tok;
        int what;
    } T[] = {{"YYYY", 1}, {"dddd", 11}, {"ddd", 12}, {"YY", 2}, {"MM", 3}, {"DD", 5}, {"HH", 7},
             {"mm", 9},   {"ss", 10},   {"M", 4},    {"D", 6},  {"H", 8},  {"A", 13}};
    for (size_t i = 0; i < n;) {
        size_t k;
        for (k = 0; k < sizeof T / sizeof T[0]; k++) {
            size_t tl = strlen(T[k].tok);
            if (i + tl <= n && !memcmp(f + i, T[k].tok, tl))
                break;
        }
        if (k == sizeof T / sizeof T[0]) {
            cdsh_strbuf_append_char(out, f[i++]);
            continue;
        }
        i += strlen(T[k].tok);
        switch (T[k].what) {
        case 1: cdsh_strbuf_appendf(out, "%04d", tm->tm_year + 1900); break;
        case 2: cdsh_strbuf_appendf(out, "%02d", tm->tm_year % 100); break;
        case 3: cdsh_strbuf_appendf(out, "%02d", tm->tm_mon + 1); break;
        case 4: cdsh_strbuf_appendf(out, "%d", tm->tm_mon + 1); break;
        case 5: cdsh_strbuf_appendf(out, "%02d", tm->tm_mday); break;
        case 6: cdsh_strbuf_appendf(out, "%d", tm->tm_mday); break;
        case 7: cdsh_strbuf_appendf(out, "%02d", tm->tm_hour); break;
        case 8: cdsh_strbuf_appendf(out, "%d", tm->tm_hour); break;
        case 9: cdsh_strbuf_appendf(out, "%02d", tm->tm_min); break;
        case 10: cdsh_strbuf_appendf(out, "%02d", tm->tm_sec); break;
        case 11: cdsh_strbuf_append_str(out, WEEKDAYS[tm->tm_wday]); break;
        case 12: cdsh_strbuf_append(out, WEEKDAYS[tm->tm_wday], 3); break;
        case 13: cdsh_strbuf_append_str(out, tm->tm_hour < 12 ? "AM" : "PM"); break;
        }
    }
}

static void freeze(xp *x, const char *text, cdsh_strbuf *out)
{
    char **f = realloc(x->frozen, (x->nfrozen + 1) * sizeof *f);
    if (!f)
        return;
    x->frozen = f;
    f[x->nfrozen] = strdup(text);
    cdsh_strbuf_appendf(out, "%c%zu%c", FROZEN_MARK, x->nfrozen, FROZEN_MARK);
    x->nfrozen++;
}

static bool is_write_macro(const char *name, size_t nlen)
{
    static const char *const W[] = {"setvar",       "setlocalvar",  "setglobalvar", "addvar",
                                    "addlocalvar",  "addglobalvar", "incvar",       "inclocalvar",
                                    "incglobalvar", "decvar",       "declocalvar",  "decglobalvar"};
    for (size_t i = 0; i < sizeof W / sizeof W[0]; i++)
        if (name_is(name, nlen, W[i]))
            return true;
    return false;
}

/* Long by design: one dispatch over SillyTavern's macro names in ST's own
 * order of precedence; splitting it would scatter that table. */
/* Evaluates the macro body b[0..n) found at `offset`. Returns true and
 * appends the replacement to out, or false to leave the macro verbatim. */
static bool eval(xp *x, const char *b, size_t n, size_t offset, cdsh_strbuf *out)
{
    cdsh_tavern_macro_env *e = x->env;
    if (n >= 2 && b[0] == '/' && b[1] == '/')
        return true; /* {{// comment}} */
    size_t nlen = 0;
    while (nlen < n && b[nlen] != ':' && b[nlen] != ' ')
        nlen++;
    const char *rest = b + nlen;
    size_t rlen = n - nlen;

    /* Variables. */
    if (rlen >= 2 && rest[0] == ':' && rest[1] == ':') {
        bool global = false, known = true;
        enum { GET, SET, ADD, INC, DEC } op = GET;
        static const struct {
            const char *n;
            int op;
            bool g;
        } V[] = {{"getvar", GET, false}, {"getlocalvar", GET, false}, {"getglobalvar", GET, true},
                 {"setvar", SET, false}, {"setlocalvar", SET, false}, {"setglobalvar", SET, true},
                 {"addvar", ADD, false}, {"addlocalvar", ADD, false}, {"addglobalvar", ADD, true},
                 {"incvar", INC, false}, {"inclocalvar", INC, false}, {"incglobalvar", INC, true},
                 {"decvar", DEC, false}, {"declocalvar", DEC, false}, {"decglobalvar", DEC, true}};
        size_t vi;
        for (vi = 0; vi < sizeof V / sizeof V[0]; vi++)
            if (name_is(b, nlen, V[vi].n))
                break;
        known = vi < sizeof V / sizeof V[0];
        if (known) {
            op = V[vi].op;
            global = V[vi].g;
            arg a[2];
            size_t k = split2(rest + 2, rlen - 2, a, 2);
            char *name = arg_dup(a[0]);
            if (!name)
                return false;
            json_t *store = store_for(x, global);
            e->flags |= CDSH_TAVERN_MACRO_VARS;
            switch (op) {
            case GET: append_value(out, json_object_get(store, name)); break;
            case SET: var_set(store, name, k > 1 ? a[1].p : "", k > 1 ? a[1].n : 0); break;
            case ADD: var_add(store, name, k > 1 ? a[1].p : "", k > 1 ? a[1].n : 0); break;
            case INC:
            case DEC:
                var_add(store, name, op == INC ? "1" : "-1", op == INC ? 1 : 2);
                append_value(out, json_object_get(store, name));
                break;
            }
            free(name);
            return true;
        }
    }
    if (name_is(b, nlen, "outlet") && rlen >= 2 && rest[0] == ':' && rest[1] == ':') {
        char *name = strndup(rest + 2, rlen - 2);
        const char *v = name ? json_string_value(json_object_get(e->outlets, name)) : NULL;
        e->flags |= CDSH_TAVERN_MACRO_TURN_LOCAL;
        freeze(x, nz(v), out); /* frozen: an outlet never expands inside another */
        free(name);
        return true;
    }
    if (name_is(b, nlen, "random") || name_is(b, nlen, "pick")) {
        const char *p = rest;
        size_t l = rlen;
        if (l && *p == ' ')
            p++, l--;
        if (l >= 2 && p[0] == ':' && p[1] == ':')
            p += 2, l -= 2;
        else if (l && *p == ':')
            p++, l--;
        else
            return false;
        json_t *items = choice_list(p, l);
        size_t cnt = json_array_size(items);
        e->flags |= CDSH_TAVERN_MACRO_TURN_LOCAL;
        cdsh_tavern_rng rng;
        if (name_is(b, nlen, "pick")) {
            uint32_t h = cdsh_tavern_seed_fnv1a_str(CDSH_TAVERN_FNV_BASIS, e->chat_id);
            h += cdsh_tavern_seed_fnv1a_str(CDSH_TAVERN_FNV_BASIS, x->raw);
            h += (uint32_t)offset;
            cdsh_tavern_rng_init(&rng, h);
        } else {
            cdsh_tavern_rng_init(&rng, next_seed(x));
        }
        if (cnt) {
            size_t i = (size_t)(cdsh_tavern_rng_next(&rng) * (double)cnt);
            json_t *it = json_array_get(items, i < cnt ? i : cnt - 1);
            cdsh_strbuf_append(out, json_string_value(it), json_string_length(it));
        }
        json_decref(items);
        return true;
    }
    if (name_is(b, nlen, "roll")) {
        if (!rlen || (rest[0] != ':' && rest[0] != ' '))
            return false;
        cdsh_tavern_rng rng;
        cdsh_tavern_rng_init(&rng, next_seed(x));
        long long r;
        e->flags |= CDSH_TAVERN_MACRO_TURN_LOCAL;
        if (roll(rest + 1, rlen - 1, &rng, &r))
            cdsh_strbuf_appendf(out, "%lld", r);
        return true;
    }
    if (name_is(b, nlen, "reverse") && rlen && rest[0] == ':') {
        /* Reverses code points. */
        const char *s = rest + 1;
        size_t l = rlen - 1, i = l;
        while (i > 0) {
            size_t j = i - 1;
            while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80)
                j--;
            cdsh_strbuf_append(out, s + j, i - j);
            i = j;
        }
        return true;
    }
    if (name_is(b, nlen, "banned") && rlen && rest[0] == ' ')
        return true;
    if (name_is(b, nlen, "datetimeformat") && rlen && rest[0] == ' ') {
        e->flags |= CDSH_TAVERN_MACRO_TURN_LOCAL;
        if (!e->clock_frozen) {
            struct tm tm;
            clock_tm(e, 0, &tm);
            format_moment(&tm, rest + 1, rlen - 1, out);
        }
        return true;
    }
    if (!strncasecmp(b, "time_utc", 8) && n > 9 && (b[8] == '+' || b[8] == '-')) {
        char *end;
        char buf[16];
        size_t l = n - 8 < sizeof buf - 1 ? n - 8 : sizeof buf - 1;
        memcpy(buf, b + 8, l);
        buf[l] = 0;
        long h = strtol(buf, &end, 10);
        if (*end || h < -14 || h > 14)
            return false;
        e->flags |= CDSH_TAVERN_MACRO_TURN_LOCAL;
        if (!e->clock_frozen) {
            struct tm tm;
            clock_tm(e, (int)h * 60 - e->tz_offset_min, &tm);
            cdsh_strbuf_appendf(out, "%02d:%02d", tm.tm_hour, tm.tm_min);
        }
        return true;
    }
    if (rlen)
        return false;

    /* Plain names. */
    static const char *const CLOCK[] = {"time",    "date",    "datetime",
                                        "weekday", "isotime", "isodate"};
    for (size_t i = 0; i < sizeof CLOCK / sizeof CLOCK[0]; i++) {
        if (!name_is(b, nlen, CLOCK[i]))
            continue;
        e->flags |= CDSH_TAVERN_MACRO_TURN_LOCAL;
        if (e->clock_frozen)
            return true;
        struct tm tm;
        clock_tm(e, 0, &tm);
        switch (i) {
        case 0:
        case 4: cdsh_strbuf_appendf(out, "%02d:%02d", tm.tm_hour, tm.tm_min); break;
        case 1:
        case 5:
            cdsh_strbuf_appendf(out, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                                tm.tm_mday);
            break;
        case 2:
            cdsh_strbuf_appendf(out, "%04d-%02d-%02d %02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                                tm.tm_mday, tm.tm_hour, tm.tm_min);
            break;
        case 3: cdsh_strbuf_append_str(out, WEEKDAYS[tm.tm_wday]); break;
        }
        return true;
    }
    const struct {
        const char *n;
        const char *v;
        bool turn;
    } P[] = {
        {"user", e->user, false},
        {"username", e->user, false},
        {"char", e->chr, false},
        {"charname", e->chr, false},
        {"group", e->group ? e->group : e->chr, false},
        {"charifnotgroup", e->group ? e->group : e->chr, false},
        {"description", e->description, false},
        {"personality", e->personality, false},
        {"scenario", e->scenario, false},
        {"persona", e->persona, false},
        {"firstmessage", e->first_message, false},
        {"charfirstmessage", e->first_message, false},
        {"mesexamples", e->mes_examples, false},
        {"mesexamplesraw", e->mes_examples, false},
        {"charprompt", e->char_prompt, false},
        {"charinstruction", e->char_jailbreak, false},
        {"charjailbreak", e->char_jailbreak, false},
        {"charversion", e->char_version, false},
        {"char_version", e->char_version, false},
        {"model", e->model, false},
        {"input", e->input, true},
        {"lastmessage", e->last_message, true},
        {"lastusermessage", e->last_user_message, true},
        {"last_user_message", e->last_user_message, true},
        {"lastcharmessage", e->last_char_message, true},
        {"newline", "\n", false},
        {"noop", "", false},
    };
    for (size_t i = 0; i < sizeof P / sizeof P[0]; i++) {
        if (name_is(b, nlen, P[i].n)) {
            if (P[i].turn)
                e->flags |= CDSH_TAVERN_MACRO_TURN_LOCAL;
            cdsh_strbuf_append_str(out, nz(P[i].v));
            return true;
        }
    }
    if (name_is(b, nlen, "lastmessageid")) {
        e->flags |= CDSH_TAVERN_MACRO_TURN_LOCAL;
        if (e->last_message_id >= 0)
            cdsh_strbuf_appendf(out, "%ld", e->last_message_id);
        return true;
    }
    if (name_is(b, nlen, "original")) {
        if (!x->original_used)
            cdsh_strbuf_append_str(out, nz(e->original));
        x->original_used = true;
        return true;
    }
    return false;
}

/* Legacy angle-bracket tokens, case-insensitive. Copies runs between '<'. */
static void legacy(const char *s, const cdsh_tavern_macro_env *e, cdsh_strbuf *out)
{
    static const char *const TOK[] = {"<USER>", "<BOT>", "<CHAR>", "<CHARIFNOTGROUP>", "<GROUP>"};
    const char *grp = e->group ? e->group : e->chr;
    const char *val[] = {e->user, e->chr, e->chr, grp, grp};
    while (*s) {
        const char *lt = strchr(s, '<');
        if (!lt) {
            cdsh_strbuf_append_str(out, s);
            return;
        }
        cdsh_strbuf_append(out, s, (size_t)(lt - s));
        s = lt;
        size_t k;
        for (k = 0; k < 5; k++)
            if (!strncasecmp(s, TOK[k], strlen(TOK[k])))
                break;
        if (k < 5) {
            cdsh_strbuf_append_str(out, nz(val[k]));
            s += strlen(TOK[k]);
        } else {
            cdsh_strbuf_append_char(out, *s++);
        }
    }
}

/* {{trim}} with the newlines around it (ST: /(?:\r?\n)*{{trim}}(?:\r?\n)*​/gi). */
static bool trim_pass(cdsh_strbuf *sb)
{
    const char *hit = NULL;
    bool any = false;
    for (;;) {
        hit = NULL;
        for (const char *p = strstr(sb->data, "{{"); p; p = strstr(p + 2, "{{"))
            if (!strncasecmp(p, "{{trim}}", 8)) {
                hit = p;
                break;
            }
        if (!hit)
            return any;
        size_t a = (size_t)(hit - sb->data), z = a + 8;
        while (a > 0 && (sb->data[a - 1] == '\n' || sb->data[a - 1] == '\r'))
            a--;
        while (z < sb->len && (sb->data[z] == '\n' || sb->data[z] == '\r'))
            z++;
        memmove(sb->data + a, sb->data + z, sb->len - z + 1);
        sb->len -= z - a;
        any = true;
    }
}

/* One sweep: evaluates innermost macros (writes_only: only variable writes).
 * Returns true if anything changed. */
static bool is_read_macro(const char *name, size_t nlen)
{
    return name_is(name, nlen, "getvar") || name_is(name, nlen, "getlocalvar") ||
           name_is(name, nlen, "getglobalvar");
}

/* True if a variable write is still waiting (nested, so not yet innermost). */
static bool pending_write(const char *s)
{
    for (const char *p = strstr(s, "{{"); p; p = strstr(p + 2, "{{")) {
        size_t nlen = 0;
        while (p[2 + nlen] && p[2 + nlen] != ':' && p[2 + nlen] != ' ' && p[2 + nlen] != '}')
            nlen++;
        if (is_write_macro(p + 2, nlen))
            return true;
    }
    return false;
}

static bool sweep(xp *x, cdsh_strbuf *cur, bool writes_only, bool defer_reads)
{
    cdsh_strbuf out;
    cdsh_strbuf_init(&out);
    bool changed = false;
    const char *s = cur->data;
    size_t n = cur->len, i = 0, copied = 0;
    while (i + 1 < n) {
        if (!(s[i] == '{' && s[i + 1] == '{')) {
            i++;
            continue;
        }
        /* Innermost: the last "{{" before the first "}}" after i. */
        size_t j = i + 2, open = i;
        while (j + 1 < n && !(s[j] == '}' && s[j + 1] == '}')) {
            if (s[j] == '{' && s[j + 1] == '{')
                open = j;
            j++;
        }
        if (j + 1 >= n)
            break;
        const char *body = s + open + 2;
        size_t blen = j - open - 2;
        size_t nlen = 0;
        while (nlen < blen && body[nlen] != ':' && body[nlen] != ' ')
            nlen++;
        bool eligible =
            writes_only ? is_write_macro(body, nlen) : !(defer_reads && is_read_macro(body, nlen));
        if (eligible && out.len + (open - copied) < CDSH_TAVERN_MACRO_MAX_BYTES) {
            size_t mark = out.len;
            cdsh_strbuf_append(&out, s + copied, open - copied);
            size_t before = out.len;
            if (eval(x, body, blen, open, &out)) {
                changed = true;
                copied = j + 2;
                if (out.len > CDSH_TAVERN_MACRO_MAX_BYTES) {
                    cdsh_strbuf_truncate(&out, before);
                    x->env->flags |= CDSH_TAVERN_MACRO_TOO_BIG;
                }
            } else {
                cdsh_strbuf_truncate(&out, mark);
            }
        }
        i = j + 2;
    }
    if (!changed) {
        cdsh_strbuf_deinit(&out);
        return false;
    }
    cdsh_strbuf_append(&out, s + copied, n - copied);
    cdsh_strbuf_deinit(cur);
    *cur = out;
    return true;
}

/* Flags the macros left verbatim and lists their names (deduplicated, ≤64). */
static void note_unknown(cdsh_tavern_macro_env *e, const cdsh_strbuf *cur)
{
    const char *s = cur->data;
    for (const char *p = strstr(s, "{{"); p; p = strstr(p + 2, "{{")) {
        const char *q = strstr(p + 2, "}}");
        if (!q)
            break;
        const char *inner = p + 2;
        while (inner < q && !(inner[0] == '{' && inner[1] == '{'))
            inner++;
        if (inner < q)
            continue; /* not innermost: its inner macro is reported instead */
        e->flags |= CDSH_TAVERN_MACRO_UNKNOWN;
        size_t nlen = 0;
        while (p + 2 + nlen < q && p[2 + nlen] != ':' && p[2 + nlen] != ' ')
            nlen++;
        if (!e->unknown || json_array_size(e->unknown) >= 64)
            continue;
        bool dup = false;
        size_t i;
        json_t *v;
        json_array_foreach(e->unknown, i, v) {
            if (json_string_length(v) == nlen && !memcmp(json_string_value(v), p + 2, nlen))
                dup = true;
        }
        if (!dup)
            json_array_append_new(e->unknown, json_stringn(p + 2, nlen));
    }
}

static void unfreeze(xp *x, cdsh_strbuf *cur)
{
    if (!x->nfrozen || !memchr(cur->data, FROZEN_MARK, cur->len))
        return;
    cdsh_strbuf out;
    cdsh_strbuf_init(&out);
    const char *s = cur->data;
    for (size_t i = 0; i < cur->len; i++) {
        if (s[i] == FROZEN_MARK) {
            char *end;
            unsigned long k = strtoul(s + i + 1, &end, 10);
            if (end > s + i + 1 && *end == FROZEN_MARK && k < x->nfrozen) {
                cdsh_strbuf_append_str(&out, x->frozen[k]);
                i = (size_t)(end - s);
                continue;
            }
        }
        cdsh_strbuf_append_char(&out, s[i]);
    }
    cdsh_strbuf_deinit(cur);
    *cur = out;
}

char *cdsh_tavern_macros_expand_dup(const char *text, cdsh_tavern_macro_env *env)
{
    if (!text || !env)
        return NULL;
    if (!strchr(text, '<') && !strstr(text, "{{"))
        return strdup(text); /* nothing to expand: the common case */
    xp x = {.env = env, .raw = text};
    json_t *scratch_l = NULL, *scratch_g = NULL;
    x.local = env->vars_local ? env->vars_local : (scratch_l = json_object());
    x.global = env->vars_global ? env->vars_global : (scratch_g = json_object());
    cdsh_strbuf cur;
    cdsh_strbuf_init(&cur);
    legacy(text, env, &cur);
    for (int pass = 0; pass < CDSH_TAVERN_MACRO_PASSES && !cur.failed; pass++) {
        bool changed = trim_pass(&cur);
        if (!strstr(cur.data, "{{"))
            break;
        changed |= sweep(&x, &cur, true, false);
        /* Reads wait while a nested write is still pending, so
         * {{setvar::a::{{user}}}}{{getvar::a}} sees the value. */
        bool defer = pending_write(cur.data);
        changed |= sweep(&x, &cur, false, defer);
        if (!changed && defer)
            changed = sweep(&x, &cur, false, false);
        if (!changed)
            break;
    }
    note_unknown(env, &cur);
    unfreeze(&x, &cur);
    for (size_t i = 0; i < x.nfrozen; i++)
        free(x.frozen[i]);
    free(x.frozen);
    json_decref(scratch_l);
    json_decref(scratch_g);
    return cdsh_strbuf_take(&cur, NULL);
}

bool cdsh_tavern_macros_turn_local(const char *text)
{
    static const char *const T[] = {"{{outlet::", "{{last",    "{{time",          "{{date",
                                    "{{weekday",  "{{iso",     "{{random",        "{{pick",
                                    "{{roll",     "{{input}}", "{{datetimeformat"};
    if (!text)
        return false;
    for (const char *p = strstr(text, "{{"); p; p = strstr(p + 2, "{{"))
        for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
            if (!strncasecmp(p, T[i], strlen(T[i])))
                return true;
    return false;
}
