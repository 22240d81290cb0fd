/* service.c — the tavern service: open turns and floors, settings, the RPC
 * method handlers (validated input, bare values, kebab-case failure codes),
 * branch operations on host sessions, the turn context and idle maintenance.
 * Tool bodies are service_tools.c; the rows naming every handler methods.c. */
#include "plugins/tavern/service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/base64.h"
#include "base/strbuf.h"
#include "plugins/tavern/branch.h"
#include "plugins/tavern/card.h"
#include "plugins/tavern/card_frame.h"
#include "plugins/tavern/service_priv.h"
#include "plugins/tavern/wi_settings.h"
#include "plugins/tavern/worldstate.h"

#define SETTINGS_REL "settings.json"
#define LOG_MAX_DEFAULT 200
#define CONTINUE_NOTICE                                                                            \
    "【Tavern 续写】Continue your last reply from where it stopped, without repeating it."

/* ---- lifecycle -------------------------------------------------------------- */

static void open_turn_clear(cdsh__tavern_open_turn *t);

static const char *str_or_empty(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

int cdsh_tavern_service_new(const cdsh_home *home, const char *root, cdsh_session_store *sessions,
                            cdsh_tavern_service **out, cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "service_new: no output");
    *out = NULL;
    cdsh_tavern_service *svc = calloc(1, sizeof *svc);
    if (!svc)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    pthread_mutex_init(&svc->mu, NULL);
    svc->sessions = sessions;
    svc->current = json_object();
    svc->log = json_array();
    svc->maint = json_object();
    cdsh_tavern_memory_attach();
    int rc = cdsh_tavern_store_open(home, root, &svc->store, err);
    if (rc == 0)
        rc = cdsh_tavern_bindings_open(svc->store, &svc->bindings, err);
    if (rc == 0) /* the table's handlers borrow svc: no release */
        rc = cdsh_ops_new(&cdsh__tavern_ops_table, svc, NULL, &svc->ops, err);
    if (rc < 0) {
        cdsh_tavern_service_free(svc);
        return rc;
    }
    *out = svc;
    return 0;
}

void cdsh_tavern_service_free(cdsh_tavern_service *svc)
{
    if (!svc)
        return;
    for (size_t i = 0; i < svc->n_turns; i++)
        open_turn_clear(&svc->turns[i]);
    free(svc->turns);
    cdsh_ops_free(svc->ops);
    cdsh_tavern_bindings_free(svc->bindings);
    cdsh_tavern_store_free(svc->store);
    json_decref(svc->current);
    json_decref(svc->log);
    json_decref(svc->maint);
    json_decref(svc->gen_types);
    pthread_mutex_destroy(&svc->mu);
    free(svc);
}

void cdsh_tavern_service_set_helper(cdsh_tavern_service *svc, cdsh_tavern_helper_fn fn, void *ud)
{
    pthread_mutex_lock(&svc->mu);
    svc->helper = fn;
    svc->helper_ud = ud;
    pthread_mutex_unlock(&svc->mu);
}

cdsh_tavern_store *cdsh_tavern_service_store_get(cdsh_tavern_service *svc)
{
    return svc ? svc->store : NULL;
}

/* ---- settings and log -------------------------------------------------------- */

static json_t *settings_defaults(void)
{
    cdsh_tavern_memory_cfg m = cdsh_tavern_memory_cfg_default();
    json_t *d = json_pack("{s:s,s:{s:f,s:f,s:i,s:[],s:f,s:f,s:s},s:{s:i,s:i,s:i,s:i,s:f,s:f,s:i},"
                     "s:b,s:i,s:{s:s,s:i,s:i,s:i,s:i,s:b}}",
                     "locale", "auto", "sampling", "temperature", 1.0, "topP", 1.0, "maxTokens", 0,
                     "stop", "presencePenalty", 0.0, "frequencyPenalty", 0.0, "thinking", "enabled",
                     "memory", "maxEntries", m.max_entries, "maxTokens", m.max_tokens,
                     "retrievalTopK", m.retrieval_top_k, "retrievalTokenBudget", m.retrieval_budget,
                     "halfLifeDays", m.half_life_days, "dedupSimilarity", m.dedup_similarity,
                     "compressBatch", m.compress_batch, "interactiveCards", 1, "triggerLogMax",
                     LOG_MAX_DEFAULT, "authorNote", "text", "", "position", 1, "depth", 4,
                     "interval", 1, "role", 0, "allowWIScan", 0);
    /* The profile's world-info settings, SillyTavern's defaults (the
     * context size comes from the preset; wi_settings.h). */
    cdsh_tavern_wi_settings wi;
    cdsh_tavern_wi_settings_default(&wi);
    json_t *wj = cdsh_tavern_wi_settings_json(&wi);
    json_object_del(wj, "maxContext");
    json_object_set_new(d, "worldInfo", wj);
    return d;
}

json_t *cdsh__tavern_settings_dup(cdsh_tavern_service *svc)
{
    json_t *def = settings_defaults(), *stored = NULL;
    if (cdsh_tavern_store_load(svc->store, SETTINGS_REL, &stored, NULL, NULL) == 0 &&
        json_is_object(stored)) {
        const char *k;
        json_t *v;
        json_object_foreach(stored, k, v) {
            json_t *d = json_object_get(def, k);
            if (json_is_object(d) && json_is_object(v))
                json_object_update_existing(d, v);
            else if (d)
                json_object_set(def, k, v);
        }
    }
    json_decref(stored);
    return def;
}

cdsh_tavern_memory_cfg cdsh__tavern_memory_cfg(const json_t *settings)
{
    cdsh_tavern_memory_cfg c = cdsh_tavern_memory_cfg_default();
    json_t *m = json_object_get(settings, "memory");
    c.max_entries = (int)json_number_value(json_object_get(m, "maxEntries"));
    c.max_tokens = (int)json_number_value(json_object_get(m, "maxTokens"));
    c.retrieval_top_k = (int)json_number_value(json_object_get(m, "retrievalTopK"));
    c.retrieval_budget = (int)json_number_value(json_object_get(m, "retrievalTokenBudget"));
    c.half_life_days = json_number_value(json_object_get(m, "halfLifeDays"));
    c.dedup_similarity = json_number_value(json_object_get(m, "dedupSimilarity"));
    c.compress_batch = (int)json_number_value(json_object_get(m, "compressBatch"));
    return c;
}

void cdsh__tavern_log(cdsh_tavern_service *svc, const char *kind, json_t *detail)
{
    cdsh__tavern_log_bounded(svc, kind, detail, 0);
}

void cdsh__tavern_log_bounded(cdsh_tavern_service *svc, const char *kind, json_t *detail,
                              size_t max)
{
    if (max == 0)
        max = LOG_MAX_DEFAULT;
    if (max < 10)
        max = 10;
    if (!detail)
        detail = json_object();
    char ts[40];
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), ts, sizeof ts);
    if (!json_object_get(detail, "ts"))
        json_object_set_new(detail, "ts", json_string(ts));
    json_object_set_new(detail, "kind", json_string(kind));
    pthread_mutex_lock(&svc->mu);
    json_array_append_new(svc->log, detail);
    while (json_array_size(svc->log) > max)
        json_array_remove(svc->log, 0);
    pthread_mutex_unlock(&svc->mu);
}

/* ---- turns --------------------------------------------------------------------- */

static void open_turn_clear(cdsh__tavern_open_turn *t)
{
    free(t->session);
    free(t->card);
    free(t->story);
    free(t->floor);
    cdsh_tavern_story_free(t->handle);
}

/* Removes the session's entries for which drop(t, arg) holds. Caller holds svc->mu. */
static void drop_turns_locked(cdsh_tavern_service *svc, const char *session_id,
                              bool (*drop)(const cdsh__tavern_open_turn *t, const void *arg),
                              const void *arg)
{
    for (size_t i = 0; i < svc->n_turns;) {
        cdsh__tavern_open_turn *t = &svc->turns[i];
        if (strcmp(t->session, session_id) != 0 || !drop(t, arg)) {
            i++;
            continue;
        }
        open_turn_clear(t);
        svc->turns[i] = svc->turns[--svc->n_turns];
    }
}

/* A new turn of the session supersedes its ended turns and any turn its
 * agent (same scope) never reported the end of. */
static bool superseded(const cdsh__tavern_open_turn *t, const void *scope)
{
    return t->ended || t->scope == scope;
}

static bool ended(const cdsh__tavern_open_turn *t, const void *arg)
{
    (void)arg;
    return t->ended;
}

const char *cdsh__tavern_scope_session(const cdsh_scope *scope)
{
    for (; scope; scope = cdsh_scope_parent(scope))
        if (cdsh_session_id_valid(cdsh_scope_id(scope)))
            return cdsh_scope_id(scope);
    return NULL;
}

