/* service_plan.c — the prompt plan of a session: the bound story's card,
 * preset, persona, books and regex rules, the session's chat, the story's
 * saved prompt state and the home's globals, through the prompt engine
 * (assemble.h, pipeline.h). Used by wire.c for live turns and by service.c
 * for previews; it keeps no state of its own (wire.c caches per turn). */
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "agent/session_store.h"
#include "base/clock.h"
#include "base/fs.h"
#include "plugins/tavern/assemble.h"
#include "plugins/tavern/binding.h"
#include "plugins/tavern/globals.h"
#include "plugins/tavern/pipeline.h"
#include "plugins/tavern/service_priv.h"
#include "plugins/tavern/story.h"
#include "plugins/tavern/wi_settings.h"

/* Story doc holding the prompt engine's state {timed, vars} between turns. */
#define PROMPT_STATE_DOC "state/prompt-state.json"

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Loads the story's {timed, vars} state (a new empty object when absent). */
static json_t *state_load(cdsh_tavern_story *story)
{
    json_t *st = NULL;
    if (!story ||
        cdsh_tavern_story_load(story, CDSH_TAVERN_KIND_DOC, PROMPT_STATE_DOC, &st, NULL) < 0 ||
        !json_is_object(st)) {
        json_decref(st);
        st = json_object();
    }
    return st;
}

/* Saves the state inside the turn's floor (undone with it); unlogged when
 * no floor is open for the turn. */
static int state_save(cdsh_tavern_story *story, const char *sid, long long turn, json_t *timed,
                      json_t *vars, uint32_t seed, cdsh_error *err)
{
    json_t *st = json_pack("{s:O,s:O,s:I}", "timed", timed, "vars", vars, "seed", (json_int_t)seed);
    char *floor = turn > 0 ? cdsh_tavern_floor_name_dup(sid, turn) : NULL;
    int rc = st ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    if (rc == 0 && floor)
        rc = cdsh_tavern_story_put(story, floor, CDSH_TAVERN_KIND_DOC, PROMPT_STATE_DOC, st, NULL,
                                   NULL);
    if (rc == 0 && !floor)
        rc = CDSH_EPERM;
    if (rc == CDSH_EPERM)
        rc = cdsh_tavern_story_put(story, NULL, CDSH_TAVERN_KIND_DOC, PROMPT_STATE_DOC, st, NULL,
                                   err);
    free(floor);
    json_decref(st);
    return rc;
}

/* <tavern root>/state: where the home-wide global variables live. */
char *cdsh__tavern_globals_dir_dup(cdsh_tavern_service *svc)
{
    return cdsh_fs_path_join_dup(cdsh_tavern_store_root_get(svc->store), "state");
}

/* Logs a failed load or commit of the globals (dir NULL: out of memory). */
void cdsh__tavern_globals_failed(cdsh_tavern_service *svc, const char *sid, const char *dir,
                                 const cdsh_error *err)
{
    cdsh__tavern_log(svc, "globals-failed",
                     json_pack("{s:s,s:s,s:s}", "sessionId", sid, "code",
                               dir ? err->code : "OUT_OF_MEMORY", "message",
                               dir ? err->message : "out of memory"));
}

/* The frozen globals for a plan; an unreadable file is reported and read as
 * empty (the turn still runs; its commit then fails loudly too). */
static json_t *globals_load(cdsh_tavern_service *svc, const char *sid)
{
    char *dir = cdsh__tavern_globals_dir_dup(svc);
    json_t *g = NULL;
    cdsh_error err = {0};
    if (!dir || cdsh_tavern_globals_load(dir, &g, &err) < 0)
        cdsh__tavern_globals_failed(svc, sid, dir, &err);
    free(dir);
    return g ? g : json_object();
}

static json_t *obj_or_new(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_object(v) ? json_incref(v) : json_object();
}

/* SillyTavern's insertion frequency: with interval N the note (and its WI
 * scan) is present only when the number of the person's messages is a
 * non-zero multiple of N (1: always; 0 or less: never); an absent interval
 * is 1. (SillyTavern's messagesTillInsertion is count % N once count >= N
 * and N - count before, so it is 0 exactly then.) */
static bool note_due(const json_t *interval, const cdsh_tavern_chat_msg *chat, size_t n_chat)
{
    json_int_t every = json_is_integer(interval) ? json_integer_value(interval) : 1;
    if (every == 1)
        return true;
    if (every <= 0)
        return false;
    json_int_t users = 0;
    for (size_t i = 0; i < n_chat; i++)
        users += strcmp(chat[i].role, "user") == 0;
    return users > 0 && users % every == 0;
}

/* Entries that were never candidates (no key in the scanned text, disabled,
 * keyless) are counted, not listed: they are most of a large book, and the
 * log is for "why did this one (not) fire". */
static bool trigger_is_routine(const char *reason)
{
    return !reason || !strcmp(reason, "not matched") || !strcmp(reason, "no primary key matched") ||
           !strcmp(reason, "disabled") || !strcmp(reason, "no primary keys");
}

