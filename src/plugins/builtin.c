/* builtin.c — the compiled-in plugin table (one line per plugin). */
#include "plugins/builtin.h"

#include <string.h>

#include "host/jobs.h"
#include "host/prompt.h"
#include "host/skilltool.h"
#include "plugins/acp/plugin.h"
#include "plugins/facade/plugin.h"
#include "plugins/mcpimport/plugin.h"
#include "plugins/tavern/plugin.h"
#include "plugins/xiangqi/plugin.h"

const cdsh_plugin_def *const cdsh_builtin_plugins[] = {
    &cdsh_skilltool_plugin,
    &cdsh_skills_local_plugin, /* skills on disk: .cdsh/skills, $CDSH_HOME/skills */
    &cdsh_jobs_plugin,   /* background jobs: job_output, job_list, job_kill */
    &cdsh_prompt_plugin, /* systemPrompt: the order of the model's tools */
    &cdsh_acp_plugin,
    &cdsh_xq_plugin,
    &cdsh_mcpimport_plugin,
    &cdsh_tavern_plugin, /* off by default; profiles enable it */
    &cdsh_facade_plugin, /* its descriptor says it loads after the others */
    NULL,
};
