/* SPDX-License-Identifier: MIT */
/*
 * elk-sim --timeline FILE: one run drawn as the same HTML page `elk timeline` makes
 * (firmware/timeline.c): a lane per gateway and resource with its leases, waits are not
 * drawn; a lane per node for the faults injected; a lane per invariant for the checker's
 * violations, marked at the simulated time they happened. Host builds only.
 */
#ifndef SIM_TIMELINE_H
#define SIM_TIMELINE_H

#include <stdbool.h>

#include "sim_world.h"

/* Start collecting the events of the next run of w. Returns false when out of memory. */
bool sim_timeline_start(sim_world_t *w);

/* Write the page of the collected run to path (title names the seed and profile); frees
 * what was collected. Returns 0 or an errno value; prints the page's summary on stdout. */
int sim_timeline_write(sim_world_t *w, const char *path, const char *title);

#endif /* SIM_TIMELINE_H */