/* A live turn's world-info decisions go to the trigger log (getTriggerLog):
 * {kind:"worldInfo", sessionId, turn, considered, fired, routine, entries:
 * [{book, uid, comment, fired, reason}], overflow, tokens, budget}. */
/* The record is also kept in the story under the floor's name, written in
 * the turn's floor (undone with it; unlogged when no floor is open), and
 * the record of turn - triggerLogMax is dropped there. A failed write only
 * costs the copy that survives a restart: the turn goes on. */
static void store_triggers(cdsh_tavern_story *story, const char *sid, long long turn,
                           const json_t *detail, size_t max)
{
    char *floor = turn > 0 ? cdsh_tavern_floor_name_dup(sid, turn) : NULL;
    char *old = turn > (long long)max ? cdsh_tavern_floor_name_dup(sid, turn - (long long)max)
                                      : NULL;
    if (!floor)
        goto cleanup;
    int rc = cdsh_tavern_story_put(story, floor, CDSH__TAVERN_KIND_TRIGGER, floor, detail, NULL,
                                   NULL);
    bool logged = rc != CDSH_EPERM;
    if (!logged)
        rc = cdsh_tavern_story_put(story, NULL, CDSH__TAVERN_KIND_TRIGGER, floor, detail, NULL,
                                   NULL);
    if (rc == 0 && old)
        (void)cdsh_tavern_story_put(story, logged ? floor : NULL, CDSH__TAVERN_KIND_TRIGGER, old,
                                    NULL, NULL, NULL);
cleanup:
    free(floor);
    free(old);
}

static void record_triggers(cdsh_tavern_service *svc, cdsh_tavern_story *story, const char *sid,
                            long long turn, const json_t *plan, const json_t *settings)
{
    const json_t *wi = json_object_get(plan, "worldInfo");
    json_t *entries = json_array();
    size_t i, fired = 0, routine = 0;
    json_t *x;
    json_array_foreach(json_object_get(wi, "log"), i, x) {
        fired += json_is_true(json_object_get(x, "fired"));
        if (!json_is_true(json_object_get(x, "fired")) &&
            trigger_is_routine(json_string_value(json_object_get(x, "reason"))))
            routine++;
        else
            json_array_append(entries, x);
    }
    json_t *detail = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:o, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "sessionId", sid,
        "turn", (json_int_t)turn, "considered",
        (json_int_t)json_array_size(json_object_get(wi, "log")), "fired", (json_int_t)fired,
        "routine", (json_int_t)routine, "entries", entries, "overflow",
        json_object_get(wi, "overflow"), "tokens", json_object_get(wi, "tokens"), "budget",
        json_object_get(wi, "budget"), "settings", json_object_get(plan, "worldInfoSettings"),
        "seed", json_object_get(plan, "seed"), "generationType",
        json_object_get(plan, "generationType"));
    if (!detail)
        return;
    json_int_t max = json_integer_value(json_object_get(settings, "triggerLogMax"));
    char ts[40];
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), ts, sizeof ts);
    json_object_set_new(detail, "ts", json_string(ts));
    json_object_set_new(detail, "kind", json_string("worldInfo"));
    if (story)
        store_triggers(story, sid, turn, detail, max >= 10 ? (size_t)max : 200);
    cdsh__tavern_log_bounded(svc, "worldInfo", detail, max > 0 ? (size_t)max : 0);
}

/* Builds the plan from the story's saved timed effects and variables and
 * the home's global variables. pipe/turn_id NULL: a dry run (preview;
 * nothing written). With a pipeline the turn is live: the story state is
 * saved back once, when the turn's plan is first built, and *g_before /
 * *g_after (owned, may stay NULL) get the globals to commit at turn end. */
uint32_t cdsh__tavern_seed_draw(void)
{
    uint32_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s)
        s = (uint32_t)cdsh_clock_wall_ms() ^ (uint32_t)getpid() * 2654435761u;
    return s;
}

