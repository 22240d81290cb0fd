/* probe.h — the real machine checks behind preflight's probe: PATH lookup
 * (cdsh_process_find_program) and `docker info` (5 s limit, asked once per
 * probe). Not thread-safe: one probe per scan. */
#ifndef CDSH_MCPIMPORT_PROBE_H
#define CDSH_MCPIMPORT_PROBE_H

#include "plugins/mcpimport/preflight.h"

typedef struct cdsh_mcpimport_machine {
    int docker; /* -1 not asked yet, 0 down, 1 up */
} cdsh_mcpimport_machine;

/* Fills probe with callbacks over `machine` (which must outlive it). */
void cdsh_mcpimport_probe_machine(cdsh_mcpimport_probe *probe, cdsh_mcpimport_machine *machine);

#endif
