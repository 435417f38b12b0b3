/* SPDX-License-Identifier: MIT */
/*
 * redis-server processes for the benchmarks that start their own: a free loopback port,
 * a server on it (plain or TLS, no persistence), and stopping them with their directory;
 * redis-benchmark's figure for the same server; a plain connection and a lib/node config
 * for it.
 */
#ifndef ELK_BENCH_REDIS_H
#define ELK_BENCH_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "elk/lock.h"
#include "elk/node.h"
#include "elk/port_posix.h"

/* A port on 127.0.0.1 that was free a moment ago. Exits 2 if none can be had. */
uint16_t bench_free_port(void);

/* Fork a redis-server on 127.0.0.1:port with dir as its working directory. TLS uses
 * dir/server.crt, server.key and ca.crt (no client certificates asked). Its output goes
 * to log_path, or to /dev/null when log_path is NULL. Returns the child's pid. */
pid_t bench_redis_start(const char *dir, uint16_t port, bool tls, const char *log_path);

/* SIGTERM and reap every pids[i] > 0 (set to 0 after), then remove dir if it is set
 * (dir[0] is cleared after). Safe to call twice, and from a signal handler's exit path. */
void bench_redis_stop_all(pid_t *pids, size_t count, char *dir);

/* Run cmd, a redis-benchmark --csv command line, and return the requests/s of its last
 * row other than PING_INLINE (with -t ping: PING_MBULK, the multibulk PING our code
 * sends; with a command: its one row). 0 when it could not run or printed no row. */
double bench_rb_rps(const char *cmd);

/* A blocking TCP connection to 127.0.0.1:port with TCP_NODELAY; -1 when it fails. */
int bench_connect_loopback(uint16_t port);

/* lib/node's defaults for the server on 127.0.0.1:port (TLS: named "localhost", as the
 * benches' certificates are) with the given connect timeout. */
void bench_node_config(elk_node_config_t *cfg, uint16_t port, bool tls, uint32_t connect_ms);

/* Requests a client sent to the server on 127.0.0.1:port, as the server counts them:
 * EVALSHA + EVAL + PING calls from INFO commandstats (total_commands_processed would also
 * count the commands run inside each script). -1 when redis-cli could not be run. */
long bench_redis_requests(uint16_t port);

/* One lib client on one redis-server (127.0.0.1:port, RESP3): the stack the single-node
 * benches drive. Large: give it static storage. */
#define BENCH_ONE_POOL_BLOCKS 4u
typedef struct bench_one {
    elk_posix_tcp_t tcp;
    elk_transport_t tcp_t;
    elk_node_t node;
    elk_fleet_t fleet;
    _Alignas(8) uint8_t pool_mem[BENCH_ONE_POOL_BLOCKS * CONFIG_ELK_POOL_BLOCK_SIZE];
    elk_pool_t pool;
    elk_client_t client;
} bench_one_t;

/* Set b up with cc (the caller's gateway id, key prefix and switches; mode SINGLE and the
 * safety check off are set here) and wait up to 60 s until the node is ready, votes (a fresh
 * server is quarantined for about a TTL) and has nothing in flight. entropy must outlive b.
 * Returns ELK_OK, or the error with *what naming the step that failed. */
int bench_one_up(bench_one_t *b, uint16_t port, elk_client_config_t *cc,
                 const elk_entropy_t *entropy, const char **what);

/* The one plain redis-server of a benchmark that measures against a single server: its
 * working directory, port and pid (for bench_redis_stop_all(pid, 1, dir)), and the entropy
 * its clients use. Give it static storage (the signal and exit hooks stop it). */
typedef struct bench_server {
    char dir[64];
    uint16_t port;
    pid_t pid[1];
    elk_entropy_t entropy;
} bench_server_t;

/* bench_begin_stop(prog, tmpl, stop) into s->dir, then the entropy, a free port and a
 * plain redis-server on it, and 300 ms for it to listen. stop is the benchmark's own
 * (it stops s). false, after bench_begin_stop's message, if the directory could not be
 * made (the benchmark exits 2). */
bool bench_server_begin(bench_server_t *s, const char *prog, const char *tmpl, void (*stop)(void));

#endif
