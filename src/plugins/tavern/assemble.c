/* assemble.c — standing / turn / simulated-messages assembly (see
 * assemble.h). World-info activation, macros and regex are called, not
 * reimplemented; caching a plan per turn is pipeline.c's job. */
#include "plugins/tavern/assemble.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "plugins/tavern/lorebook.h"
#include "plugins/tavern/macros.h"
#include "plugins/tavern/regex_apply.h"
#include "plugins/tavern/seed.h"
#include "plugins/tavern/wi_settings.h"
#include "plugins/tavern/template.h"
#include "plugins/tavern/tokens.h"

static const char BOUND_DISCIPLINE[] =
    "You are {{char}} in an ongoing role-play with {{user}}. Stay in character: write "
    "{{char}}'s words, thoughts and actions, never {{user}}'s. The definitions, world and rules "
    "below are binding. Each turn's runtime context adds what is relevant now; facts written "
    "there take precedence over older ones.";

static const char TURN_PLAYBOOK[] =
    "Runtime context for this turn. Use what is relevant and do not quote these notes. If a "
    "fact you need is missing, look it up with the tavern tools instead of inventing it.";

static const char *const DEFAULT_ORDER[] = {"main",
                                            "worldInfoBefore",
                                            "personaDescription",
                                            "charDescription",
                                            "charPersonality",
                                            "scenario",
                                            "agentMemory",
                                            "worldState",
                                            "nsfw",
                                            "worldInfoAfter",
                                            "dialogueExamples",
                                            "chatHistory",
                                            "jailbreak"};

static const char *const ROLE_NAMES[] = {"system", "user", "assistant"};

typedef struct asm_ctx {
    const cdsh_tavern_assemble_input *in;
    const json_t *data; /* card data */
    cdsh_tavern_macro_env env;
    const char *char_name, *user_name;
    cdsh_tavern_rxset *rx;
    json_t *notes, *regex_failures, *unknown;
    json_t *rendered;   /* prompt id -> template output (or null when it failed) */
    json_t *wi;         /* the activation result (for templates) */
    json_t *wi_books;   /* getwi() view of the books, built on first use */
    json_t *char_books; /* the character books of this plan */
    cdsh_strbuf standing, turn;
    json_t *messages;
} asm_ctx;

static const char *dstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

char *cdsh_tavern_assemble_neutralize_dup(const char *text)
{
    if (!text)
        return NULL;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    for (const char *p = text; *p; p++) {
        if (p[0] == '{' && p[1] == '{') {
            cdsh_strbuf_append_str(&sb, "｛｛");
            p++;
        } else if (p[0] == '}' && p[1] == '}') {
            cdsh_strbuf_append_str(&sb, "｝｝");
            p++;
        } else {
            cdsh_strbuf_append_char(&sb, *p);
        }
    }
    return cdsh_strbuf_take(&sb, NULL);
}

/* Expands text; *turn_local tells whether a turn-local macro was used. */
static char *expand(asm_ctx *a, const char *text, bool clock_frozen, bool *turn_local)
{
    uint32_t saved = a->env.flags;
    a->env.flags = 0;
    a->env.clock_frozen = clock_frozen;
    char *out = cdsh_tavern_macros_expand_dup(text ? text : "", &a->env);
    if (turn_local)
        *turn_local = (a->env.flags & CDSH_TAVERN_MACRO_TURN_LOCAL) != 0;
    a->env.flags |= saved;
    a->env.clock_frozen = false;
    return out;
}

static void section(cdsh_strbuf *sb, const char *label, const char *text)
{
    if (!text || !*text)
        return;
    if (sb->len)
        cdsh_strbuf_append_str(sb, "\n\n");
    if (label) {
        cdsh_strbuf_append_str(sb, label);
        cdsh_strbuf_append_char(sb, '\n');
    }
    cdsh_strbuf_append_str(sb, text);
}

/* Cuts text to at most `budget` estimated tokens (at a code-point boundary). */
static char *fit(const char *text, int budget, size_t *used, bool *cut)
{
    size_t n = strlen(text);
    *cut = false;
    if (cdsh_tavern_tokens_count(text, n) <= (size_t)budget) {
        *used = cdsh_tavern_tokens_count(text, n);
        return strdup(text);
    }
    size_t lo = 0, hi = n;
    while (lo < hi) { /* largest prefix within budget */
        size_t mid = (lo + hi + 1) / 2;
        while (mid > 0 && ((unsigned char)text[mid] & 0xC0) == 0x80)
            mid--;
        if (mid <= lo) {
            break;
        }
        if (cdsh_tavern_tokens_count(text, mid) <= (size_t)budget)
            lo = mid;
        else
            hi = mid - 1;
    }
    *cut = true;
    *used = cdsh_tavern_tokens_count(text, lo);
    char *s = malloc(lo + 64);
    if (!s)
        return NULL;
    memcpy(s, text, lo);
    snprintf(s + lo, 64, "\n…(truncated to %d tokens)", budget);
    return s;
}

static void budget_note(json_t *budgets, const char *name, int limit, size_t used, bool cut)
{
    json_object_set_new(
        budgets, name,
        json_pack("{s:i, s:I, s:b}", "limit", limit, "used", (json_int_t)used, "truncated", cut));
}

/* ---- history ------------------------------------------------------------ */

typedef struct hist {
    char **text; /* processed text of each real message, oldest first */
    const char **role;
    size_t n;
} hist;

static int build_history(asm_ctx *a, hist *h)
{
    const cdsh_tavern_assemble_input *in = a->in;
    h->text = calloc(in->n_chat + 1, sizeof *h->text);
    h->role = calloc(in->n_chat + 1, sizeof *h->role);
    if (!h->text || !h->role)
        return CDSH_ENOMEM;
    size_t real = 0;
    for (size_t i = 0; i < in->n_chat; i++)
        real += !in->chat[i].synthetic;
    /* Identity macros only: a scratch env whose variable writes are dropped. */
    cdsh_tavern_macro_env id = a->env;
    id.vars_local = id.vars_global = NULL;
    id.unknown = NULL;
    size_t depth = real;
    for (size_t i = 0; i < in->n_chat; i++) {
        const cdsh_tavern_chat_msg *m = &in->chat[i];
        if (m->synthetic)
            continue;
        depth--;
        char *t = cdsh_tavern_macros_expand_dup(m->text ? m->text : "", &id);
        const char *role = m->role ? m->role : "user";
        static const char *const STEPS[][2] = {
            {"input", "send"}, {"prompt", "assemble"}, {"prompt", "send"}};
        for (size_t s = 0; t && a->rx && s < 3; s++) {
            if (s == 0 && strcmp(role, "user"))
                continue;
            char *next = NULL;
            cdsh_tavern_rxset_apply(a->rx, t, STEPS[s][0], STEPS[s][1], role, (int)depth, &a->env,
                                    &next, a->regex_failures, NULL);
            if (next) {
                free(t);
                t = next;
            }
        }
        if (!t)
            return CDSH_ENOMEM;
        h->text[h->n] = t;
        h->role[h->n++] = role;
    }
    return 0;
}

static void free_history(hist *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->text[i]);
    free(h->text);
    free(h->role);
}

/* ---- preset --------------------------------------------------------------- */

