/* cmd_xiangqi_analyze.h — `cdsh xiangqi analyze`: best lines of a position
 * with scores, in ICCS and Chinese notation. */
#ifndef CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_ANALYZE_H
#define CDSH_PLUGINS_XIANGQI_CMD_XIANGQI_ANALYZE_H

/* Deeper than this many plies is more than a turn may spend: the analysis
 * runs as a background job (kind "xiangqi-analyze"). */
#define CDSH_XQ_TURN_DEPTH 12

/* The xiangqi plugin provides its own context under this name, so that the
 * command can start jobs the plugin owns (unloaded with it). */
#define CDSH_XQ_JOBS_SERVICE "xiangqi-jobs"

int cdsh_cmd_xiangqi_analyze(int argc, char **argv);

#include "base/err.h"
#include "host/plugins.h"

/* Starts the same analysis (fen to `depth` plies, `multipv` lines, one
 * thread, 16 MB hash) as a background job of ctx (the xiangqi plugin's
 * context) owned by `owner` (a scope id; NULL: unowned), labelled `label`.
 * The job's output is the analysis text the command prints; its progress is
 * one step per completed depth. *id_out gets the owned job id. Failures are
 * cdsh_ctx_job_start's (JOB_LIMIT, JOBS_NO_SURFACE, ...). */
int cdsh__xq_analysis_job_start(cdsh_plugin_ctx *ctx, const char *fen, int depth, int multipv,
                                const char *owner, const char *label, char **id_out,
                                cdsh_error *err);

#endif
