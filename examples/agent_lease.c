/*
 * SPDX-License-Identifier: MIT
 *
 * Example: a lease from the local elkd (elk/agent_client.h) rather than from the fleet
 * directly. elkd keeps the connections to the Redis masters and renews the lease; this
 * program asks for it, drives its actuator in steps while elk_agent_poll() says the
 * lease holds, passing the fencing token with each step, and releases it.
 *
 *   agent_lease RESOURCE [STEPS]        (ELK_SOCKET names elkd's socket if not the default)
 *
 * Exit: 0 every step driven and released, 75 the lease was lost (stopped driving),
 * 69 not granted or elkd unreachable (elkd's reason printed), 64 usage.
 *
 * Build (installed edgelock):
 *   cc agent_lease.c $(pkg-config --cflags --libs edgelock-posix)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "elk/agent_client.h"
#include "elk/err.h"

int main(int argc, char **argv)
{
    elk_agent_t agent;
    int steps = argc > 2 ? atoi(argv[2]) : 3;
    int i, rc;

    if (argc < 2 || argc > 3 || steps < 1) {
        fprintf(stderr, "usage: agent_lease RESOURCE [STEPS]\n");
        return 64;
    }
    rc = elk_agent_connect(&agent, getenv("ELK_SOCKET"));
    if (rc != ELK_OK) {
        fprintf(stderr, "agent_lease: %s: %s\n", elk_err_name(rc), agent.message);
        return 69;
    }
    /* wait up to 5 s for the resource; give elkd 30 s more to answer */
    rc = elk_agent_acquire(&agent, argv[1], 5000, 30000);
    if (rc != ELK_OK) {
        fprintf(stderr, "agent_lease: %s not granted: %s %s\n", argv[1], elk_err_name(rc),
                agent.message);
        elk_agent_close(&agent);
        return 69;
    }
    printf("acquired %s token %" PRIu64 " (%" PRIu64 " ms left)\n", argv[1], agent.token,
           elk_agent_remaining_ms(&agent));
    for (i = 1; i <= steps; i++) {
        /* a step of work; elk_agent_poll reads renewals and a loss meanwhile */
        rc = elk_agent_poll(&agent, 200);
        if (rc != ELK_OK) {
            printf("lost %s: %s; stopped driving\n", argv[1], elk_err_name(rc));
            elk_agent_close(&agent);
            return 75;
        }
        printf("step %d: actuator moves with token %" PRIu64 "\n", i, agent.token);
    }
    rc = elk_agent_release(&agent, 30000);
    printf("released %s (%s)\n", argv[1], elk_err_name(rc));
    elk_agent_close(&agent);
    return rc == ELK_OK ? 0 : 75;
}
