/* SPDX-License-Identifier: MIT */
/*
 * edgelock's lock scripts and the safety check's script (elk/lock_scripts.h)
 * implemented natively for the simulated Redis in port/sim. Register them with
 *     elk_sim_scripts_init(&tbl, net, false);
 *     elk_sim_net_set_scripts(net, tbl.entry, ELK_SIM_EDGELOCK_SCRIPTS);
 */
#ifndef ELK_SIM_SCRIPTS_H
#define ELK_SIM_SCRIPTS_H

#include <stdbool.h>

#include "elk/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ELK_SIM_EDGELOCK_SCRIPTS 10u

typedef struct elk_sim_scripts {
    elk_sim_script_t entry[ELK_SIM_EDGELOCK_SCRIPTS]; /* ACQUIRE, EXTEND, RELEASE, COMMIT,
                                                          SAFETY, PROBE, EXTEND_BATCH,
                                                          RELEASE_BATCH, QUEUE_KEEP,
                                                          QUEUE_LEAVE */
    bool commit_noop; /* negative control: COMMIT answers as usual but never raises a counter */
    /* negative control (elk-sim --control no-amnesia): ACQUIRE and EXTEND report every fleet
     * marker as old (0, as for a marker from before creation times), PROBE writes it without
     * its time, and ACQUIRE's token is the counter + 1 alone (no clock floor, ARGV[5]
     * ignored): the scripts before the amnesia check */
    bool no_amnesia;
    /* negative control: ACQUIRE's token is the counter + 1 alone (no server clock floor,
     * ARGV[5] ignored), as before issue 26; no_amnesia implies it */
    bool no_floor;
    /* negative control (elk-sim --control fair-no-expiry): QUEUE_KEEP never drops a member
     * whose ticket expired; the queue's PEXPIREAT alone ends them */
    bool no_queue_expiry;
} elk_sim_scripts_t;

/* Fill tbl (caller-owned, must outlive the net's use of it). RELEASE publishes
 * through net. commit_noop turns on the naive-fencing control; no_amnesia starts false
 * (set it after this call). */
void elk_sim_scripts_init(elk_sim_scripts_t *tbl, elk_sim_net_t *net, bool commit_noop);

#ifdef __cplusplus
}
#endif

#endif /* ELK_SIM_SCRIPTS_H */