int cdsh__tavern_plan_build(cdsh_tavern_service *svc, const char *sid, cdsh_tavern_pipeline *pipe,
                            const char *turn_id, long long turn,
                            const cdsh__tavern_plan_opts *opts, json_t **plan, json_t **g_before,
                            json_t **g_after, cdsh_error *err)
{
    cdsh_tavern_story *story = NULL;
    json_t *state = NULL;
    *plan = NULL;
    json_t *b = NULL, *msgs = NULL;
    cdsh__tavern_assets as = {0};
    char *greeting = NULL;
    cdsh_tavern_chat_msg *chat = NULL;
    size_t n_chat = 0;
    int rc = cdsh_tavern_binding_load(svc->bindings, sid, &b, NULL);
    if (rc == CDSH_ENOTFOUND)
        return 0;
    if (rc < 0)
        return cdsh_error_set(err, rc, "binding-failed", "cannot read the session binding");
    /* Later steps of a turn reuse its frozen plan as is: none of the loading
     * below (assets, chat, story state, globals) would change a byte of it. */
    if (pipe && turn_id && (*plan = cdsh_tavern_pipeline_frozen_dup(pipe, turn_id))) {
        json_decref(b);
        return 0;
    }
    if ((rc = cdsh__tavern_assets_load(svc, b, &as, err)) < 0)
        goto cleanup;
    if (str(b, "storyId") && cdsh__tavern_session_story(svc, sid, &story, NULL) < 0)
        story = NULL;
    msgs = svc->sessions ? cdsh_session_store_messages(svc->sessions, sid, NULL) : NULL;
    chat = calloc(json_array_size(msgs) + 2, sizeof *chat);
    if (!chat) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
        goto cleanup;
    }
    /* The greeting opens the chat, as in SillyTavern: the session's own
     * opening (session/opening, replayed as its first assistant message), or
     * for sessions bound before openings were logged the one ensureGreeting
     * pinned in the story. */
    const json_t *first = json_array_get(msgs, 0);
    bool opened = first && str(first, "role") && !strcmp(str(first, "role"), "assistant");
    if (!opened && (greeting = cdsh__tavern_greeting_dup(story)))
        chat[n_chat++] = (cdsh_tavern_chat_msg){.role = "assistant", .text = greeting};
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        const char *role = str(m, "role"), *text = str(m, "content");
        if (role && text && (!strcmp(role, "user") || !strcmp(role, "assistant")))
            chat[n_chat++] = (cdsh_tavern_chat_msg){.role = role, .text = text};
    }
    state = state_load(story);
    json_t *vl = obj_or_new(state, "vars"), *vg = globals_load(svc, sid),
           *timed = obj_or_new(state, "timed");
    bool live = pipe && story;
    json_t *vg0 = live ? json_deep_copy(vg) : NULL;
    cdsh_tavern_assemble_input in = {
        .card = as.card,
        .preset = as.preset,
        .persona = as.persona,
        .global_books = as.books,
        .persona_book = as.persona_book,
        .regex_rules = as.rules,
        .chat = chat,
        .n_chat = n_chat,
        .chat_id = str(b, "storyId") ? str(b, "storyId") : sid,
        .now_ms = cdsh_clock_wall_ms(),
        .timed = timed,
        .vars_local = vl,
        .vars_global = vg,
        .dry_run = !live,
        .run_templates = true,
        .trigger_log = live, /* ≈0.5 ms per turn for 1 000 entries (bench_tavern_prompt) */
        .revision = as.revision,
        /* A fresh draw per turn (stored in the floor); a replay passes it. */
        .seed = opts && opts->has_seed ? opts->seed : cdsh__tavern_seed_draw(),
        .generation_type = opts && opts->generation_type ? opts->generation_type : "normal",
    };
    /* The author's note (settings.authorNote, SillyTavern's fields). */
    json_t *settings = cdsh__tavern_settings_dup(svc);
    json_t *an = json_object_get(settings, "authorNote");
    if (json_string_length(json_object_get(an, "text")) &&
        note_due(json_object_get(an, "interval"), chat, n_chat)) {
        in.author_note = str(an, "text");
        in.author_note_position = cdsh_tavern_an_position_from_st(
            (int)json_number_value(json_object_get(an, "position")));
        in.author_note_depth = (int)json_number_value(json_object_get(an, "depth"));
        in.author_note_role = (int)json_number_value(json_object_get(an, "role"));
        in.author_note_scan = json_is_true(json_object_get(an, "allowWIScan"));
    }
    /* World-info settings: defaults ← preset ← profile ← story ← caller. */
    rc = cdsh__tavern_wi_settings_effective(settings, as.preset, story, &in.wi, err);
    if (rc == 0 && opts && opts->wi_settings)
        rc = cdsh_tavern_wi_settings_apply(&in.wi, opts->wi_settings, err);
    bool cached = true;
    if (rc == 0)
        rc = pipe ? cdsh_tavern_pipeline_plan(pipe, turn_id, &in, plan, &cached, err)
                  : cdsh_tavern_assemble(&in, plan, err);
    if (rc == 0 && live && !cached)
        rc = state_save(story, sid, turn, timed, vl, in.seed, err);
    if (rc == 0 && live && !cached)
        record_triggers(svc, story, sid, turn, *plan, settings);
    if (rc == 0 && live && !cached && g_before && g_after) {
        *g_before = vg0;
        *g_after = json_incref(vg);
        vg0 = NULL;
    }
    json_decref(vg0);
    json_decref(settings);
    json_decref(vl);
    json_decref(vg);
    json_decref(timed);
cleanup:
    cdsh_tavern_story_free(story);
    json_decref(state);
    free(chat);
    free(greeting);
    json_decref(msgs);
    cdsh__tavern_assets_deinit(&as);
    json_decref(b);
    return rc;
}
