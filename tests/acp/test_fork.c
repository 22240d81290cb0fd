/* test_fork.c — forks of engine-bound sessions and the agent's own session
 * list (plugins/acp service + state, the store's fork participants and the
 * CLI) against the scripted agent: context carried by session/fork, the
 * child's binding and lock, the parent untouched, the not-advertised paths. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp_fixture.h"
#include "agent/session_store.h"
#include "host/host.h"
#include "plugins/acp/plugin.h"
#include "plugins/acp/service.h"
#include "plugins/acp/state.h"
#include "plugins/acp/turn.h"
#include "plugins/builtin.h"

typedef struct fx {
    char *home;
    cdsh_acp_service *svc;
    char text[4096];
    cdsh_acp_turn_sink sink;
} fx;

static void on_update(void *ud, const char *sid, cdsh_acp_update_kind kind, const char *name,
                      const json_t *u)
{
    (void)sid, (void)name;
    fx *f = ud;
    const char *t = json_string_value(json_object_get(json_object_get(u, "content"), "text"));
    if (kind == CDSH_ACP_UPDATE_AGENT_MESSAGE_CHUNK && t)
        strncat(f->text, t, sizeof f->text - strlen(f->text) - 1);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->home = cdsh_test_home_new();
    f->sink = (cdsh_acp_turn_sink){on_update, f};
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    cdsh_acp_service_free(f->svc);
    cdsh_test_home_free(f->home);
    free(f);
    return 0;
}

/* The fixture engine keeping its sessions in $HOME/agent-store (so another
 * process can fork them), plus extra args (JSON array items, may be ""). */
static void write_engine(fx *f, const char *extra_args)
{
    char dir[4200], args[8400];
    snprintf(dir, sizeof dir, "%s/agent-store", f->home);
    mkdir(dir, 0700);
    snprintf(args, sizeof args, "[\"--state-dir\",\"%s\"%s%s]", dir, *extra_args ? "," : "",
             extra_args);
    acp_write_fixture_engine(f->home, args, "");
}

/* Sends text; returns the result (owned) with f->text the reply. */
static json_t *send(fx *f, const char *sid, const char *text)
{
    f->text[0] = '\0';
    json_t *res = cdsh_acp_service_prompt(f->svc, sid, text, &f->sink, NULL);
    assert_true(json_is_true(json_object_get(res, "ok")));
    return res;
}

/* A new service (extra engine args as write_engine) and sid bound to the
 * fixture with one turn that said `text`. */
static void bound_with_one_turn(fx *f, const char *extra_args, const char *sid, const char *text)
{
    write_engine(f, extra_args);
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, sid, "fixture", f->home, NULL), 0);
    json_decref(send(f, sid, text));
}

static json_t *entry_of(const char *sid)
{
    json_t *e = NULL;
    assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), sid, &e, NULL), 0);
    return e;
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void a_fork_carries_the_agents_context_into_a_live_locked_child(void **state)
{
    fx *f = *state;
    bound_with_one_turn(f, "", "s-parent", "the parent's last message");
    json_t *before = entry_of("s-parent");
    json_t *w = json_array();
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_service_fork(f->svc, "s-parent", "s-child", true, w, &err), 0);
    assert_int_equal(json_array_size(w), 0);
    json_decref(w);
    json_t *child = entry_of("s-child");
    assert_string_equal(str(child, "engineId"), "fixture");
    assert_string_equal(str(child, "lockedEngineId"), "fixture");
    assert_string_equal(str(child, "forkedFrom"), "s-parent");
    assert_string_equal(str(child, "cwd"), f->home);
    assert_string_not_equal(str(child, "acpSessionId"), str(before, "acpSessionId"));
    /* The fork's first reply quotes the parent's last message, on the same process. */
    json_t *res = send(f, "s-child", "recall");
    assert_string_equal(f->text, "recall: the parent's last message");
    assert_string_equal(str(res, "opened"), "live");
    assert_string_equal(str(res, "acpSessionId"), str(child, "acpSessionId"));
    json_decref(res);
    assert_int_equal(cdsh_acp_service_process_count(f->svc), 1);
    json_decref(send(f, "s-child", "only the child says this"));
    json_decref(send(f, "s-parent", "recall"));
    assert_string_equal(f->text, "recall: the parent's last message");
    /* The parent's binding is exactly as it was (the parent's own turns aside). */
    json_t *after = entry_of("s-parent");
    assert_string_equal(str(after, "acpSessionId"), str(before, "acpSessionId"));
    assert_string_equal(str(after, "createdAt"), str(before, "createdAt"));
    assert_null(json_object_get(after, "forkedFrom"));
    json_decref(after);
    /* Locked like the parent: the child cannot move to another engine. */
    acp_write_engines(f->home, "[{\"id\":\"other\",\"command\":\"/bin/true\"}]");
    assert_int_equal(cdsh_acp_state_session_bind(cdsh_test_home(), "s-child", "other", NULL, &err),
                     CDSH_EPERM);
    assert_string_equal(err.code, "ENGINE_LOCKED");
    json_decref(child);
    json_decref(before);
}

