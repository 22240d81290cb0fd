/* cmd_acp_probe.h — `cdsh acp probe <engine>`: try-connect with evidence;
 * `cdsh acp probe --all`: every engine, as a background job of the acp
 * plugin (host/jobs.h). */
#ifndef CDSH_PLUGINS_ACP_CMD_ACP_PROBE_H
#define CDSH_PLUGINS_ACP_CMD_ACP_PROBE_H

/* The acp plugin provides its own context under this name, so that the
 * command can start jobs the plugin owns (unloaded with it). */
#define CDSH_ACP_JOBS_SERVICE "acp-jobs"

/* The page's "Probe every engine" (a job starter, host/jobs.h). */
struct cdsh_job_starter;
extern const struct cdsh_job_starter cdsh_acp_probe_all_starter;

int cdsh_cmd_acp_probe(int argc, char **argv);

#endif
