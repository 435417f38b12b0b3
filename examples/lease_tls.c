/*
 * SPDX-License-Identifier: MIT
 *
 * Example: take a Redlock lease over TLS with the blocking API (elk/blocking.h), drive a
 * pretend actuator in short steps while checking the local deadline before each one,
 * and release. What a gateway program does around a real actuator, minus the actuator.
 *
 *   lease_tls CA_FILE RESOURCE HOST:PORT [HOST:PORT ...]
 *
 * One node: single mode; three or more: Redlock (a majority must grant). The servers'
 * certificates must chain to CA_FILE and name "localhost" (SNI and name check).
 * Prints "held RESOURCE token=T" once granted and "released RESOURCE" at the end; the
 * token is what the actuator side checks (see fence_actuator.c).
 * Exit: 0 done, 1 setup failed, 2 usage, 73 not acquired, 75 lease lost while driving.
 *
 * Build (installed edgelock):
 *   cc lease_tls.c $(pkg-config --cflags --libs edgelock-posix edgelock-mbedtls)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elk/blocking.h"
#include "elk/err.h"
#include "elk/lock.h"
#include "elk/node.h"
#include "elk/pool.h"
#include "elk/port_mbedtls.h"
#include "elk/port_posix.h"
#include "elk/version.h"

#define STEPS 5      /* actuator steps to drive */
#define STEP_MS 150u /* how long one step takes */
#define POOL_BLOCKS (2u * CONFIG_ELK_MAX_NODES + 2u)

/* Everything the client needs, caller-owned and allocated once: the library never
 * allocates. Static here only because it is large for a stack. */
static struct gateway {
    elk_entropy_t entropy;
    elk_tls_shared_t tls;
    elk_posix_tcp_t tcp[CONFIG_ELK_MAX_NODES];
    elk_tls_conn_t conn[CONFIG_ELK_MAX_NODES];
    elk_node_t nodes[CONFIG_ELK_MAX_NODES];
    char hosts[CONFIG_ELK_MAX_NODES][64];
    elk_fleet_t fleet;
    unsigned char pool_mem[POOL_BLOCKS * CONFIG_ELK_POOL_BLOCK_SIZE] __attribute__((aligned(8)));
    elk_pool_t pool;
    elk_client_t client;
    elk_lock_t lock;
} gw;

static int fail(const char *what, int rc)
{
    fprintf(stderr, "lease_tls: %s: %s (%s)\n", what, elk_err_name(rc), elk_err_message(rc));
    return 1;
}

/* "host:port" -> gw.hosts[i], *port; 0 or -1 */
static int parse_node(const char *arg, size_t i, uint16_t *port)
{
    const char *colon = strrchr(arg, ':');
    long p = colon != NULL ? strtol(colon + 1, NULL, 10) : 0;
    size_t len = colon != NULL ? (size_t)(colon - arg) : 0;
    if (len == 0 || len >= sizeof gw.hosts[i] || p <= 0 || p > 65535) {
        return -1;
    }
    memcpy(gw.hosts[i], arg, len);
    gw.hosts[i][len] = '\0';
    *port = (uint16_t)p;
    return 0;
}