static const json_t *find_prompt(const json_t *preset, const char *id)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(preset, "prompts"), i, p) {
        if (!strcmp(dstr(p, "identifier"), id))
            return p;
    }
    return NULL;
}

/* The prompt order: [{identifier, enabled}] for character 100001 (ST's
 * global order) or the first one; the default order without a preset. */
static json_t *prompt_order(const json_t *preset)
{
    json_t *orders = json_object_get(preset, "prompt_order"), *pick = NULL;
    size_t i;
    json_t *o;
    json_array_foreach(orders, i, o) {
        if (json_integer_value(json_object_get(o, "character_id")) == 100001 || !pick)
            pick = json_object_get(o, "order");
    }
    if (json_array_size(pick))
        return json_incref(pick);
    json_t *def = json_array();
    for (size_t k = 0; k < sizeof DEFAULT_ORDER / sizeof DEFAULT_ORDER[0]; k++)
        json_array_append_new(
            def, json_pack("{s:s, s:b}", "identifier", DEFAULT_ORDER[k], "enabled", 1));
    return def;
}

static bool triggered(const json_t *prompt, const char *gen)
{
    json_t *t = json_object_get(prompt, "injection_trigger");
    if (!json_array_size(t))
        return true;
    size_t i;
    json_t *v;
    json_array_foreach(t, i, v) {
        if (json_is_string(v) && !strcmp(json_string_value(v), gen))
            return true;
    }
    return false;
}

/* Card system prompt / post-history override: the card text replaces the
 * preset's (with {{original}} = the preset's) unless forbid_overrides. */
static const char *override_text(const json_t *prompt, const char *card_text, const char **orig)
{
    *orig = dstr(prompt, "content");
    if (card_text && *card_text && !json_is_true(json_object_get(prompt, "forbid_overrides")))
        return card_text;
    return *orig;
}

/* ---- world info ------------------------------------------------------------ */

static json_t *character_books(asm_ctx *a)
{
    if (a->in->character_books)
        return json_incref((json_t *)a->in->character_books);
    json_t *books = json_array();
    const json_t *cb = json_object_get(a->data, "character_book");
    if (json_is_object(cb)) {
        json_t *wi = cdsh_tavern_lorebook_normalize_dup(cb, NULL);
        if (wi) {
            if (!json_string_length(json_object_get(wi, "name")))
                json_object_set_new(wi, "name", json_string(a->char_name));
            json_array_append_new(books, wi);
        }
    }
    return books;
}

static int render_entry(void *ud, const json_t *entry, const json_t *active, char **out,
                        cdsh_error *err);

int cdsh_tavern_an_position_from_st(int st)
{
    return st == 0   ? CDSH_TAVERN_AN_AFTER_MAIN
           : st == 2 ? CDSH_TAVERN_AN_BEFORE_MAIN
                     : CDSH_TAVERN_AN_IN_CHAT;
}

/* A card or persona field as ST's getCharacterCardFields hands it to the
 * world-info scan (baseChatReplace): trimmed, macros expanded, "\r"
 * removed. Expanded on a copy of the environment with copies of the
 * variable stores, so the scan's copy reads the story's variables but its
 * writes and draws never reach the prompt's own expansion. Owned. */
static char *scan_field(asm_ctx *a, const char *text)
{
    if (!text)
        text = "";
    size_t n = strlen(text);
    while (n && isspace((unsigned char)text[n - 1]))
        n--;
    while (n && isspace((unsigned char)*text)) {
        text++;
        n--;
    }
    char *trimmed = strndup(text, n);
    if (!trimmed)
        return NULL;
    if (!n || !strstr(trimmed, "{{"))
        goto strip;
    cdsh_tavern_macro_env env = a->env;
    env.vars_local = a->env.vars_local ? json_deep_copy(a->env.vars_local) : NULL;
    env.vars_global = a->env.vars_global ? json_deep_copy(a->env.vars_global) : NULL;
    env.unknown = NULL;
    env.flags = 0;
    char *x = cdsh_tavern_macros_expand_dup(trimmed, &env);
    json_decref(env.vars_local);
    json_decref(env.vars_global);
    free(trimmed);
    if (!(trimmed = x))
        return NULL;
strip:;
    char *w = trimmed;
    for (const char *r = trimmed; *r; r++)
        if (*r != '\r')
            *w++ = *r;
    *w = 0;
    return trimmed;
}

/* an: the expanded author's note (scanned when author_note_scan). */
static json_t *run_wi(asm_ctx *a, const char *an)
{
    const cdsh_tavern_assemble_input *in = a->in;
    cdsh_tavern_wi_message *msgs = calloc(in->n_chat + 1, sizeof *msgs);
    if (!msgs)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < in->n_chat; i++) {
        if (in->chat[i].synthetic) /* never scanned */
            continue;
        bool user = in->chat[i].role && !strcmp(in->chat[i].role, "user");
        msgs[n++] = (cdsh_tavern_wi_message){in->chat[i].name ? in->chat[i].name
                                             : user           ? a->user_name
                                                              : a->char_name,
                                             in->chat[i].text};
    }
    json_t *books = character_books(a);
    cdsh_tavern_wi_input wi = {
        .settings = in->wi,
        .chat_book = in->chat_book,
        .persona_book = in->persona_book,
        .global_books = in->global_books,
        .character_books = books,
        .messages = msgs,
        .n_messages = n,
        .macros = &a->env,
        .regex = a->rx,
        .timed = in->timed,
        .dry_run = in->dry_run,
        .seed = in->seed,
        .generation_type = in->generation_type,
        .no_log = !in->trigger_log,
        .char_filename = a->char_name,
        .render = render_entry,
        .render_ud = a,
    };
    a->char_books = books;
    /* WIGlobalScanData: the six fields an entry's match_* flags add. */
    static const char *const SCAN_KEYS[] = {"personaDescription",   "characterDescription",
                                            "characterPersonality", "characterDepthPrompt",
                                            "scenario",             "creatorNotes"};
    const char *scan_src[] = {
        dstr(in->persona, "description"),
        dstr(a->data, "description"),
        dstr(a->data, "personality"),
        dstr(json_object_get(json_object_get(a->data, "extensions"), "depth_prompt"), "prompt"),
        dstr(a->data, "scenario"),
        dstr(a->data, "creator_notes")};
    json_t *scan = json_object();
    for (size_t k = 0; scan && k < 6; k++) {
        char *v = scan_field(a, scan_src[k]);
        if (!v || json_object_set_new(scan, SCAN_KEYS[k], json_string(v)) < 0) {
            json_decref(scan);
            scan = NULL;
        }
        free(v);
    }
    if (!scan) {
        free(msgs);
        json_decref(books);
        a->char_books = NULL;
        return NULL;
    }
    wi.scan_data = scan;
    /* Extension prompts flagged for scanning (formats §3): with the note's
     * "allow WI scan" ST flags both the card's depth prompt and the note. */
    const char *inject[2];
    const char *dp = json_string_value(json_object_get(scan, "characterDepthPrompt"));
    if (in->author_note_scan && dp && *dp)
        inject[wi.n_inject++] = dp;
    if (in->author_note_scan && an && *an)
        inject[wi.n_inject++] = an;
    wi.inject = inject;
    json_t *out = NULL;
    cdsh_tavern_wi_activate(&wi, &out, NULL);
    json_decref(scan);
    /* A failed entry template is loud: a note per entry (plus the trigger log). */
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(out, "templateFailures"), i, f)
        json_array_append_new(a->notes,
                              json_sprintf("world-info entry %s.%lld template failed (%s): %s",
                                           dstr(f, "book"),
                                           (long long)json_integer_value(json_object_get(f, "uid")),
                                           dstr(f, "code"), dstr(f, "message")));
    free(msgs);
    return out;
}

