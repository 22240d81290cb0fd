/* test_commands.c — slash commands: name rules, parsing, layers and
 * shadowing, execution results and the run/done events. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "host/commands.h"

typedef struct fixture {
    cdsh_events *bus;
    cdsh_commands *cmds;
    json_t *events; /* [{name, scope, payload}] */
    cdsh_disposer_t listener;
} fixture;

static void collect(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    fixture *f = arg;
    json_array_append_new(f->events, json_pack("{s:s, s:s, s:O?}", "name", name, "scope",
                                               cdsh_scope_id(scope), "payload", (json_t *)payload));
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->bus = cdsh_events_new();
    f->cmds = cdsh_commands_new(f->bus);
    f->events = json_array();
    cdsh_events_on(f->bus, "*", NULL, collect, f, &f->listener, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    cdsh_disposer_run(&f->listener);
    cdsh_commands_free(f->cmds);
    cdsh_events_free(f->bus);
    json_decref(f->events);
    free(f);
    return 0;
}

/* Handler: echoes "<name>|<raw_input>|<agent>". arg selects special behaviour. */
static int echo(void *arg, const cdsh_command_invocation *inv, cdsh_command_result *out,
                cdsh_error *err)
{
    const char *mode = arg;
    if (mode && strcmp(mode, "fail") == 0)
        return cdsh_error_set(err, CDSH_EIO, "BOOM", "the handler blew up");
    if (mode && strcmp(mode, "error") == 0)
        return cdsh_command_result_set(out, CDSH_COMMAND_ERROR, "nothing to undo");
    if (mode && strcmp(mode, "blank-error") == 0)
        return cdsh_command_result_set(out, CDSH_COMMAND_ERROR, "  ");
    if (mode && strcmp(mode, "bad-kind") == 0) {
        out->kind = (cdsh_command_kind)7;
        return 0;
    }
    if (mode && strcmp(mode, "silent") == 0)
        return 0;
    if (mode && strcmp(mode, "seq") == 0) {
        out->source_event_seq = 41;
        return cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, "appended");
    }
    if (mode && strcmp(mode, "neg-seq") == 0) {
        out->source_event_seq = -2;
        return cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, "x");
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s|%s|%s|%zu", inv->name, inv->raw_input, cdsh_scope_id(inv->agent),
             json_array_size(inv->attachments));
    return cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, buf);
}

static cdsh_command_def def_of(const char *name, void *mode)
{
    return (cdsh_command_def){
        .name = name, .description = "does a thing", .handler = echo, .arg = mode};
}

static void name_rule_is_lowercase_slug(void **state)
{
    (void)state;
    assert_true(cdsh_commands_name_valid("undo"));
    assert_true(cdsh_commands_name_valid("a"));
    assert_true(cdsh_commands_name_valid("new-game_2"));
    assert_false(cdsh_commands_name_valid("/undo"));
    assert_false(cdsh_commands_name_valid("Undo"));
    assert_false(cdsh_commands_name_valid("2undo"));
    assert_false(cdsh_commands_name_valid("-x"));
    assert_false(cdsh_commands_name_valid("un do"));
    assert_false(cdsh_commands_name_valid(""));
    assert_false(cdsh_commands_name_valid(NULL));
}

