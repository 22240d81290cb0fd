/* danger_tool.h — the tool "danger" that always asks for approval, shared
 * by the in-process web tests and the cdsh_asking peer. Header-only. */
#ifndef CDSH_TEST_DANGER_TOOL_H
#define CDSH_TEST_DANGER_TOOL_H

#include <stdlib.h>
#include <string.h>

#include "host/dispatch.h"
#include "host/tools.h"

/* A pre-execute hook: ASK for "danger", allow every other tool. */
static inline cdsh_tools_verdict danger_always_asks(void *ud, const cdsh_tool_exec *exec,
                                                    char **reason)
{
    (void)ud;
    if (strcmp(exec->name, "danger") != 0)
        return CDSH_TOOLS_ALLOW;
    *reason = strdup("danger needs a person");
    return CDSH_TOOLS_ASK;
}

/* Its body: the string "boom done". */
static inline int danger_body(void *ud, const cdsh_tool_exec *exec, json_t **value)
{
    (void)ud;
    (void)exec;
    *value = json_string("boom done");
    return 0;
}

#endif