int cdsh_tavern_service_turn_begin(cdsh_tavern_service *svc, const cdsh_scope *scope,
                                   const char *session_id, int64_t turn, cdsh_error *err)
{
    if (!svc || !session_id || turn < 1)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "turn_begin: bad arguments");
    json_t *binding = NULL;
    pthread_mutex_lock(&svc->mu);
    json_object_set_new(svc->current, session_id, json_integer(turn));
    drop_turns_locked(svc, session_id, superseded, scope);
    pthread_mutex_unlock(&svc->mu);
    int rc = cdsh_tavern_binding_load(svc->bindings, session_id, &binding, NULL);
    if (rc == CDSH_ENOTFOUND)
        return 0; /* unbound: a plain session, no floor */
    if (rc < 0)
        return cdsh_tavern_binding_load(svc->bindings, session_id, &binding, err);
    cdsh_tavern_story *story = NULL;
    if ((rc = cdsh_tavern_binding_open_story(svc->bindings, session_id, &story, err)) == 0)
        rc = cdsh_tavern_story_floor_begin(story, session_id, turn, err);
    if (rc == 0) {
        cdsh__tavern_open_turn t = {
            .scope = scope,
            .session = strdup(session_id),
            .card = strdup(json_string_value(json_object_get(binding, "cardId"))),
            .story = strdup(json_string_value(json_object_get(binding, "storyId"))),
            .floor = cdsh_tavern_floor_name_dup(session_id, turn),
            .turn = turn,
            .handle = story,
        };
        story = NULL;
        pthread_mutex_lock(&svc->mu);
        cdsh__tavern_open_turn *nt = realloc(svc->turns, (svc->n_turns + 1) * sizeof *nt);
        if (nt && t.session && t.card && t.story && t.floor) {
            svc->turns = nt;
            svc->turns[svc->n_turns++] = t;
        } else {
            svc->turns = nt ? nt : svc->turns;
            open_turn_clear(&t);
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        }
        pthread_mutex_unlock(&svc->mu);
    }
    cdsh_tavern_story_free(story);
    json_decref(binding);
    return rc;
}

int cdsh_tavern_service_turn_end(cdsh_tavern_service *svc, const char *session_id, int64_t turn,
                                 cdsh_error *err)
{
    if (!svc || !session_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "turn_end: bad arguments");
    cdsh_tavern_story *story = NULL;
    char *floor = NULL;
    pthread_mutex_lock(&svc->mu);
    for (size_t i = 0; i < svc->n_turns; i++) {
        cdsh__tavern_open_turn *t = &svc->turns[i];
        if (t->ended || strcmp(t->session, session_id) != 0 || t->turn != turn)
            continue;
        /* Kept, ended, for the maintenance that follows the turn (service_idle). */
        t->ended = true;
        story = cdsh__tavern_story_ref(t->handle);
        floor = strdup(t->floor);
        break;
    }
    pthread_mutex_unlock(&svc->mu);
    if (!story)
        return 0;
    /* Commit exactly the floor opened at turn start, even if the binding changed. */
    int rc = floor ? cdsh_tavern_story_floor_commit(story, floor, err)
                   : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    cdsh_tavern_story_free(story);
    free(floor);
    return rc;
}

int cdsh__tavern_session_story(cdsh_tavern_service *svc, const char *session_id,
                               cdsh_tavern_story **out, cdsh_error *err)
{
    *out = NULL;
    cdsh_tavern_story *h = NULL;
    char *story_id = NULL;
    pthread_mutex_lock(&svc->mu);
    /* the session's open turn, else its ended one; the newest turn first */
    const cdsh__tavern_open_turn *best = NULL;
    for (size_t i = 0; i < svc->n_turns; i++) {
        const cdsh__tavern_open_turn *t = &svc->turns[i];
        if (strcmp(t->session, session_id) == 0 &&
            (!best || (best->ended && !t->ended) ||
             (best->ended == t->ended && t->turn > best->turn)))
            best = t;
    }
    if (best) {
        h = cdsh__tavern_story_ref(best->handle);
        story_id = strdup(best->story);
    }
    pthread_mutex_unlock(&svc->mu);
    json_t *b = NULL;
    bool same = h && story_id &&
                cdsh_tavern_binding_load(svc->bindings, session_id, &b, NULL) == 0 &&
                strcmp(str_or_empty(b, "storyId"), story_id) == 0;
    json_decref(b);
    free(story_id);
    if (same) {
        *out = h;
        return 0;
    }
    cdsh_tavern_story_free(h);
    return cdsh_tavern_binding_open_story(svc->bindings, session_id, out, err);
}

/* ---- helpers for methods ------------------------------------------------------ */

static const char *s_get(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static int bad(cdsh_error *err, const char *fmt, const char *what)
{
    return cdsh_error_set(err, CDSH_EINVAL, "bad-request", fmt, what);
}

static const char *need_str(const json_t *p, const char *k, cdsh_error *err, int *rc)
{
    const char *v = s_get(p, k);
    if (!v || !*v)
        *rc = bad(err, "field \"%s\" is required and must be a non-empty string", k);
    return v;
}

/* Maps module codes onto the kebab-case RPC result codes. */
static int kebab(int rc, cdsh_error *err)
{
    if (rc >= 0 || !err)
        return rc;
    static const char *const map[][2] = {
        {"CARD_NOT_FOUND", "not-found"},
        {"NOT_FOUND", "not-found"},
        {"NOT_BOUND", "not-bound"},
        {"STORY_NOT_OWNED", "story-not-owned"},
        {"REVISION_CONFLICT", "revision-conflict"},
        {"INVALID_ARGS", "bad-request"},
        {"WAL_CORRUPT", "wal-corrupt"},
        {"FLOOR_SUCCESSOR", "floor-successor"},
        {"BOOK_CHOICE_REQUIRED", "book-choice-required"},
        {"SESSION_BOUND", "session-bound"},
        {"DB_ERROR", "storage-error"},
        {"NO_SESSION", "session-not-found"},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(err->code, map[i][0]) == 0) {
            snprintf(err->code, sizeof err->code, "%s", map[i][1]);
            return rc;
        }
    /* other module codes (CARD_BAD_JSON, ...) become kebab-case as they are */
    for (char *c = err->code; *c; c++)
        *c = *c == '_' ? '-' : (char)((*c >= 'A' && *c <= 'Z') ? *c + 32 : *c);
    return rc;
}

static int open_story(cdsh_tavern_service *svc, const json_t *p, cdsh_tavern_story **s,
                      cdsh_error *err)
{
    int rc = 0;
    const char *sid = need_str(p, "sessionId", err, &rc);
    if (rc < 0)
        return rc;
    return kebab(cdsh_tavern_binding_open_story(svc->bindings, sid, s, err), err);
}

static bool archived(cdsh_tavern_service *svc, const char *card)
{
    char *rel = NULL;
    json_t *v = NULL;
    bool a = asprintf(&rel, "characters/%s/archive.json", card) > 0 &&
             cdsh_tavern_store_load(svc->store, rel, &v, NULL, NULL) == 0 && json_is_true(v);
    json_decref(v);
    free(rel);
    return a;
}

static int set_archived(cdsh_tavern_service *svc, const char *card, bool on, cdsh_error *err)
{
    json_t *rec = NULL;
    int rc = cdsh_tavern_store_card_load(svc->store, card, &rec, NULL, err);
    json_decref(rec);
    if (rc < 0)
        return rc;
    char *rel = NULL;
    if (asprintf(&rel, "characters/%s/archive.json", card) < 0)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    rc = cdsh_tavern_store_put(svc->store, rel, "archive", on ? json_true() : json_false(), NULL,
                               NULL, err);
    free(rel);
    return rc;
}

static int decode_b64_field(const json_t *p, const char *k, uint8_t **bytes, size_t *len,
                            cdsh_error *err)
{
    const char *t = s_get(p, k);
    if (!t)
        return bad(err, "field \"%s\" (base64) is required", k);
    int rc = cdsh_base64_decode(t, strlen(t), bytes, len, err);
    return rc < 0 ? bad(err, "field \"%s\" is not valid base64", k) : 0;
}

static json_t *greetings(const json_t *record)
{
    json_t *data = json_object_get(record, "data");
    json_t *out = json_array();
    json_array_append_new(out,
                          json_string(s_get(data, "first_mes") ? s_get(data, "first_mes") : ""));
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(data, "alternate_greetings"), i, g)
        if (json_is_string(g))
            json_array_append(out, g);
    return out;
}

/* ---- branches on host sessions ------------------------------------------------- */

typedef struct turn_info {
    int64_t start_seq, end_seq, last_reply_seq, last_turn;
    char *user_text, *reply_text; /* the turn's first user line and last reply */
} turn_info;

static void turn_info_deinit(turn_info *ti)
{
    free(ti->user_text);
    free(ti->reply_text);
}

