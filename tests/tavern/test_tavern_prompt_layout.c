/* test_tavern_prompt_layout.c — seed 001 §5 layout of a real request (the
 * agent loop and the scripted fake model): the system prompt of a bound
 * session is the unbound one — base prompt, plugin-rule segments — with
 * <available_tools> (the tavern's tools, masked in unbound turns) and then
 * tavern:standing (order 210); no tavern
 * segment replaces or precedes the tool prefix; tavern:turn travels as
 * runtime context in the last message. */
#include "support/testkit.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "host/prompt.h"
#include "plugins/tavern/assemble.h"
#include "plugins/tavern/wire.h"
#include "support/model_env.h"
#include "support/tavern_world.h"

/* A temp home, the fake model playing `script` and the tavern world. */
typedef struct fx {
    char *home;
    cdsh_test_fake_model model;
    cdsh_test_tavern_world w;
} fx;

static void fx_open(fx *f, const char *script)
{
    f->home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    cdsh_test_model_env_start(&f->model, script);
    cdsh_test_tavern_world_open(&f->w);
}

static void fx_close(fx *f)
{
    cdsh_test_tavern_world_close(&f->w);
    cdsh_test_model_env_stop(&f->model);
    cdsh_test_home_free(f->home);
}

static char *new_session(cdsh_test_tavern_world *w, const char *title)
{
    cdsh_session_spec spec = {.title = title};
    char *sid = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_session_store_create(w->store, &spec, &sid, &err), 0);
    return sid;
}

static const char *msg_text(const json_t *body, long idx)
{
    const json_t *m = json_object_get(body, "messages");
    size_t n = json_array_size(m);
    return json_string_value(
        json_object_get(json_array_get(m, idx < 0 ? n + (size_t)idx : (size_t)idx), "content"));
}

#define CALL(id, name, args)                                                                       \
    "{\"tool_calls\":[{\"index\":0,\"id\":\"" id "\",\"name\":\"" name "\",\"arguments\":\"" args  \
    "\"}],\"finish_reason\":\"tool_calls\"}"
#define SAY(text) "{\"chunks\":[{\"text\":\"" text "\"}],\"finish_reason\":\"stop\"}"

#define SAY(text) "{\"chunks\":[{\"text\":\"" text "\"}],\"finish_reason\":\"stop\"}"

static void request_segments_follow_the_seed_layout(void **state)
{
    (void)state;
    assert_int_equal(CDSH_TAVERN_STANDING_ORDER, 210);
    assert_true(CDSH_TAVERN_STANDING_ORDER >= CDSH_PROMPT_AFTER_TOOLS_ORDER);
    assert_true(CDSH_TAVERN_STANDING_PIN_VERSION >= 2);
    fx f;
    fx_open(&f, "[" SAY("Hello.") "," SAY("Plain.") "]");
    cdsh_test_tavern_world *w = &f.w;
    cdsh_prompt_segment_def rules = {.id = "test:rules", .order = 150, .text = "RULES 150"};
    cdsh_disposer_t d;
    cdsh_error err = {0};
    assert_int_equal(cdsh_prompt_register(cdsh_host_prompt(w->host), NULL, &rules, &d, &err), 0);
    char *sid = cdsh_test_tavern_bound_session(w, "import", "bound", NULL);
    char *other = new_session(w, "unbound");
    json_t *preview =
        cdsh_test_tavern_rpc(w, "previewPrompt", json_pack("{s:s}", "sessionId", sid));
    const char *standing = json_string_value(json_object_get(preview, "standing"));
    assert_non_null(standing);
    assert_true(strlen(standing) > 100);

    cdsh_test_tavern_turn(w, sid, "I wake up in the forest.");
    cdsh_test_tavern_turn(w, other, "Hello there.");
    json_t *bodies = cdsh_test_model_env_bodies(&f.model);
    assert_int_equal(json_array_size(bodies), 2);
    const char *bound = msg_text(json_array_get(bodies, 0), 0);
    const char *plain = msg_text(json_array_get(bodies, 1), 0);

    /* The exact layout: [base prompt][RULES 150][<available_tools>…] then
     * the standing — the bound prompt is the unbound one plus the tool list
     * (an unbound session is offered no tavern tools, and here has no other
     * tool) and the standing. */
    assert_null(strstr(plain, "available_tools"));
    const char *block = strstr(bound, "\n\n<available_tools>\n");
    const char *block_end = strstr(bound, "</available_tools>");
    assert_non_null(block);
    assert_non_null(block_end);
    char *stripped = NULL;
    assert_true(asprintf(&stripped, "%.*s%s", (int)(block - bound), bound,
                         block_end + strlen("</available_tools>")) > 0);
    char *want = NULL;
    assert_true(asprintf(&want, "%s\n\n%s", plain, standing) > 0);
    assert_string_equal(stripped, want);
    free(want);
    free(stripped);
    /* The segment order inside it. */
    const char *rules_at = strstr(bound, "RULES 150");
    const char *tools_at = strstr(bound, "<available_tools>\n");
    const char *tools_end = strstr(bound, "</available_tools>");
    const char *standing_at = strstr(bound, standing);
    assert_non_null(rules_at);
    assert_non_null(tools_at);
    assert_non_null(tools_end);
    assert_non_null(standing_at);
    assert_true(rules_at < tools_at);
    assert_true(tools_end < standing_at);
    assert_non_null(strstr(tools_at, "- tavern_")); /* the tavern's tools are listed */
    char *prefix = strndup(bound, (size_t)(tools_end - bound));
    assert_null(strstr(prefix, "Seraphina")); /* nothing of the card before the tools */
    free(prefix);
    /* tavern:turn is runtime context in the last message, never in the
     * system prompt. */
    assert_non_null(strstr(msg_text(json_array_get(bodies, 0), -1),
                           CDSH_AGENT_CONTEXT_HEAD "<runtime_context name=\"tavern:turn\">\n"));
    assert_null(strstr(bound, "runtime_context"));
    json_decref(bodies);
    json_decref(preview);
    cdsh_disposer_run(&d);
    free(sid);
    free(other);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(request_segments_follow_the_seed_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
