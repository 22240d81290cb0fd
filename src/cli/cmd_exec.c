/* cmd_exec.c — `cdsh exec "/<command> args" --session ID`: runs one slash
 * command for a session and records it in the session's log. */
#include "cli/cmd_exec.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_agent.h"
#include "host/cli.h"
#include "host/cli_approval.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh exec \"/<command> args\" --session ID [--json] [--profile NAME]\n"
                 "                 [--approve allow|reject]\n"
                 "\n"
                 "Runs a slash command that the enabled plugins register (see `cdsh commands\n"
                 "list`) for a session, prints its text and records it in the session log.\n"
                 "\n"
                 "Options:\n"
                 "  --session ID      the session (required; `cdsh sessions list` shows them)\n"
                 "  --json            print {commandId, name, kind, text} as JSON\n"
                 "  --profile NAME    plugin profile (default \"default\")\n"
                 "  --approve allow|reject\n"
                 "                    answer every approval (a tool the command runs that\n"
                 "                    asks) so, without asking\n"
                 "  -h, --help        show this help\n"
                 "\n"
                 "Approvals: without --approve a tool that asks is asked on the terminal\n"
                 "(stderr; the option's number or label, 0 or Ctrl-C cancels). When stdin is\n"
                 "not a terminal the tool is refused (fail closed); --approve allow lets it run.\n"
                 "\n"
                 "Exit status: 0 success, 1 the command failed or is unknown, 2 usage.\n");
}

int cdsh_cmd_exec(int argc, char **argv)
{
    cdsh_cli_session_opts o;
    int parsed = cdsh_cli_session_opts_parse(argc, argv, CDSH_CLI_OPT_JSON | CDSH_CLI_OPT_APPROVE,
                                             usage, &o);
    if (parsed >= 0)
        return parsed;
    const char *session = o.session, *profile = o.profile;
    int json = o.json;
    if (optind != argc - 1) {
        fprintf(stderr, "cdsh exec: give exactly one command line, e.g. \"/help\"\n");
        return 2;
    }
    if (!session) {
        fprintf(stderr, "cdsh exec: --session ID is required\n");
        return 2;
    }
    cdsh_cli_agent a;
    if (cdsh_cli_agent_open("exec", profile, &a))
        return 1;
    json_t *res = NULL;
    cdsh_error err = {0};
    int status = 1;
    cdsh_cli_approvals ap;
    if (cdsh_cli_approvals_open_oneshot("exec", &ap, cdsh_host_tools(a.host), o.approve, NULL,
                                        NULL)) {
        cdsh_cli_agent_close(&a);
        return 1;
    }
    /* Ctrl-C cancels the command (and so a pending approval) rather than killing cdsh. */
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_cli_sigint_start(false);
    cdsh_cli_sigint_set_turn(tok);
    int rc = cdsh_agent_exec_command(a.agent, session, argv[optind], tok, NULL, NULL, &res, &err);
    cdsh_cli_sigint_set_turn(NULL);
    cdsh_cli_sigint_stop();
    cdsh_cancel_free(tok);
    if (rc == CDSH_EINVAL && strcmp(err.code, "NOT_A_COMMAND") == 0) {
        fprintf(stderr, "cdsh exec: %s\n", err.message);
        status = 2;
    } else if (rc) {
        fprintf(stderr, "cdsh exec: %s: %s\n", err.code, err.message);
    } else {
        const char *kind = json_string_value(json_object_get(res, "kind"));
        const char *text = json_string_value(json_object_get(res, "text"));
        status = strcmp(kind, "success") == 0 ? 0 : 1;
        if (json)
            cdsh_cli_print_json(stdout, res);
        else if (text)
            fprintf(status ? stderr : stdout, "%s%s\n", status ? "cdsh exec: " : "", text);
    }
    json_decref(res);
    cdsh_cli_approvals_close(&ap);
    cdsh_cli_agent_close(&a);
    return status;
}
