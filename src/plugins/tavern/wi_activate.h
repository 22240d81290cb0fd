/* wi_activate.h — SillyTavern world-info activation (formats §3,
 * checkWorldInfo): source ordering by character strategy, budget, timed
 * effects (sticky / cooldown / delay) kept in a per-story state object, the
 * scan loop with recursion and delay-until-recursion levels, key matching
 * (plain, whole-word, /regex/flags, case), secondary-key logics, inclusion
 * groups, probability, budget overflow / ignoreBudget, min activations, and
 * output by position in SillyTavern's order, plus a trigger log. Pure: the
 * only state it touches is the `timed` object the caller passes. One call
 * per thread; inputs are borrowed. */
#ifndef CDSH_TAVERN_WI_ACTIVATE_H
#define CDSH_TAVERN_WI_ACTIVATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "plugins/tavern/macros.h"
#include "plugins/tavern/regex_apply.h"

enum {
    CDSH_TAVERN_WI_EVENLY = 0,
    CDSH_TAVERN_WI_CHARACTER_FIRST = 1,
    CDSH_TAVERN_WI_GLOBAL_FIRST = 2,
};

/* An entry's `position`: SillyTavern's world_info_position values (its
 * names in brackets). */
enum {
    CDSH_TAVERN_WI_POS_BEFORE = 0,    /* [before] before the character definitions */
    CDSH_TAVERN_WI_POS_AFTER = 1,     /* [after] after the character definitions */
    CDSH_TAVERN_WI_POS_AN_TOP = 2,    /* [ANTop] above the author's note */
    CDSH_TAVERN_WI_POS_AN_BOTTOM = 3, /* [ANBottom] below the author's note */
    CDSH_TAVERN_WI_POS_AT_DEPTH = 4,  /* [atDepth] injected in the chat at `depth` */
    CDSH_TAVERN_WI_POS_EM_TOP = 5,    /* [EMTop] above the example messages */
    CDSH_TAVERN_WI_POS_EM_BOTTOM = 6, /* [EMBottom] below the example messages */
    CDSH_TAVERN_WI_POS_OUTLET = 7,    /* [outlet] read with {{outlet::name}} */
};

enum {
    CDSH_TAVERN_LOGIC_AND_ANY = 0,
    CDSH_TAVERN_LOGIC_NOT_ALL = 1,
    CDSH_TAVERN_LOGIC_NOT_ANY = 2,
    CDSH_TAVERN_LOGIC_AND_ALL = 3
};

/* SillyTavern 1.19's world-info settings (world_info_* in its settings.json;
 * wi_settings.h reads and writes them as JSON). */
typedef struct cdsh_tavern_wi_settings {
    int scan_depth;      /* messages scanned (world_info_depth, default 2) */
    int context_percent; /* budget = round(percent × max_context / 100), min 1 (world_info_budget) */
    int max_context;     /* tokens of the model window (the preset's context size) */
    int budget_cap;      /* > 0: caps the percent budget (world_info_budget_cap) */
    int token_budget;    /* > 0: absolute budget, overrides percent (cdsh only; default 0) */
    int min_activations; /* 0: off */
    int min_activations_depth_max;
    int max_recursion_steps; /* 0: unlimited; 1: initial scan only */
    bool recursive, case_sensitive, match_whole_words, include_names, use_group_scoring;
    bool overflow_alert; /* a budget overflow adds a note to the plan */
    int character_strategy; /* CDSH_TAVERN_WI_* */
} cdsh_tavern_wi_settings;

/* SillyTavern's defaults (its default/content/settings.json): depth 2, 25 %
 * of the context, no cap, recursive, case-insensitive, whole words on,
 * names included, character-first, no overflow alert, no group scoring,
 * no minimum activations, unlimited recursion steps. */
void cdsh_tavern_wi_settings_default(cdsh_tavern_wi_settings *s);

typedef struct cdsh_tavern_wi_message {
    const char *name; /* speaker ("Name: text" when include_names) */
    const char *text;
} cdsh_tavern_wi_message;

typedef struct cdsh_tavern_wi_input {
    cdsh_tavern_wi_settings settings;
    /* Books: world-info objects {"name", "entries":{uid: entry}} as
     * lorebook.c normalises them. A book whose name is already loaded from
     * an earlier source is skipped (chat, persona, global, character). */
    const json_t *chat_book;                /* or NULL */
    const json_t *persona_book;             /* or NULL */
    const json_t *global_books;             /* array or NULL */
    const json_t *character_books;          /* array or NULL */
    const cdsh_tavern_wi_message *messages; /* oldest first; synthetic texts excluded */
    size_t n_messages;
    const char *const *inject; /* extension prompts flagged for scan */
    size_t n_inject;
    /* Optional global scan data: {personaDescription, characterDescription,
     * characterPersonality, characterDepthPrompt, scenario, creatorNotes}. */
    const json_t *scan_data;
    const json_t *forced;           /* array of "book.uid" externally activated, or NULL */
    const char *char_filename;      /* for characterFilter.names */
    const json_t *char_tags;        /* array of tag names for characterFilter.tags */
    cdsh_tavern_macro_env *macros;  /* keys and contents are expanded with it; may be NULL */
    const cdsh_tavern_rxset *regex; /* WORLD_INFO placement (prompt/assemble), may be NULL */
    json_t *timed;                  /* story state {sticky:{}, cooldown:{}}; may be NULL */
    bool dry_run;                   /* evaluate timed effects on a copy; `timed` untouched */
    uint32_t seed;                  /* probability rolls and group picks */
    const char *generation_type;    /* entries' `triggers` filter; NULL: "normal" */
    bool no_log;                    /* skip the trigger log (live turns); "log" is null then */
    /* Optional template evaluation of activated entries whose content holds
     * an EJS tag ("<%"). It runs after the scan loop, so matching and
     * recursion saw the unevaluated (macro-expanded) text, as SillyTavern's
     * template extension does, and before output, so every position, the
     * token counts and `tokens` use the evaluated text. entry (borrowed) is
     * {book, uid, comment, content, keys, position, order, depth}; active
     * (borrowed) lists every activated entry as {book, uid, comment,
     * content} before evaluation. Returns 0
     * with an owned *out, or < 0 with err: that entry alone is left out, the
     * log says why and it is listed in templateFailures. */
    int (*render)(void *ud, const json_t *entry, const json_t *active, char **out, cdsh_error *err);
    void *render_ud;
} cdsh_tavern_wi_input;

/* Runs activation. *out (owned):
 * {before, after (strings joined by "\n"),
 *  examples:[{position:"before"|"after", content}],
 *  anTop:[str], anBottom:[str],
 *  depth:[{depth, role (0 system, 1 user, 2 assistant), content}],
 *  outlets:{name: text},
 *  activated:[{book, uid, comment, position, order, depth, role, content,
 *              tokens, turnLocal, standingSafe}],
 *  truncated:[{book, uid, comment}] (matched but cut by the budget),
 *  log:[{book, uid, comment, fired, reason}], budget, tokens, overflow, loops,
 *  templateFailures:[{book, uid, comment, code, message}],
 *  timedAfter (dry runs only: the timed-effect state after this turn, a
 *  copy; the caller's `timed` is unchanged)}.
 * Errors: INVALID_ARGS, OUT_OF_MEMORY. Bad regex keys never fail the call;
 * they are reported in the log. */
int cdsh_tavern_wi_activate(const cdsh_tavern_wi_input *in, json_t **out, cdsh_error *err);

#endif
