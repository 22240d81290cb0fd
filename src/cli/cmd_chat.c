/* cmd_chat.c — `cdsh chat`: an interactive terminal session with line
 * editing (libedit), streamed replies, slash commands, approvals asked on
 * the terminal, sessions a plugin runs (bound to an external engine with
 * --engine: agent/session_runner.h), and Ctrl-C that cancels the running
 * turn rather than the program. */
#include "cli/cmd_chat.h"

#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>

#include "agent/session_runner.h"
#include "cli/cli_agent.h"
#include "host/cli_approval.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: cdsh chat [--session ID] [--profile NAME] [--engine ID [--cwd DIR]]\n"
            "                 [--approve allow|reject]\n"
            "\n"
            "Chats with the model in the terminal. Lines starting with / are commands:\n"
            "  /help  list commands     /new  start a new session    /session  show its id\n"
            "  /exit  quit (also Ctrl-D, or Ctrl-C twice at the prompt)\n"
            "and every slash command the enabled plugins register. Ctrl-C while the model\n"
            "is answering cancels that turn.\n"
            "\n"
            "--engine ID binds the session to an external ACP agent (`cdsh acp engines`)\n"
            "working in --cwd DIR (default: here): messages go to it instead of the model,\n"
            "and the binding stays, so `cdsh chat --session ID` resumes it later. A session's\n"
            "engine cannot change after its first message.\n"
            "\n"
            "Approvals (a tool that asks, an agent's permission request) are asked here:\n"
            "answer with the option's number or label; 0, an empty line at end of input or\n"
            "Ctrl-C cancels. When stdin is not a terminal the answer is read from it all the\n"
            "same (a line that names no option refuses). --approve allow|reject answers\n"
            "every request so without asking.\n");
}

/* One line from the person: readline on a terminal, the line queue it
 * shares with the approval reader otherwise. NULL at end of input;
 * *interrupted says a Ctrl-C ended the read. */
static char *read_line(bool tty, cdsh_cli_lines *lines, bool *interrupted)
{
    *interrupted = false;
    if (tty) {
        int before = cdsh_cli_sigint_take_prompt_count();
        char *line = readline("> ");
        if (!line && cdsh_cli_sigint_take_prompt_count() > before)
            *interrupted = true;
        if (line && *line)
            add_history(line);
        return line;
    }
    return cdsh_cli_lines_next_dup(lines, interrupted);
}

static void print_help(cdsh_cli_agent *a)
{
    printf("Chat commands: /help, /new, /session, /exit\n");
    json_t *list = cdsh_commands_list(cdsh_host_commands(a->host), NULL);
    size_t i;
    json_t *c;
    if (json_array_size(list))
        printf("Plugin commands:\n");
    json_array_foreach(list, i, c)
        printf("  /%-12s %s\n", json_string_value(json_object_get(c, "name")),
               json_string_value(json_object_get(c, "description")));
    json_decref(list);
}

static void print_model_hint(void)
{
    cdsh_model_config resolved;
    cdsh_error err = {0};
    if (cdsh_model_config_resolve(NULL, NULL, &resolved, &err) == 0) {
        printf("Model %s at %s.\n", resolved.model, resolved.base_url);
        cdsh_model_config_deinit(&resolved);
    } else {
        printf("No model is configured (%s): set DEEPSEEK_API_KEY, or CDSH_BASE_URL and "
               "CDSH_MODEL for another OpenAI-compatible server. Commands still work.\n",
               err.code);
    }
}

/* What the chat needs for approvals (asked here for tools and for plugins'
 * engines alike: the broker is installed on the host's tools). */
typedef struct chat_engines {
    cdsh_cli_lines *lines; /* stdin's lines when it is not a terminal */
    cdsh_cli_approvals approvals;
} chat_engines;

static int engines_open(cdsh_cli_agent *a, const cdsh_cli_session_opts *o, chat_engines *e)
{
    memset(e, 0, sizeof *e);
    cdsh_error err = {0};
    /* Without readline (see the loop) the chat and the approvals share stdin's lines. */
    if (!(isatty(0) && isatty(1)) && !(e->lines = cdsh_cli_lines_new(STDIN_FILENO)))
        goto fail;
    cdsh_cli_approver_opts ao = {.out = stdout, .auto_answer = o->approve, .lines = e->lines};
    if (cdsh_cli_approvals_open(&e->approvals, cdsh_host_tools(a->host), &ao, &err) == 0)
        return 0;
fail:
    fprintf(stderr, "cdsh chat: %s\n", err.message[0] ? err.message : "out of memory");
    return -1;
}

static void engines_close(chat_engines *e)
{
    cdsh_cli_approvals_close(&e->approvals);
    cdsh_cli_lines_free(e->lines);
    memset(e, 0, sizeof *e);
}

/* Binds sid to the engine given with --engine (through the plugin that runs
 * sessions on engines); prints why not. */
static int bind_engine(cdsh_cli_agent *a, const char *sid, const char *engine, const char *cwd)
{
    const cdsh_session_runner *r = cdsh_session_runner_named(a->host, "engine");
    cdsh_error err = {0};
    if (!r || !r->bind)
        cdsh_error_set(&err, CDSH_EUNSUPPORTED, "NO_ENGINES",
                       "no enabled plugin runs sessions on engines (see `cdsh config list`)");
    else if (r->bind(r->arg, sid, engine, cwd, &err) == 0)
        return 0;
    fprintf(stderr, "cdsh chat: %s: %s\n", err.code, err.message);
    return -1;
}

static void print_runner_hint(const cdsh_session_runner *r, const char *sid)
{
    char *line = r->describe_dup ? r->describe_dup(r->arg, sid) : NULL;
    if (line)
        printf("%s\n", line);
    free(line);
}