/* ---- the message simulation ---------------------------------------------- */

typedef struct inj {
    int depth, role, order;
    char *content;
} inj;

static void push_msg(json_t *msgs, const char *role, const char *content, const char *source)
{
    if (!content || !*content)
        return;
    json_array_append_new(
        msgs, json_pack("{s:s, s:s, s:s}", "role", role, "content", content, "source", source));
}

/* populationInjectionPrompts: history reversed, for each depth the
 * injections grouped by role (system, user, assistant) inserted at
 * depth + already inserted; reversed back. */
static json_t *history_with_injections(const hist *h, inj *inj_list, size_t ninj)
{
    json_t *rev = json_array();
    for (size_t i = h->n; i-- > 0;)
        json_array_append_new(rev, json_pack("{s:s, s:s, s:s}", "role", h->role[i], "content",
                                             h->text[i], "source", "chatHistory"));
    int maxd = 0;
    for (size_t k = 0; k < ninj; k++)
        if (inj_list[k].depth > maxd)
            maxd = inj_list[k].depth;
    size_t inserted = 0;
    for (int d = 0; d <= maxd && d <= 1000; d++) {
        size_t here = 0;
        for (int role = 0; role < 3; role++) {
            cdsh_strbuf sb;
            cdsh_strbuf_init(&sb);
            /* Same depth: by order (ascending), then as given. */
            for (int pass_order = -1000000;;) {
                int next = 1000001;
                for (size_t k = 0; k < ninj; k++)
                    if (inj_list[k].depth == d && inj_list[k].role == role &&
                        inj_list[k].order > pass_order && inj_list[k].order < next)
                        next = inj_list[k].order;
                if (next == 1000001)
                    break;
                for (size_t k = 0; k < ninj; k++)
                    if (inj_list[k].depth == d && inj_list[k].role == role &&
                        inj_list[k].order == next && *inj_list[k].content) {
                        if (sb.len)
                            cdsh_strbuf_append_char(&sb, '\n');
                        cdsh_strbuf_append_str(&sb, inj_list[k].content);
                    }
                pass_order = next;
            }
            if (sb.len) {
                size_t at = (size_t)d + inserted;
                if (at > json_array_size(rev))
                    at = json_array_size(rev);
                json_array_insert_new(rev, at,
                                      json_pack("{s:s, s:s, s:s}", "role", ROLE_NAMES[role],
                                                "content", sb.data, "source", "injection"));
                here++;
            }
            cdsh_strbuf_deinit(&sb);
        }
        inserted += here;
    }
    json_t *out = json_array();
    for (size_t i = json_array_size(rev); i-- > 0;)
        json_array_append(out, json_array_get(rev, i));
    json_decref(rev);
    return out;
}

static int role_index(const char *r)
{
    for (int i = 0; i < 3; i++)
        if (r && !strcmp(r, ROLE_NAMES[i]))
            return i;
    return 0;
}

/* ---- main ----------------------------------------------------------------- */

static void add_inj(inj **list, size_t *n, int depth, int role, int order, const char *content)
{
    inj *l = realloc(*list, (*n + 1) * sizeof *l);
    if (!l)
        return;
    *list = l;
    l[*n] = (inj){depth, role, order, strdup(content ? content : "")};
    (*n)++;
}

/* Splits mes_example on <START> into "[Example Chat]" blocks, with the
 * example-position world info before and after: an owned array of strings. */
static json_t *examples_blocks(const char *mes, const json_t *wi_examples)
{
    json_t *blocks = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(wi_examples, i, e) {
        if (!strcmp(dstr(e, "position"), "before"))
            json_array_append_new(blocks, json_string(dstr(e, "content")));
    }
    const char *p = mes ? mes : "";
    while (*p) {
        const char *s = strstr(p, "<START>");
        const char *end = s ? s : p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && (*a == '\n' || *a == ' ' || *a == '\r'))
            a++;
        while (b > a && (b[-1] == '\n' || b[-1] == ' ' || b[-1] == '\r'))
            b--;
        if (b > a) {
            cdsh_strbuf sb;
            cdsh_strbuf_init(&sb);
            cdsh_strbuf_append_str(&sb, "[Example Chat]\n");
            cdsh_strbuf_append(&sb, a, (size_t)(b - a));
            json_array_append_new(blocks, json_stringn(sb.data, sb.len));
            cdsh_strbuf_deinit(&sb);
        }
        p = s ? s + 7 : end;
    }
    json_array_foreach(wi_examples, i, e) {
        if (!strcmp(dstr(e, "position"), "after"))
            json_array_append_new(blocks, json_string(dstr(e, "content")));
    }
    return blocks;
}

/* The example blocks joined by newlines (the standing segment's form). */
static char *examples_text(const char *mes, const json_t *wi_examples)
{
    json_t *blocks = examples_blocks(mes, wi_examples);
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    size_t i;
    json_t *b;
    json_array_foreach(blocks, i, b) {
        if (sb.len)
            cdsh_strbuf_append_char(&sb, '\n');
        cdsh_strbuf_append_str(&sb, json_string_value(b));
    }
    json_decref(blocks);
    return cdsh_strbuf_take(&sb, NULL);
}

/* ---- simulation budget ------------------------------------------------------ */

enum { SIM_FIXED, SIM_HISTORY, SIM_EXAMPLE };

static int sim_kind(const json_t *m)
{
    const char *src = dstr(m, "source");
    if (!strcmp(src, "chatHistory") || !strcmp(src, "injection"))
        return SIM_HISTORY;
    return !strcmp(src, "dialogueExamples") ? SIM_EXAMPLE : SIM_FIXED;
}

/* Trims the simulated messages to the context budget (max context minus
 * the preset's reply tokens) the way SillyTavern's populateChatCompletion
 * does: every system / character part is kept; chat history (with its
 * in-chat injections) is filled newest first and stops at the first message
 * that does not fit, so the oldest go first — except that the last user
 * message is always kept; example blocks then take what is left, each block
 * whole or not at all (SillyTavern adds a block's lines while they fit).
 * Counts with the budgets' token estimate. Adds budgets.simulation and a
 * note when anything was dropped. */
