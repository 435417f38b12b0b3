/* SPDX-License-Identifier: MIT */
/* redis-server processes for the benchmarks: see bench_redis.h. */
#include "bench_redis.h"
#include "bench_stats.h"
#include "redis_proc.h"
#include "elk/blocking.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

uint16_t bench_free_port(void)
{
    uint16_t port = elk_rp_free_port();
    if (port == 0) {
        perror("bench: free port");
        exit(2);
    }
    return port;
}

pid_t bench_redis_start(const char *dir, uint16_t port, bool tls, const char *log_path)
{
    char crt[256], key[256], ca[256];
    snprintf(crt, sizeof crt, "%s/server.crt", dir);
    snprintf(key, sizeof key, "%s/server.key", dir);
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    if (log_path != NULL) {
        remove(log_path); /* a fresh log per run */
    }
    elk_rp_opts_t o = {.port = port, .dir = dir, .log_path = log_path};
    o.tls = tls; /* the files below are read only with tls */
    o.tls_cert = crt;
    o.tls_key = key;
    o.tls_ca = ca;
    return elk_rp_spawn(&o);
}

void bench_redis_stop_all(pid_t *pids, size_t count, char *dir)
{
    for (size_t i = 0; i < count; i++) {
        if (pids[i] > 0) {
            (void)elk_rp_stop(pids[i], 10000);
            pids[i] = 0;
        }
    }
    if (dir != NULL && dir[0] != '\0') {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) {
            fprintf(stderr, "bench: could not remove %s\n", dir);
        }
        dir[0] = '\0';
    }
}

double bench_rb_rps(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        return 0;
    }
    char line[512];
    double v = 0;
    while (fgets(line, sizeof line, p) != NULL) {
        /* "NAME","rps",...: skip the header and PING_INLINE (not what we send) */
        if (strncmp(line, "\"test\"", 6) == 0 || strstr(line, "PING_INLINE") != NULL) {
            continue;
        }
        const char *q = strstr(line, "\",\"");
        if (q != NULL) {
            v = atof(q + 3);
        }
    }
    pclose(p);
    return v;
}

int bench_connect_loopback(uint16_t port)
{
    struct sockaddr_in a;
    int one = 1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

void bench_node_config(elk_node_config_t *cfg, uint16_t port, bool tls, uint32_t connect_ms)
{
    elk_node_config_defaults(cfg);
    cfg->endpoint.host = "127.0.0.1";
    cfg->endpoint.port = port;
    cfg->endpoint.server_name = tls ? "localhost" : NULL;
    cfg->connect_timeout_ms = connect_ms;
}

long bench_redis_requests(uint16_t port)
{
    char cmd[128], line[512];
    long v = 0;
    snprintf(cmd, sizeof cmd, "redis-cli -h 127.0.0.1 -p %u info commandstats 2>/dev/null", port);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        return -1;
    }
    while (fgets(line, sizeof line, p) != NULL) {
        if (strncmp(line, "cmdstat_evalsha:calls=", 22) == 0 ||
            strncmp(line, "cmdstat_eval:calls=", 19) == 0 ||
            strncmp(line, "cmdstat_ping:calls=", 19) == 0) {
            v += atol(strchr(line, '=') + 1);
        }
    }
    pclose(p);
    return v;
}

int bench_one_up(bench_one_t *b, uint16_t port, elk_client_config_t *cc,
                 const elk_entropy_t *entropy, const char **what)
{
    elk_node_config_t nc;
    int rc = elk_pool_init(&b->pool, b->pool_mem, sizeof b->pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE,
                           BENCH_ONE_POOL_BLOCKS);
    *what = "pool";
    if (rc != ELK_OK) {
        return rc;
    }
    elk_node_config_defaults(&nc);
    nc.endpoint.host = "127.0.0.1";
    nc.endpoint.port = port;
    nc.resp3 = true;
    elk_posix_tcp_init(&b->tcp, NULL, &b->tcp_t);
    *what = "node init";
    if ((rc = elk_node_init(&b->node, &nc, &b->tcp_t, &b->pool, entropy, NULL)) != ELK_OK) {
        return rc;
    }
    elk_fleet_init(&b->fleet, &b->node, 1);
    cc->mode = ELK_MODE_SINGLE;
    cc->safety = ELK_SAFETY_OFF;
    *what = "client init";
    if ((rc = elk_client_init(&b->client, cc, &b->fleet, entropy, NULL)) != ELK_OK) {
        return rc;
    }
    *what = "connect and wait for the vote";
    uint64_t end = elk_posix_now_ms() + 60000;
    while (!(elk_node_is_ready(&b->node) && elk_client_node_votes(&b->client, 0) &&
             elk_node_inflight(&b->node) == 0)) {
        if (elk_posix_now_ms() > end) {
            return ELK_E_FLEET_UNAVAILABLE;
        }
        elk_blocking_step(&b->client, elk_posix_now_ms() + 50, NULL);
    }
    return ELK_OK;
}

bool bench_server_begin(bench_server_t *s, const char *prog, const char *tmpl, void (*stop)(void))
{
    if (!bench_begin_stop(prog, tmpl, stop, s->dir, sizeof s->dir)) {
        return false;
    }
    elk_posix_entropy(&s->entropy);
    s->port = bench_free_port();
    s->pid[0] = bench_redis_start(s->dir, s->port, false, NULL);
    usleep(300 * 1000);
    return true;
}
