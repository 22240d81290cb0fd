/* cmd_acp_prompt.h — `cdsh acp prompt <engine> TEXT`: one turn through the
 * ACP service with streamed updates and terminal permission prompts. */
#ifndef CDSH_PLUGINS_ACP_CMD_ACP_PROMPT_H
#define CDSH_PLUGINS_ACP_CMD_ACP_PROMPT_H

int cdsh_cmd_acp_prompt(int argc, char **argv);

#endif
