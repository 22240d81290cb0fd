/* plugin.h — the "import" plugin: on start it scans the configured roots,
 * registers the commands and skills and connects the servers the profile
 * enabled (`cdsh import enable`). Config keys: servers, commands, skills,
 * projects, claudeDir, codexHome, keyringAllow (docs/import.md). */
#ifndef CDSH_MCPIMPORT_PLUGIN_H
#define CDSH_MCPIMPORT_PLUGIN_H

#include "host/plugins.h"

#define CDSH_MCPIMPORT_PLUGIN_NAME "import"

extern const cdsh_plugin_def cdsh_mcpimport_plugin;

/* Owned array of C strings from a JSON array of strings (NULL-terminated);
 * NULL for anything else. Free with cdsh_mcpimport_strv_free. */
char **cdsh_mcpimport_strv_dup(const json_t *arr);
void cdsh_mcpimport_strv_free(char **v);

#endif
