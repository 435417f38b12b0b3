/* SPDX-License-Identifier: MIT */
/* Fault profiles: how often each kind of fault strikes and how bad it is. */
#include <string.h>

#include "sim_world.h"

static const sim_profile_t profiles[] = {
    {
        .name = "none",
        .net = {.delay_min_us = 200, .delay_max_us = 2000, .retry_us = 200000},
    },
    {
        /* A plant network on a normal day: short tails, rare stalls and resets, a
         * partition every few seconds, a node crash (data kept) now and then. */
        .name = "mild",
        .net = {.delay_min_us = 200,
                .delay_max_us = 3000,
                .tail_ppm = 10000,
                .tail_max_us = 50000,
                .stall_ppm = 1000,
                .stall_min_us = 200000,
                .stall_max_us = 1000000,
                .reset_ppm = 500,
                .retry_us = 200000},
        .partition_every_ms = 4000,
        .partition_min_ms = 100,
        .partition_max_ms = 3000,
        .crash_every_ms = 15000,
        .restart_min_ms = 200,
        .restart_max_ms = 3000,
        .pause_every_ms = 6000,
        .pause_min_ms = 20,
        .pause_max_ms = 2000,
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
    return "none|mild|harsh";
}
