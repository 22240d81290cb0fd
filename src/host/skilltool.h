/* skilltool.h — the built-in "skills" plugin: registers the model-facing
 * `skill` tool, which loads a skill's instructions on demand (the model sees
 * the index from cdsh_skills_index_dup in its system prompt). Config:
 * maxBodyChars (integer ≥ 100, default 20000) caps the body handed to the
 * model. The skill registry itself is skills.h. */
#ifndef CDSH_HOST_SKILLTOOL_H
#define CDSH_HOST_SKILLTOOL_H

#include "host/plugins.h"

#define CDSH_SKILLTOOL_NAME "skill"

/* Plugin "skills", enabled by default. */
extern const cdsh_plugin_def cdsh_skilltool_plugin;

#endif
