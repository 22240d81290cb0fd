/* cmd_chat.c — `cdsh chat`: an interactive terminal session with line
 * editing (libedit), streamed replies, slash commands, and Ctrl-C that
 * cancels the running turn rather than the program. */
#include "cli/cmd_chat.h"

#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>

#include "cli/cli_agent.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh chat [--session ID] [--profile NAME]\n"
                 "\n"
                 "Chats with the model in the terminal. Lines starting with / are commands:\n"
                 "  /help  list commands     /new  start a new session    /session  show its id\n"
                 "  /exit  quit (also Ctrl-D, or Ctrl-C twice at the prompt)\n"
                 "and every slash command the enabled plugins register. Ctrl-C while the model\n"
                 "is answering cancels that turn.\n");
}

/* One line from the person: readline on a terminal, fgets otherwise.
 * NULL at end of input; *interrupted says a Ctrl-C ended the read. */
static char *read_line(bool tty, bool *interrupted)
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
    char buf[65536];
    errno = 0;
    if (!fgets(buf, sizeof buf, stdin)) {
        *interrupted = errno == EINTR;
        return NULL;
    }
    buf[strcspn(buf, "\n")] = '\0';
    return strdup(buf);
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

int cdsh_cmd_chat(int argc, char **argv)
{
    cdsh_cli_session_opts o;
    int parsed = cdsh_cli_session_opts_parse(argc, argv, false, usage, &o);
    if (parsed >= 0)
        return parsed;
    const char *session = o.session, *profile = o.profile;
    if (optind < argc) {
        fprintf(stderr, "cdsh chat: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    cdsh_cli_agent a;
    if (cdsh_cli_agent_open("chat", profile, &a))
        return 1;
    char *sid = cdsh_cli_session_pick("chat", &a, session, "chat");
    if (!sid) {
        cdsh_cli_agent_close(&a);
        return 1;
    }
    bool tty = isatty(0) && isatty(1);
    setlocale(LC_CTYPE, ""); /* libedit needs the locale for multibyte input */
    rl_catch_signals = 0;
    cdsh_cli_sigint_start(tty);
    printf("cdsh chat — session %s. /help lists commands; Ctrl-C cancels a running turn.\n", sid);
    print_model_hint();
    fflush(stdout);
    cdsh_cli_printer pr = {.out = stdout, .info = stdout, .color = tty};
    int status = 0;
    for (;;) {
        bool interrupted;
        char *line = read_line(tty, &interrupted);
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
            cdsh_agent_outcome out;
            cdsh_error err = {0};
            int rc =
                cdsh_agent_run_turn(a.agent, sid, text, tok, cdsh_cli_print_event, &pr, &out, &err);
            cdsh_cli_sigint_set_turn(NULL);
            cdsh_cancel_free(tok);
            if (rc)
                printf("%s: %s\n", err.code, err.message);
            else if (strcmp(out.reason, "done") != 0 && strcmp(out.reason, "error") != 0)
                printf("(turn ended: %s)\n", out.reason);
            if (rc == 0)
                cdsh_agent_outcome_deinit(&out);
        }
        fflush(stdout);
        free(line);
    }
    cdsh_cli_sigint_stop();
    free(sid);
    cdsh_cli_agent_close(&a);
    return status;
}
