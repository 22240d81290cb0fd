/* probe.c — preflight's machine facts: is a program on PATH, does the Docker
 * daemon answer. The only I/O behind preflight; the judging is preflight.c. */
#include "plugins/mcpimport/probe.h"

#include <stdlib.h>

#include "base/process.h"

static bool program_found(void *ud, const char *command)
{
    (void)ud;
    char *path = NULL;
    int rc = cdsh_process_find_program(command, NULL, &path, NULL);
    free(path);
    return rc == 0;
}

static bool docker_reachable(void *ud)
{
    cdsh_mcpimport_machine *m = ud;
    if (m->docker < 0) {
        const char *argv[] = {"docker", "info", "--format", "{{.ServerVersion}}", NULL};
        cdsh_process_run_opts opts = {.timeout_ms = 5000, .max_output = 65536};
        cdsh_process_result res = {0};
        int rc = cdsh_process_run(argv, &opts, &res, NULL);
        m->docker = rc == 0 && res.status.exited && res.status.exit_code == 0;
        cdsh_process_result_deinit(&res);
    }
    return m->docker == 1;
}

void cdsh_mcpimport_probe_machine(cdsh_mcpimport_probe *probe, cdsh_mcpimport_machine *machine)
{
    machine->docker = -1;
    probe->program_found = program_found;
    probe->docker_reachable = docker_reachable;
    probe->ud = machine;
}
