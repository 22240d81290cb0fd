/* cmd_skills.h — `cdsh skills list/show`: the skills the model can load. */
#ifndef CDSH_CLI_CMD_SKILLS_H
#define CDSH_CLI_CMD_SKILLS_H

int cdsh_cmd_skills(int argc, char **argv);

#endif