static void a_fork_after_a_restart_forks_from_the_agents_store(void **state)
{
    fx *f = *state;
    bound_with_one_turn(f, "", "s-p", "said before the restart");
    cdsh_acp_service_free(f->svc);
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    json_t *w = json_array();
    assert_int_equal(cdsh_acp_service_fork(f->svc, "s-p", "s-c", true, w, NULL), 0);
    assert_int_equal(json_array_size(w), 0);
    json_decref(w);
    cdsh_acp_service_free(f->svc);
    /* Yet another process: the child is reopened with session/load. */
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    json_t *res = send(f, "s-c", "recall");
    assert_string_equal(str(res, "opened"), "load");
    assert_non_null(strstr(f->text, "recall: said before the restart"));
    json_decref(res);
}

static void without_session_fork_the_child_starts_fresh_and_says_so(void **state)
{
    fx *f = *state;
    bound_with_one_turn(f, "\"--no-fork\"", "s-p", "context the child will not have");
    json_t *w = json_array();
    assert_int_equal(cdsh_acp_service_fork(f->svc, "s-p", "s-c", true, w, NULL), 0);
    assert_int_equal(json_array_size(w), 1);
    assert_string_equal(json_string_value(json_array_get(w, 0)),
                        "engine fixture does not advertise session/fork: the fork's first "
                        "message starts a fresh ACP session, and the conversation's transcript "
                        "is sent with it (cdsh chat and the web page; not `cdsh acp prompt`)");
    json_decref(w);
    json_t *child = entry_of("s-c");
    assert_true(json_is_null(json_object_get(child, "acpSessionId")));
    assert_string_equal(str(child, "lockedEngineId"), "fixture");
    json_decref(child);
    json_t *res = send(f, "s-c", "recall");
    assert_string_equal(f->text, "recall: -");
    assert_string_equal(str(res, "opened"), "new");
    assert_string_equal(json_string_value(json_array_get(json_object_get(res, "warnings"), 0)),
                        "engine context not carried over from s-p: a fresh ACP session was "
                        "opened for this fork");
    json_decref(res);
}

static void a_partial_fork_and_an_unopened_parent_do_not_fork_the_agent(void **state)
{
    fx *f = *state;
    write_engine(f, "");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_bind(f->svc, "s-p", "fixture", f->home, NULL), 0);
    /* Bound, never prompted: nothing to carry, nothing to warn about, no process. */
    json_t *w = json_array();
    assert_int_equal(cdsh_acp_service_fork(f->svc, "s-p", "s-early", true, w, NULL), 0);
    assert_int_equal(json_array_size(w), 0);
    assert_int_equal(cdsh_acp_service_process_count(f->svc), 0);
    json_t *e = entry_of("s-early");
    assert_true(json_is_null(json_object_get(e, "lockedEngineId")));
    json_decref(e);
    json_decref(send(f, "s-p", "hello"));
    assert_int_equal(cdsh_acp_service_fork(f->svc, "s-p", "s-part", false, w, NULL), 0);
    assert_int_equal(json_array_size(w), 1);
    assert_non_null(
        strstr(json_string_value(json_array_get(w, 0)), "forked before the parent's last event"));
    e = entry_of("s-part");
    assert_true(json_is_null(json_object_get(e, "acpSessionId")));
    json_decref(e);
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_service_fork(f->svc, "s-part", "s-early", true, w, &err),
                     CDSH_EEXIST);
    assert_string_equal(err.code, "SESSION_BOUND");
    assert_int_equal(cdsh_acp_service_fork(f->svc, "s-nobody", "s-x", true, w, &err),
                     CDSH_ENOTFOUND);
    assert_string_equal(err.code, "UNBOUND_SESSION");
    json_decref(w);
}