/* One message to the plugin that runs the session, recorded like a model turn. */
static void runner_turn(cdsh_cli_agent *a, const cdsh_session_runner *r, const char *sid,
                        const char *text, cdsh_cli_printer *pr, cdsh_cancel *tok)
{
    cdsh_session_turn t = {.store = a->store,
                           .session_id = sid,
                           .text = text,
                           .cancel = tok,
                           .on_event = cdsh_cli_print_event,
                           .event_arg = pr};
    char *note = NULL;
    cdsh_error err = {0};
    if (r->run(r->arg, &t, &note, &err) != 0) {
        printf("%s: %s\n", err.code, err.message);
        return;
    }
    if (note)
        printf("(%s)\n", note);
    free(note);
}

/* One message to the model: an agent turn. */
static void model_turn(cdsh_cli_agent *a, const char *sid, const char *text, cdsh_cli_printer *pr,
                       cdsh_cancel *tok)
{
    cdsh_agent_outcome out;
    cdsh_error err = {0};
    if (cdsh_agent_run_turn(a->agent, sid, text, tok, cdsh_cli_print_event, pr, &out, &err) != 0) {
        printf("%s: %s\n", err.code, err.message);
        return;
    }
    if (strcmp(out.reason, "done") != 0 && strcmp(out.reason, "error") != 0)
        printf("(turn ended: %s)\n", out.reason);
    cdsh_agent_outcome_deinit(&out);
}

int cdsh_cmd_chat(int argc, char **argv)
{
    cdsh_cli_session_opts o;
    int parsed = cdsh_cli_session_opts_parse(argc, argv, CDSH_CLI_OPT_ENGINE | CDSH_CLI_OPT_APPROVE,
                                             usage, &o);
    if (parsed >= 0)
        return parsed;
    const char *session = o.session, *profile = o.profile;
    if (optind < argc) {
        fprintf(stderr, "cdsh chat: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    char here[4096];
    const char *cwd = o.cwd ? o.cwd : getcwd(here, sizeof here) ? here : "/";
    if (o.cwd && !o.engine) {
        fprintf(stderr, "cdsh chat: --cwd goes with --engine\n");
        return 2;
    }
    if (cwd[0] != '/') {
        fprintf(stderr, "cdsh chat: --cwd must be an absolute path\n");
        return 2;
    }
    cdsh_cli_agent a;
    if (cdsh_cli_agent_open("chat", profile, &a))
        return 1;
    chat_engines eng;
    if (engines_open(&a, &o, &eng)) {
        engines_close(&eng);
        cdsh_cli_agent_close(&a);
        return 1;
    }
    char *sid = cdsh_cli_session_pick("chat", &a, session, "chat");
    if (!sid || (o.engine && bind_engine(&a, sid, o.engine, cwd))) {
        free(sid);
        engines_close(&eng);
        cdsh_cli_agent_close(&a);
        return 1;
    }
    bool tty = isatty(0) && isatty(1);
    setlocale(LC_CTYPE, ""); /* libedit needs the locale for multibyte input */
    rl_catch_signals = 0;
    cdsh_cli_sigint_start(tty);
    printf("cdsh chat — session %s. /help lists commands; Ctrl-C cancels a running turn.\n", sid);
    const cdsh_session_runner *runner = cdsh_session_runner_find(a.host, sid);
    if (runner)
        print_runner_hint(runner, sid);
    else
        print_model_hint();
    fflush(stdout);
    cdsh_cli_printer pr = {.out = stdout, .info = stdout, .color = tty};
    int status = 0;
    for (;;) {
        bool interrupted;
        char *line = read_line(tty, eng.lines, &interrupted);
        if (!line) {
            if (interrupted)
                continue;
            break;
        }
        cdsh_cli_sigint_set_turn(NULL);
        char *text = line + strspn(line, " \t");
        if (!*text) {
            free(line);
            continue;
        }
        if (strcmp(text, "/exit") == 0 || strcmp(text, "/quit") == 0) {
            free(line);
            break;
        }
        if (strcmp(text, "/help") == 0) {
            print_help(&a);
        } else if (strcmp(text, "/session") == 0) {
            printf("%s\n", sid);
        } else if (strcmp(text, "/new") == 0) {
            char *fresh = cdsh_cli_session_pick("chat", &a, NULL, "chat");
            if (fresh && o.engine && bind_engine(&a, fresh, o.engine, cwd)) {
                free(fresh);
                fresh = NULL;
            }
            if (fresh) {
                free(sid);
                sid = fresh;
                printf("New session %s\n", sid);
            }
        } else if (text[0] == '/') {
            json_t *res = NULL;
            cdsh_error err = {0};
            if (cdsh_agent_exec_command(a.agent, sid, text, NULL, NULL, NULL, &res, &err) == 0) {
                const char *t = json_string_value(json_object_get(res, "text"));
                if (t)
                    printf("%s\n", t);
            } else {
                printf("%s\n", err.message);
            }
            json_decref(res);
        } else {
            cdsh_cancel *tok = cdsh_cancel_new(NULL);
            cdsh_cli_sigint_set_turn(tok);
            if ((runner = cdsh_session_runner_find(a.host, sid)))
                runner_turn(&a, runner, sid, text, &pr, tok);
            else
                model_turn(&a, sid, text, &pr, tok);
            cdsh_cli_sigint_set_turn(NULL);
            cdsh_cancel_free(tok);
        }
        fflush(stdout);
        free(line);
    }
    cdsh_cli_sigint_stop();
    free(sid);
    engines_close(&eng);
    cdsh_cli_agent_close(&a);
    return status;
}
