/* fuzz_acp_agent_stream.c — arbitrary bytes as what an ACP agent writes on
 * its stdout in the middle of a turn, through the real client (conn.c and
 * classify.c): a /bin/sh "agent" answers initialize and session/new, then on
 * session/prompt writes the input verbatim (updates, requests for files or
 * permission, stray responses, garbage, giant or broken lines) before its
 * own end_turn answer. Nothing may crash, hang or leak; the prompt ends
 * exactly once with a result or a classified error. Terminals and writes
 * are off (fuzz bytes must never run or write anything); reads are confined
 * to an empty temporary directory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "proto/acp/classify.h"
#include "proto/acp/conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Takes the numeric id of the request line in $l (the agent side of the
 * script). Parameter expansion, not sed: three fewer processes per run. */
#define ID_OF "id=${l#*\\\"id\\\":}; id=${id%%[!0-9]*}"

static const char SCRIPT[] =
    "IFS= read -r l; " ID_OF "; "
    "printf '{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":1,"
    "\"agentCapabilities\":{\"loadSession\":true}}}\\n' \"$id\"; "
    "IFS= read -r l; " ID_OF "; "
    "printf '{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"sessionId\":\"s1\"}}\\n' \"$id\"; "
    "IFS= read -r l; " ID_OF "; "
    "cat \"$1\"; "
    "printf '\\n{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"stopReason\":\"end_turn\"}}\\n' "
    "\"$id\"; "
    "exec cat >/dev/null";

static void on_update(void *ud, cdsh_acp_update_kind kind, const char *name, const json_t *u)
{
    (void)kind;
    (void)u;
    size_t *n = ud;
    if (!name)
        abort(); /* every update is named, known or not */
    (*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 20)
        return 0;
    /* On tmpfs when there is one: the atomic write fsyncs, which on a busy
     * disk costs more than the run itself. */
    char dir[64];
    snprintf(dir, sizeof dir, "%s/cdsh-fuzz-acp-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir))
        return 0;
    char file[96], cwd[96];
    snprintf(file, sizeof file, "%s/agent-out", dir);
    snprintf(cwd, sizeof cwd, "%s/work", dir);
    if (cdsh_fs_write_atomic(file, (const char *)data, size, 0600, NULL) != 0 ||
        cdsh_fs_mkdir_p(cwd, 0700, NULL) != 0) {
        cdsh_fs_remove_tree(dir, NULL);
        return 0;
    }
    const char *argv[] = {"/bin/sh", "-c", SCRIPT, "fuzz-agent", file, NULL};
    cdsh_acp_conn_opts o = {.name = "fuzz",
                            .argv = argv,
                            .cwd = cwd,
                            .init_timeout_ms = 10000,
                            .request_timeout_ms = 10000,
                            .dispose_grace_ms = 200,
                            .fs_read = true,
                            .record = true};
    cdsh_acp_conn *c = NULL;
    cdsh_error err = {0};
    if (cdsh_acp_conn_open(&o, &c, &err) != 0)
        abort(); /* the script's own initialize answer is well-formed */
    size_t updates = 0;
    cdsh_acp_session_handlers h = {.on_update = on_update, .ud = &updates};
    char *sid = NULL;
    if (cdsh_acp_conn_session_open(c, CDSH_ACP_OPEN_NEW, NULL, cwd, NULL, &h, &sid, &err) != 0)
        abort();
    json_t *prompt = json_pack("[{s:s,s:s}]", "type", "text", "text", "go");
    cdsh_acp_prompt_opts po = {.idle_timeout_ms = 10000, .total_timeout_ms = 20000};
    cdsh_acp_prompt_result res = {0};
    int rc = cdsh_acp_conn_prompt(c, sid, prompt, &po, NULL, &res, &err);
    if (rc == 0) {
        if (!res.stop_reason[0])
            abort();
    } else if (!cdsh_acp_classify_error(rc, err.code, err.message)) {
        abort();
    }
    cdsh_acp_prompt_result_deinit(&res);
    json_decref(prompt);
    json_decref(cdsh_acp_conn_raw_lines_dup(c));
    json_decref(cdsh_acp_conn_rejects_dup(c));
    json_decref(cdsh_acp_conn_callbacks_dup(c));
    free(cdsh_acp_conn_stderr_tail_dup(c));
    cdsh_acp_conn_session_release(c, sid, false, NULL);
    free(sid);
    cdsh_acp_conn_free(c);
    cdsh_fs_remove_tree(dir, NULL);
    return 0;
}