static void the_remote_list_names_the_cdsh_session_bound_to_each(void **state)
{
    fx *f = *state;
    write_engine(f, "\"--page-size\",\"1\"");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    const char *ids[] = {"s-a", "s-b", "s-c"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cdsh_acp_service_bind(f->svc, ids[i], "fixture", f->home, NULL), 0);
        json_decref(send(f, ids[i], ids[i]));
    }
    json_t *c_entry = entry_of("s-c");
    char *c_acp = strdup(str(c_entry, "acpSessionId"));
    json_decref(c_entry);
    cdsh_acp_state_session_remove(cdsh_test_home(), "s-c",
                                  NULL); /* the agent still has it; cdsh forgot it */
    /* A hand-edited entry naming that ACP session but no engine binds nothing. */
    char *dir = NULL, path[4300];
    assert_int_equal(cdsh_acp_state_dir_dup(cdsh_test_home(), &dir, NULL), 0);
    snprintf(path, sizeof path, "%s/sessions.json", dir);
    free(dir);
    json_t *doc = json_load_file(path, 0, NULL);
    assert_non_null(doc);
    json_object_set_new(json_object_get(doc, "sessions"), "s-hand",
                        json_pack("{s:s}", "acpSessionId", c_acp));
    assert_int_equal(json_dump_file(doc, path, 0), 0);
    json_decref(doc);
    free(c_acp);
    json_t *out = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_service_list_remote(f->svc, "fixture", f->home, &out, &err), 0);
    json_t *sessions = json_object_get(out, "sessions");
    assert_int_equal(json_array_size(sessions), 3); /* three pages of one */
    assert_false(json_is_true(json_object_get(out, "truncated")));
    int bound = 0, unbound = 0;
    size_t i;
    json_t *info;
    json_array_foreach(sessions, i, info) {
        const char *cdsh = str(info, "cdshSessionId");
        if (!cdsh) {
            assert_string_equal(str(info, "title"), "s-c");
            unbound++;
            continue;
        }
        assert_string_equal(str(info, "title"), cdsh); /* each was named by its first prompt */
        json_t *e = entry_of(cdsh);
        assert_string_equal(str(e, "acpSessionId"), str(info, "sessionId"));
        json_decref(e);
        bound++;
    }
    assert_int_equal(bound, 2);
    assert_int_equal(unbound, 1);
    json_decref(out);
    assert_int_equal(cdsh_acp_service_list_remote(f->svc, "nope", NULL, &out, &err),
                     CDSH_ENOTFOUND);
    assert_string_equal(err.code, "UNKNOWN_ENGINE");
    cdsh_acp_service_free(f->svc);
    write_engine(f, "\"--no-list\"");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_acp_service_list_remote(f->svc, "fixture", NULL, &out, &err),
                     CDSH_EUNSUPPORTED);
    assert_string_equal(err.code, "METHOD_NOT_ADVERTISED");
}

/* A new service and an open store (*st) holding a session bound to the
 * fixture engine, with one engine turn. */
static char *stored_bound_session(fx *f, cdsh_session_store **out)
{
    write_engine(f, "");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, out, NULL), 0);
    cdsh_session_store *st = *out;
    char *id = NULL;
    assert_int_equal(cdsh_session_store_create(st, NULL, &id, NULL), 0);
    json_t *p = json_pack("{s:s}", "text", "the stored parent's words");
    assert_int_equal(cdsh_session_store_append(st, id, "user/message", 0, 0, p, NULL, NULL), 0);
    json_decref(p);
    assert_int_equal(cdsh_acp_service_bind(f->svc, id, "fixture", f->home, NULL), 0);
    json_decref(send(f, id, "the stored parent's words"));
    return id;
}

/* The participants are the fork hooks the loaded plugins registered: the
 * acp plugin's one runs on the plugin's live service. */