static int find_turn(cdsh_tavern_service *svc, const char *session, int64_t turn, turn_info *ti,
                     cdsh_error *err)
{
    memset(ti, 0, sizeof *ti);
    int64_t after = 0;
    bool more = true;
    while (more) {
        json_t *ev = cdsh_session_store_events(svc->sessions, session, after, 10000, &more, err);
        if (!ev)
            return kebab(err ? err->rc : CDSH_EIO, err);
        size_t i;
        json_t *e;
        json_array_foreach(ev, i, e) {
            int64_t seq = json_integer_value(json_object_get(e, "seq"));
            int64_t t = json_integer_value(json_object_get(e, "turn"));
            const char *type = s_get(e, "type");
            after = seq;
            if (strcmp(type, "turn/end") == 0 && t > ti->last_turn)
                ti->last_turn = t;
            if (t != turn)
                continue;
            if (strcmp(type, "turn/start") == 0)
                ti->start_seq = seq;
            else if (strcmp(type, "turn/end") == 0)
                ti->end_seq = seq;
            else if (strcmp(type, "assistant/message") == 0) {
                const char *reply = s_get(json_object_get(e, "payload"), "text");
                ti->last_reply_seq = seq;
                free(ti->reply_text);
                ti->reply_text = strdup(reply ? reply : "");
            } else if (strcmp(type, "user/message") == 0 && !ti->user_text)
                ti->user_text = strdup(s_get(json_object_get(e, "payload"), "text")
                                           ? s_get(json_object_get(e, "payload"), "text")
                                           : "");
        }
        json_decref(ev);
    }
    return 0;
}

typedef struct fork_ud {
    cdsh_tavern_service *svc;
    const char *source;
    int64_t upto;
    const char *title;
    int64_t edit_turn;
    const char *edit_text, *edit_user; /* editAssistantMessage: the turn is re-logged */
} fork_ud;

/* Appends turn `turn` as user text + the edited reply (tool calls of the
 * original turn are not carried over; documented). */
static int relog_turn(fork_ud *f, const char *child, cdsh_error *err)
{
    json_t *start = json_object(), *user = json_pack("{s:s}", "text", f->edit_user);
    json_t *msg = json_pack("{s:s,s:s}", "text", f->edit_text, "finishReason", "stop");
    json_t *end = json_pack("{s:s}", "reason", "done");
    int rc = cdsh_session_store_append(f->svc->sessions, child, "turn/start", f->edit_turn, 0,
                                       start, NULL, err);
    if (rc == 0)
        rc = cdsh_session_store_append(f->svc->sessions, child, "user/message", f->edit_turn, 0,
                                       user, NULL, err);
    if (rc == 0)
        rc = cdsh_session_store_append(f->svc->sessions, child, "assistant/message", f->edit_turn,
                                       1, msg, NULL, err);
    if (rc == 0)
        rc = cdsh_session_store_append(f->svc->sessions, child, "turn/end", f->edit_turn, 0, end,
                                       NULL, err);
    json_decref(start);
    json_decref(user);
    json_decref(msg);
    json_decref(end);
    return rc;
}

static int fork_child(void *ud, char **child, cdsh_error *err)
{
    fork_ud *f = ud;
    int rc;
    if (f->upto < 1) { /* nothing to inherit: a fresh session with the parent's route */
        json_t *src = cdsh_session_store_info_dup(f->svc->sessions, f->source, err);
        if (!src)
            return err ? err->rc : CDSH_EIO;
        cdsh_session_spec spec = {f->title,
                                  s_get(src, "provider"),
                                  s_get(src, "model"),
                                  s_get(src, "baseUrl"),
                                  s_get(src, "agent"),
                                  NULL};
        rc = cdsh_session_store_create(f->svc->sessions, &spec, child, err);
        json_decref(src);
    } else {
        rc = cdsh_session_store_fork(f->svc->sessions, f->source, f->upto, f->title, child, err);
    }
    if (rc == 0 && f->edit_text && (rc = relog_turn(f, *child, err)) < 0) {
        cdsh_session_store_delete(f->svc->sessions, *child, NULL);
        free(*child);
        *child = NULL;
    }
    return rc;
}

static void discard_child(void *ud, const char *child)
{
    fork_ud *f = ud;
    cdsh_session_store_delete(f->svc->sessions, child, NULL);
}

/* The closed turn a floor method names ({sessionId, turn?}; default: the
 * last closed turn): *ti filled for it, *binding owned. On failure nothing
 * is left to release. */
static int closed_turn(cdsh_tavern_service *svc, const json_t *p, const char *what,
                       const char **sid, json_t **binding, int64_t *turn, turn_info *ti,
                       cdsh_error *err)
{
    int rc = 0;
    *binding = NULL;
    memset(ti, 0, sizeof *ti);
    *sid = need_str(p, "sessionId", err, &rc);
    if (rc < 0)
        return rc;
    if (!svc->sessions)
        return cdsh_error_set(err, CDSH_EUNSUPPORTED, "sessions-unavailable",
                              "%s need the host session store", what);
    json_t *jt = json_object_get(p, "turn");
    if (jt && (!json_is_integer(jt) || json_integer_value(jt) < 1))
        return bad(err, "field \"%s\" must be an integer >= 1", "turn");
    if ((rc = kebab(cdsh_tavern_binding_load(svc->bindings, *sid, binding, err), err)) < 0)
        return rc;
    if ((rc = find_turn(svc, *sid, 0, ti, err)) == 0) {
        *turn = jt ? json_integer_value(jt) : ti->last_turn;
        turn_info_deinit(ti);
        if (*turn < 1 || (rc = find_turn(svc, *sid, *turn, ti, err)) < 0 || !ti->end_seq)
            rc = rc < 0 ? rc
                        : cdsh_error_set(err, CDSH_ENOTFOUND, "not-found",
                                         "turn %lld is not a closed turn of this session",
                                         (long long)*turn);
    }
    if (rc < 0) {
        turn_info_deinit(ti);
        json_decref(*binding);
        *binding = NULL;
    }
    return rc;
}

static int branch_op(cdsh_tavern_service *svc, const char *op, const json_t *p, json_t **value,
                     cdsh_error *err)
{
    const char *sid = NULL, *text = s_get(p, "text");
    bool needs_text = strcmp(op, "editUserMessage") == 0 || strcmp(op, "editAssistantMessage") == 0;
    if (needs_text && (!text || !*text))
        return bad(err, "field \"%s\" is required", "text");
    json_t *binding = NULL;
    int64_t turn = 0;
    turn_info ti;
    int rc = closed_turn(svc, p, "branch operations", &sid, &binding, &turn, &ti, err);
    if (rc < 0)
        return rc;
    char title[256], character[160];
    json_t *card = NULL;
    cdsh_tavern_store_card_load(svc->store, s_get(binding, "cardId"), &card, NULL, NULL);
    snprintf(character, sizeof character, "%s", s_get(card, "name") ? s_get(card, "name") : "tavern");
    snprintf(title, sizeof title, "%s · %s", character, op);
    json_decref(card);
    fork_ud f = {svc, sid, 0, title, 0, NULL, NULL};
    int64_t undo_from, through;
    const char *resend = NULL;
    if (strcmp(op, "rollbackToFloor") == 0) {
        f.upto = ti.end_seq;
        undo_from = turn + 1;
        through = turn;
    } else if (strcmp(op, "editAssistantMessage") == 0) {
        if (!ti.last_reply_seq) {
            turn_info_deinit(&ti);
            json_decref(binding);
            return cdsh_error_set(err, CDSH_ENOTFOUND, "not-found", "turn has no reply to edit");
        }
        f.upto = ti.start_seq - 1;
        f.edit_turn = turn;
        f.edit_text = text;
        f.edit_user = ti.user_text ? ti.user_text : "";
        undo_from = turn; /* the floor's derived facts go; no re-extraction */
        through = turn;
    } else { /* regenerate / editUserMessage */
        f.upto = ti.start_seq - 1;
        undo_from = turn;
        through = turn - 1;
        resend = strcmp(op, "editUserMessage") == 0 ? text : ti.user_text;
    }
    cdsh_tavern_branch_host host = {fork_child, discard_child, &f};
    json_t *child = NULL;
    rc = kebab(
        cdsh_tavern_branch(svc->bindings, sid, undo_from, through, &host, NULL, NULL, &child, err),
        err);
    if (rc == 0) {
        /* a readable name: "<character> — turn N, variant K" (K counts the
         * parent as variant 1 of the turn it branched at); the fork's
         * provisional title stays if the siblings cannot be read */
        const char *child_id = json_string_value(json_object_get(child, "sessionId"));
        json_t *sib = NULL;
        if (child_id && cdsh_tavern_binding_siblings(svc->bindings, child_id, &sib, NULL) == 0 &&
            json_is_object(sib)) {
            char named[256];
            snprintf(named, sizeof named, "%s — turn %lld, variant %lld", character,
                     (long long)json_integer_value(json_object_get(sib, "turn")),
                     (long long)json_integer_value(json_object_get(sib, "index")));
            if (cdsh_session_store_rename(svc->sessions, child_id, named, NULL) == 0)
                snprintf(title, sizeof title, "%s", named);
        }
        json_decref(sib);
        *value = json_pack("{s:O,s:s,s:I}", "childSessionId", json_object_get(child, "sessionId"),
                           "title", title, "turn", (json_int_t)turn);
        if (resend)
            json_object_set_new(*value, "resend",
                                json_pack("{s:s,s:I}", "text", resend, "turn", (json_int_t)turn));
        cdsh__tavern_log(svc, "branch",
                         json_pack("{s:s,s:s,s:O,s:I}", "op", op, "sessionId", sid, "child",
                                   json_object_get(child, "sessionId"), "turn", (json_int_t)turn));
    }
    json_decref(child);
    json_decref(binding);
    turn_info_deinit(&ti);
    return rc;
}

