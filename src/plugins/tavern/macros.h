/* macros.h — SillyTavern 1.19's macro engine (its "experimental" engine,
 * public/scripts/macros/): one left-to-right pass over the text; nested
 * macros in arguments are evaluated before their macro, scoped macros
 * ({{if x}}…{{else}}…{{/if}}, {{trim}}…{{/trim}}, {{setvar::a}}…{{/setvar}})
 * take their content as the last argument, {{.x}}/{{$x}} are variable
 * shorthands. Every macro of ST's registry (136 names with aliases) is a row
 * of the table in macros_registry.c. Unknown and unsupported macros stay
 * verbatim and are listed. {{random}} and {{roll}} draw from the turn seed,
 * {{pick}} from ST's own hash of chat id, text and position, so a turn is
 * reproducible. Pure apart from the variable stores the caller lends. An env
 * is used by one thread at a time. */
#ifndef CDSH_TAVERN_MACROS_H
#define CDSH_TAVERN_MACROS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "plugins/tavern/seed.h"

/* Expansion stops growing the text beyond this many bytes (the macro that
 * would pass it stays verbatim and CDSH_TAVERN_MACRO_TOO_BIG is flagged). */
#define CDSH_TAVERN_MACRO_MAX_BYTES (4u * 1024 * 1024)
/* Macros nested deeper than this (arguments, scopes, {{if}} branches) are
 * left verbatim (CDSH_TAVERN_MACRO_TOO_BIG). */
#define CDSH_TAVERN_MACRO_MAX_DEPTH 64

enum {
    CDSH_TAVERN_MACRO_TURN_LOCAL = 1u, /* outlet, last*, clock, random, pick, roll … seen */
    CDSH_TAVERN_MACRO_UNKNOWN = 2u,    /* a {{...}} was left verbatim */
    CDSH_TAVERN_MACRO_VARS = 4u,       /* a variable macro ran */
    CDSH_TAVERN_MACRO_TOO_BIG = 8u,    /* output or nesting limit reached */
};

typedef struct cdsh_tavern_macro_env {
    /* Names; NULL reads as "". group: the group's member list (NULL: the
     * character's name, as ST outside a group). */
    const char *user, *chr, *group, *group_not_muted, *not_char;
    /* Card fields; NULL reads as "". */
    const char *description, *personality, *scenario, *persona;
    const char *first_message, *mes_examples, *char_prompt, *char_jailbreak, *char_version;
    const char *char_depth_prompt, *creator_notes;
    const json_t *alternate_greetings; /* array of strings or NULL */
    const char *model, *input, *original; /* {{original}}: first occurrence only */
    /* Chat state (frozen for the turn by the caller). */
    const char *last_message, *last_user_message, *last_char_message, *chat_id;
    long last_message_id;     /* -1: no messages */
    long chat_length;         /* messages in the chat ({{allChatRange}}); 0 = none */
    bool has_first_included;  /* false: {{firstIncludedMessageId}} is "" */
    long first_included_id;
    bool has_swipes;          /* false: {{lastSwipeId}}/{{currentSwipeId}} are "" */
    long swipes, swipe_id;    /* last message's swipe count and 0-based index */
    int64_t idle_since_ms;    /* send time of the user message {{idleDuration}} measures; 0 = none */
    const char *generation_type; /* {{lastGenerationType}}; NULL = "" */
    long max_context, max_response; /* tokens; max prompt = context - response */
    const char *summary;     /* {{summary}}: the latest memory summary */
    const char *authors_note, *char_authors_note, *default_authors_note;
    /* ST settings objects, NULL = ST's defaults: instruct template (with
     * "enabled"), system prompt {enabled, content}, context template
     * {example_separator, chat_start}, reasoning {prefix, suffix, separator}. */
    const json_t *instruct, *sysprompt, *context_template, *reasoning;
    const json_t *outlets;   /* {name: text} (borrowed) or NULL */
    /* Variable stores (objects, borrowed and mutated); NULL: a scratch store
     * private to the call, so writes are dropped. */
    json_t *vars_local, *vars_global;
    int64_t now_ms;    /* frozen clock (Unix ms) */
    int tz_offset_min; /* local time = UTC + this */
    bool clock_frozen; /* standing channel: clock macros expand to "" */
    uint32_t seed;     /* per-turn seed for random/roll */
    /* Outputs, accumulated across calls. */
    uint32_t flags;  /* OR of CDSH_TAVERN_MACRO_* */
    uint32_t draws;  /* {{random}} draws so far (advances the seed) */
    cdsh_tavern_rng roll_rng; /* {{roll}}'s stream (Math.random in ST), from seed */
    bool roll_started;
    json_t *unknown; /* array or NULL: names of macros left verbatim are appended (all, once each) */
} cdsh_tavern_macro_env;

/* Expands text as ST's MacroEngine.evaluate does. Owned result; NULL only on
 * ENOMEM (or NULL text/env). */
char *cdsh_tavern_macros_expand_dup(const char *text, cdsh_tavern_macro_env *env);

/* True if text contains a macro that makes its content turn-local. Cheap
 * syntactic check (no expansion). */
bool cdsh_tavern_macros_turn_local(const char *text);

/* The registry: number of names (aliases included) and the i-th name; for
 * tests, docs and the differential. */
size_t cdsh_tavern_macros_count(void);
const char *cdsh_tavern_macros_name(size_t i);
/* True if name (any case) is in the registry but cdsh cannot evaluate it;
 * *why (optional) gets the reason. */
bool cdsh_tavern_macros_unsupported(const char *name, const char **why);

/* Variable numbers as addvar reads them (a JSON number, a string JavaScript's
 * Number() accepts, or nothing = 0) and writes them (integral values as
 * integers). Shared with globals.c. */
bool cdsh__tavern_var_number(const json_t *v, double *out);
json_t *cdsh__tavern_var_number_json(double d);

#endif