static void register_refuses_bad_names_with_the_pattern(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d = {0};
    cdsh_error err = {0};
    cdsh_command_def def = def_of("/undo", NULL);
    assert_int_equal(cdsh_commands_register(f->cmds, NULL, &def, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_COMMAND");
    assert_string_equal(err.message, "command name \"/undo\" must match ^[a-z][a-z0-9_-]*$");
    assert_int_equal(cdsh_commands_count(f->cmds), 0);
}

static void register_refuses_blank_description_hint_or_no_handler(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d = {0};
    cdsh_error err = {0};
    cdsh_command_def def = def_of("undo", NULL);
    def.description = " \t";
    assert_int_equal(cdsh_commands_register(f->cmds, NULL, &def, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "command \"undo\" needs a non-blank description");
    def = def_of("undo", NULL);
    def.input_hint = "";
    assert_int_equal(cdsh_commands_register(f->cmds, NULL, &def, &d, &err), CDSH_EINVAL);
    def = def_of("undo", NULL);
    def.handler = NULL;
    assert_int_equal(cdsh_commands_register(f->cmds, NULL, &def, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "command \"undo\" needs a handler");
}

static void duplicate_in_same_layer_is_refused(void **state)
{
    fixture *f = *state;
    cdsh_scope *agent = cdsh_scope_new("agent", NULL);
    cdsh_disposer_t d1, d2, d3 = {0}, d4 = {0};
    cdsh_error err = {0};
    cdsh_command_def def = def_of("undo", NULL);
    assert_int_equal(cdsh_commands_register(f->cmds, NULL, &def, &d1, NULL), 0);
    assert_int_equal(cdsh_commands_register(f->cmds, NULL, &def, &d3, &err), CDSH_EEXIST);
    assert_string_equal(err.code, "DUPLICATE_COMMAND");
    assert_string_equal(err.message, "command \"undo\" is already registered");
    assert_int_equal(cdsh_commands_register(f->cmds, agent, &def, &d2, NULL), 0);
    assert_int_equal(cdsh_commands_register(f->cmds, agent, &def, &d4, &err), CDSH_EEXIST);
    assert_string_equal(err.message, "command \"undo\" is already registered in this scope");
    assert_null(d3.fn);
    assert_int_equal(cdsh_commands_count(f->cmds), 2);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
    assert_int_equal(cdsh_commands_count(f->cmds), 0);
    cdsh_scope_unref(agent);
}

static void parse_takes_name_and_keeps_separator(void **state)
{
    (void)state;
    char name[32];
    const char *raw = NULL;
    assert_true(cdsh_commands_parse("/move  h2e2", name, sizeof name, &raw));
    assert_string_equal(name, "move");
    assert_string_equal(raw, "  h2e2");
    assert_true(cdsh_commands_parse("/undo", name, sizeof name, &raw));
    assert_string_equal(raw, "");
    assert_true(cdsh_commands_parse("/new-game\tfast", name, sizeof name, &raw));
    assert_string_equal(name, "new-game");
    assert_string_equal(raw, "\tfast");
}

static void parse_rejects_non_commands(void **state)
{
    (void)state;
    char name[32];
    const char *raw;
    assert_false(cdsh_commands_parse("hello", name, sizeof name, &raw));
    assert_false(cdsh_commands_parse("/", name, sizeof name, &raw));
    assert_false(cdsh_commands_parse("/Undo", name, sizeof name, &raw));
    assert_false(cdsh_commands_parse("/undo!", name, sizeof name, &raw)); /* no separator */
    assert_false(cdsh_commands_parse("/usr/bin/ls", name, sizeof name, &raw));
    assert_false(cdsh_commands_parse(" /undo", name, sizeof name, &raw));
    assert_false(cdsh_commands_parse(NULL, name, sizeof name, &raw));
    assert_false(cdsh_commands_parse("/averyveryverylongname", name, 8, &raw));
}

static void execute_runs_handler_with_raw_input(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d;
    cdsh_command_def def = def_of("move", NULL);
    cdsh_commands_register(f->cmds, NULL, &def, &d, NULL);
    cdsh_command_outcome out;
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/move h2e2", NULL, NULL, &out, NULL), 1);
    assert_int_equal(out.kind, CDSH_COMMAND_SUCCESS);
    assert_string_equal(out.text, "move| h2e2||0");
    assert_memory_equal(out.command_id, "cmd-", 4);
    assert_int_equal(strlen(out.command_id), strlen("cmd-12345678-1"));
    assert_string_equal(out.command_id + 12, "-1");
    cdsh_commands_outcome_clear(&out);
    cdsh_disposer_run(&d);
}

static void command_ids_count_up_per_registry(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d;
    cdsh_command_def def = def_of("x", NULL);
    cdsh_commands_register(f->cmds, NULL, &def, &d, NULL);
    cdsh_command_outcome a, b;
    cdsh_commands_execute(f->cmds, NULL, "/x", NULL, NULL, &a, NULL);
    cdsh_commands_execute(f->cmds, NULL, "/x", NULL, NULL, &b, NULL);
    assert_memory_equal(a.command_id, b.command_id, 12); /* same cmd-<8 hex> prefix */
    assert_string_equal(a.command_id + 12, "-1");
    assert_string_equal(b.command_id + 12, "-2");
    cdsh_commands_outcome_clear(&a);
    cdsh_commands_outcome_clear(&b);
    cdsh_disposer_run(&d);
}

static void unknown_or_plain_text_is_not_handled_and_emits_nothing(void **state)
{
    fixture *f = *state;
    cdsh_command_outcome out;
    size_t before = json_array_size(f->events);
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/nope", NULL, NULL, &out, NULL), 0);
    assert_null(out.text);
    assert_int_equal(out.command_id[0], '\0');
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "hello /nope", NULL, NULL, &out, NULL),
                     0);
    assert_int_equal(json_array_size(f->events), before);
}

static void unknown_message_names_the_available_commands(void **state)
{
    fixture *f = *state;
    char *m = cdsh_commands_unknown_message_dup(f->cmds, NULL, "/frob it");
    assert_string_equal(m, "unknown command \"/frob\"; no commands are available");
    free(m);
    cdsh_disposer_t d1, d2;
    cdsh_command_def u = def_of("undo", NULL), h = def_of("help", NULL);
    cdsh_commands_register(f->cmds, NULL, &u, &d1, NULL);
    cdsh_commands_register(f->cmds, NULL, &h, &d2, NULL);
    m = cdsh_commands_unknown_message_dup(f->cmds, NULL, "/frob");
    assert_string_equal(m, "unknown command \"/frob\"; available commands: /help, /undo");
    free(m);
    assert_null(cdsh_commands_unknown_message_dup(f->cmds, NULL, "just text"));
    assert_null(cdsh_commands_unknown_message_dup(f->cmds, NULL, "/etc/passwd"));
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
}

static void run_and_done_events_carry_id_args_and_kind(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d;
    cdsh_command_def def = def_of("undo", "error");
    cdsh_commands_register(f->cmds, NULL, &def, &d, NULL);
    json_array_clear(f->events);
    cdsh_command_outcome out;
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/undo 2", NULL, NULL, &out, NULL), 1);
    assert_int_equal(out.kind, CDSH_COMMAND_ERROR);
    assert_string_equal(out.text, "nothing to undo");
    assert_int_equal(json_array_size(f->events), 2);
    json_t *run = json_array_get(f->events, 0), *done = json_array_get(f->events, 1);
    assert_string_equal(json_string_value(json_object_get(run, "name")), "command/run");
    json_t *rp = json_object_get(run, "payload");
    assert_string_equal(json_string_value(json_object_get(rp, "commandId")), out.command_id);
    assert_string_equal(json_string_value(json_object_get(rp, "name")), "undo");
    assert_string_equal(json_string_value(json_object_get(rp, "args")), " 2");
    assert_string_equal(json_string_value(json_object_get(json_object_get(rp, "source"), "kind")),
                        "user");
    json_t *dp = json_object_get(done, "payload");
    assert_string_equal(json_string_value(json_object_get(done, "name")), "command/done");
    assert_string_equal(json_string_value(json_object_get(dp, "commandId")), out.command_id);
    assert_string_equal(json_string_value(json_object_get(dp, "kind")), "error");
    assert_string_equal(json_string_value(json_object_get(dp, "text")), "nothing to undo");
    cdsh_commands_outcome_clear(&out);
    cdsh_disposer_run(&d);
}

/* DSH's sourceEventSeq: a success may name the session event it stands for;
 * it is in the outcome and in command/done; absent when 0; negative is invalid. */
static void source_event_seq_reaches_outcome_and_done(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d1, d2, d3;
    cdsh_command_def a = def_of("note", "seq"), b = def_of("plain", NULL),
                     c = def_of("bad", "neg-seq");
    cdsh_commands_register(f->cmds, NULL, &a, &d1, NULL);
    cdsh_commands_register(f->cmds, NULL, &b, &d2, NULL);
    cdsh_commands_register(f->cmds, NULL, &c, &d3, NULL);
    json_array_clear(f->events);
    cdsh_command_outcome out;
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/note", NULL, NULL, &out, NULL), 1);
    assert_int_equal(out.source_event_seq, 41);
    json_t *dp = json_object_get(json_array_get(f->events, 1), "payload");
    assert_int_equal(json_integer_value(json_object_get(dp, "sourceEventSeq")), 41);
    cdsh_commands_outcome_clear(&out);
    json_array_clear(f->events);
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/plain", NULL, NULL, &out, NULL), 1);
    assert_int_equal(out.source_event_seq, 0);
    dp = json_object_get(json_array_get(f->events, 1), "payload");
    assert_null(json_object_get(dp, "sourceEventSeq"));
    cdsh_commands_outcome_clear(&out);
    json_array_clear(f->events);
    cdsh_error err = {0};
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/bad", NULL, NULL, &out, &err),
                     CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_COMMAND_RESULT");
    assert_string_equal(err.message, "/bad returned a negative sourceEventSeq");
    dp = json_object_get(json_array_get(f->events, 1), "payload");
    assert_string_equal(json_string_value(json_object_get(dp, "kind")), "error");
    assert_null(json_object_get(dp, "sourceEventSeq"));
    cdsh_commands_outcome_clear(&out);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
    cdsh_disposer_run(&d3);
}

static void hidden_input_is_not_recorded(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d;
    cdsh_command_def def = def_of("login", "silent");
    def.hide_input = true;
    cdsh_commands_register(f->cmds, NULL, &def, &d, NULL);
    json_array_clear(f->events);
    cdsh_command_outcome out;
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/login secret", NULL, NULL, &out, NULL),
                     1);
    json_t *rp = json_object_get(json_array_get(f->events, 0), "payload");
    assert_null(json_object_get(rp, "args"));
    json_t *dp = json_object_get(json_array_get(f->events, 1), "payload");
    assert_string_equal(json_string_value(json_object_get(dp, "kind")), "success");
    assert_null(json_object_get(dp, "text")); /* success without text */
    assert_null(out.text);
    cdsh_commands_outcome_clear(&out);
    cdsh_disposer_run(&d);
}

static void handler_failure_reports_done_error_and_returns_its_code(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d;
    cdsh_command_def def = def_of("boom", "fail");
    cdsh_commands_register(f->cmds, NULL, &def, &d, NULL);
    json_array_clear(f->events);
    cdsh_command_outcome out;
    cdsh_error err = {0};
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/boom", NULL, NULL, &out, &err),
                     CDSH_EIO);
    assert_string_equal(err.code, "BOOM");
    json_t *dp = json_object_get(json_array_get(f->events, 1), "payload");
    assert_string_equal(json_string_value(json_object_get(dp, "kind")), "error");
    assert_string_equal(json_string_value(json_object_get(dp, "text")), "the handler blew up");
    cdsh_commands_outcome_clear(&out);
    json_array_clear(f->events); /* without an error out-parameter the event still says why */
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/boom", NULL, NULL, &out, NULL),
                     CDSH_EIO);
    dp = json_object_get(json_array_get(f->events, 1), "payload");
    assert_string_equal(json_string_value(json_object_get(dp, "text")), "the handler blew up");
    cdsh_disposer_run(&d);
}

