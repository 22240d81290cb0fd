/* cmd_acp_prompt.c — `cdsh acp prompt <engine> TEXT`: binds a cdsh session
 * id to the engine, sends one message through the ACP service and prints
 * the streamed reply (text on stdout, everything else on stderr).
 * Permission requests are asked on the terminal (cli_approval.c) with the
 * agent's own option labels; without a terminal (and without --approve)
 * they are cancelled. */
#include "plugins/acp/cmd_acp_prompt.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "base/random.h"
#include "host/cli.h"
#include "host/cli_approval.h"
#include "plugins/acp/service.h"
#include "plugins/acp/state.h"

static volatile sig_atomic_t interrupted; /* the first signal that cancelled the turn */

static volatile sig_atomic_t sigints; /* Ctrl-C presses */
static volatile sig_atomic_t sigterms; /* SIGTERM / SIGHUP */
static volatile sig_atomic_t stdout_gone; /* a write to stdout failed (EPIPE) */

static void on_signal(int sig)
{
    if (!interrupted)
        interrupted = sig;
    if (sig == SIGINT && sigints < 1000)
        sigints++;
    if ((sig == SIGTERM || sig == SIGHUP) && sigterms < 1000)
        sigterms++;
}

typedef struct watch {
    cdsh_cancel *cancel;
    cdsh_acp_service *svc;
    const char *sid;
    volatile int stop;
} watch;

/* The first Ctrl-C, SIGTERM or SIGHUP, or a stdout nobody reads any more,
 * cancels the turn (session/cancel; the turn waits the engine's
 * cancelGraceMs for the answer, then gives up and the agent is disposed). A
 * second Ctrl-C goes to the agent's process group (it runs in a group of
 * its own, so the terminal's signal reaches only cdsh), as if the agent ran
 * in the terminal; a second SIGTERM / SIGHUP sends SIGTERM there, so a
 * supervisor that insists does not wait for the grace. */
static void *watch_main(void *arg)
{
    watch *w = arg;
    bool cancelled = false, forwarded = false, terminated = false;
    while (!w->stop) {
        if ((interrupted || stdout_gone) && !cancelled) {
            cancelled = true;
            cdsh_cancel_fire(w->cancel, stdout_gone ? "stdout closed" : "interrupted");
            if (interrupted == SIGINT)
                fprintf(stderr, "\ncancelling the turn… (Ctrl-C again interrupts the agent's "
                                "processes)\n");
            else
                fprintf(stderr, "\ncancelling (%s)…\n",
                        stdout_gone ? "stdout closed" : strsignal(interrupted));
        }
        if (sigints >= 2 && !forwarded) {
            forwarded = true;
            if (cdsh_acp_service_interrupt(w->svc, w->sid, SIGINT, NULL) == 0)
                fprintf(stderr, "\ninterrupt sent to the agent's process group\n");
        }
        if (sigterms >= 2 && !terminated) {
            terminated = true;
            if (cdsh_acp_service_interrupt(w->svc, w->sid, SIGTERM, NULL) == 0)
                fprintf(stderr, "\nSIGTERM sent to the agent's process group\n");
        }
        usleep(50 * 1000);
    }
    return NULL;
}

typedef struct cli_sink {
    bool quiet;
} cli_sink;

static void print_content_text(FILE *f, const json_t *content)
{
    const char *t = json_string_value(json_object_get(content, "text"));
    if (t)
        fputs(t, f);
    else if (json_is_object(content))
        fprintf(f, "[%s]",
                json_string_value(json_object_get(content, "type"))
                    ? json_string_value(json_object_get(content, "type"))
                    : "content");
}