/* getFloorUserMessage / getFloorAssistantMessage {sessionId, turn?}: the
 * texts the edit dialogs prefill (default: the last closed turn). */
static int floor_text(cdsh_tavern_service *svc, const char *op, const json_t *p, json_t **value,
                      cdsh_error *err)
{
    const char *sid = NULL;
    json_t *b = NULL;
    int64_t turn = 0;
    turn_info ti;
    int rc = closed_turn(svc, p, "floor messages", &sid, &b, &turn, &ti, err);
    if (rc < 0)
        return rc;
    bool user = strcmp(op, "getFloorUserMessage") == 0;
    const char *text = user ? ti.user_text : ti.reply_text;
    if (!text)
        rc = cdsh_error_set(err, CDSH_ENOTFOUND, "not-found", "turn %lld has no %s",
                            (long long)turn, user ? "user message" : "reply");
    else
        *value = json_pack("{s:I,s:s}", "turn", (json_int_t)turn, "text", text);
    turn_info_deinit(&ti);
    json_decref(b);
    return rc;
}

/* ---- methods: one handler per row of the operations table (ops.c) ---------------- */

int cdsh__tavern_kebab(int rc, cdsh_error *err)
{
    return kebab(rc, err);
}

/* characters */

static int list_cards(cdsh_tavern_service *svc, bool want, json_t **value, cdsh_error *err)
{
    json_t *all = NULL;
    int rc = cdsh_tavern_store_list_cards(svc->store, &all, err);
    if (rc < 0)
        return kebab(rc, err);
    json_t *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(all, i, c)
        if (archived(svc, s_get(c, "cardId")) == want)
            json_array_append(out, c);
    json_decref(all);
    *value = out;
    return 0;
}

