/* macros_priv.h — internals shared by the macro engine (macros.c), its
 * registry (macros_registry.c), JavaScript value helpers (macros_js.c) and
 * moment.js formats (macros_time.c). Not for other modules. */
#ifndef CDSH_TAVERN_MACROS_PRIV_H
#define CDSH_TAVERN_MACROS_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "plugins/tavern/macros.h"

/* ---- registry ------------------------------------------------------------ */

enum {
    MF_TURN = 1u,        /* makes the text turn-local */
    MF_DELAY = 2u,       /* ST's delayArgResolution: arguments arrive raw */
    MF_LIST = 4u,        /* ST's list: any number of extra arguments */
    MF_UNSUPPORTED = 8u, /* registered in ST, not evaluable in cdsh: left verbatim */
    MF_VARS = 16u,       /* reads or writes variables */
};

/* Argument types as ST validates them (MacroValueType). */
enum { AT_STR = 0, AT_INT = 1, AT_NUM = 2, AT_STR_NUM = 3 };

struct mx;

typedef struct macro_call {
    const char *name; /* the name as written */
    size_t argc;
    char **args;   /* evaluated (or raw with MF_DELAY), NUL-terminated */
    bool scoped;   /* the last argument is scoped content */
    bool preserve; /* '#' flag: keep scoped whitespace */
    uint64_t global_offset; /* UTF-16 offset in the top-level text ({{pick}}) */
} macro_call;

/* A handler appends its result to out. Returns false for a runtime error
 * (the macro then stays verbatim, as ST's MacroRuntimeError). */
typedef bool (*macro_fn)(struct mx *x, const macro_call *c, cdsh_strbuf *out);

typedef struct macro_def {
    const char *name;
    const char *aliases; /* '|'-separated or NULL */
    uint8_t min_args, max_args;
    uint8_t types[3]; /* AT_* of the unnamed arguments */
    uint32_t flags;   /* MF_* */
    macro_fn fn;
    const char *why; /* MF_UNSUPPORTED: the reason (docs/tavern.md lists it) */
} macro_def;

/* Looks a name up (ASCII case-insensitive); NULL if unknown. */
const macro_def *cdsh__macro_find(const char *name, size_t n);

/* ---- engine services for handlers (macros.c) ----------------------------- */

typedef struct mx {
    cdsh_tavern_macro_env *env;
    json_t *local, *global; /* the stores in use (env's or scratch) */
    double content_hash;    /* getStringHash of the text given to expand */
    bool original_used;
    bool no_card; /* inside a card field: card macros read "" (ST's replaceCharacterCard off) */
    int depth;
    size_t budget; /* bytes the output may still grow by */
} mx;

/* MacroEngine.evaluate(text, env, {contextOffset}): pre-processors, one pass,
 * post-processors. Appends to out. */
void cdsh__macro_evaluate(mx *x, const char *text, size_t n, uint64_t ctx_off, cdsh_strbuf *out);
/* ST's trimScopedContent (trim + dedent by the first line's indentation). */
void cdsh__macro_trim_scoped(const char *s, size_t n, cdsh_strbuf *out);

/* ST's splitOnTopLevelElse: true if content has a top-level {{else}} (not
 * inside a nested scoped {{if}}); *then_len = bytes before it, *else_at =
 * offset after it. */
bool cdsh__macro_split_else(const char *s, size_t n, size_t *then_len, size_t *else_at);

/* Variables with ST's variables.js semantics on a JSON store. Values come
 * back owned: a read turns numeric strings into numbers and a missing
 * variable into "". add: array push, numeric sum, else string append;
 * value is a string or a number; returns the new value. */
json_t *cdsh__macro_var_dup(json_t *store, const char *name);
json_t *cdsh__macro_var_add(json_t *store, const char *name, const json_t *value);
void cdsh__macro_var_key_get(json_t *store, const char *name, const char *key, cdsh_strbuf *out);
void cdsh__macro_var_key_set(json_t *store, const char *name, const char *key, const char *value);
/* The engine's normalize: String(value), objects as JSON.stringify. */
void cdsh__macro_js_str(cdsh_strbuf *out, const json_t *v);

/* ---- JavaScript values (macros_js.c) ---------------------------------------- */

/* Bytes of JavaScript whitespace (\s) at p (< end), or 0. */
size_t cdsh__js_space(const char *p, const char *end);
/* String.prototype.trim bounds. */
void cdsh__js_trim(const char **s, size_t *n);
/* Number(string); false = NaN. */
bool cdsh__js_to_number(const char *s, size_t n, double *out);
/* String(number) into buf (at least 32 bytes). */
void cdsh__js_number_str(double d, char *buf);
/* Length in UTF-16 code units of UTF-8 s[0..n). */
uint64_t cdsh__js_utf16_len(const char *s, size_t n);
/* ST's getStringHash (cyrb53 over UTF-16 units), seed 0. */
double cdsh__js_string_hash(const char *s, size_t n);
/* seedrandom 3.0.5 (ARC4) seeded with an ASCII string: the first draw. */
typedef struct js_arc4 {
    uint8_t s[256];
    uint8_t i, j;
} js_arc4;
void cdsh__js_arc4_seed(js_arc4 *a, const char *seed, size_t n);
double cdsh__js_arc4_next(js_arc4 *a);
/* ST's isFalseBoolean / isTrueBoolean (trimmed, case-insensitive). */
bool cdsh__js_false_bool(const char *s, size_t n);
bool cdsh__js_true_bool(const char *s, size_t n);

/* ---- moment.js (macros_time.c) --------------------------------------------- */

/* moment(ms).utcOffset(off_min).format(fmt) in the en locale. */
void cdsh__moment_format(int64_t ms, int off_min, const char *fmt, size_t n, cdsh_strbuf *out);
/* moment.duration(ms).humanize(with_suffix). */
void cdsh__moment_humanize(double ms, bool with_suffix, cdsh_strbuf *out);
/* moment(text) for ISO 8601 text (local time = UTC + off_min when the text
 * has no offset); false = invalid. */
bool cdsh__moment_parse(const char *s, size_t n, int off_min, double *ms);

#endif