static int trim_simulation(asm_ctx *a, json_t *budgets)
{
    const cdsh_tavern_assemble_input *in = a->in;
    json_t *reply = json_object_get(in->preset, "openai_max_tokens");
    long limit =
        (long)in->wi.max_context - (json_is_integer(reply) ? (long)json_integer_value(reply) : 0);
    if (limit < 0)
        limit = 0;
    size_t n = json_array_size(a->messages);
    size_t *tok = calloc(n + 1, sizeof *tok);
    bool *keep = calloc(n + 1, sizeof *keep);
    json_t *kept = json_array();
    if (!tok || !keep || !kept) {
        free(tok);
        free(keep);
        json_decref(kept);
        return CDSH_ENOMEM;
    }
    long fixed = 0;
    size_t last_user = SIZE_MAX, n_hist = 0, n_ex = 0, drop_hist = 0, drop_ex = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(a->messages, i);
        tok[i] = cdsh_tavern_tokens_count_str(dstr(m, "content"));
        int k = sim_kind(m);
        if (k == SIM_FIXED) {
            keep[i] = true;
            fixed += (long)tok[i];
        } else if (k == SIM_HISTORY && !strcmp(dstr(m, "source"), "chatHistory")) {
            n_hist++;
            if (!strcmp(dstr(m, "role"), "user"))
                last_user = i;
        }
        n_ex += k == SIM_EXAMPLE;
    }
    if (last_user != SIZE_MAX) {
        keep[last_user] = true;
        fixed += (long)tok[last_user];
    }
    long left = limit - fixed;
    bool stopped = false;
    for (size_t i = n; i-- > 0;) {
        const json_t *m = json_array_get(a->messages, i);
        if (i == last_user || sim_kind(m) != SIM_HISTORY)
            continue;
        if (!stopped && (long)tok[i] <= left) {
            keep[i] = true;
            left -= (long)tok[i];
            continue;
        }
        stopped = true;
        drop_hist += !strcmp(dstr(m, "source"), "chatHistory");
    }
    for (size_t i = 0; i < n; i++) {
        if (sim_kind(json_array_get(a->messages, i)) != SIM_EXAMPLE)
            continue;
        if ((long)tok[i] <= left) {
            keep[i] = true;
            left -= (long)tok[i];
        } else {
            drop_ex++;
        }
    }
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        used += tok[i];
        json_array_append(kept, json_array_get(a->messages, i));
    }
    json_decref(a->messages);
    a->messages = kept;
    json_t *sim = json_pack("{s:I, s:I, s:b, s:I, s:I}", "limit", (json_int_t)limit, "used",
                            (json_int_t)used, "truncated", drop_hist || drop_ex, "droppedMessages",
                            (json_int_t)drop_hist, "droppedExamples", (json_int_t)drop_ex);
    json_object_set_new(budgets, "simulation", sim);
    if (drop_hist || drop_ex)
        json_array_append_new(
            a->notes, json_sprintf("simulated messages trimmed to the %ld-token context: dropped "
                                   "%zu of %zu chat messages (oldest first) and %zu of %zu "
                                   "example blocks",
                                   limit, drop_hist, n_hist, drop_ex, n_ex));
    if (fixed > limit)
        json_array_append_new(
            a->notes, json_sprintf("simulated messages: the system and character parts and the "
                                   "last user message need %ld tokens, more than the %ld-token "
                                   "context (SillyTavern would refuse to send)",
                                   fixed, limit));
    free(tok);
    free(keep);
    return 0;
}

/* {name: [{uid, comment, content}]} of every book of the plan, for getwi();
 * built on first use, so plans without templates never pay for it. */
static const json_t *wi_books(asm_ctx *a)
{
    if (a->wi_books)
        return a->wi_books;
    a->wi_books = json_object();
    const json_t *single[] = {a->in->chat_book, a->in->persona_book};
    const json_t *lists[] = {a->in->global_books, a->char_books};
    json_t *all = json_array();
    for (size_t k = 0; k < 2; k++)
        if (json_is_object(single[k]))
            json_array_append(all, (json_t *)single[k]);
    for (size_t k = 0; k < 2; k++)
        json_array_extend(all, (json_t *)lists[k]);
    size_t i;
    json_t *b;
    json_array_foreach(all, i, b) {
        const char *name = dstr(b, "name");
        if (json_object_get(a->wi_books, name))
            continue; /* a book is loaded once, as activation does */
        json_t *list = json_array();
        const char *uid;
        json_t *e;
        json_object_foreach(json_object_get(b, "entries"), uid, e)
            json_array_append_new(
                list, json_pack("{s:O?, s:s, s:s}", "uid", json_object_get(e, "uid"), "comment",
                                dstr(e, "comment"), "content", dstr(e, "content")));
        json_object_set_new(a->wi_books, name, list);
    }
    json_decref(all);
    return a->wi_books;
}

/* Runs one template in the sandboxed worker with the variable API, the
 * world-info access API (active: the activated entries; entry: the entry
 * being evaluated, or NULL) and the turn's frozen clock and seed. Variable
 * writes are applied only after a successful render and never in a dry run
 * (seed invariant 6). *out owned. */
static int run_template(asm_ctx *a, const char *raw, const json_t *active, const json_t *entry,
                        char **out, cdsh_error *err)
{
    *out = NULL;
    json_t *ctx = json_pack("{s:{s:O?, s:O?, s:{}}, s:{s:s, s:s}, s:I, s:I, s:{s:O, s:O}, s:O?}",
                            "vars", "global", a->in->vars_global, "local", a->in->vars_local,
                            "message", "macros", "char", a->char_name, "user", a->user_name, "now",
                            (json_int_t)a->in->now_ms, "seed", (json_int_t)a->in->seed, "wi",
                            "active", active, "books", wi_books(a), "entry", entry);
    if (!ctx)
        return cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    json_t *res = NULL;
    bool write = !a->in->dry_run;
    int rc = cdsh_tavern_template_render(raw, ctx, write, a->in->template_limits, &res, err);
    json_decref(ctx);
    if (rc < 0)
        return rc;
    json_t *vars = json_object_get(res, "vars");
    if (write && json_is_true(json_object_get(res, "changed"))) {
        if (a->in->vars_local && json_is_object(json_object_get(vars, "local"))) {
            json_object_clear(a->in->vars_local);
            json_object_update(a->in->vars_local, json_object_get(vars, "local"));
        }
        if (a->in->vars_global && json_is_object(json_object_get(vars, "global"))) {
            json_object_clear(a->in->vars_global);
            json_object_update(a->in->vars_global, json_object_get(vars, "global"));
        }
    }
    const char *o = json_string_value(json_object_get(res, "output"));
    *out = strdup(o ? o : "");
    json_decref(res);
    return *out ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
}

/* World-info entry templates (the wi_activate render hook). */
static int render_entry(void *ud, const json_t *entry, const json_t *active, char **out,
                        cdsh_error *err)
{
    asm_ctx *a = ud;
    if (!a->in->run_templates)
        return cdsh_error_set(err, CDSH_EPERM, "TEMPLATES_OFF",
                              "the entry holds a template and templates are off");
    return run_template(a, dstr(entry, "content"), active, entry, out, err);
}

/* Renders a template prompt once per plan in the worker; NULL (with a note)
 * when templates are off or the render failed. Borrowed result. */