static void error_result_without_text_is_invalid(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d1, d2;
    cdsh_command_def a = def_of("blank", "blank-error"), b = def_of("weird", "bad-kind");
    cdsh_commands_register(f->cmds, NULL, &a, &d1, NULL);
    cdsh_commands_register(f->cmds, NULL, &b, &d2, NULL);
    cdsh_command_outcome out;
    cdsh_error err = {0};
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/blank", NULL, NULL, &out, &err),
                     CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_COMMAND_RESULT");
    assert_string_equal(err.message, "/blank returned an error result without text");
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/weird", NULL, NULL, &out, &err),
                     CDSH_EINVAL);
    assert_string_equal(err.message, "/weird returned an unknown result kind");
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
}

static void images_need_a_command_that_accepts_them(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d1, d2;
    cdsh_command_def plain = def_of("plain", NULL), pics = def_of("pics", NULL);
    pics.input_hint = "an image";
    pics.accepts_images = true;
    cdsh_commands_register(f->cmds, NULL, &plain, &d1, NULL);
    cdsh_commands_register(f->cmds, NULL, &pics, &d2, NULL);
    json_t *imgs = json_pack("[{s:s}]", "type", "image");
    cdsh_command_outcome out;
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/plain", imgs, NULL, &out, NULL), 1);
    assert_int_equal(out.kind, CDSH_COMMAND_ERROR);
    assert_string_equal(out.text, "/plain does not accept image attachments");
    cdsh_commands_outcome_clear(&out);
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/pics", imgs, NULL, &out, NULL), 1);
    assert_string_equal(out.text, "pics|||1");
    cdsh_commands_outcome_clear(&out);
    json_decref(imgs);
    cdsh_disposer_run(&d1);
    cdsh_disposer_run(&d2);
}

