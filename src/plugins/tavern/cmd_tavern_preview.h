/* cmd_tavern_preview.h — `cdsh tavern preview`: the prompt a card would get
 * (standing segment, turn context, simulated messages, budgets, trigger
 * log). Read-only. */
#ifndef CDSH_PLUGINS_TAVERN_CMD_TAVERN_PREVIEW_H
#define CDSH_PLUGINS_TAVERN_CMD_TAVERN_PREVIEW_H

/* argv[0] is "preview". Exit status 0 ok, 1 failed, 2 usage error. */
int cdsh_cmd_tavern_preview(int argc, char **argv);

#endif
