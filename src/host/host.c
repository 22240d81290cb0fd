/* host.c — creating and freeing the host aggregate, and loading the plugins
 * a profile enables. The registries themselves live in their own modules. */
#include "host/host.h"

#include "host/jobs.h"

#include <stdlib.h>
#include <string.h>

struct cdsh_host {
    cdsh_events *events;
    cdsh_tools *tools;
    cdsh_commands *commands;
    cdsh_skills *skills;
    cdsh_rpc *rpc;
    cdsh_prompt *prompt;
    cdsh_jobs *jobs;
    cdsh__plugins *plugins;
    cdsh_home *home; /* owned; where plugins and services keep state */
};

cdsh_host *cdsh_host_new(void)
{
    return cdsh_host_new_at(cdsh_home_from_env());
}

cdsh_host *cdsh_host_new_at(cdsh_home *home)
{
    if (!home)
        return NULL;
    cdsh_host *h = calloc(1, sizeof *h);
    if (!h) {
        cdsh_home_free(home);
        return NULL;
    }
    h->home = home;
    h->events = cdsh_events_new();
    if (!h->events)
        goto fail;
    h->tools = cdsh_tools_new(h->events);
    h->commands = cdsh_commands_new(h->events);
    h->skills = cdsh_skills_new(h->events);
    h->rpc = cdsh_rpc_new();
    h->prompt = cdsh_prompt_new(h->events);
    h->jobs = cdsh_jobs_new(h->events);
    h->plugins = cdsh__plugins_new(h);
    if (!h->tools || !h->commands || !h->skills || !h->rpc || !h->prompt || !h->jobs || !h->plugins)
        goto fail;
    return h;
fail:
    cdsh_host_free(h);
    return NULL;
}

void cdsh_host_free(cdsh_host *host)
{
    if (!host)
        return;
    /* Plugins first: their disposers touch every registry below. */
    cdsh__plugins_shutdown(host->plugins);
    cdsh__plugins_free(host->plugins);
    cdsh_jobs_free(host->jobs); /* after the plugins, whose unload ended their jobs */
    cdsh_rpc_free(host->rpc);
    cdsh_prompt_free(host->prompt);
    cdsh_skills_free(host->skills);
    cdsh_commands_free(host->commands);
    cdsh_tools_free(host->tools);
    cdsh_events_free(host->events);
    cdsh_home_free(host->home);
    free(host);
}

const cdsh_home *cdsh_host_home(const cdsh_host *host)
{
    return host->home;
}

cdsh_jobs *cdsh_host_jobs(cdsh_host *host)
{
    return host->jobs;
}

cdsh_events *cdsh_host_events(cdsh_host *host)
{
    return host->events;
}

cdsh_tools *cdsh_host_tools(cdsh_host *host)
{
    return host->tools;
}

cdsh_commands *cdsh_host_commands(cdsh_host *host)
{
    return host->commands;
}

cdsh_skills *cdsh_host_skills(cdsh_host *host)
{
    return host->skills;
}

cdsh_rpc *cdsh_host_rpc(cdsh_host *host)
{
    return host->rpc;
}

cdsh__plugins *cdsh__host_plugins(cdsh_host *host)
{
    return host->plugins;
}

bool cdsh_host_plugin_enabled(const cdsh_plugin_def *def, const cdsh_profile *profile)
{
    int said = profile ? cdsh_profile_enabled(profile, def->name) : -1;
    return said < 0 ? def->enabled_by_default : said == 1;
}

static bool says_star(const cdsh_plugin_def *d)
{
    for (const char *const *a = d->after; a && *a; a++)
        if (strcmp(*a, "*") == 0)
            return true;
    return false;
}

/* May d load now? Every plugin its `after` names that is in defs (and "*":
 * every plugin of defs without "*") is loaded already. */
static bool ready(const cdsh_plugin_def *d, const cdsh_plugin_def *const *defs, const bool *done)
{
    bool star = says_star(d);
    for (size_t i = 0; defs[i]; i++) {
        if (done[i] || defs[i] == d)
            continue;
        if (star && !says_star(defs[i]))
            return false;
        for (const char *const *a = d->after; a && *a; a++)
            if (strcmp(*a, defs[i]->name) == 0)
                return false;
    }
    return true;
}

int cdsh_host_load_plugins(cdsh_host *host, const cdsh_plugin_def *const *defs,
                           const cdsh_profile *profile, cdsh_error *err)
{
    size_t n = 0;
    while (defs && defs[n])
        n++;
    bool *done = calloc(n + 1, sizeof *done);
    if (!done)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int first = 0;
    /* Table order, except that a plugin waits for the ones its `after`
     * names; a cycle falls back to table order. */
    for (size_t loaded = 0; loaded < n; loaded++) {
        size_t pick = n;
        for (size_t i = 0; i < n && pick == n; i++)
            if (!done[i] && ready(defs[i], defs, done))
                pick = i;
        for (size_t i = 0; i < n && pick == n; i++)
            if (!done[i])
                pick = i;
        done[pick] = true;
        const cdsh_plugin_def *d = defs[pick];
        if (!cdsh_host_plugin_enabled(d, profile))
            continue;
        const json_t *config = profile ? cdsh_profile_config(profile, d->name) : NULL;
        cdsh_error perr = {0};
        int rc = cdsh_plugin_load(host, d, config, NULL, &perr);
        if (rc && !first) {
            first = rc;
            if (err)
                *err = perr;
        }
    }
    free(done);
    return first;
}

cdsh_prompt *cdsh_host_prompt(cdsh_host *host)
{
    return host->prompt;
}