static void cancelled_token_fails_the_run(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d;
    cdsh_command_def def = def_of("slow", NULL);
    cdsh_commands_register(f->cmds, NULL, &def, &d, NULL);
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_cancel_fire(tok, "user pressed stop");
    cdsh_command_outcome out;
    cdsh_error err = {0};
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/slow", NULL, tok, &out, &err),
                     CDSH_ECANCELED);
    assert_string_equal(err.code, "cancelled");
    json_t *last = json_array_get(f->events, json_array_size(f->events) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "name")), "command/done");
    cdsh_cancel_free(tok);
    cdsh_disposer_run(&d);
}

static void agent_registration_shadows_global_for_that_agent_only(void **state)
{
    fixture *f = *state;
    cdsh_scope *preset = cdsh_scope_new("preset", NULL);
    cdsh_scope *a = cdsh_scope_new("a", preset);
    cdsh_scope *b = cdsh_scope_new("b", NULL);
    cdsh_disposer_t dg, dp;
    cdsh_command_def g = def_of("help", NULL);
    g.description = "global help";
    cdsh_command_def p = def_of("help", NULL);
    p.description = "preset help";
    cdsh_commands_register(f->cmds, NULL, &g, &dg, NULL);
    cdsh_commands_register(f->cmds, preset, &p, &dp, NULL);
    json_t *da = cdsh_commands_find(f->cmds, a, "help");
    json_t *db = cdsh_commands_find(f->cmds, b, "help");
    json_t *dglob = cdsh_commands_find(f->cmds, NULL, "help");
    assert_string_equal(json_string_value(json_object_get(da, "description")), "preset help");
    assert_string_equal(json_string_value(json_object_get(db, "description")), "global help");
    assert_string_equal(json_string_value(json_object_get(dglob, "description")), "global help");
    json_decref(da);
    json_decref(db);
    json_decref(dglob);
    cdsh_command_outcome out;
    assert_int_equal(cdsh_commands_execute(f->cmds, a, "/help me", NULL, NULL, &out, NULL), 1);
    assert_string_equal(out.text, "help| me|a|0");
    cdsh_commands_outcome_clear(&out);
    cdsh_disposer_run(&dp);
    json_t *again = cdsh_commands_find(f->cmds, a, "help");
    assert_string_equal(json_string_value(json_object_get(again, "description")), "global help");
    json_decref(again);
    cdsh_disposer_run(&dg);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
    cdsh_scope_unref(preset);
}