static void store_forks_run_the_registered_participants(void **state)
{
    fx *f = *state;
    cdsh_session_store *st = NULL;
    char *parent = stored_bound_session(f, &st);
    cdsh_host *host = cdsh_host_new();
    cdsh_host_load_plugins(host, cdsh_builtin_plugins, NULL, NULL);
    const cdsh_session_fork_hook *const *hooks =
        (const cdsh_session_fork_hook *const *)cdsh_host_hooks_dup(host, CDSH_SESSION_FORK_HOOKS);
    assert_non_null(hooks);
    assert_non_null(hooks[0]);
    assert_string_equal(hooks[0]->name, "acp");
    assert_null(hooks[1]);
    char *child = NULL;
    json_t *notes = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_session_store_fork_with(st, parent, 0, NULL, hooks,
                                                  NULL, &child, &notes, &err),
                     0);
    assert_int_equal(json_array_size(notes), 1);
    assert_non_null(strstr(json_string_value(json_array_get(notes, 0)),
                           "bound to engine fixture, ACP session forked as fx-"));
    json_decref(notes);
    json_t *e = entry_of(child);
    assert_string_equal(str(e, "forkedFrom"), parent);
    json_decref(e);
    json_t *res = send(f, child, "recall"); /* the fork was made by another process: loaded */
    assert_string_equal(str(res, "opened"), "load");
    assert_non_null(strstr(f->text, "recall: the stored parent's words"));
    json_decref(res);
    /* An unbound session forks with no participant output and no process. */
    char *plain = NULL, *plain_child = NULL;
    assert_int_equal(cdsh_session_store_create(st, NULL, &plain, NULL), 0);
    assert_int_equal(cdsh_session_store_fork_with(st, plain, 0, NULL, hooks, NULL,
                                                  &plain_child, &notes, &err),
                     0);
    assert_int_equal(json_array_size(notes), 0);
    json_decref(notes);
    assert_int_equal(cdsh_acp_state_session_get(cdsh_test_home(), plain_child, &e, &err),
                     CDSH_ENOTFOUND);
    /* A participant that cannot record the binding undoes the fork. */
    char path[4200];
    snprintf(path, sizeof path, "%s/multi-acp/sessions.json", f->home);
    char *saved = cdsh_test_read_file(path, NULL);
    cdsh_test_write_file(path, "{ not json");
    int64_t total_before = 0, total_after = 0;
    json_decref(cdsh_session_store_list(st, 0, 1000, &total_before, NULL));
    free(child);
    child = NULL;
    assert_int_equal(cdsh_session_store_fork_with(st, parent, 0, NULL, hooks,
                                                  NULL, &child, &notes, &err),
                     CDSH_EPROTO);
    assert_string_equal(err.code, "STATE_CORRUPT");
    assert_non_null(strstr(err.message, "acp: "));
    assert_null(child);
    json_decref(cdsh_session_store_list(st, 0, 1000, &total_after, NULL));
    assert_int_equal(total_after, total_before);
    cdsh_test_write_file(path, saved);
    free(saved);
    free(plain);
    free(plain_child);
    free(parent);
    cdsh_session_store_close(st);
    free((void *)hooks);
    cdsh_host_free(host);
    /* Unloaded, the plugin's participant is gone with it. */
    host = cdsh_host_new();
    const void **none = cdsh_host_hooks_dup(host, CDSH_SESSION_FORK_HOOKS);
    assert_non_null(none);
    assert_null(none[0]);
    free(none);
    cdsh_host_free(host);
}

static void the_cli_forks_bound_sessions_and_lists_the_agents_own(void **state)
{
    fx *f = *state;
    cdsh_session_store *st = NULL;
    char *parent = stored_bound_session(f, &st);
    cdsh_session_store_close(st);
    cdsh_acp_service_free(f->svc);
    f->svc = NULL;
    char *out = NULL, *err = NULL;
    assert_int_equal(
        cdsh_test_run_cdsh(NULL, &out, &err, "sessions", "fork", parent, "--json", NULL), 0);
    json_t *doc = json_loads(out, 0, NULL);
    const char *child = str(doc, "id");
    assert_non_null(child);
    assert_non_null(strstr(json_string_value(json_array_get(json_object_get(doc, "notes"), 0)),
                           "bound to engine fixture, ACP session forked as"));
    json_t *e = entry_of(child);
    assert_string_equal(str(e, "forkedFrom"), parent);
    char *child_acp = strdup(str(e, "acpSessionId"));
    json_decref(e);
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "sessions", "--remote", "fixture",
                                        "--cwd", f->home, NULL),
                     0);
    assert_non_null(strstr(out, "ACP SESSION"));
    assert_non_null(strstr(out, child_acp));
    assert_non_null(strstr(out, child));
    assert_non_null(strstr(out, parent));
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "sessions", "--remote", "fixture",
                                        "--json", NULL),
                     0);
    json_decref(doc);
    doc = json_loads(out, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(doc, "sessions")), 2);
    assert_string_equal(str(doc, "engineId"), "fixture");
    json_decref(doc);
    free(out);
    free(err);
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "acp", "sessions", "--cwd", "/", NULL),
                     2);
    free(out);
    free(err);
    /* The human fork output carries the participant's note on stderr. */
    assert_int_equal(cdsh_test_run_cdsh(NULL, &out, &err, "sessions", "fork", parent, NULL), 0);
    assert_non_null(strstr(out, "forked "));
    assert_non_null(strstr(err, "cdsh sessions: bound to engine fixture"));
    free(out);
    free(err);
    free(child_acp);
    free(parent);
}

