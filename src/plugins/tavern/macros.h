/* macros.h — the SillyTavern macro expander (formats §4, liketavern §11):
 * legacy <USER>/<BOT>/<CHAR>/<CHARIFNOTGROUP>/<GROUP> tokens, then
 * innermost-first passes (at most CDSH_TAVERN_MACRO_PASSES) over {{...}}
 * macros; in each pass variable writes run before everything else. Unknown
 * macros stay verbatim and are flagged. Random macros draw from the turn
 * seed, {{pick}} from the chat id + raw text + offset, so a turn is
 * reproducible. Pure apart from the variable stores the caller lends.
 * An env is used by one thread at a time. */
#ifndef CDSH_TAVERN_MACROS_H
#define CDSH_TAVERN_MACROS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define CDSH_TAVERN_MACRO_PASSES 8
/* Expansion stops growing the text beyond this many bytes (the rest of the
 * macros stay verbatim and CDSH_TAVERN_MACRO_TOO_BIG is flagged). */
#define CDSH_TAVERN_MACRO_MAX_BYTES (4u * 1024 * 1024)

enum {
    CDSH_TAVERN_MACRO_TURN_LOCAL = 1u, /* outlet, last*, clock, random, pick, roll seen */
    CDSH_TAVERN_MACRO_UNKNOWN = 2u,    /* a {{...}} was left verbatim */
    CDSH_TAVERN_MACRO_VARS = 4u,       /* a variable macro ran */
    CDSH_TAVERN_MACRO_TOO_BIG = 8u,    /* output reached CDSH_TAVERN_MACRO_MAX_BYTES */
};

typedef struct cdsh_tavern_macro_env {
    /* Identity and card fields; NULL reads as "". */
    const char *user, *chr, *group, *description, *personality, *scenario, *persona;
    const char *first_message, *mes_examples, *char_prompt, *char_jailbreak, *char_version;
    const char *model, *input, *original; /* {{original}}: first occurrence only */
    /* Chat state (frozen for the turn by the caller). */
    const char *last_message, *last_user_message, *last_char_message, *chat_id;
    long last_message_id;  /* -1: no messages */
    const json_t *outlets; /* {name: text} (borrowed) or NULL */
    /* Variable stores (objects, borrowed and mutated); NULL: a scratch store
     * private to the call, so writes are dropped. */
    json_t *vars_local, *vars_global;
    int64_t now_ms;    /* frozen clock (Unix ms) */
    int tz_offset_min; /* local time = UTC + this */
    bool clock_frozen; /* standing channel: clock macros expand to "" */
    uint32_t seed;     /* per-turn seed for random/roll */
    /* Outputs, accumulated across calls. */
    uint32_t flags;  /* OR of CDSH_TAVERN_MACRO_* */
    uint32_t draws;  /* random draws so far (advances the seed) */
    json_t *unknown; /* array or NULL: names of unknown macros are appended */
} cdsh_tavern_macro_env;

/* Expands text. Owned result; NULL only on ENOMEM (or NULL text). */
char *cdsh_tavern_macros_expand_dup(const char *text, cdsh_tavern_macro_env *env);

/* True if text contains a macro that makes its content turn-local. Cheap
 * syntactic check (no expansion). */
bool cdsh_tavern_macros_turn_local(const char *text);

/* Variable numbers as addvar reads them (a JSON number, a string JavaScript's
 * Number() accepts, or nothing = 0) and writes them (integral values as
 * integers). Shared with globals.c. */
bool cdsh__tavern_var_number(const json_t *v, double *out);
json_t *cdsh__tavern_var_number_json(double d);

#endif
