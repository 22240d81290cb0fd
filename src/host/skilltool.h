/* skilltool.h — the built-in "skills" plugin: the model-facing `skill` tool
 * that loads a skill's instructions (or one of its resource files) on demand
 * (the index is in the system prompt, cdsh_skills_index_dup), the `/skills`
 * command that lists and shows the skills the person may run, and the
 * registry's collectCacheMaxEntries setting (restored to 128 on unload).
 * Config: maxBodyBytes (integer >= 100, default 20000) caps the body or
 * resource handed to the model; collectCacheMaxEntries (integer >= 1,
 * default 128). The body only reads the registry, so calls may run in
 * parallel. */
#ifndef CDSH_HOST_SKILLTOOL_H
#define CDSH_HOST_SKILLTOOL_H

#include "host/plugins.h"

#define CDSH_SKILLTOOL_NAME "skill"

/* Plugin "skills", enabled by default. */
extern const cdsh_plugin_def cdsh_skilltool_plugin;

#endif
