/* cmd_run.c — `cdsh run "<prompt>"`: one headless turn on a new or given
 * session, streamed to the terminal or printed as JSON event lines. */
#include "cli/cmd_run.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_agent.h"
#include "host/cli_approval.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh run \"<prompt>\" [--session ID] [--json] [--profile NAME]\n"
                 "                [--approve allow|reject]\n"
                 "\n"
                 "Runs one agent turn: sends the prompt, streams the reply, runs the tools the\n"
                 "model calls, and stops when the model is done or a limit is hit.\n"
                 "\n"
                 "Options:\n"
                 "  --session ID      continue this session (default: a new one)\n"
                 "  --json            print every event as one JSON line on stdout (approval\n"
                 "                    requests and their endings too: approval/request,\n"
                 "                    approval/resolved)\n"
                 "  --profile NAME    plugin profile (default \"default\")\n"
                 "  --approve allow|reject\n"
                 "                    answer every approval (a tool that asks) so, without\n"
                 "                    asking\n"
                 "  -h, --help        show this help\n"
                 "\n"
                 "Approvals: without --approve a tool that asks is asked on the terminal\n"
                 "(stderr; answer with the option's number or label, 0 or Ctrl-C cancels).\n"
                 "When stdin is not a terminal nobody can answer, so the tool is refused\n"
                 "(fail closed); pass --approve allow to let it run.\n"
                 "\n"
                 "Exit status: 0 done, 1 error (model or store), 2 usage, 3 step or token\n"
                 "limit hit, 130 cancelled (Ctrl-C).\n");
}

int cdsh_cmd_run(int argc, char **argv)
{
    cdsh_cli_session_opts o;
    int parsed = cdsh_cli_session_opts_parse(argc, argv, CDSH_CLI_OPT_JSON | CDSH_CLI_OPT_APPROVE,
                                             usage, &o);
    if (parsed >= 0)
        return parsed;
    const char *session = o.session, *profile = o.profile;
    int json = o.json;
    if (optind != argc - 1 || !*argv[optind]) {
        fprintf(stderr, "cdsh run: give exactly one non-empty prompt (quote it)\n");
        return 2;
    }
    const char *prompt = argv[optind];
    cdsh_cli_agent a;
    if (cdsh_cli_agent_open("run", profile, &a))
        return 1;
    int status = 1;
    cdsh_cli_printer pr = {
        .out = stdout, .info = stderr, .json = json, .color = !json && isatty(2)};
    cdsh_cli_approvals ap = {0};
    char *sid = NULL;
    if (cdsh_cli_approvals_open_oneshot("run", &ap, cdsh_host_tools(a.host), o.approve,
                                        json ? cdsh_cli_print_event : NULL, &pr))
        goto done;
    sid = cdsh_cli_session_pick("run", &a, session, prompt);
    if (!sid)
        goto done;
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_cli_sigint_start(false);
    cdsh_cli_sigint_set_turn(tok);
    cdsh_agent_outcome out;
    cdsh_error err = {0};
    int rc = cdsh_agent_run_turn(a.agent, sid, prompt, tok, cdsh_cli_print_event, &pr, &out, &err);
    cdsh_cli_sigint_set_turn(NULL);
    cdsh_cli_sigint_stop();
    cdsh_cancel_free(tok);
    if (rc) {
        fprintf(stderr, "cdsh run: %s: %s\n", err.code, err.message);
    } else {
        status = cdsh_cli_turn_status(&out);
        if (!json)
            fprintf(stderr, "%s(session %s, turn %lld: %s)%s\n", pr.color ? "\033[2m" : "", sid,
                    (long long)out.turn, out.reason, pr.color ? "\033[0m" : "");
        cdsh_agent_outcome_deinit(&out);
    }
done:
    free(sid);
    cdsh_cli_approvals_close(&ap);
    cdsh_cli_agent_close(&a);
    return status;
}