CDSH__TAVERN_OP(cdsh__tavern_op_listCharacters)
{
    (void)call;
    return list_cards(ud, false, value, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_listArchivedCharacters)
{
    (void)call;
    return list_cards(ud, true, value, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_inspectCharacter)
{
    (void)ud;
    uint8_t *bytes = NULL;
    size_t len = 0;
    int rc = decode_b64_field(call->args, "fileBase64", &bytes, &len, err);
    if (rc < 0)
        return rc;
    cdsh_tavern_card *card = NULL;
    rc = kebab(cdsh_tavern_card_parse(bytes, len, &card, err), err);
    if (rc == 0)
        *value = cdsh_tavern_card_inspect_dup(card);
    cdsh_tavern_card_free(card);
    free(bytes);
    return rc;
}

CDSH__TAVERN_OP(cdsh__tavern_op_importCharacter)
{
    cdsh_tavern_service *svc = ud;
    const json_t *p = call->args;
    uint8_t *bytes = NULL;
    size_t len = 0;
    int rc = decode_b64_field(p, "fileBase64", &bytes, &len, err);
    if (rc < 0)
        return rc;
    const char *choice = s_get(p, "book");
    cdsh_tavern_book_choice bc = !choice                          ? CDSH_TAVERN_BOOK_ASK
                                 : strcmp(choice, "import") == 0  ? CDSH_TAVERN_BOOK_IMPORT
                                 : strcmp(choice, "discard") == 0 ? CDSH_TAVERN_BOOK_DISCARD
                                                                  : (cdsh_tavern_book_choice)-1;
    rc = (int)bc < 0
             ? bad(err, "field \"%s\" must be import or discard", "book")
             : kebab(cdsh_tavern_store_import_card(svc->store, bytes, len, bc, value, err), err);
    free(bytes);
    return rc;
}

CDSH__TAVERN_OP(cdsh__tavern_op_getCharacterDetail)
{
    cdsh_tavern_service *svc = ud;
    int rc = 0;
    const char *card = need_str(call->args, "cardId", err, &rc);
    if (rc < 0)
        return rc;
    json_t *rec = NULL;
    char *tag = NULL;
    if ((rc = kebab(cdsh_tavern_store_card_load(svc->store, card, &rec, &tag, err), err)) < 0)
        return rc;
    *value = json_pack("{s:o,s:s,s:b,s:o}", "record", rec, "revision", tag, "archived",
                       archived(svc, card), "greetings", greetings(rec));
    free(tag);
    return 0;
}

CDSH__TAVERN_OP(cdsh__tavern_op_saveCharacter)
{
    cdsh_tavern_service *svc = ud;
    const json_t *p = call->args;
    int rc = 0;
    const char *card = need_str(p, "cardId", err, &rc);
    if (rc < 0)
        return rc;
    json_t *patch = json_object_get(p, "patch");
    const char *rev = s_get(p, "expectedRevision");
    if (!json_is_object(patch))
        return bad(err, "field \"%s\" must be an object of card fields", "patch");
    const char *k;
    json_t *v;
    json_object_foreach(patch, k, v) {
        if (!cdsh_tavern_card_field_editable(k, v))
            return bad(err, "field \"%s\" cannot be saved", k);
    }
    json_t *rec = NULL;
    char *tag = NULL, *rel = NULL, *new_tag = NULL;
    if ((rc = kebab(cdsh_tavern_store_card_load(svc->store, card, &rec, &tag, err), err)) < 0)
        return rc;
    json_object_foreach(patch, k, v) {
        json_object_set(json_object_get(rec, "data"), k, v);
        if (strcmp(k, "name") == 0)
            json_object_set(rec, "name", v);
    }
    if (asprintf(&rel, "characters/%s/card.json", card) < 0)
        rel = NULL;
    rc = kebab(cdsh_tavern_store_put(svc->store, rel, "card", rec, rev ? rev : tag, &new_tag, err),
               err);
    if (rc == 0)
        *value = json_pack("{s:s,s:s}", "cardId", card, "revision", new_tag);
    free(rel);
    free(tag);
    free(new_tag);
    json_decref(rec);
    return rc;
}

static int archive_card(cdsh_tavern_service *svc, const json_t *p, bool on, json_t **value,
                        cdsh_error *err)
{
    int rc = 0;
    const char *card = need_str(p, "cardId", err, &rc);
    if (rc < 0)
        return rc;
    rc = kebab(set_archived(svc, card, on, err), err);
    if (rc == 0)
        *value = json_pack("{s:s,s:b}", "cardId", card, "archived", archived(svc, card));
    return rc;
}

CDSH__TAVERN_OP(cdsh__tavern_op_archiveCharacter)
{
    return archive_card(ud, call->args, true, value, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_restoreCharacter)
{
    return archive_card(ud, call->args, false, value, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_deleteCharacter)
{
    cdsh_tavern_service *svc = ud;
    int rc = 0;
    const char *card = need_str(call->args, "cardId", err, &rc);
    if (rc < 0)
        return rc;
    json_t *refs = NULL;
    if (!archived(svc, card))
        return cdsh_error_set(err, CDSH_EPERM, "not-archived",
                              "archive the character before deleting it");
    if ((rc = kebab(cdsh_tavern_binding_list(svc->bindings, card, &refs, err), err)) < 0)
        return rc;
    size_t n = json_array_size(refs);
    json_decref(refs);
    if (n > 0)
        return cdsh_error_set(err, CDSH_EBUSY, "card-in-use",
                              "%zu session(s) are bound to this character", n);
    rc = kebab(cdsh_tavern_store_delete_card(svc->store, card, err), err);
    if (rc == 0)
        *value = json_pack("{s:s,s:b}", "cardId", card, "deleted", 1);
    return rc;
}

CDSH__TAVERN_OP(cdsh__tavern_op_exportCharacter)
{
    cdsh_tavern_service *svc = ud;
    int rc = 0;
    const char *card = need_str(call->args, "cardId", err, &rc);
    if (rc < 0)
        return rc;
    uint8_t *png = NULL, *js = NULL;
    size_t png_len = 0, js_len = 0;
    json_t *rec = NULL;
    rc = kebab(cdsh_tavern_store_export_card(svc->store, card, true, &png, &png_len, err), err);
    if (rc == 0)
        rc = kebab(cdsh_tavern_store_export_card(svc->store, card, false, &js, &js_len, err), err);
    if (rc == 0)
        rc = kebab(cdsh_tavern_store_card_load(svc->store, card, &rec, NULL, err), err);
    if (rc == 0) {
        char *b64 = cdsh_base64_encode_dup(png, png_len);
        *value = json_pack("{s:s#,s:s,s:O}", "json", (const char *)js, (int)js_len, "pngBase64",
                           b64 ? b64 : "", "name", json_object_get(rec, "name"));
        free(b64);
    }
    free(png);
    free(js);
    json_decref(rec);
    return rc;
}

/* library assets: list / get / import for each kind */

static int asset_list(cdsh_tavern_service *svc, cdsh_tavern_kind kind, json_t **value,
                      cdsh_error *err)
{
    return kebab(cdsh_tavern_store_list_assets(svc->store, kind, value, err), err);
}

static int asset_load(cdsh_tavern_service *svc, cdsh_tavern_kind kind, const json_t *p,
                      json_t **value, cdsh_error *err)
{
    int rc = 0;
    const char *id = need_str(p, "id", err, &rc);
    if (rc < 0)
        return rc;
    return kebab(cdsh_tavern_store_asset_load(svc->store, kind, id, value, err), err);
}

static int asset_import(cdsh_tavern_service *svc, cdsh_tavern_kind kind, const json_t *p,
                        json_t **value, cdsh_error *err)
{
    int rc = 0;
    const char *text = need_str(p, "json", err, &rc);
    if (rc < 0)
        return rc;
    return kebab(cdsh_tavern_store_import_asset(svc->store, kind, text, strlen(text),
                                                s_get(p, "name"), value, err),
                 err);
}

#define ASSET_OPS(Kind, KIND)                                                                      \
    CDSH__TAVERN_OP(cdsh__tavern_op_list##Kind##s)                                                 \
    {                                                                                              \
        (void)call;                                                                                \
        return asset_list(ud, KIND, value, err);                                                   \
    }                                                                                              \
    CDSH__TAVERN_OP(cdsh__tavern_op_get##Kind)                                                     \
    {                                                                                              \
        return asset_load(ud, KIND, call->args, value, err);                                       \
    }                                                                                              \
    CDSH__TAVERN_OP(cdsh__tavern_op_import##Kind)                                                  \
    {                                                                                              \
        return asset_import(ud, KIND, call->args, value, err);                                     \
    }

ASSET_OPS(Lorebook, CDSH_TAVERN_LOREBOOK)
ASSET_OPS(Preset, CDSH_TAVERN_PRESET)
ASSET_OPS(Persona, CDSH_TAVERN_PERSONA)

/* The current greeting as the sandboxed frame's document (the web server's
 * GET /frame/tavern/frameGreeting serves it under its sandbox CSP). */
static int frame_greeting(cdsh_tavern_service *svc, const char *text, json_t **value,
                          cdsh_error *err)
{
    json_t *settings = cdsh__tavern_settings_dup(svc);
    bool on = json_is_true(json_object_get(settings, "interactiveCards"));
    json_decref(settings);
    if (!on)
        return cdsh_error_set(err, CDSH_EPERM, "interactive-cards-off",
                              "interactive cards are turned off in the tavern settings");
    char *doc = cdsh_tavern_card_document_dup(text ? text : "");
    if (!doc)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "not-found",
                              "the current greeting is not an interactive card document");
    *value = json_pack("{s:s}", "html", doc);
    free(doc);
    return *value ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "storage-error", "out of memory");
}

/* session bindings */

CDSH__TAVERN_OP(cdsh__tavern_op_setSessionBinding)
{
    cdsh_tavern_service *svc = ud;
    const json_t *p = call->args;
    int rc = 0;
    need_str(p, "sessionId", err, &rc);
    if (rc < 0)
        return rc;
    if (!need_str(p, "cardId", err, &rc))
        return rc;
    rc = cdsh_tavern_binding_set(svc->bindings, p, value, err);
    /* The greeting opens the session (seed 001: the story opens with it). */
    if (rc == 0 && (rc = cdsh__tavern_write_opening(svc, s_get(p, "sessionId"), err)) < 0) {
        json_decref(*value);
        *value = NULL;
    }
    return kebab(rc, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_clearSessionBinding)
{
    cdsh_tavern_service *svc = ud;
    int rc = 0;
    const char *sid = need_str(call->args, "sessionId", err, &rc);
    if (rc < 0)
        return rc;
    rc = kebab(cdsh_tavern_binding_clear(svc->bindings, sid, err), err);
    if (rc == 0)
        *value = json_pack("{s:s,s:b}", "sessionId", sid, "cleared", 1);
    return rc;
}

/* What the binding readers share: the binding, whether the conversation
 * started, the card and its greetings, the chosen greeting. */
typedef struct binding_view {
    const char *sid;
    json_t *b, *rec, *greets;
    bool started;
    json_int_t idx;
} binding_view;

static void binding_view_deinit(binding_view *v)
{
    json_decref(v->greets);
    json_decref(v->rec);
    json_decref(v->b);
}

/* The binding_load failure is returned as is (CDSH_ENOTFOUND: unbound). */
static int binding_view_open(cdsh_tavern_service *svc, const json_t *p, binding_view *v,
                             cdsh_error *err)
{
    int rc = 0;
    memset(v, 0, sizeof *v);
    v->sid = need_str(p, "sessionId", err, &rc);
    if (rc < 0)
        return rc;
    if ((rc = cdsh_tavern_binding_load(svc->bindings, v->sid, &v->b, err)) < 0)
        return rc;
    if (svc->sessions) {
        json_t *s = cdsh_session_store_info_dup(svc->sessions, v->sid, NULL);
        v->started = s && json_integer_value(json_object_get(s, "lastTurn")) > 0;
        json_decref(s);
    }
    cdsh_tavern_store_card_load(svc->store, s_get(v->b, "cardId"), &v->rec, NULL, NULL);
    v->greets = greetings(v->rec);
    v->idx = json_integer_value(json_object_get(v->b, "greetingIndex"));
    return 0;
}

CDSH__TAVERN_OP(cdsh__tavern_op_getSessionBinding)
{
    binding_view v;
    int rc = binding_view_open(ud, call->args, &v, err);
    if (rc == CDSH_ENOTFOUND) {
        *value =
            json_pack("{s:n,s:b,s:b}", "binding", "canSwipeGreeting", 0, "conversationStarted", 0);
        return 0;
    }
    if (rc == 0)
        *value = json_pack(
            "{s:O,s:O,s:b,s:b}", "binding", v.b, "cardName",
            json_object_get(v.rec, "name") ? json_object_get(v.rec, "name") : json_null(),
            "canSwipeGreeting", !v.started && json_array_size(v.greets) > 1, "conversationStarted",
            v.started);
    binding_view_deinit(&v);
    return kebab(rc, err);
}

static json_t *greeting_swipe(const binding_view *v)
{
    return json_pack("{s:I,s:I,s:O}", "index", v->idx, "total",
                     (json_int_t)json_array_size(v->greets), "text",
                     json_array_get(v->greets, (size_t)v->idx)
                         ? json_array_get(v->greets, (size_t)v->idx)
                         : json_string(""));
}

CDSH__TAVERN_OP(cdsh__tavern_op_getGreetingSwipe)
{
    binding_view v;
    int rc = binding_view_open(ud, call->args, &v, err);
    if (rc == 0)
        *value = greeting_swipe(&v);
    binding_view_deinit(&v);
    return kebab(rc, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_swipeGreeting)
{
    cdsh_tavern_service *svc = ud;
    binding_view v;
    int rc = binding_view_open(svc, call->args, &v, err);
    if (rc == 0) {
        json_t *ji = json_object_get(call->args, "index");
        if (!json_is_integer(ji) || json_integer_value(ji) < 0 ||
            (size_t)json_integer_value(ji) >= json_array_size(v.greets))
            rc = bad(err, "field \"%s\" must be a greeting index", "index");
        else if (v.started)
            rc = cdsh_error_set(err, CDSH_EPERM, "conversation-started",
                                "the conversation has started; branch instead");
        else {
            json_t *spec = json_pack("{s:s,s:O,s:O}", "sessionId", v.sid, "cardId",
                                     json_object_get(v.b, "cardId"), "greetingIndex", ji);
            json_t *nb = NULL;
            rc = kebab(cdsh_tavern_binding_set(svc->bindings, spec, &nb, err), err);
            v.idx = json_integer_value(ji);
            if (rc == 0)
                rc = kebab(cdsh__tavern_write_opening(svc, v.sid, err), err);
            json_decref(spec);
            json_decref(nb);
        }
    }
    if (rc == 0)
        *value = greeting_swipe(&v);
    binding_view_deinit(&v);
    return kebab(rc, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_frameGreeting)
{
    binding_view v;
    int rc = binding_view_open(ud, call->args, &v, err);
    if (rc == 0)
        rc = frame_greeting(ud, json_string_value(json_array_get(v.greets, (size_t)v.idx)), value,
                            err);
    binding_view_deinit(&v);
    return kebab(rc, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_getFloorSiblings)
{
    cdsh_tavern_service *svc = ud;
    binding_view v;
    int rc = binding_view_open(svc, call->args, &v, err);
    if (rc == 0) {
        json_t *sib = NULL;
        rc = kebab(cdsh_tavern_binding_siblings(svc->bindings, v.sid, &sib, err), err);
        if (rc == 0)
            *value = json_pack("{s:o}", "swipe", sib);
    }
    binding_view_deinit(&v);
    return kebab(rc, err);
}

/* the bound story's records: every method opens the story, runs, closes */

typedef int (*story_fn)(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                        json_t **value, cdsh_error *err);

static int with_story(void *ud, const cdsh_op_call *call, story_fn fn, json_t **value,
                      cdsh_error *err)
{
    cdsh_tavern_service *svc = ud;
    cdsh_tavern_story *s = NULL;
    int rc = open_story(svc, call->args, &s, err);
    if (rc < 0)
        return rc;
    rc = fn(svc, s, call->args, value, err);
    cdsh_tavern_story_free(s);
    return kebab(rc, err);
}

#define STORY_OP(name, fn)                                                                         \
    CDSH__TAVERN_OP(cdsh__tavern_op_##name)                                                        \
    {                                                                                              \
        return with_story(ud, call, fn, value, err);                                               \
    }

static int get_memories(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                        json_t **value, cdsh_error *err)
{
    (void)svc, (void)p;
    json_t *a = NULL, *r = NULL;
    int rc = cdsh_tavern_memory_list(s, false, &a, err);
    if (rc == 0 && (rc = cdsh_tavern_memory_list(s, true, &r, err)) == 0)
        *value = json_pack("{s:o,s:o,s:b}", "active", a, "archived", r, "compressPending",
                           cdsh_tavern_memory_pending(s));
    else
        json_decref(a);
    return rc;
}

static int save_memory(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                       json_t **value, cdsh_error *err)
{
    json_t *settings = cdsh__tavern_settings_dup(svc);
    cdsh_tavern_memory_cfg cfg = cdsh__tavern_memory_cfg(settings);
    json_decref(settings);
    const char *body = s_get(p, "body"), *id = s_get(p, "id");
    json_t *tags = json_object_get(p, "tags"), *keys = json_object_get(p, "keys");
    if (!body || !*body)
        return bad(err, "field \"%s\" is required", "body");
    if (id)
        return cdsh_tavern_memory_update(s, NULL, id, body, tags, keys, false, value, err);
    return cdsh_tavern_memory_write(s, NULL, body, tags, keys, &cfg, false, value, err);
}

static int delete_memory(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                         json_t **value, cdsh_error *err)
{
    (void)svc;
    int rc = 0;
    const char *id = need_str(p, "id", err, &rc);
    if (rc == 0 && (rc = cdsh_tavern_memory_delete(s, NULL, id, err)) == 0)
        *value = json_pack("{s:s,s:b}", "id", id, "deleted", 1);
    return rc;
}

static int compress_memories(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                             json_t **value, cdsh_error *err)
{
    (void)svc, (void)p;
    json_t *v = json_pack("{s:b}", "compress", 1);
    int rc =
        cdsh_tavern_story_put(s, NULL, CDSH_TAVERN_KIND_DOC, CDSH_TAVERN_PENDING_DOC, v, NULL, err);
    json_decref(v);
    if (rc == 0)
        *value = json_pack("{s:b}", "scheduled", 1);
    return rc;
}

static int get_world_deltas(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                            json_t **value, cdsh_error *err)
{
    (void)svc;
    return cdsh_tavern_world_list(s, json_is_true(json_object_get(p, "all")), 0, value, err);
}

static int add_world_delta(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                           json_t **value, cdsh_error *err)
{
    (void)svc;
    json_t *o = json_object_get(p, "order");
    if (o && !json_is_number(o))
        return bad(err, "field \"%s\" must be a number", "order");
    return cdsh_tavern_world_add(s, NULL, s_get(p, "type"), s_get(p, "content"), s_get(p, "ref"),
                                 json_object_get(p, "keys"), o ? json_number_value(o) : -1,
                                 s_get(p, "expiresAt"), "manual", value, err);
}

static int revoke_world_delta(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                              json_t **value, cdsh_error *err)
{
    (void)svc;
    int rc = 0;
    const char *id = need_str(p, "id", err, &rc);
    if (rc == 0 && (rc = cdsh_tavern_world_revoke(s, NULL, id, err)) == 0)
        *value = json_pack("{s:s,s:b}", "id", id, "revoked", 1);
    return rc;
}

#define JOURNAL_DOC "journal.md"
#define CHAT_BOOK_DOC "assets/chat-lorebook.json"

static int get_doc(cdsh_tavern_story *s, const char *key, json_t **value, cdsh_error *err)
{
    json_t *v = NULL;
    int rc = cdsh_tavern_story_load(s, CDSH_TAVERN_KIND_DOC, key, &v, err);
    if (rc == CDSH_ENOTFOUND) {
        rc = 0;
        v = strcmp(key, JOURNAL_DOC) == 0 ? json_string("") : json_pack("{s:{}}", "entries");
    }
    if (rc == 0) {
        char *canon = cdsh_tavern_story_canon_dup(v);
        *value = json_pack("{s:o,s:s}", "value", v, "revision", canon);
        free(canon);
    }
    return rc;
}

static int save_doc(cdsh_tavern_story *s, const json_t *p, bool journal, json_t **value,
                    cdsh_error *err)
{
    json_t *v = json_object_get(p, journal ? "text" : "book");
    const char *expect = s_get(p, "expectedRevision");
    int rc;
    if (journal ? !json_is_string(v) : !json_is_object(json_object_get(v, "entries")))
        rc = bad(err, "field \"%s\" is missing or malformed", journal ? "text" : "book");
    else
        rc = cdsh_tavern_story_put(s, NULL, CDSH_TAVERN_KIND_DOC,
                                   journal ? JOURNAL_DOC : CHAT_BOOK_DOC, v, expect, err);
    if (rc == 0) {
        char *canon = cdsh_tavern_story_canon_dup(v);
        *value = json_pack("{s:b,s:s}", "saved", 1, "revision", canon);
        free(canon);
    }
    return rc;
}

static int get_journal(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                       json_t **value, cdsh_error *err)
{
    (void)svc, (void)p;
    return get_doc(s, JOURNAL_DOC, value, err);
}

static int get_chat_lorebook(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                             json_t **value, cdsh_error *err)
{
    (void)svc, (void)p;
    return get_doc(s, CHAT_BOOK_DOC, value, err);
}

static int save_journal(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                        json_t **value, cdsh_error *err)
{
    (void)svc;
    return save_doc(s, p, true, value, err);
}

static int save_chat_lorebook(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                              json_t **value, cdsh_error *err)
{
    (void)svc;
    return save_doc(s, p, false, value, err);
}

static int list_floors(cdsh_tavern_service *svc, cdsh_tavern_story *s, const json_t *p,
                       json_t **value, cdsh_error *err)
{
    (void)svc, (void)p;
    return cdsh_tavern_story_floors(s, value, err);
}

STORY_OP(listFloors, list_floors)
STORY_OP(getMemories, get_memories)
STORY_OP(saveMemory, save_memory)
STORY_OP(deleteMemory, delete_memory)
STORY_OP(compressMemories, compress_memories)
STORY_OP(getWorldDeltas, get_world_deltas)
STORY_OP(addWorldDelta, add_world_delta)
STORY_OP(revokeWorldDelta, revoke_world_delta)
STORY_OP(getJournal, get_journal)
STORY_OP(saveJournal, save_journal)
STORY_OP(getChatLorebook, get_chat_lorebook)
STORY_OP(saveChatLorebook, save_chat_lorebook)

/* settings, the trigger log, continuation, the prompt preview */

CDSH__TAVERN_OP(cdsh__tavern_op_getSettings)
{
    (void)call, (void)err;
    *value = cdsh__tavern_settings_dup(ud);
    return 0;
}

CDSH__TAVERN_OP(cdsh__tavern_op_updateSettings)
{
    cdsh_tavern_service *svc = ud;
    json_t *patch = json_object_get(call->args, "patch");
    if (!json_is_object(patch))
        return bad(err, "field \"%s\" must be an object", "patch");
    json_t *cur = cdsh__tavern_settings_dup(svc), *def = settings_defaults();
    const char *k;
    json_t *v;
    json_object_foreach(patch, k, v) {
        json_t *d = json_object_get(def, k);
        bool ok = d && (json_is_object(d) ? json_is_object(v)
                                          : json_typeof(d) == json_typeof(v) ||
                                                (json_is_boolean(d) && json_is_boolean(v)));
        if (ok && json_is_object(d)) {
            const char *k2;
            json_t *v2;
            json_object_foreach(v, k2, v2) {
                json_t *d2 = json_object_get(d, k2);
                ok = ok && d2 &&
                     (json_is_number(d2)    ? json_is_number(v2)
                      : json_is_boolean(d2) ? json_is_boolean(v2)
                                            : json_typeof(d2) == json_typeof(v2));
            }
        }
        if (!ok) {
            json_decref(cur);
            json_decref(def);
            return cdsh_error_set(err, CDSH_EINVAL, "settings-rejected",
                                  "setting \"%s\" is unknown or has the wrong type", k);
        }
        if (json_is_object(v))
            json_object_update(json_object_get(cur, k), v);
        else
            json_object_set(cur, k, v);
    }
    json_decref(def);
    cdsh_tavern_wi_settings wi; /* ranges, as a turn reads them */
    cdsh_tavern_wi_settings_default(&wi);
    if (cdsh_tavern_wi_settings_apply(&wi, json_object_get(cur, "worldInfo"), err) < 0) {
        json_decref(cur);
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        return cdsh_error_set(err, CDSH_EINVAL, "settings-rejected", "%s", why);
    }
    int rc = kebab(
        cdsh_tavern_store_put(svc->store, SETTINGS_REL, "settings", cur, NULL, NULL, err), err);
    if (rc == 0)
        *value = cur;
    else
        json_decref(cur);
    return rc;
}

/* Oldest first: by timestamp, then turn. */
static int trigger_cmp(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    const char *tx = json_string_value(json_object_get(x, "ts"));
    const char *ty = json_string_value(json_object_get(y, "ts"));
    int c = strcmp(tx ? tx : "", ty ? ty : "");
    if (c)
        return c;
    json_int_t nx = json_integer_value(json_object_get(x, "turn"));
    json_int_t ny = json_integer_value(json_object_get(y, "turn"));
    return (nx > ny) - (nx < ny);
}

/* The world-info records kept in the session's story (kind "trigger"),
 * only this session's, appended to out. 0 when the session has no story. */
static int stored_triggers(cdsh_tavern_service *svc, const char *sid, json_t *out, cdsh_error *err)
{
    cdsh_tavern_story *story = NULL;
    json_t *list = NULL;
    int rc = cdsh__tavern_session_story(svc, sid, &story, NULL);
    if (rc < 0)
        return 0; /* unbound, or no story yet: nothing stored */
    rc = cdsh_tavern_story_list(story, CDSH__TAVERN_KIND_TRIGGER, &list, err);
    size_t i;
    json_t *row;
    json_array_foreach(list, i, row) {
        json_t *v = json_object_get(row, "value");
        const char *owner = json_string_value(json_object_get(v, "sessionId"));
        if (json_is_object(v) && owner && !strcmp(owner, sid))
            json_array_append(out, v);
    }
    json_decref(list);
    cdsh_tavern_story_free(story);
    return rc;
}

CDSH__TAVERN_OP(cdsh__tavern_op_getTriggerLog)
{
    cdsh_tavern_service *svc = ud;
    /* {sessionId?}: that session's records only (others' are never shown
     * to it): its world-info records as kept with the floors of its story
     * (they survive a restart), and this process's other records; without
     * it, every record of this process (the library's view). */
    json_t *only = json_object_get(call->args, "sessionId");
    if (only && !json_is_string(only))
        return cdsh_error_set(err, CDSH_EINVAL, "bad-request", "sessionId must be a string");
    json_t *out = json_array();
    if (!out)
        return cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    int rc = only ? stored_triggers(svc, json_string_value(only), out, err) : 0;
    if (rc < 0) {
        json_decref(out);
        return rc;
    }
    bool stored = json_array_size(out) > 0;
    pthread_mutex_lock(&svc->mu);
    size_t i;
    json_t *rec;
    json_array_foreach(svc->log, i, rec) {
        const char *owner = json_string_value(json_object_get(rec, "sessionId"));
        const char *kind = json_string_value(json_object_get(rec, "kind"));
        if (only && (!owner || strcmp(owner, json_string_value(only)) != 0))
            continue;
        if (stored && kind && !strcmp(kind, "worldInfo"))
            continue; /* the story's copy is the record */
        json_array_append_new(out, json_deep_copy(rec));
    }
    pthread_mutex_unlock(&svc->mu);
    size_t n = json_array_size(out);
    if (stored && n > 1) {
        json_t **v = malloc(n * sizeof *v);
        if (!v) {
            json_decref(out);
            return cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
        }
        for (i = 0; i < n; i++)
            v[i] = json_incref(json_array_get(out, i));
        qsort(v, n, sizeof *v, trigger_cmp);
        json_array_clear(out);
        for (i = 0; i < n; i++)
            json_array_append_new(out, v[i]);
        free(v);
    }
    *value = out;
    return 0;
}

CDSH__TAVERN_OP(cdsh__tavern_op_continueFloor)
{
    cdsh_tavern_service *svc = ud;
    int rc = 0;
    const char *sid = need_str(call->args, "sessionId", err, &rc);
    if (rc < 0)
        return rc;
    json_t *b = NULL;
    if ((rc = kebab(cdsh_tavern_binding_load(svc->bindings, sid, &b, err), err)) < 0)
        return rc;
    json_decref(b);
    *value = json_pack("{s:s,s:{s:s,s:s}}", "sessionId", sid, "resend", "text", CONTINUE_NOTICE,
                       "source", "plugin");
    cdsh__tavern_gen_type_set(svc, sid, "continue");
    return 0;
}

CDSH__TAVERN_OP(cdsh__tavern_op_previewPrompt)
{
    cdsh_tavern_service *svc = ud;
    const json_t *p = call->args;
    int rc = 0;
    const char *sid = need_str(p, "sessionId", err, &rc);
    if (rc < 0)
        return rc;
    char *turn = NULL;
    json_t *sampling = NULL, *plan = NULL;
    rc = cdsh_tavern_service_turn_context(svc, sid, s_get(p, "text") ? s_get(p, "text") : "", &turn,
                                          err);
    if (rc == 0)
        rc = cdsh_tavern_service_sampling(svc, sid, &sampling, err);
    /* Replay: seed (a floor's recorded one), generationType, worldInfoSettings. */
    const json_t *seed = json_object_get(p, "seed");
    cdsh__tavern_plan_opts opts = {.has_seed = json_is_integer(seed),
                                   .seed = (uint32_t)json_integer_value(seed),
                                   .generation_type = s_get(p, "generationType"),
                                   .wi_settings = json_object_get(p, "worldInfoSettings")};
    if (rc == 0 && seed && (!json_is_integer(seed) || json_integer_value(seed) < 0 ||
                            json_integer_value(seed) > 0xFFFFFFFFll))
        rc = bad(err, "field \"%s\" must be an integer 0..4294967295", "seed");
    if (rc == 0)
        rc = cdsh__tavern_plan_build(svc, sid, NULL, NULL, 0, &opts, &plan, NULL, NULL, err);
    if (rc == 0)
        *value = json_pack("{s:s,s:s,s:s,s:o,s:s,s:O?,s:O?,s:O?}", "standing",
                           plan ? s_get(plan, "standing") ? s_get(plan, "standing") : "" : "",
                           "engineTurn", plan && s_get(plan, "turn") ? s_get(plan, "turn") : "",
                           "turnContext", turn, "sampling", sampling, "note",
                           "standing is the tavern:standing segment (order 210); the runtime "
                           "context tavern:turn is engineTurn followed by turnContext",
                           "seed", json_object_get(plan, "seed"), "worldInfoSettings",
                           json_object_get(plan, "worldInfoSettings"), "worldInfo",
                           json_object_get(plan, "worldInfo"));
    else
        json_decref(sampling);
    json_decref(plan);
    free(turn);
    return kebab(rc, err);
}

#define IMPERSONATE_PROMPT                                                                         \
    "Write the person's next line in this role-play, in their voice, as they would type it. "      \
    "Output only that line, without quotes or commentary."

/* Impersonation: an explicit helper call outside the role-play turn; the
 * text is returned to the UI and never logged in the session. */
CDSH__TAVERN_OP(cdsh__tavern_op_impersonate)
{
    cdsh_tavern_service *svc = ud;
    int rc = 0;
    const char *sid = need_str(call->args, "sessionId", err, &rc);
    if (rc < 0)
        return rc;
    json_t *b = NULL;
    if ((rc = kebab(cdsh_tavern_binding_load(svc->bindings, sid, &b, err), err)) < 0)
        return rc;
    json_decref(b);
    pthread_mutex_lock(&svc->mu);
    cdsh_tavern_helper_fn fn = svc->helper;
    void *hud = svc->helper_ud;
    pthread_mutex_unlock(&svc->mu);
    if (!fn || !svc->sessions)
        return cdsh_error_set(err, CDSH_EUNSUPPORTED, "helper-unavailable",
                              "impersonation needs a model helper and the session store");
    json_t *msgs = cdsh_session_store_messages(svc->sessions, sid, err);
    if (!msgs)
        return kebab(err ? err->rc : CDSH_EIO, err);
    json_array_insert_new(msgs, 0,
                          json_pack("{s:s,s:s}", "role", "system", "content", IMPERSONATE_PROMPT));
    json_array_append_new(
        msgs, json_pack("{s:s,s:s}", "role", "user", "content", "(Write my next line now.)"));
    char *finish = NULL, *text = NULL;
    rc = fn(hud, msgs, &finish, &text, err);
    if (rc == 0 && !cdsh_tavern_memory_reply_acceptable(finish, text, false))
        rc = cdsh_error_set(err, CDSH_EPROTO, "helper-failed",
                            "the helper reply did not end with a normal stop (%s)",
                            finish ? finish : "no finish");
    else if (rc < 0) {
        char why[CDSH_ERROR_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", err ? err->message : "error");
        rc = cdsh_error_set(err, rc, "helper-failed", "the helper call failed: %s", why);
    }
    if (rc == 0)
        *value = json_pack("{s:s}", "text", text);
    free(finish);
    free(text);
    json_decref(msgs);
    return rc;
}

/* floors of closed turns: the edit dialogs' texts and the branch operations
 * (the row's name is the operation: it titles the branch) */

CDSH__TAVERN_OP(cdsh__tavern_op_getFloorUserMessage)
{
    return floor_text(ud, call->op->name, call->args, value, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_getFloorAssistantMessage)
{
    return floor_text(ud, call->op->name, call->args, value, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_regenerate)
{
    int rc = branch_op(ud, call->op->name, call->args, value, err);
    if (rc == 0)
        cdsh__tavern_gen_type_set(ud, json_string_value(json_object_get(call->args, "sessionId")),
                                  "regenerate");
    return rc;
}

CDSH__TAVERN_OP(cdsh__tavern_op_rollbackToFloor)
{
    return branch_op(ud, call->op->name, call->args, value, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_editUserMessage)
{
    return branch_op(ud, call->op->name, call->args, value, err);
}

CDSH__TAVERN_OP(cdsh__tavern_op_editAssistantMessage)
{
    return branch_op(ud, call->op->name, call->args, value, err);
}

/* ---- the RPC entry point ------------------------------------------------------------- */

cdsh_ops *cdsh_tavern_service_ops(cdsh_tavern_service *svc)
{
    return svc ? svc->ops : NULL;
}

int cdsh_tavern_service_call(cdsh_tavern_service *svc, const char *method, const json_t *payload,
                             json_t **value, cdsh_error *err)
{
    if (!svc)
        return cdsh_error_set(err, CDSH_EINVAL, "bad-request", "call: missing argument");
    return cdsh_ops_call(svc->ops, method, CDSH_OP_RPC, payload, NULL, value, err);
}

/* ---- agent preset --------------------------------------------------------------- */

int cdsh_tavern_service_turn_context(cdsh_tavern_service *svc, const char *session_id,
                                     const char *scan_text, char **text, cdsh_error *err)
{
    *text = NULL;
    cdsh_tavern_story *s = NULL;
    int rc = cdsh__tavern_session_story(svc, session_id, &s, err);
    if (rc == CDSH_ENOTFOUND) {
        *text = strdup("");
        return 0;
    }
    if (rc < 0)
        return rc;
    json_t *settings = cdsh__tavern_settings_dup(svc);
    cdsh_tavern_memory_cfg cfg = cdsh__tavern_memory_cfg(settings);
    json_decref(settings);
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    json_t *hits = NULL;
    if (scan_text && *scan_text &&
        cdsh_tavern_memory_search(s, scan_text, cfg.retrieval_top_k, &cfg, 0, &hits, NULL) == 0 &&
        json_array_size(hits) > 0) {
        cdsh_strbuf_append_str(&b, "[Memories]\n");
        int used = 0;
        size_t i;
        json_t *h;
        json_array_foreach(hits, i, h) {
            const char *body = s_get(h, "body");
            int t = cdsh__tavern_est_tokens(body) + 2;
            if (used + t > cfg.retrieval_budget)
                break;
            used += t;
            cdsh_strbuf_appendf(&b, "- %s\n", body);
        }
    }
    json_decref(hits);
    char *world = NULL;
    if (cdsh_tavern_world_render(s, scan_text, 0, 0, &world, NULL) == 0 && world && *world)
        cdsh_strbuf_appendf(&b, "%s[World state]\n%s", b.len ? "\n" : "", world);
    free(world);
    json_t *j = NULL;
    if (cdsh_tavern_story_load(s, CDSH_TAVERN_KIND_DOC, "journal.md", &j, NULL) == 0 &&
        json_string_length(j) > 0)
        cdsh_strbuf_appendf(&b, "%s[Journal]\n%s\n", b.len ? "\n" : "", json_string_value(j));
    json_decref(j);
    cdsh_tavern_story_free(s);
    char *out = cdsh_strbuf_take(&b, NULL);
    *text = out ? out : strdup("");
    return 0;
}

int cdsh_tavern_service_sampling(cdsh_tavern_service *svc, const char *session_id, json_t **out,
                                 cdsh_error *err)
{
    json_t *settings = cdsh__tavern_settings_dup(svc);
    json_t *smp = json_object_get(settings, "sampling");
    json_t *b = NULL, *preset = NULL;
    (void)err;
    if (cdsh_tavern_binding_load(svc->bindings, session_id, &b, NULL) == 0 && s_get(b, "presetId"))
        cdsh_tavern_store_asset_load(svc->store, CDSH_TAVERN_PRESET, s_get(b, "presetId"), &preset,
                                     NULL);
    double temp = preset ? json_number_value(json_object_get(preset, "temperature"))
                         : json_number_value(json_object_get(smp, "temperature"));
    json_int_t max_tokens =
        preset ? (json_int_t)json_number_value(json_object_get(preset, "openai_max_tokens"))
               : (json_int_t)json_number_value(json_object_get(smp, "maxTokens"));
    json_t *r = json_pack("{s:f,s:I,s:O}", "temperature", temp, "maxTokens", max_tokens, "stop",
                          json_object_get(smp, "stop"));
    const char *think = s_get(smp, "thinking");
    if (think && strcmp(think, "enabled") != 0 && strcmp(think, "disabled") != 0)
        json_object_set_new(r, "reasoningEffort", json_string(think));
    json_object_set_new(
        r, "recorded",
        json_pack("{s:O,s:O,s:O}", "topP",
                  preset ? json_object_get(preset, "top_p") : json_object_get(smp, "topP"),
                  "presencePenalty",
                  preset ? json_object_get(preset, "presence_penalty")
                         : json_object_get(smp, "presencePenalty"),
                  "frequencyPenalty",
                  preset ? json_object_get(preset, "frequency_penalty")
                         : json_object_get(smp, "frequencyPenalty")));
    json_decref(preset);
    json_decref(b);
    json_decref(settings);
    *out = r;
    return 0;
}

int cdsh_tavern_service_idle(cdsh_tavern_service *svc, const char *session_id,
                             cdsh_tavern_summarize_fn summarize, void *ud, bool *did,
                             cdsh_error *err)
{
    if (did)
        *did = false;
    if (!svc || !session_id || !summarize)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "idle: missing argument");
    cdsh_tavern_story *s = NULL;
    int rc = cdsh__tavern_session_story(svc, session_id, &s, err);
    /* The ended turn's handle is released with this reference: the turn is over. */
    pthread_mutex_lock(&svc->mu);
    drop_turns_locked(svc, session_id, ended, NULL);
    pthread_mutex_unlock(&svc->mu);
    if (rc == CDSH_ENOTFOUND)
        return 0;
    if (rc < 0)
        return rc;
    /* one attempt per closed turn: marker <session>#t<last closed turn> */
    int64_t last = 0;
    json_t *floors = NULL;
    if (cdsh_tavern_story_floors(s, &floors, NULL) == 0) {
        size_t i;
        json_t *f;
        json_array_foreach(floors, i, f) {
            if (json_is_true(json_object_get(f, "committed")) &&
                !json_is_true(json_object_get(f, "rolledBack")) &&
                strcmp(s_get(f, "session"), session_id) == 0)
                last = json_integer_value(json_object_get(f, "turn"));
        }
    }
    json_decref(floors);
    char *marker = cdsh_tavern_floor_name_dup(session_id, last);
    const char *sid = cdsh_tavern_story_id_get(s);
    pthread_mutex_lock(&svc->mu);
    const char *prev = json_string_value(json_object_get(svc->maint, sid));
    bool tried = prev && strcmp(prev, marker) == 0;
    if (!tried)
        json_object_set_new(svc->maint, sid, json_string(marker));
    pthread_mutex_unlock(&svc->mu);
    free(marker);
    json_t *plan = NULL;
    json_t *settings = cdsh__tavern_settings_dup(svc);
    cdsh_tavern_memory_cfg cfg = cdsh__tavern_memory_cfg(settings);
    json_decref(settings);
    if (tried || (rc = cdsh_tavern_memory_compress_plan(s, &cfg, &plan, err)) < 0 || !plan) {
        cdsh_tavern_story_free(s);
        return rc < 0 ? rc : 0;
    }
    char *finish = NULL, *text = NULL;
    cdsh_error herr = {0};
    int hrc = summarize(ud, s_get(plan, "prompt"), &finish, &text, &herr);
    rc = cdsh_tavern_memory_compress_commit(s, plan, finish, text, hrc < 0, NULL, err);
    cdsh__tavern_log(svc, "maintenance",
                     json_pack("{s:s,s:b,s:s?}", "sessionId", session_id, "summarized", rc == 0,
                               "finish", finish));
    if (rc == 0 && did)
        *did = true;
    free(finish);
    free(text);
    json_decref(plan);
    cdsh_tavern_story_free(s);
    return rc;
}
