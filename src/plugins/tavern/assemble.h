/* assemble.h — prompt assembly (liketavern §10): from a card record, a
 * preset, a persona, world info, the author's note and the story's
 * memories / world state / journal, builds
 *   - the standing segment (agent system prompt, after the tool text):
 *     discipline text, card definitions, preset skeleton, standing-safe
 *     constant world info and static depth injections;
 *   - the turn context (runtime context of this turn): playbook, keyword
 *     world info, memories, world deltas, author's note, journal and every
 *     turn-local piece, each under its budget with truncation notes;
 *   - the full SillyTavern message sequence as a simulation for preview,
 *     trimmed to the context as SillyTavern trims it.
 * Pure apart from the story state objects the caller lends (timed effects,
 * variables). One call per thread. */
#ifndef CDSH_TAVERN_ASSEMBLE_H
#define CDSH_TAVERN_ASSEMBLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "plugins/tavern/template.h"
#include "plugins/tavern/wi_activate.h"

/* Bumped whenever the standing discipline text or its layout changes. */
#define CDSH_TAVERN_STANDING_PIN_VERSION 2 /* 2: standing after the tool list */

/* Turn budgets in (estimated) tokens. */
#define CDSH_TAVERN_BUDGET_WORLD_INFO 8192
#define CDSH_TAVERN_BUDGET_DELTAS 1500
#define CDSH_TAVERN_BUDGET_MEMORIES 1200
#define CDSH_TAVERN_BUDGET_JOURNAL 800

/* Author's note positions (SillyTavern's values in brackets). */
enum {
    CDSH_TAVERN_AN_IN_CHAT = 0,     /* [1] an in-chat injection at author_note_depth */
    CDSH_TAVERN_AN_AFTER_MAIN = 1,  /* [0] "in prompt": right after the main prompt */
    CDSH_TAVERN_AN_BEFORE_MAIN = 2, /* [2] right before the main prompt */
};

/* SillyTavern's position value (0 in prompt, 1 in chat, 2 before prompt) as
 * CDSH_TAVERN_AN_*; anything else is in-chat. */
int cdsh_tavern_an_position_from_st(int st);

typedef struct cdsh_tavern_chat_msg {
    const char *role; /* "user", "assistant" or "system" */
    const char *name; /* speaker name, may be NULL */
    const char *text;
    bool synthetic; /* runtime snapshot, write ack, continue, step notice: never scanned */
} cdsh_tavern_chat_msg;

typedef struct cdsh_tavern_assemble_input {
    const json_t *card;               /* card record (card.h); required */
    const json_t *preset;             /* normalised preset or NULL (default order, empty prompts) */
    const json_t *persona;            /* {name, description} or NULL (user "User") */
    const json_t *character_books;    /* world-info books of the card; NULL: the card's own
                                       * data.character_book, converted on every call */
    const json_t *global_books;       /* array of world-info books or NULL */
    const json_t *chat_book;          /* or NULL */
    const json_t *persona_book;       /* or NULL */
    const json_t *regex_rules;        /* effective rules (global + card + preset), or NULL */
    const cdsh_tavern_chat_msg *chat; /* oldest first */
    size_t n_chat;
    const char *author_note;  /* session author's note or NULL */
    int author_note_depth;    /* in-chat depth; default 4 */
    int author_note_position; /* CDSH_TAVERN_AN_*; default in-chat */
    int author_note_role;     /* in-chat role: 0 system, 1 user, 2 assistant */
    bool author_note_scan;    /* SillyTavern's "allow WI scan": the card's depth prompt and
                               * the expanded note join the world-info inject buffer
                               * (scanned whatever the position) */
    const char *memories, *world_state, *journal; /* from the story engine; NULL = empty */
    cdsh_tavern_wi_settings wi;
    const char *generation_type; /* "normal" (default), "continue", "impersonate", ... */
    const char *chat_id;
    int64_t now_ms;
    uint32_t seed;
    json_t *timed;                    /* story timed-effect state (mutated unless dry_run) */
    json_t *vars_local, *vars_global; /* story variables (mutated by macros) */
    bool dry_run;
    bool trigger_log; /* include the world-info trigger log (preview) */
    /* Evaluate EJS templates in preset prompts in the sandboxed worker
     * (false: such prompts are left out with a note). Rendered text is
     * turn-local; variable writes are applied unless dry_run. */
    bool run_templates;
    const cdsh_tavern_template_limits *template_limits; /* NULL: defaults */
    const char *revision; /* asset revision fingerprint (joined tags); part of the pin key */
} cdsh_tavern_assemble_input;

/* Builds a plan (owned):
 * {standing, turn, messages:[{role, content, source}], standingKey,
 *  budgets:{worldInfo|deltas|memories|journal:{limit, used, truncated},
 *           simulation:{limit, used, truncated, droppedMessages, droppedExamples}},
 *  notes:[str], worldInfo:<wi_activate result>, regexFailures:[...],
 *  unknownMacros:[...]}.
 * Errors: INVALID_ARGS, OUT_OF_MEMORY. */
int cdsh_tavern_assemble(const cdsh_tavern_assemble_input *in, json_t **plan, cdsh_error *err);

/* Replaces every remaining "{{" / "}}" by the full-width "｛｛" / "｝｝" so
 * residual macros cannot reach the host's own templating. Owned. */
char *cdsh_tavern_assemble_neutralize_dup(const char *text);

#endif