/* Issue 21 item 7: a fork the agent cannot restore after a restart (Claude
 * Code ACP: "Session not found") still gets the conversation — the turn
 * sends the transcript with the first message — and says so. */
static void a_fork_the_agent_lost_gets_the_transcript(void **state)
{
    fx *f = *state;
    write_engine(f, "\"--fork-volatile\"");
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    cdsh_session_store *st = NULL;
    assert_int_equal(cdsh_session_store_open(cdsh_test_home(), NULL, &st, NULL), 0);
    char *parent = NULL;
    assert_int_equal(cdsh_session_store_create(st, NULL, &parent, NULL), 0);
    assert_int_equal(cdsh_acp_service_bind(f->svc, parent, "fixture", f->home, NULL), 0);
    cdsh_acp_turn_opts o = {.svc = f->svc, .store = st};
    json_t *res = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_turn_run(&o, parent, "the parent's secret word is tangerine", NULL,
                                       &res, &err),
                     0);
    assert_true(json_is_true(json_object_get(res, "ok")));
    json_decref(res);
    char *child = NULL;
    assert_int_equal(cdsh_session_store_fork(st, parent, 0, NULL, &child, NULL), 0);
    json_t *w = json_array();
    assert_int_equal(cdsh_acp_service_fork(f->svc, parent, child, true, w, &err), 0);
    json_decref(w);
    json_t *e = entry_of(child);
    assert_non_null(strstr(str(e, "acpSessionId"), "fv-"));
    json_decref(e);
    /* A restart: the agent no longer knows the forked session. */
    cdsh_acp_service_free(f->svc);
    f->svc = cdsh_acp_service_new(cdsh_test_home(), NULL, NULL);
    o.svc = f->svc;
    assert_int_equal(cdsh_acp_turn_run(&o, child, "recall", NULL, &res, &err), 0);
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_string_equal(str(res, "opened"), "live");
    json_decref(res);
    json_t *msgs = cdsh_session_store_messages(st, child, &err);
    const char *reply = str(json_array_get(msgs, json_array_size(msgs) - 1), "content");
    assert_non_null(strstr(reply, "recall from context: [The conversation so far"));
    assert_non_null(strstr(reply, "User: the parent's secret word is tangerine"));
    assert_non_null(strstr(reply, "Assistant: PONG"));
    json_decref(msgs);
    json_t *evs = cdsh_session_store_events(st, child, 0, 1000, NULL, &err);
    bool replayed = false, load_failed = false;
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        json_t *p = json_object_get(ev, "payload");
        if (strcmp(str(ev, "type"), "notice") != 0)
            continue;
        replayed |= strcmp(str(p, "code"), "ACP_CONTEXT_REPLAYED") == 0;
        load_failed |= strstr(str(p, "text"), "session/load failed") != NULL;
    }
    assert_true(replayed);
    assert_true(load_failed);
    json_decref(evs);
    /* Once the agent has it, later turns do not send it again. */
    assert_int_equal(cdsh_acp_turn_run(&o, child, "recall", NULL, &res, &err), 0);
    json_decref(res);
    msgs = cdsh_session_store_messages(st, child, &err);
    reply = str(json_array_get(msgs, json_array_size(msgs) - 1), "content");
    assert_null(strstr(reply, "from context"));
    json_decref(msgs);
    free(child);
    free(parent);
    cdsh_session_store_close(st);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(a_fork_carries_the_agents_context_into_a_live_locked_child),
        T(a_fork_after_a_restart_forks_from_the_agents_store),
        T(without_session_fork_the_child_starts_fresh_and_says_so),
        T(a_partial_fork_and_an_unopened_parent_do_not_fork_the_agent),
        T(the_remote_list_names_the_cdsh_session_bound_to_each),
        T(store_forks_run_the_registered_participants),
        T(the_cli_forks_bound_sessions_and_lists_the_agents_own),
        T(a_fork_the_agent_lost_gets_the_transcript),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
