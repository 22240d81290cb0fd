/* cmd_run.c — `cdsh run "<prompt>"`: one headless turn on a new or given
 * session, streamed to the terminal or printed as JSON event lines. */
#include "cli/cmd_run.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_agent.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh run \"<prompt>\" [--session ID] [--json] [--profile NAME]\n"
                 "\n"
                 "Runs one agent turn: sends the prompt, streams the reply, runs the tools the\n"
                 "model calls, and stops when the model is done or a limit is hit.\n"
                 "\n"
                 "Options:\n"
                 "  --session ID    continue this session (default: a new one)\n"
                 "  --json          print every event as one JSON line on stdout\n"
                 "  --profile NAME  plugin profile (default \"default\")\n"
                 "  -h, --help      show this help\n"
                 "\n"
                 "Exit status: 0 done, 1 error (model or store), 2 usage, 3 step or token\n"
                 "limit hit, 130 cancelled (Ctrl-C).\n");
}

int cdsh_cmd_run(int argc, char **argv)
{
    cdsh_cli_session_opts o;
    int parsed = cdsh_cli_session_opts_parse(argc, argv, CDSH_CLI_OPT_JSON, usage, &o);
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
    char *sid = cdsh_cli_session_pick("run", &a, session, prompt);
    if (!sid)
        goto done;
    cdsh_cancel *tok = cdsh_cancel_new(NULL);
    cdsh_cli_sigint_start(false);
    cdsh_cli_sigint_set_turn(tok);
    cdsh_cli_printer pr = {
        .out = stdout, .info = stderr, .json = json, .color = !json && isatty(2)};
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
    free(sid);
done:
    cdsh_cli_agent_close(&a);
    return status;
}