static const char *render_template(asm_ctx *a, const char *id, const char *raw)
{
    json_t *done = json_object_get(a->rendered, id);
    if (done)
        return json_string_value(done);
    if (!a->in->run_templates) {
        json_array_append_new(a->notes, json_sprintf("prompt '%s' holds a template and was left "
                                                     "out (templates are off)",
                                                     id));
        json_object_set_new(a->rendered, id, json_null());
        return NULL;
    }
    json_t *active = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(a->wi, "activated"), i, e)
        json_array_append_new(
            active, json_pack("{s:O, s:O, s:O, s:O}", "book", json_object_get(e, "book"), "uid",
                              json_object_get(e, "uid"), "comment", json_object_get(e, "comment"),
                              "content", json_object_get(e, "content")));
    char *out = NULL;
    cdsh_error err = {0};
    int rc = active ? run_template(a, raw, active, NULL, &out, &err)
                    : cdsh_error_set(&err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    json_decref(active);
    if (rc < 0) {
        json_array_append_new(a->notes, json_sprintf("prompt '%s' template failed (%s): %s", id,
                                                     err.code, err.message));
        json_object_set_new(a->rendered, id, json_null());
        return NULL;
    }
    json_object_set_new(a->rendered, id, json_string(out));
    free(out);
    return json_string_value(json_object_get(a->rendered, id));
}

typedef struct ordered_ref {
    json_t *e;
    int order;
    size_t seq;
} ordered_ref;