static void sink_update(void *ud, const char *sid, cdsh_acp_update_kind kind, const char *kind_name,
                        const json_t *u)
{
    cli_sink *s = ud;
    (void)sid;
    size_t i;
    json_t *e;
    switch (kind) {
    case CDSH_ACP_UPDATE_AGENT_MESSAGE_CHUNK:
        if (stdout_gone)
            return;
        print_content_text(stdout, json_object_get(u, "content"));
        if (fflush(stdout) != 0 || ferror(stdout))
            stdout_gone = 1; /* nobody reads the reply: the turn is cancelled */
        return;
    default: break;
    }
    if (s->quiet)
        return;
    switch (kind) {
    case CDSH_ACP_UPDATE_AGENT_THOUGHT_CHUNK:
        fputs("[thought] ", stderr);
        print_content_text(stderr, json_object_get(u, "content"));
        fputc('\n', stderr);
        break;
    case CDSH_ACP_UPDATE_USER_MESSAGE_CHUNK:
        fputs("[user] ", stderr);
        print_content_text(stderr, json_object_get(u, "content"));
        fputc('\n', stderr);
        break;
    case CDSH_ACP_UPDATE_TOOL_CALL:
    case CDSH_ACP_UPDATE_TOOL_CALL_UPDATE: {
        const char *title = json_string_value(json_object_get(u, "title"));
        const char *status = json_string_value(json_object_get(u, "status"));
        fprintf(stderr, "[%s] %s%s%s%s\n", kind_name,
                json_string_value(json_object_get(u, "toolCallId"))
                    ? json_string_value(json_object_get(u, "toolCallId"))
                    : "?",
                title ? " " : "", title ? title : "", status ? "" : "");
        if (status)
            fprintf(stderr, "    status: %s\n", status);
        json_array_foreach(json_object_get(u, "content"), i, e) {
            fputs("    ", stderr);
            if (json_is_object(json_object_get(e, "content")))
                print_content_text(stderr, json_object_get(e, "content"));
            else if (json_is_string(json_object_get(e, "path")))
                fprintf(stderr, "diff %s", json_string_value(json_object_get(e, "path")));
            fputc('\n', stderr);
        }
        break;
    }
    case CDSH_ACP_UPDATE_PLAN:
        fputs("[plan]\n", stderr);
        json_array_foreach(json_object_get(u, "entries"), i, e) {
            fprintf(stderr, "    [%s] %s\n", json_string_value(json_object_get(e, "status")),
                    json_string_value(json_object_get(e, "content")));
        }
        break;
    case CDSH_ACP_UPDATE_CURRENT_MODE:
        fprintf(stderr, "[mode] %s\n", json_string_value(json_object_get(u, "currentModeId")));
        break;
    case CDSH_ACP_UPDATE_USAGE:
        fprintf(stderr, "[usage] %lld/%lld tokens\n",
                (long long)json_integer_value(json_object_get(u, "used")),
                (long long)json_integer_value(json_object_get(u, "size")));
        break;
    case CDSH_ACP_UPDATE_UNKNOWN:
        fprintf(stderr, "[%s] (not understood by cdsh; ignored)\n", kind_name);
        break;
    default: fprintf(stderr, "[%s]\n", kind_name); break;
    }
}

/* Handshake progress on stderr: a slow (cold) agent start is visible. */
static void print_wait(void *ud, const char *name, const char *step, int64_t elapsed_ms,
                       int64_t budget_ms)
{
    (void)ud;
    fprintf(stderr, "waiting for %s to %s… %lld s (gives up after %lld s)\n", name,
            strcmp(step, "initialize") == 0 ? "initialize" : step,
            (long long)(elapsed_ms / 1000), (long long)(budget_ms / 1000));
}

static void print_warnings(const json_t *warnings)
{
    size_t i;
    json_t *wv;
    json_array_foreach(warnings, i, wv) {
        fprintf(stderr, "warning: %s\n", json_string_value(wv));
    }
}

static void usage(FILE *out)
{
    fprintf(
        out,
        "Usage: cdsh acp prompt <engine> TEXT [--session ID] [--cwd DIR] [--approve allow|reject]\n"
        "                        [--json] [--quiet]\n"
        "\n"
        "Binds the cdsh session ID (default: a new one) to <engine> and sends TEXT. The\n"
        "reply streams to stdout; thoughts, tool calls, plans and other updates go to\n"
        "stderr. A session's engine cannot change after its first message; sending to\n"
        "the same --session later resumes it (session/load or session/resume).\n"
        "--cdsh-tools GLOB offers cdsh's own tools matching GLOB (`cdsh mcp`) to the\n"
        "engine as an MCP server in session/new. Ctrl-C cancels the turn; a second\n"
        "Ctrl-C interrupts the agent's process group. SIGTERM and SIGHUP cancel too\n"
        "(a second one sends SIGTERM to the agent's group), also while the agent\n"
        "starts; no agent is left running. Without\n"
        "--session the binding is removed afterwards. Only the new turn's reply is\n"
        "printed, never history a resumed session replays. Exit 0 on a finished turn,\n"
        "1 on a failed, cancelled or refused one.\n");
}

