/* opponent.h — the model as xiangqi opponent (layer-internal): a thread per
 * turn runs the session's model with the xiangqi tools (kernel dispatch,
 * scope = session id) and falls back to the local engine on timeout, budget
 * or repeated invalid moves (docs/xiangqi.md). Thread-safe: start from any
 * thread; stop joins every turn. */
#ifndef CDSH_XQ_OPPONENT_H
#define CDSH_XQ_OPPONENT_H

#include "base/err.h"

typedef struct cdsh__xq_plugin cdsh__xq_plugin;
typedef struct cdsh__xq_opponent cdsh__xq_opponent;

/* p is borrowed; it owns the opponent (freed by its last unref). */
int cdsh__xq_opponent_new(cdsh__xq_plugin *p, cdsh__xq_opponent **out, cdsh_error *err);
/* cdsh_xq_model_runner_fn: starts (or keeps) the turn for key. -1 once stopped. */
int cdsh__xq_opponent_start(void *opponent, const char *key);
/* Cancels running turns and joins them; later starts are refused. NULL-safe. */
void cdsh__xq_opponent_stop(cdsh__xq_opponent *o);
void cdsh__xq_opponent_free(cdsh__xq_opponent *o);
/* Provider and model shown in opponent{} (from CDSH_BASE_URL / CDSH_MODEL
 * and the defaults of agent/model_config.h). Borrowed static strings. */
void cdsh__xq_opponent_describe(const char **provider, const char **model);

#endif
