/* SPDX-License-Identifier: MIT */
/* Fault profiles: how often each kind of fault strikes and how bad it is. */
#include <string.h>

#include "sim_world.h"

/* mild's network (delays, tails, stalls, resets, partitions) and gateway pauses, shared with
 * profiles that add their own node faults to a normal day's network. */
#define MILD_NETWORK                                                                               \
    .net = {.delay_min_us = 200,                                                                   \
            .delay_max_us = 3000,                                                                  \
            .tail_ppm = 10000,                                                                     \
            .tail_max_us = 50000,                                                                  \
            .stall_ppm = 1000,                                                                     \
            .stall_min_us = 200000,                                                                \
            .stall_max_us = 1000000,                                                               \
            .reset_ppm = 500,                                                                      \
            .retry_us = 200000},                                                                   \
    .partition_every_ms = 4000, .partition_min_ms = 100, .partition_max_ms = 3000
#define MILD_PAUSES .pause_every_ms = 6000, .pause_min_ms = 20, .pause_max_ms = 2000

static const sim_profile_t profiles[] = {
    {
        .name = "none",
        .net = {.delay_min_us = 200, .delay_max_us = 2000, .retry_us = 200000},
    },
    {
        /* A plant network on a normal day: short tails, rare stalls and resets, a
         * partition every few seconds, a node crash (data kept) now and then. */
        .name = "mild",
        MILD_NETWORK,
        .crash_every_ms = 15000,
        .restart_min_ms = 200,
        .restart_max_ms = 3000,
        MILD_PAUSES,
    },
    {
        /* Everything at once: Wi-Fi tails, frequent stalls and resets, long partitions,
         * crashes that lose the data (restart delayed past the TTL), stop-the-world
         * pauses longer than the lease, node wall clocks jumping both ways. */
        .name = "harsh",
        .net = {.delay_min_us = 500,
                .delay_max_us = 20000,
                .tail_ppm = 50000,
                .tail_max_us = 300000,
                .stall_ppm = 5000,
                .stall_min_us = 200000,
                .stall_max_us = 3000000,
                .reset_ppm = 3000,
                .retry_us = 200000},
        .partition_every_ms = 2000,
        .partition_min_ms = 50,
        .partition_max_ms = 5000,
        .crash_every_ms = 5000,
        .restart_min_ms = 100,
        .restart_max_ms = 4000,
        .lose_ppm = 500000,
        .pause_every_ms = 3000,
        .pause_min_ms = 10,
        .pause_max_ms = 5000,
        .jump_every_ms = 5000,
        .jump_max_ms = 3000,
        .forward_ppm = 500000,
    },
    {
        /* Issue 20: masters that restart empty at any moment (no delayed restart: the
         * keys of live leases are gone at once) or keep their data, and one master whose
         * wall clock jumps forward by 1..4 TTLs, or by just over the lease's drift margin,
         * (and sometimes back), over mild's network. Without vote hygiene a holder on a
         * bare majority loses exclusion here (the no-vote-hygiene control); with it the
         * lease layer must show no overlap at all, and tokens never go back (the
         * no-amnesia control shows both failing with the scripts before issue 26). */
        .name = "hostile-masters",
        MILD_NETWORK,
        .crash_every_ms = 3000,
        .restart_min_ms = 0,
        .restart_max_ms = 1500,
        .lose_ppm = 700000,
        .lose_at_once = true,
        MILD_PAUSES,
        .jump_every_ms = 3000,
        .jump_max_ms = 2000,
        .forward_ppm = 800000,
        .forward_jumps = true,
        .jump_ttl_max = 4,
        .small_jump_ppm = 400000,
        /* Issue 26: data lost with the connections open, about every 4 s: FLUSHALL on a
         * bare majority or (one in four) on every master, an eviction of the lease keys and
         * the fleet marker, or a failover of one master to an empty replica. */
        .flush_every_ms = 4000,
        .flush_all_ppm = 250000,
        .evict_ppm = 250000,
        .failover_ppm = 200000,
    },
};

bool sim_profile_get(const char *name, sim_profile_t *out)
{
    size_t i;
    for (i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        if (strcmp(profiles[i].name, name) == 0) {
            *out = profiles[i];
            return true;
        }
    }
    return false;
}

const char *sim_profile_names(void)
{
    return "none|mild|harsh|hostile-masters";
}