static int cmp_ref(const void *x, const void *y)
{
    const ordered_ref *a = x, *b = y;
    if (a->order != b->order)
        return a->order < b->order ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static char *standing_key(const asm_ctx *a)
{
    const cdsh_tavern_assemble_input *in = a->in;
    uint32_t h = CDSH_TAVERN_FNV_BASIS;
    char num[64];
    snprintf(num, sizeof num, "%d|%d|%d|%d", CDSH_TAVERN_STANDING_PIN_VERSION,
             in->wi.character_strategy, in->wi.use_group_scoring, in->wi.max_context);
    h = cdsh_tavern_seed_fnv1a_str(h, num);
    h = cdsh_tavern_seed_fnv1a_str(h, in->generation_type ? in->generation_type : "normal");
    h = cdsh_tavern_seed_fnv1a_str(h, a->char_name);
    h = cdsh_tavern_seed_fnv1a_str(h, a->user_name);
    h = cdsh_tavern_seed_fnv1a_str(h, dstr(in->persona, "description"));
    h = cdsh_tavern_seed_fnv1a_str(h, dstr(in->preset, "name"));
    if (in->revision) {
        h = cdsh_tavern_seed_fnv1a_str(h, in->revision);
    } else {
        char *d = json_dumps(in->card, JSON_COMPACT | JSON_SORT_KEYS);
        h = cdsh_tavern_seed_fnv1a_str(h, d);
        free(d);
        d = in->preset ? json_dumps(in->preset, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        h = cdsh_tavern_seed_fnv1a_str(h, d);
        free(d);
    }
    char *key = malloc(32);
    if (key)
        snprintf(key, 32, "v%d-%08x", CDSH_TAVERN_STANDING_PIN_VERSION, h);
    return key;
}

/* ---- the assembly, phase by phase ------------------------------------------
 * cdsh_tavern_assemble runs the phases below in SillyTavern's order; each is
 * named after the step of ST's chat-completion prompt it mirrors. They hand
 * each other a `parts`; every phase returns 0 or CDSH_ENOMEM. */

typedef struct parts {
    const char *gen; /* generation type */
    hist h;
    inj *injs;
    size_t ninj;
    json_t *order, *budgets;
    char *an_x;              /* the author's note, macros expanded */
    cdsh_strbuf wi_standing; /* standing-safe world info */
    cdsh_strbuf wi_turn;     /* the turn's world info, within its budget */
    cdsh_strbuf turn_extra;  /* order-list prompts that change per turn */
    cdsh_strbuf an;          /* author's note with AN-top / AN-bottom world info */
    bool has_memory_marker, has_state_marker;
    char *fitted[2]; /* memories, world deltas within their budgets */
} parts;

static bool enabled_in_order(const json_t *o)
{
    return !json_object_get(o, "enabled") || json_is_true(json_object_get(o, "enabled"));
}

static bool in_chat(const json_t *prompt)
{
    return json_integer_value(json_object_get(prompt, "injection_position")) == 1;
}

/* ST's substituteParams environment: names, card fields and the frozen chat
 * view (last real messages) the macros read. */
static void macro_env(asm_ctx *a)
{
    const cdsh_tavern_assemble_input *in = a->in;
    a->data = json_object_get(in->card, "data");
    const char *nick = dstr(a->data, "nickname");
    a->char_name = *nick ? nick : dstr(in->card, "name");
    if (!*a->char_name)
        a->char_name = dstr(a->data, "name");
    a->user_name = in->persona && *dstr(in->persona, "name") ? dstr(in->persona, "name") : "User";
    const char *last = NULL, *last_user = NULL, *last_char = NULL;
    long real = 0;
    for (size_t i = 0; i < in->n_chat; i++) {
        if (in->chat[i].synthetic)
            continue;
        real++;
        last = in->chat[i].text;
        if (in->chat[i].role && !strcmp(in->chat[i].role, "user"))
            last_user = in->chat[i].text;
        else if (in->chat[i].role && !strcmp(in->chat[i].role, "assistant"))
            last_char = in->chat[i].text;
    }
    a->env = (cdsh_tavern_macro_env){
        .user = a->user_name,
        .chr = a->char_name,
        .description = dstr(a->data, "description"),
        .personality = dstr(a->data, "personality"),
        .scenario = dstr(a->data, "scenario"),
        .persona = dstr(in->persona, "description"),
        .first_message = dstr(a->data, "first_mes"),
        .mes_examples = dstr(a->data, "mes_example"),
        .char_prompt = dstr(a->data, "system_prompt"),
        .char_jailbreak = dstr(a->data, "post_history_instructions"),
        .char_version = dstr(a->data, "character_version"),
        .char_depth_prompt = dstr(json_object_get(json_object_get(a->data, "extensions"), "depth_prompt"),
                                  "prompt"),
        .creator_notes = dstr(a->data, "creator_notes"),
        .alternate_greetings = json_object_get(a->data, "alternate_greetings"),
        .generation_type = in->generation_type ? in->generation_type : "normal",
        .max_context = (long)in->wi.max_context,
        .max_response = json_is_integer(json_object_get(in->preset, "openai_max_tokens"))
                            ? (long)json_integer_value(json_object_get(in->preset, "openai_max_tokens"))
                            : 0,
        .chat_length = real,
        .summary = in->memories,
        .authors_note = in->author_note,
        .last_message = last,
        .last_user_message = last_user,
        .last_char_message = last_char,
        .last_message_id = real - 1,
        .chat_id = in->chat_id,
        .vars_local = in->vars_local,
        .vars_global = in->vars_global,
        .now_ms = in->now_ms,
        .seed = in->seed,
        .unknown = a->unknown,
    };
}

/* ST's getWorldInfoPrompt: the chat history is prepared, then world info is
 * activated over it (and over the author's note with "allow WI scan"). */
static int world_info_prompt(asm_ctx *a, parts *p)
{
    if (build_history(a, &p->h) < 0)
        return CDSH_ENOMEM;
    /* Expanded before activation: with "allow WI scan" it is scanned. */
    p->an_x = a->in->author_note ? expand(a, a->in->author_note, false, NULL) : NULL;
    a->wi = run_wi(a, p->an_x);
    if (!a->wi)
        return CDSH_ENOMEM;
    /* Outlet entries fill {{outlet::name}} wherever it appears from here on. */
    a->env.outlets = json_object_get(a->wi, "outlets");
    return 0;
}

static void note_cut(json_t *cut_list, const json_t *e)
{
    if (json_array_size(cut_list) < 8)
        json_array_append_new(
            cut_list, json_sprintf("%s.%lld", dstr(e, "book"),
                                   (long long)json_integer_value(json_object_get(e, "uid"))));
}

/* Activated entries in output order: ascending `order` (higher closer to
 * the chat), stable. Owned. */
static json_t *sorted_activated(const json_t *act)
{
    size_t na = json_array_size(act), i;
    json_t *e;
    ordered_ref *refs = calloc(na + 1, sizeof *refs);
    json_t *sorted = json_array();
    if (!refs)
        return sorted;
    json_array_foreach(act, i, e)
        refs[i] = (ordered_ref){e, (int)json_integer_value(json_object_get(e, "order")), i};
    qsort(refs, na, sizeof *refs, cmp_ref);
    for (size_t k = 0; k < na; k++)
        json_array_append(sorted, refs[k].e);
    free(refs);
    return sorted;
}

/* ST's world-info budget: standing-safe entries go to the standing segment,
 * the rest to the turn within CDSH_TAVERN_BUDGET_WORLD_INFO; what did not
 * fit is named so the model can read it with tavern_lore_read. Author's-note
 * and outlet entries are placed by their own phases. */
static void world_info_budget(asm_ctx *a, parts *p)
{
    size_t wi_used = 0, wi_cut = 0, i;
    json_t *cut_list = json_array(), *e;
    json_t *sorted = sorted_activated(json_object_get(a->wi, "activated"));
    json_array_foreach(sorted, i, e) {
        int pos = (int)json_integer_value(json_object_get(e, "position"));
        if (pos == CDSH_TAVERN_WI_POS_AN_TOP || pos == CDSH_TAVERN_WI_POS_AN_BOTTOM ||
            pos == CDSH_TAVERN_WI_POS_OUTLET)
            continue;
        const char *c = dstr(e, "content");
        if (json_is_true(json_object_get(e, "standingSafe"))) {
            if (p->wi_standing.len)
                cdsh_strbuf_append_char(&p->wi_standing, '\n');
            cdsh_strbuf_append_str(&p->wi_standing, c);
            continue;
        }
        size_t t = (size_t)json_integer_value(json_object_get(e, "tokens"));
        if (wi_used + t > CDSH_TAVERN_BUDGET_WORLD_INFO) {
            wi_cut++;
            note_cut(cut_list, e);
            continue;
        }
        wi_used += t;
        if (p->wi_turn.len)
            cdsh_strbuf_append_char(&p->wi_turn, '\n');
        cdsh_strbuf_append_str(&p->wi_turn, c);
    }
    json_array_foreach(json_object_get(a->wi, "truncated"), i, e) {
        wi_cut++;
        note_cut(cut_list, e);
    }
    json_decref(sorted);
    if (wi_cut) {
        cdsh_strbuf_append_str(&p->wi_turn, p->wi_turn.len ? "\n" : "");
        cdsh_strbuf_append_str(&p->wi_turn, "【世界书·未收录】");
        json_t *u;
        json_array_foreach(cut_list, i, u) {
            cdsh_strbuf_append_str(&p->wi_turn, i ? ", " : "");
            cdsh_strbuf_append_str(&p->wi_turn, json_string_value(u));
        }
        if (wi_cut > json_array_size(cut_list))
            cdsh_strbuf_appendf(&p->wi_turn, " 等 %zu 条", wi_cut);
        cdsh_strbuf_append_str(&p->wi_turn, " — read with tavern_lore_read");
        json_array_append_new(
            a->notes, json_sprintf("%zu world-info entries did not fit the budget", wi_cut));
    }
    budget_note(p->budgets, "worldInfo", CDSH_TAVERN_BUDGET_WORLD_INFO, wi_used, wi_cut > 0);
    json_decref(cut_list);
}

/* The raw text of a relative order-list prompt for the standing segment, or
 * NULL when it is placed elsewhere (world info, examples, history, memory
 * and state markers, in-chat prompts). */
static const char *standing_raw(asm_ctx *a, const char *id, const json_t *p, const char **orig)
{
    if (!strcmp(id, "main"))
        return override_text(p, dstr(a->data, "system_prompt"), orig);
    if (!strcmp(id, "jailbreak"))
        return override_text(p, dstr(a->data, "post_history_instructions"), orig);
    if (!strcmp(id, "charDescription"))
        return dstr(a->data, "description");
    if (!strcmp(id, "charPersonality"))
        return dstr(a->data, "personality");
    if (!strcmp(id, "scenario"))
        return dstr(a->data, "scenario");
    if (!strcmp(id, "personaDescription"))
        return dstr(a->in->persona, "description");
    if (!strcmp(id, "worldInfoBefore") || !strcmp(id, "worldInfoAfter"))
        return NULL; /* world info goes in its own labelled section */
    if (!strcmp(id, "dialogueExamples") || !strcmp(id, "chatHistory") ||
        !strcmp(id, "agentMemory") || !strcmp(id, "worldState"))
        return NULL;
    if (p && in_chat(p))
        return NULL; /* in-chat prompts are depth injections */
    return p ? dstr(p, "content") : NULL;
}

/* ST's prompt order (relative prompts), split by stability: prompts without
 * turn macros go to the standing segment with the clock frozen, the rest
 * (and every template) to the turn. Then the examples (EMTop/EMBottom world
 * info around them) and the standing world info. */
static void standing_prompts(asm_ctx *a, parts *p)
{
    char *disc = expand(a, BOUND_DISCIPLINE, true, NULL);
    section(&a->standing, NULL, disc);
    free(disc);
    size_t i;
    json_t *o;
    json_array_foreach(p->order, i, o) {
        const char *id = dstr(o, "identifier");
        if (!enabled_in_order(o))
            continue;
        p->has_memory_marker |= !strcmp(id, "agentMemory");
        p->has_state_marker |= !strcmp(id, "worldState");
        const json_t *pr = find_prompt(a->in->preset, id);
        if (pr && !triggered(pr, p->gen))
            continue;
        const char *orig = NULL;
        const char *raw = standing_raw(a, id, pr, &orig);
        if (!raw || !*raw)
            continue;
        a->env.original = orig;
        bool turn_local = false;
        if (cdsh_tavern_template_has_tags(raw)) {
            const char *r = render_template(a, id, raw);
            char *x = r ? expand(a, r, false, NULL) : NULL;
            section(&p->turn_extra, NULL, x); /* templates are per turn */
            free(x);
            a->env.original = NULL;
            continue;
        }
        char *x = expand(a, raw, false, &turn_local);
        if (!turn_local) {
            free(x);
            x = expand(a, raw, true, NULL); /* clock frozen in standing */
            section(&a->standing, NULL, x);
        } else {
            section(&p->turn_extra, NULL, x);
        }
        free(x);
        a->env.original = NULL;
    }
    char *ex = examples_text(dstr(a->data, "mes_example"), json_object_get(a->wi, "examples"));
    char *exx = ex ? expand(a, ex, true, NULL) : NULL;
    section(&a->standing, NULL, exx);
    free(ex);
    free(exx);
    section(&a->standing, "【世界书·常驻】", p->wi_standing.data);
}

/* ST's populateInjectionPrompts: the card's depth prompt and the in-chat
 * (absolute) preset prompts become depth injections; their text is shown in
 * the standing segment, or the turn when it has turn macros. */
static void injection_prompts(asm_ctx *a, parts *p)
{
    const json_t *dp = json_object_get(a->in->card, "depth_prompt");
    if (json_is_object(dp)) {
        bool tl = false;
        char *x = expand(a, dstr(dp, "prompt"), false, &tl);
        char label[96];
        snprintf(label, sizeof label, "[depth %lld, %s]",
                 (long long)json_integer_value(json_object_get(dp, "depth")), dstr(dp, "role"));
        section(tl ? &p->turn_extra : &a->standing, label, x);
        add_inj(&p->injs, &p->ninj, (int)json_integer_value(json_object_get(dp, "depth")),
                role_index(dstr(dp, "role")), 100, x);
        free(x);
    }
    size_t i;
    json_t *o;
    json_array_foreach(p->order, i, o) {
        const json_t *pr = find_prompt(a->in->preset, dstr(o, "identifier"));
        if (!pr || !enabled_in_order(o) || !in_chat(pr) || !triggered(pr, p->gen))
            continue;
        const char *id = dstr(pr, "identifier");
        if (!strcmp(id, "chatHistory") || !strcmp(id, "dialogueExamples"))
            continue;
        bool tl = false;
        char *x = expand(a, dstr(pr, "content"), false, &tl);
        int depth = json_is_integer(json_object_get(pr, "injection_depth"))
                        ? (int)json_integer_value(json_object_get(pr, "injection_depth"))
                        : 4;
        char label[96];
        snprintf(label, sizeof label, "[depth %d, %s]", depth, dstr(pr, "role"));
        section(tl ? &p->turn_extra : &a->standing, label, x);
        add_inj(&p->injs, &p->ninj, depth, role_index(dstr(pr, "role")),
                json_is_integer(json_object_get(pr, "injection_order"))
                    ? (int)json_integer_value(json_object_get(pr, "injection_order"))
                    : 100,
                x);
        free(x);
    }
}

/* ST's author's note (setFloatingPrompt) with the ANTop / ANBottom world
 * info around it, unlabelled. */
static void authors_note(asm_ctx *a, parts *p)
{
    if (!p->an_x || !*p->an_x)
        return;
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(a->wi, "anTop"), i, o) {
        cdsh_strbuf_append_str(&p->an, json_string_value(o));
        cdsh_strbuf_append_char(&p->an, '\n');
    }
    cdsh_strbuf_append_str(&p->an, p->an_x);
    json_array_foreach(json_object_get(a->wi, "anBottom"), i, o) {
        cdsh_strbuf_append_char(&p->an, '\n');
        cdsh_strbuf_append_str(&p->an, json_string_value(o));
    }
}

/* The turn segment: the playbook, this turn's world info, memories and world
 * deltas within their budgets, the author's note, the journal and the
 * order-list prompts that change per turn. */
static void turn_segment(asm_ctx *a, parts *p)
{
    const cdsh_tavern_assemble_input *in = a->in;
    section(&a->turn, NULL, TURN_PLAYBOOK);
    section(&a->turn, "【世界书·本轮触发】", p->wi_turn.data);
    struct {
        const char *name, *label, *text;
        int limit;
    } fit_parts[] = {{"memories", "【检索记忆】", in->memories, CDSH_TAVERN_BUDGET_MEMORIES},
                     {"deltas", "【世界变化】", in->world_state, CDSH_TAVERN_BUDGET_DELTAS}};
    for (size_t k = 0; k < 2; k++) {
        size_t used = 0;
        bool cut = false;
        p->fitted[k] =
            fit(fit_parts[k].text ? fit_parts[k].text : "", fit_parts[k].limit, &used, &cut);
        section(&a->turn, fit_parts[k].label, p->fitted[k]);
        budget_note(p->budgets, fit_parts[k].name, fit_parts[k].limit, used, cut);
        if (cut)
            json_array_append_new(a->notes, json_sprintf("%s truncated to %d tokens",
                                                         fit_parts[k].name, fit_parts[k].limit));
    }
    authors_note(a, p);
    section(&a->turn, "【作者注释】", p->an.data);
    size_t used = 0;
    bool cut = false;
    char *j = fit(in->journal ? in->journal : "", CDSH_TAVERN_BUDGET_JOURNAL, &used, &cut);
    section(&a->turn, "【角色笔记】", j);
    budget_note(p->budgets, "journal", CDSH_TAVERN_BUDGET_JOURNAL, used, cut);
    free(j);
    section(&a->turn, NULL, p->turn_extra.data);
}

/* The chat history with every depth injection (atDepth world info, the
 * author's note in chat, the card's and the preset's in-chat prompts), and
 * the memory and state texts before it when the order list has no marker. */
static void chat_history(asm_ctx *a, parts *p)
{
    if (!p->has_memory_marker && p->fitted[0] && *p->fitted[0])
        push_msg(a->messages, "system", p->fitted[0], "agentMemory");
    if (!p->has_state_marker && p->fitted[1] && *p->fitted[1])
        push_msg(a->messages, "system", p->fitted[1], "worldState");
    json_t *hm = history_with_injections(&p->h, p->injs, p->ninj);
    json_array_extend(a->messages, hm);
    json_decref(hm);
}

/* One relative order-list entry of the simulated chat completion: pushes
 * its message(s). */
static void completion_marker(asm_ctx *a, parts *p, const char *id, const json_t *pr)
{
    const json_t *wi = a->wi;
    const char *role = pr ? dstr(pr, "role") : "system";
    if (!*role)
        role = "system";
    int an_pos = a->in->author_note_position;
    char *x = NULL;
    if (!strcmp(id, "worldInfoBefore"))
        x = strdup(dstr(wi, "before"));
    else if (!strcmp(id, "worldInfoAfter"))
        x = strdup(dstr(wi, "after"));
    else if (!strcmp(id, "charDescription"))
        x = expand(a, dstr(a->data, "description"), false, NULL);
    else if (!strcmp(id, "charPersonality"))
        x = expand(a, dstr(a->data, "personality"), false, NULL);
    else if (!strcmp(id, "scenario"))
        x = expand(a, dstr(a->data, "scenario"), false, NULL);
    else if (!strcmp(id, "personaDescription"))
        x = expand(a, dstr(a->in->persona, "description"), false, NULL);
    else if (!strcmp(id, "dialogueExamples")) {
        /* One message per block: the budget keeps or drops whole blocks. */
        json_t *blocks =
            examples_blocks(dstr(a->data, "mes_example"), json_object_get(wi, "examples"));
        size_t k;
        json_t *b;
        json_array_foreach(blocks, k, b) {
            char *bx = expand(a, json_string_value(b), false, NULL);
            push_msg(a->messages, role, bx, id);
            free(bx);
        }
        json_decref(blocks);
        return;
    } else if (!strcmp(id, "agentMemory"))
        x = strdup(p->fitted[0] ? p->fitted[0] : "");
    else if (!strcmp(id, "worldState"))
        x = strdup(p->fitted[1] ? p->fitted[1] : "");
    else if (!strcmp(id, "main") || !strcmp(id, "jailbreak")) {
        const char *orig = NULL;
        const char *t = override_text(
            pr, dstr(a->data, !strcmp(id, "main") ? "system_prompt" : "post_history_instructions"),
            &orig);
        a->env.original = orig;
        x = expand(a, t, false, NULL);
        a->env.original = NULL;
        if (!strcmp(id, "main") && p->an.len && an_pos == CDSH_TAVERN_AN_BEFORE_MAIN)
            push_msg(a->messages, "system", p->an.data, "authorsNote");
        if (!strcmp(id, "main") && p->an.len && an_pos == CDSH_TAVERN_AN_AFTER_MAIN) {
            push_msg(a->messages, role, x, id);
            free(x);
            push_msg(a->messages, "system", p->an.data, "authorsNote");
            return;
        }
    } else if (pr) {
        const char *c = dstr(pr, "content");
        if (cdsh_tavern_template_has_tags(c) && !(c = render_template(a, id, c)))
            return;
        x = expand(a, c, false, NULL);
    } else if (strcmp(id, "nsfw") && strcmp(id, "enhanceDefinitions")) {
        /* nsfw / enhanceDefinitions are ordinary prompts a preset may lack. */
        json_array_append_new(a->notes, json_sprintf("unknown marker '%s' left empty", id));
    }
    push_msg(a->messages, role, x, id);
    free(x);
}

/* ST's populateChatCompletion: the simulated message list in prompt order,
 * with the chat history (and its depth injections) at its marker or at the
 * end, then trimmed to the context budget. */
static int chat_completion(asm_ctx *a, parts *p)
{
    const cdsh_tavern_assemble_input *in = a->in;
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(a->wi, "depth"), i, o)
        add_inj(&p->injs, &p->ninj, (int)json_integer_value(json_object_get(o, "depth")),
                (int)json_integer_value(json_object_get(o, "role")), 100, dstr(o, "content"));
    int an_pos = in->author_note_position;
    if (p->an.len && an_pos != CDSH_TAVERN_AN_AFTER_MAIN && an_pos != CDSH_TAVERN_AN_BEFORE_MAIN)
        add_inj(&p->injs, &p->ninj, in->author_note_depth > 0 ? in->author_note_depth : 4,
                in->author_note_role >= 0 && in->author_note_role <= 2 ? in->author_note_role : 0,
                100, p->an.data);
    bool history_done = false;
    json_array_foreach(p->order, i, o) {
        const char *id = dstr(o, "identifier");
        if (!enabled_in_order(o))
            continue;
        const json_t *pr = find_prompt(in->preset, id);
        if ((pr && !triggered(pr, p->gen)) || (pr && in_chat(pr)))
            continue;
        if (!strcmp(id, "chatHistory")) {
            chat_history(a, p);
            history_done = true;
            continue;
        }
        completion_marker(a, p, id, pr);
    }
    if (!history_done) {
        json_t *hm = history_with_injections(&p->h, p->injs, p->ninj);
        json_array_extend(a->messages, hm);
        json_decref(hm);
    }
    return trim_simulation(a, p->budgets) < 0 ? CDSH_ENOMEM : 0;
}