static void agent_commands_are_invisible_to_other_agents(void **state)
{
    fixture *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL), *b = cdsh_scope_new("b", NULL);
    cdsh_disposer_t d;
    cdsh_command_def def = def_of("mine", NULL);
    cdsh_commands_register(f->cmds, a, &def, &d, NULL);
    cdsh_command_outcome out;
    assert_int_equal(cdsh_commands_execute(f->cmds, b, "/mine", NULL, NULL, &out, NULL), 0);
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/mine", NULL, NULL, &out, NULL), 0);
    assert_int_equal(cdsh_commands_execute(f->cmds, a, "/mine", NULL, NULL, &out, NULL), 1);
    cdsh_commands_outcome_clear(&out);
    cdsh_disposer_run(&d);
    cdsh_scope_unref(a);
    cdsh_scope_unref(b);
}

static void list_is_sorted_with_input_hints(void **state)
{
    fixture *f = *state;
    cdsh_scope *a = cdsh_scope_new("a", NULL);
    cdsh_disposer_t d[4];
    cdsh_command_def z = def_of("zeta", NULL), al = def_of("alpha", NULL), m = def_of("mid", NULL);
    al.input_hint = "<fen>";
    cdsh_command_def own = def_of("beta", NULL);
    cdsh_commands_register(f->cmds, NULL, &z, &d[0], NULL);
    cdsh_commands_register(f->cmds, NULL, &al, &d[1], NULL);
    cdsh_commands_register(f->cmds, NULL, &m, &d[2], NULL);
    cdsh_commands_register(f->cmds, a, &own, &d[3], NULL);
    json_t *g = cdsh_commands_list(f->cmds, NULL);
    char *s = json_dumps(g, JSON_COMPACT);
    assert_string_equal(s, "[{\"name\":\"alpha\",\"description\":\"does a thing\","
                           "\"input\":{\"hint\":\"<fen>\"}},"
                           "{\"name\":\"mid\",\"description\":\"does a thing\"},"
                           "{\"name\":\"zeta\",\"description\":\"does a thing\"}]");
    free(s);
    json_decref(g);
    json_t *la = cdsh_commands_list(f->cmds, a);
    assert_int_equal(json_array_size(la), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(la, 1), "name")), "beta");
    json_decref(la);
    for (int i = 0; i < 4; i++)
        cdsh_disposer_run(&d[i]);
    cdsh_scope_unref(a);
}