/* The command line. */
typedef struct prompt_args {
    const char *engine, *text, *session, *cwd, *tools_glob;
    const char *approve; /* NULL: ask on a terminal; "allow" / "reject" */
    bool as_json, quiet;
} prompt_args;

/* -1 when the arguments are good, else the exit status (0 for --help, 2). */
static int parse_args(int argc, char **argv, prompt_args *a, char *here, size_t here_size)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            a->as_json = true;
        else if (strcmp(argv[i], "--quiet") == 0)
            a->quiet = true;
        else if (strcmp(argv[i], "--session") == 0 && i + 1 < argc)
            a->session = argv[++i];
        else if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc)
            a->cwd = argv[++i];
        else if (strcmp(argv[i], "--approve") == 0 && i + 1 < argc)
            a->approve = argv[++i];
        else if (strcmp(argv[i], "--cdsh-tools") == 0 && i + 1 < argc)
            a->tools_glob = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] != '-' && !a->engine)
            a->engine = argv[i];
        else if (argv[i][0] != '-' && !a->text)
            a->text = argv[i];
        else {
            fprintf(stderr, "cdsh acp prompt: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!a->engine || !a->text) {
        usage(stderr);
        return 2;
    }
    if (a->approve && strcmp(a->approve, "allow") != 0 && strcmp(a->approve, "reject") != 0) {
        fprintf(stderr, "cdsh acp prompt: --approve takes allow or reject\n");
        return 2;
    }
    if (!a->cwd)
        a->cwd = getcwd(here, here_size) ? here : "/";
    if (a->cwd[0] != '/') {
        fprintf(stderr, "cdsh acp prompt: --cwd must be an absolute path\n");
        return 2;
    }
    return -1;
}

