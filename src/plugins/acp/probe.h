/* probe.h — try-connect / probe of one engine (seed §6): spawn, initialize,
 * open sessions, try the optional methods, optionally run one prompt, and
 * write the evidence record (credentials redacted, raw lines verbatim
 * otherwise) under <home>/multi-acp/evidence/. Also records the
 * engine's health and probed capabilities in runtime.json. Thread-safe. */
#ifndef CDSH_PLUGINS_ACP_PROBE_H
#define CDSH_PLUGINS_ACP_PROBE_H

#include <jansson.h>

#include "base/err.h"
#include "base/home.h"
#include "proto/acp/conn.h"

typedef struct cdsh_acp_probe_opts {
    const char *prompt; /* NULL: no prompt */
    const char *cwd;    /* absolute; NULL: the current directory */
    cdsh_acp_wait_fn on_wait; /* handshake progress (conn.h); NULL: none */
    void *wait_ud;
    /* Borrowed, may be NULL. Once fired (a SIGTERM), a waiting handshake
     * and the prompt end, the remaining steps are skipped, the agent is
     * closed and the record says "cancelled" (health is not recorded). */
    cdsh_cancel *cancel;
} cdsh_acp_probe_opts;

/* Probes engine_id. A probe that reached the engine but failed is still a
 * success of this function (*record has ok:false and the step's error);
 * errors are only: unknown engine, state directory, ENOMEM. *record is the
 * redacted record (owned); *evidence_path (may be NULL) the written file
 * (owned). The record: {engineId, probedAt, command, args, resolved, via,
 * ok, spawn{ok,pid,stderrExcerpt}, initialize{ok, latencyMs, coldStart,
 * coldReason (see cdsh_acp_engine_cold_check),
 * protocolVersion, agentInfo, authMethods, capabilities, error?},
 * methods{"<method>": "ok"|"method_not_found"|"error: <message>"|
 * "not_advertised"}, sessions[], prompt?, dialectRejects[], rawLines[],
 * callbacks{}, health{}, notes, totalMs}. */
int cdsh_acp_probe_run(const cdsh_home *home, const char *engine_id,
                       const cdsh_acp_probe_opts *opts, json_t **record, char **evidence_path,
                       cdsh_error *err);

#endif