static void change_event_on_register_and_dispose(void **state)
{
    fixture *f = *state;
    cdsh_disposer_t d;
    cdsh_command_def def = def_of("x", NULL);
    json_array_clear(f->events);
    cdsh_commands_register(f->cmds, NULL, &def, &d, NULL);
    cdsh_disposer_run(&d);
    assert_int_equal(json_array_size(f->events), 2);
    for (size_t i = 0; i < 2; i++)
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(f->events, i), "name")),
            "commands/change");
}

static int dispose_during_run(void *arg, const cdsh_command_invocation *inv,
                              cdsh_command_result *out, cdsh_error *err)
{
    (void)inv, (void)err;
    cdsh_disposer_run(arg);
    return cdsh_command_result_set(out, CDSH_COMMAND_SUCCESS, "still ran");
}

static void command_disposed_by_its_own_handler_finishes_the_run(void **state)
{
    fixture *f = *state;
    static cdsh_disposer_t d;
    cdsh_command_def def = {
        .name = "once", .description = "d", .handler = dispose_during_run, .arg = &d};
    cdsh_commands_register(f->cmds, NULL, &def, &d, NULL);
    cdsh_command_outcome out;
    assert_int_equal(cdsh_commands_execute(f->cmds, NULL, "/once", NULL, NULL, &out, NULL), 1);
    assert_string_equal(out.text, "still ran");
    cdsh_commands_outcome_clear(&out);
    assert_int_equal(cdsh_commands_count(f->cmds), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(name_rule_is_lowercase_slug),
        T(register_refuses_bad_names_with_the_pattern),
        T(register_refuses_blank_description_hint_or_no_handler),
        T(duplicate_in_same_layer_is_refused),
        cmocka_unit_test(parse_takes_name_and_keeps_separator),
        cmocka_unit_test(parse_rejects_non_commands),
        T(execute_runs_handler_with_raw_input),
        T(command_ids_count_up_per_registry),
        T(unknown_or_plain_text_is_not_handled_and_emits_nothing),
        T(unknown_message_names_the_available_commands),
        T(run_and_done_events_carry_id_args_and_kind),
        T(source_event_seq_reaches_outcome_and_done),
        T(hidden_input_is_not_recorded),
        T(handler_failure_reports_done_error_and_returns_its_code),
        T(error_result_without_text_is_invalid),
        T(images_need_a_command_that_accepts_them),
        T(cancelled_token_fails_the_run),
        T(agent_registration_shadows_global_for_that_agent_only),
        T(agent_commands_are_invisible_to_other_agents),
        T(list_is_sorted_with_input_hints),
        T(change_event_on_register_and_dispose),
        T(command_disposed_by_its_own_handler_finishes_the_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