int cdsh_cmd_acp_prompt(int argc, char **argv)
{
    prompt_args a = {0};
    char here[4096];
    int parsed = parse_args(argc, argv, &a, here, sizeof here);
    if (parsed >= 0)
        return parsed;
    /* A reader of stdout or stderr that went away must not kill cdsh with
     * the agent left running: writes fail (EPIPE) instead, and a failed
     * write of the reply cancels the turn. (Children get SIGPIPE back:
     * base/process.c resets it across exec.) */
    signal(SIGPIPE, SIG_IGN);
    const char *engine = a.engine, *text = a.text, *session = a.session, *cwd = a.cwd;
    const char *tools_glob = a.tools_glob, *approve = a.approve;
    bool as_json = a.as_json;
    cli_sink sink = {.quiet = a.quiet};
    char *sid = session ? strdup(session) : cdsh_random_id_dup("cli-");
    cdsh_error err = {0};
    /* --cdsh-tools GLOB offers cdsh's own tools (cdsh mcp) to engines that take MCP servers. */
    json_t *mcp =
        tools_glob ? json_pack("[o]", cdsh_acp_cdsh_mcp_server_dup(NULL, tools_glob)) : NULL;
    cdsh_approvals *approvals = cdsh_approvals_new(0);
    cdsh_cli_approver_opts ao = {
        .out = stderr,
        .auto_answer = approve,
        .hint = "no terminal to ask: cancelled (use --approve allow|reject)",
    };
    cdsh_cli_approver *approver = approvals ? cdsh_cli_approver_new(approvals, &ao) : NULL;
    /* One token for the agent's start and the turn; it outlives the service. */
    cdsh_cancel *cancel = cdsh_cancel_new(NULL);
    cdsh_acp_service_opts so = {
        .mcp_servers = mcp, .approvals = approvals, .on_wait = print_wait, .cancel = cancel};
    cdsh_acp_service *svc =
        approver && cancel ? cdsh_acp_service_new(cdsh_cli_home(), &so, &err) : NULL;
    json_decref(mcp);
    if (!svc || !sid) {
        fprintf(stderr, "cdsh acp prompt: %s\n", err.message[0] ? err.message : "out of memory");
        cdsh_cli_approver_free(approver);
        cdsh_approvals_free(approvals);
        cdsh_cancel_free(cancel);
        free(sid);
        return 1;
    }
    /* Ctrl-C, SIGTERM and SIGHUP cancel, from here on: while the agent
     * starts (the handshake fails CANCELED and leaves nothing running) and
     * during the turn (the agent is then disposed, never orphaned). */
    struct sigaction sa = {0}, old, old_term, old_hup;
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    watch w = {cancel, svc, sid, 0};
    pthread_t wt;
    bool watching = pthread_create(&wt, NULL, watch_main, &w) == 0;
    bool opened = false;
    int code = 1;
    if (cdsh_acp_service_bind(svc, sid, engine, cwd, &err) < 0) {
        fprintf(stderr, "cdsh acp prompt: error [%s]: %s\n", err.code, err.message);
        goto done;
    }
    /* Opened before the turn with no sink: what a session/load replays is
     * history, not this turn's reply (the chat front end does the same), and
     * the open's warnings (an unapplied initial config option) print before
     * the turn's own lines. */
    json_t *open_warnings = NULL;
    int orc = cdsh_acp_service_open(svc, sid, NULL, &open_warnings, &err);
    print_warnings(open_warnings);
    json_decref(open_warnings);
    if (orc < 0) {
        if (interrupted) /* the handshake was given up: said plainly */
            fprintf(stderr, "error [CANCELED]: interrupted while the agent started; nothing was "
                            "sent, no agent left running (%s)\n",
                    err.message);
        else
            fprintf(stderr, "error [%s]: %s\n", err.code[0] ? err.code : "UNKNOWN", err.message);
        goto done;
    }
    opened = true;
    cdsh_acp_turn_sink ts = {sink_update, &sink};
    json_t *res = cdsh_acp_service_prompt(svc, sid, text, &ts, cancel);
    if (!res) {
        fprintf(stderr, "cdsh acp prompt: out of memory\n");
        goto done;
    }
    json_object_set_new(res, "session", json_string(sid));
    print_warnings(json_object_get(res, "warnings"));
    if (as_json) {
        char *t = cdsh_json_dump_compact_dup(res);
        printf("\n%s\n", t ? t : "{}");
        free(t);
    } else {
        fputc('\n', stdout);
    }
    const char *stop = json_string_value(json_object_get(res, "stopReason"));
    if (json_is_true(json_object_get(res, "ok")) && stop &&
        (strcmp(stop, "cancelled") == 0 || strcmp(stop, "refusal") == 0)) {
        /* The agent ended the turn without doing it (Codex's "abort" on a
         * rejected permission answers cancelled): not a success. */
        fprintf(stderr, "error [%s]: %s\n", strcmp(stop, "cancelled") == 0 ? "CANCELLED" : "REFUSED",
                interrupted == SIGINT           ? "the turn was interrupted (Ctrl-C)"
                : interrupted                   ? "the turn was interrupted (a signal)"
                : stdout_gone                   ? "the turn was cancelled: stdout was closed"
                : strcmp(stop, "cancelled") == 0 ? "the engine ended the turn as cancelled "
                                                   "(stopReason \"cancelled\"; a rejected "
                                                   "permission aborts the turn in some agents)"
                                                 : "the engine refused to continue (stopReason "
                                                   "\"refusal\")");
    } else if (json_is_true(json_object_get(res, "ok"))) {
        code = 0;
        fprintf(stderr, "[%s] session %s (engine %s)%s\n", stop ? stop : "end_turn", sid, engine,
                session ? "" : " — not kept; pass --session ID to continue a conversation");
    } else {
        fprintf(stderr, "error [%s]: %s\n", json_string_value(json_object_get(res, "code")),
                json_string_value(json_object_get(res, "message")));
    }
    json_decref(res);
done:
    w.stop = 1;
    if (watching)
        pthread_join(wt, NULL);
    sigaction(SIGINT, &old, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    if (opened)
        cdsh_acp_service_release(svc, sid, NULL);
    /* Without --session the conversation cannot be continued: its binding
     * is not left behind in sessions.json. */
    if (svc && sid && !session)
        cdsh_acp_state_session_remove(cdsh_cli_home(), sid, NULL);
    cdsh_acp_service_free(svc);
    cdsh_cancel_free(cancel);
    cdsh_cli_approver_free(approver);
    cdsh_approvals_free(approvals);
    free(sid);
    return code;
}