/* The plan: both segments neutralised, the messages, the standing key and
 * the reports. */
static int plan_dup(asm_ctx *a, parts *p, json_t **plan)
{
    char *standing = cdsh_tavern_assemble_neutralize_dup(a->standing.data);
    char *turn = cdsh_tavern_assemble_neutralize_dup(a->turn.data);
    char *key = standing_key(a);
    /* SillyTavern's overflow alert (a toast there) is a note here. */
    if (a->in->wi.overflow_alert && json_is_true(json_object_get(a->wi, "overflow")))
        json_array_append_new(
            a->notes, json_sprintf("world info budget of %lld tokens reached",
                                   (long long)json_integer_value(json_object_get(a->wi, "budget"))));
    /* The settings, the seed and the generation type make the plan replayable. */
    if (standing && turn && key)
        *plan = json_pack("{s:s, s:s, s:O, s:s, s:O, s:O, s:O, s:O, s:O, s:o, s:I, s:s}",
                          "standing", standing, "turn", turn, "messages", a->messages,
                          "standingKey", key, "budgets", p->budgets, "notes", a->notes,
                          "worldInfo", a->wi, "regexFailures", a->regex_failures, "unknownMacros",
                          a->unknown, "worldInfoSettings", cdsh_tavern_wi_settings_json(&a->in->wi),
                          "seed", (json_int_t)a->in->seed, "generationType", p->gen);
    free(standing);
    free(turn);
    free(key);
    return *plan ? 0 : CDSH_ENOMEM;
}