static int setup(const char *ca, char **addrs, size_t n)
{
    elk_tls_config_t tc;
    elk_client_config_t cc;
    int rc;

    elk_posix_entropy(&gw.entropy);
    memset(&tc, 0, sizeof tc);
    tc.ca_file = ca;
    if ((rc = elk_tls_shared_init(&gw.tls, &tc, &gw.entropy)) != ELK_OK) {
        return fail(ca, rc);
    }
    rc = elk_pool_init(&gw.pool, gw.pool_mem, sizeof gw.pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE,
                       POOL_BLOCKS);
    if (rc != ELK_OK) {
        return fail("buffer pool", rc);
    }
    for (size_t i = 0; i < n; i++) {
        elk_node_config_t nc;
        elk_transport_t tcp, tls;
        elk_node_config_defaults(&nc);
        if (parse_node(addrs[i], i, &nc.endpoint.port) != 0) {
            fprintf(stderr, "lease_tls: '%s' is not HOST:PORT\n", addrs[i]);
            return 2;
        }
        nc.endpoint.host = gw.hosts[i];
        nc.endpoint.server_name = "localhost";
        nc.resp3 = true;
        elk_posix_tcp_init(&gw.tcp[i], NULL, &tcp);
        if ((rc = elk_tls_conn_init(&gw.conn[i], &gw.tls, &tcp, &tls)) != ELK_OK ||
            (rc = elk_node_init(&gw.nodes[i], &nc, &tls, &gw.pool, &gw.entropy, NULL)) != ELK_OK) {
            return fail(addrs[i], rc);
        }
    }
    if ((rc = elk_fleet_init(&gw.fleet, gw.nodes, n)) != ELK_OK) {
        return fail("fleet", rc);
    }
    elk_client_config_defaults(&cc);
    cc.gateway_id = "example-gw";
    cc.key_prefix = "example:";
    cc.mode = n == 1 ? ELK_MODE_SINGLE : ELK_MODE_REDLOCK;
    if ((rc = elk_client_init(&gw.client, &cc, &gw.fleet, &gw.entropy, NULL)) != ELK_OK) {
        return fail("client", rc);
    }
    return 0;
}

/* Drive the pretend actuator: before every step, the lease must still be held locally
 * (elk_lock_is_held compares with the deadline, which already leaves stop_margin for
 * the actuator to reach its safe state). elk_blocking_hold keeps renewing meanwhile. */
static int drive(const char *resource)
{
    for (int step = 1; step <= STEPS; step++) {
        uint64_t now = elk_posix_now_ms();
        if (!elk_lock_is_held(&gw.lock, now)) {
            fprintf(stderr, "lease_tls: lease of %s ended before step %d: stopping\n", resource,
                    step);
            return 75;
        }
        printf("step %d: valve moves (%llu ms of validity left)\n", step,
               (unsigned long long)(elk_lock_deadline(&gw.lock) - now));
        int rc = elk_blocking_hold(&gw.client, &gw.lock, STEP_MS, NULL);
        if (rc != ELK_OK) {
            fprintf(stderr, "lease_tls: lease lost during step %d: %s: stop the actuator\n", step,
                    elk_err_message(rc));
            return 75;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    elk_lock_config_t lc;
    int rc, status;

    if (argc < 4 || (size_t)(argc - 3) > CONFIG_ELK_MAX_NODES) {
        fprintf(stderr,
                "usage: lease_tls CA_FILE RESOURCE HOST:PORT [HOST:PORT ...] (1..%u nodes)\n"
                "edgelock %s\n",
                (unsigned)CONFIG_ELK_MAX_NODES, ELK_VERSION_STRING);
        return 2;
    }
    if ((rc = setup(argv[1], argv + 3, (size_t)argc - 3)) != 0) {
        return rc;
    }
    elk_lock_config_defaults(&lc);
    lc.ttl_ms = 3000;
    lc.stop_margin_ms = 300; /* the valve needs 300 ms to close */
    if ((rc = elk_lock_init(&gw.lock, &gw.client, argv[2], &lc, NULL, NULL)) != ELK_OK) {
        return fail(argv[2], rc);
    }
    if ((rc = elk_blocking_connect(&gw.client, 10000, NULL)) != ELK_OK) {
        return fail("connect", rc);
    }
    if ((rc = elk_blocking_acquire(&gw.client, &gw.lock, 10000, NULL)) != ELK_OK) {
        fprintf(stderr, "lease_tls: %s not acquired: %s\n", argv[2], elk_err_message(rc));
        return 73;
    }
    printf("held %s token=%llu\n", argv[2], (unsigned long long)elk_lock_token(&gw.lock));
    fflush(stdout);
    status = drive(argv[2]);
    rc = elk_blocking_release(&gw.client, &gw.lock, 5000, NULL);
    printf("released %s (%s)\n", argv[2], elk_err_name(rc));
    for (int i = 0; i < argc - 3; i++) {
        elk_node_close(&gw.nodes[i], elk_posix_now_ms());
        elk_tls_conn_free(&gw.conn[i]);
    }
    elk_tls_shared_free(&gw.tls);
    return status;
}
