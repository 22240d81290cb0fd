/* skilltool.h — the built-in "skills" plugin: the model-facing `skill` tool
 * that loads a skill's instructions on demand (the index is in the system
 * prompt, cdsh_skills_index_dup). Config: maxBodyBytes (integer >= 100,
 * default 20000) caps the body handed to the model. The body only reads the
 * skill registry, so calls may run in parallel. */
#ifndef CDSH_HOST_SKILLTOOL_H
#define CDSH_HOST_SKILLTOOL_H

#include "host/plugins.h"

#define CDSH_SKILLTOOL_NAME "skill"

/* Plugin "skills", enabled by default. */
extern const cdsh_plugin_def cdsh_skilltool_plugin;

#endif
