/* fuzz_mcp_message.c — MCP message parsing: classification, tool and result
 * checks, the text projection, and DSH public names from arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = NULL;
    cdsh_mcp_msg m;
    if (cdsh_mcp_msg_parse((const char *)data, size, &v, &m, NULL) == 0) {
        const json_t *body = m.kind == CDSH_MCP_MSG_RESULT ? m.result : m.params;
        json_t *tools = json_object_get(body, "tools");
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
            cdsh_mcp_tool_check(t, NULL);
            cdsh_mcp_tool_requires_task(t);
        }
        bool legacy;
        if (cdsh_mcp_call_result_check(body, &legacy, NULL) == 0) {
            char *text = cdsh_mcp_content_text_dup(json_object_get(body, "content"), "fuzz");
            free(text);
        }
        json_decref(v);
    }
    /* Names: the bytes before the first NUL are the server, the rest the tool. */
    char *copy = malloc(size + 2);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    copy[size + 1] = '\0';
    const char *server = copy, *tool = copy + strlen(copy) + 1;
    char out[CDSH_MCP_PUBLIC_NAME_MAX + 1];
    if (cdsh_mcp_public_tool_name(server, tool, out) == 0 && strlen(out) > CDSH_MCP_PUBLIC_NAME_MAX)
        abort();
    cdsh_mcp_env_name_scrubbed(copy);
    free(copy);
    return 0;
}
