/* session_runner.c — finding the plugin that runs a session's turns among
 * the host's CDSH_SESSION_RUNNERS hooks. */
#include "agent/session_runner.h"

#include <stdlib.h>
#include <string.h>

const cdsh_session_runner *cdsh_session_runner_find(cdsh_host *host, const char *session_id)
{
    const void **hooks = host && session_id ? cdsh_host_hooks_dup(host, CDSH_SESSION_RUNNERS) : NULL;
    const cdsh_session_runner *found = NULL;
    for (size_t i = 0; hooks && hooks[i] && !found; i++) {
        const cdsh_session_runner *r = hooks[i];
        if (r->owns && r->owns(r->arg, session_id))
            found = r;
    }
    free(hooks);
    return found;
}

const cdsh_session_runner *cdsh_session_runner_named(cdsh_host *host, const char *name)
{
    const void **hooks = host && name ? cdsh_host_hooks_dup(host, CDSH_SESSION_RUNNERS) : NULL;
    const cdsh_session_runner *found = NULL;
    for (size_t i = 0; hooks && hooks[i] && !found; i++) {
        const cdsh_session_runner *r = hooks[i];
        if (r->name && strcmp(r->name, name) == 0)
            found = r;
    }
    free(hooks);
    return found;
}

void cdsh_session_runners_forget(cdsh_host *host, const char *session_id)
{
    const void **hooks = host && session_id ? cdsh_host_hooks_dup(host, CDSH_SESSION_RUNNERS) : NULL;
    for (size_t i = 0; hooks && hooks[i]; i++) {
        const cdsh_session_runner *r = hooks[i];
        if (r->forget)
            r->forget(r->arg, session_id);
    }
    free(hooks);
}
