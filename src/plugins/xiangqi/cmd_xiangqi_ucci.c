/* cmd_xiangqi_ucci.c — `cdsh xiangqi ucci`: the UCCI dialect of the shared
 * protocol command (cmd_xiangqi_uci.c). */
#include "plugins/xiangqi/cmd_xiangqi_ucci.h"

#include "plugins/xiangqi/cmd_xiangqi_uci.h"

int cdsh_cmd_xiangqi_ucci(int argc, char **argv)
{
    return cdsh_cmd_xiangqi_protocol(1, argc, argv);
}