int cdsh_tavern_assemble(const cdsh_tavern_assemble_input *in, json_t **plan, cdsh_error *err)
{
    if (!in || !plan || !json_is_object(in->card) || (in->n_chat && !in->chat))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "assemble: bad arguments");
    *plan = NULL;
    asm_ctx a = {.in = in};
    parts p = {.gen = in->generation_type ? in->generation_type : "normal"};
    int rc = 0;
    cdsh_strbuf_init(&a.standing);
    cdsh_strbuf_init(&a.turn);
    cdsh_strbuf_init(&p.wi_standing);
    cdsh_strbuf_init(&p.wi_turn);
    cdsh_strbuf_init(&p.turn_extra);
    cdsh_strbuf_init(&p.an);
    a.notes = json_array();
    a.regex_failures = json_array();
    a.unknown = json_array();
    a.messages = json_array();
    a.rendered = json_object();
    p.budgets = json_object();
    if (in->regex_rules && cdsh_tavern_rxset_new(in->regex_rules, &a.rx, err) < 0) {
        rc = CDSH_EINVAL;
        goto cleanup;
    }
    macro_env(&a);
    if ((rc = world_info_prompt(&a, &p)) < 0)
        goto cleanup;
    world_info_budget(&a, &p);
    p.order = prompt_order(in->preset);
    standing_prompts(&a, &p);
    injection_prompts(&a, &p);
    turn_segment(&a, &p);
    if ((rc = chat_completion(&a, &p)) < 0 || (rc = plan_dup(&a, &p, plan)) < 0)
        goto cleanup;
cleanup:
    if (rc == CDSH_ENOMEM)
        cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    for (size_t k = 0; k < p.ninj; k++)
        free(p.injs[k].content);
    free(p.injs);
    free_history(&p.h);
    free(p.fitted[0]);
    free(p.fitted[1]);
    free(p.an_x);
    cdsh_strbuf_deinit(&p.an);
    cdsh_strbuf_deinit(&p.turn_extra);
    cdsh_strbuf_deinit(&p.wi_standing);
    cdsh_strbuf_deinit(&p.wi_turn);
    json_decref(p.order);
    json_decref(p.budgets);
    cdsh_tavern_rxset_free(a.rx);
    cdsh_strbuf_deinit(&a.standing);
    cdsh_strbuf_deinit(&a.turn);
    json_decref(a.notes);
    json_decref(a.regex_failures);
    json_decref(a.unknown);
    json_decref(a.messages);
    json_decref(a.rendered);
    json_decref(a.wi_books);
    json_decref(a.char_books);
    json_decref(a.wi);
    return rc;
}
