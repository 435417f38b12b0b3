/* SPDX-License-Identifier: MIT */
/*
 * How many leases one redis-server core keeps alive (issue 30): simulated gateways (one
 * lib client each, with its own connections, in this process) hold leases on 1 and 3
 * masters and renew them; the lease count grows step by step while the busiest master's
 * CPU (from /proc/<pid>/stat) and this process's CPU are measured over whole renewal
 * periods. Per-lease renewal (batch_renewals off: the peer, today's per-lease path) and
 * batched renewal (one EXTEND_BATCH per node per tick) side by side at every step.
 *
 *   bench_fleet_capacity [--quick]
 *
 * For every step it prints the server's CPU per lease renewal (us, the busiest master) and
 * what that means for a fleet: leases one server core keeps alive at 50% of its CPU and
 * at saturation with the default lease (TTL 10 s, renewed every 3.3 s), extrapolated
 * linearly from the measured cost (a core that is saturated adds queueing, so the 100%
 * figure is a ceiling). The ramp stops at CONFIG_ELK_MAX_LOCKS leases per gateway, when a
 * renewal fails, or when this process (the 16 gateways) uses more than 90% of a core: on
 * one machine the simulated gateways saturate long before one Redis core does, and the
 * output says which bound ended the ramp. TTL 1 s (renewed every 330 ms) so that fewer
 * leases make a measurable load, 6 renewal periods a step; --quick: 2 steps of 3 periods.
 * Prints "RESULT <id> <value> <unit> <name>" lines for run-all.sh's table.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_redis.h"
#include "bench_stats.h"
#include "elk/lock.h"
#include "elk/port_posix.h"

#define GATEWAYS 16u
#define MAX_MASTERS 3u
#define POOL_BLOCKS (2u * MAX_MASTERS + 2u)
#define TTL_MS 1000u
#define FIELD_TTL_MS 10000.0 /* the default lease the fleet figures are for */

typedef struct gateway {
    elk_posix_tcp_t tcp[MAX_MASTERS];
    elk_transport_t tcp_t[MAX_MASTERS];
    elk_node_t nodes[MAX_MASTERS];
    elk_fleet_t fleet;
    _Alignas(8) uint8_t pool_mem[POOL_BLOCKS * CONFIG_ELK_POOL_BLOCK_SIZE];
    elk_pool_t pool;
    elk_client_t client;
    elk_lock_t *locks; /* CONFIG_ELK_MAX_LOCKS of them */
    char (*names)[32];
    char id[16];
} gateway_t;

static pid_t pids[MAX_MASTERS];
static uint16_t ports[MAX_MASTERS];
static char tmpdir[64];
static elk_entropy_t entropy;
static gateway_t *gws; /* GATEWAYS of them */
static bench_lease_counts_t counts;

static void stop_all(void)
{
    bench_redis_stop_all(pids, MAX_MASTERS, tmpdir);
}

static void die(const char *what, int rc)
{
    bench_die("bench_fleet_capacity", what, rc, stop_all);
}

/* CPU seconds redis-server pid's main thread (the one that runs every command) used so
 * far: /proc/<pid>/schedstat counts nanoseconds; /proc/<pid>/stat (clock ticks, 10 ms:
 * too coarse for a window of a second) when the kernel has no schedstat. */
static double proc_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    unsigned long long ns = 0;
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    FILE *ss = fopen(path, "r");
    if (ss != NULL) {
        int got = fscanf(ss, "%llu", &ns);
        fclose(ss);
        if (got == 1) {
            return (double)ns / 1e9;
        }
    }
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1.0;
    }
    size_t n = fread(buf, 1, sizeof buf - 1u, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long ut = 0, st = 0;
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) {
        return -1.0;
    }
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run every gateway's client until `until` (posix clock ms): one poll() over all their
 * descriptors, as an agent serving many clients would. */
static void drive_until(uint64_t until)
{
    struct pollfd pfd[GATEWAYS * MAX_MASTERS * 2u];
    elk_wait_t waits[MAX_MASTERS * 2u];
    for (;;) {
        uint64_t now = elk_posix_now_ms();
        uint64_t next = until;
        size_t n = 0;
        if (now >= until) {
            return;
        }
        for (size_t g = 0; g < GATEWAYS; g++) {
            uint64_t w = elk_client_poll(&gws[g].client, now);
            next = w < next ? w : next;
            size_t k = elk_client_waits(&gws[g].client, waits, MAX_MASTERS * 2u);
            for (size_t j = 0; j < k; j++) {
                pfd[n].fd = waits[j].fd;
                pfd[n].events = (short)(((waits[j].events & ELK_WAIT_READ) ? POLLIN : 0) |
                                        ((waits[j].events & ELK_WAIT_WRITE) ? POLLOUT : 0));
                n++;
            }
        }
        now = elk_posix_now_ms();
        if (next > now) {
            (void)poll(pfd, n, (int)(next - now > 1000u ? 1000u : next - now));
        }
    }
}

static void gateways_up(size_t masters, bool batch)
{
    for (size_t g = 0; g < GATEWAYS; g++) {
        gateway_t *gw = &gws[g];
        elk_client_config_t cc;
        int rc = elk_pool_init(&gw->pool, gw->pool_mem, sizeof gw->pool_mem,
                               CONFIG_ELK_POOL_BLOCK_SIZE, POOL_BLOCKS);
        if (rc != ELK_OK) {
            die("pool", rc);
        }
        for (size_t m = 0; m < masters; m++) {
            elk_node_config_t nc;
            bench_node_config(&nc, ports[m], false, 2000u); /* lib/node's default */
            nc.resp3 = true;
            elk_posix_tcp_init(&gw->tcp[m], NULL, &gw->tcp_t[m]);
            if ((rc = elk_node_init(&gw->nodes[m], &nc, &gw->tcp_t[m], &gw->pool, &entropy,
                                    NULL)) != ELK_OK) {
                die("node init", rc);
            }
        }
        elk_fleet_init(&gw->fleet, gw->nodes, masters);
        elk_client_config_defaults(&cc);
        snprintf(gw->id, sizeof gw->id, "gw%zu%c", g, batch ? 'b' : 'p');
        cc.gateway_id = gw->id;
        cc.key_prefix = "fc:";
        cc.mode = masters == 1u ? ELK_MODE_SINGLE : ELK_MODE_REDLOCK;
        cc.safety = ELK_SAFETY_OFF;
        cc.batch_renewals = batch;
        if ((rc = elk_client_init(&gw->client, &cc, &gw->fleet, &entropy, NULL)) != ELK_OK) {
            die("client init", rc);
        }
    }
    /* Connected and voting: a fresh connection waits for its probe, a fresh server for the
     * vote hygiene's quarantine (about a TTL after it starts, docs/design.md). */
    uint64_t end = elk_posix_now_ms() + 60000;
    for (;;) {
        bool all = true;
        for (size_t g = 0; g < GATEWAYS && all; g++) {
            for (size_t m = 0; m < masters && all; m++) {
                all =
                    elk_node_is_ready(&gws[g].nodes[m]) && elk_client_node_votes(&gws[g].client, m);
            }
        }
        if (all) {
            return;
        }
        if (elk_posix_now_ms() > end) {
            die("connect and wait for the vote", ELK_E_FLEET_UNAVAILABLE);
        }
        drive_until(elk_posix_now_ms() + 50u);
    }
}

/* Every gateway takes `per` leases, a few at a time per gateway; one acquire that our own
 * full request queue refused is tried again. */
static bool acquire_all(size_t per)
{
    size_t next[GATEWAYS] = {0};
    uint64_t end = elk_posix_now_ms() + 120000;
    for (;;) {
        size_t held = 0;
        uint64_t now = elk_posix_now_ms();
        if (now > end) {
            return false;
        }
        for (size_t g = 0; g < GATEWAYS; g++) {
            gateway_t *gw = &gws[g];
            size_t inflight = 0;
            for (size_t i = 0; i < next[g]; i++) {
                elk_lock_state_t st = elk_lock_state(&gw->locks[i]);
                inflight += st == ELK_LOCK_ACQUIRING || st == ELK_LOCK_COMMITTING;
                held += elk_lock_is_held(&gw->locks[i], now);
                if ((st == ELK_LOCK_IDLE || st == ELK_LOCK_LOST) && !elk_lock_busy(&gw->locks[i])) {
                    int rc = elk_lock_acquire(&gw->locks[i], now, 0);
                    if (rc != ELK_E_WOULD_BLOCK && rc != ELK_OK) {
                        die("acquire again", rc);
                    }
                }
            }
            while (next[g] < per && inflight < 8u) {
                int rc = elk_lock_acquire(&gw->locks[next[g]], now, 0);
                if (rc != ELK_E_WOULD_BLOCK && rc != ELK_OK) {
                    die("acquire", rc);
                }
                inflight++;
                next[g]++;
            }
        }
        if (held == per * GATEWAYS) {
            return true;
        }
        drive_until(elk_posix_now_ms() + 5u);
    }
}

static void gateways_down(size_t masters, size_t per)
{
    uint64_t end = elk_posix_now_ms() + 20000;
    for (size_t g = 0; g < GATEWAYS; g++) {
        for (size_t i = 0; i < per; i++) {
            (void)elk_lock_release(&gws[g].locks[i], elk_posix_now_ms());
        }
    }
    while (elk_posix_now_ms() < end) {
        size_t busy = 0;
        for (size_t g = 0; g < GATEWAYS; g++) {
            for (size_t i = 0; i < per; i++) {
                busy += elk_lock_busy(&gws[g].locks[i]) ||
                    elk_lock_state(&gws[g].locks[i]) == ELK_LOCK_RELEASING;
            }
        }
        if (busy == 0) {
            break;
        }
        drive_until(elk_posix_now_ms() + 5u);
    }
    for (size_t g = 0; g < GATEWAYS; g++) {
        for (size_t i = 0; i < per; i++) {
            elk_lock_deinit(&gws[g].locks[i]);
        }
        for (size_t m = 0; m < masters; m++) {
            elk_node_close(&gws[g].nodes[m], elk_posix_now_ms());
        }
    }
}

typedef struct step {
    double server_cpu;     /* busiest master: fraction of one core */
    double self_cpu;       /* this process (every gateway): fraction of one core */
    double renew_ps;       /* lease renewals confirmed per second */
    double us_per_renewal; /* busiest master's CPU per lease renewal */
    unsigned failed, lost;
    bool complete; /* every lease was taken within 120 s */
} step_t;

static step_t run_step(size_t masters, size_t per, bool batch, unsigned periods)
{
    uint32_t period = TTL_MS * 33u / 100u;
    step_t s;
    elk_lock_config_t lc;
    gateways_up(masters, batch);
    elk_lock_config_defaults(&lc);
    lc.ttl_ms = TTL_MS;
    for (size_t g = 0; g < GATEWAYS; g++) {
        for (size_t i = 0; i < per; i++) {
            snprintf(gws[g].names[i], sizeof gws[g].names[i], "g%zu.l%zu", g, i);
            int rc = elk_lock_init(&gws[g].locks[i], &gws[g].client, gws[g].names[i], &lc,
                                   bench_count_lease_events, &counts);
            if (rc != ELK_OK) {
                die("lock init", rc);
            }
        }
    }
    memset(&s, 0, sizeof s);
    s.complete = acquire_all(per);
    if (!s.complete) {
        gateways_down(masters, per);
        return s;
    }
    drive_until(elk_posix_now_ms() + period); /* every lease renewed once: settled */
    memset(&counts, 0, sizeof counts);
    double c0[MAX_MASTERS];
    for (size_t m = 0; m < masters; m++) {
        c0[m] = proc_cpu_s(pids[m]);
    }
    double self0 = self_cpu_s();
    double t0 = bench_now_s();
    drive_until(elk_posix_now_ms() + (uint64_t)period * periods);
    double dt = bench_now_s() - t0;
    s.self_cpu = (self_cpu_s() - self0) / dt;
    s.server_cpu = 0;
    for (size_t m = 0; m < masters; m++) {
        double c = (proc_cpu_s(pids[m]) - c0[m]) / dt;
        s.server_cpu = c > s.server_cpu ? c : s.server_cpu;
    }
    s.renew_ps = counts.renewed / dt;
    /* every lease renewal runs on every master: the busiest one's cost per renewal */
    s.us_per_renewal = s.renew_ps > 0 ? s.server_cpu * 1e6 / s.renew_ps : 0;
    s.failed = counts.renew_failed;
    s.lost = counts.lost;
    gateways_down(masters, per);
    return s;
}

/* Leases one server core keeps alive at `share` of its CPU with the default lease. */
static double leases_at(double us_per_renewal, double share)
{
    double renewals_per_lease_s = 1.0 / (FIELD_TTL_MS * 0.33 / 1000.0);
    return us_per_renewal > 0 ? share * 1e6 / (us_per_renewal * renewals_per_lease_s) : 0;
}

static void report(size_t masters, const char *side, size_t total, const step_t *s)
{
    printf("    %-9s %5zu leases: master CPU %5.1f%%  gateways' CPU %5.1f%%  renewals/s %7.0f"
           "  %6.2f us/renewal  (renew failed %u, lost %u)\n",
           side, total, s->server_cpu * 100, s->self_cpu * 100, s->renew_ps, s->us_per_renewal,
           s->failed, s->lost);
    (void)masters;
}

static void ramp(size_t masters, bool quick)
{
    static const size_t totals[] = {64, 256, 1024, 4096, 16384};
    unsigned periods = quick ? 3u : 6u;
    size_t steps = quick ? 2u : sizeof totals / sizeof totals[0];
    step_t last[2];
    memset(last, 0, sizeof last);
    size_t last_total = 0;
    const char *why = "the last step";
    printf("  %zu master%s, %u gateways, TTL %u ms:\n", masters, masters == 1u ? "" : "s", GATEWAYS,
           TTL_MS);
    for (size_t k = 0; k < steps; k++) {
        size_t per = totals[k] / GATEWAYS;
        if (per > (size_t)CONFIG_ELK_MAX_LOCKS) {
            why = "CONFIG_ELK_MAX_LOCKS per gateway";
            break;
        }
        step_t per_lease = run_step(masters, per, false, periods);
        step_t batched = per_lease.complete ? run_step(masters, per, true, periods) : per_lease;
        if (!per_lease.complete || !batched.complete) {
            printf("    %5zu leases: the gateways did not take them all within 120 s\n", totals[k]);
            why = "the gateways could not take more leases (this process's limit)";
            break;
        }
        report(masters, "per-lease", totals[k], &per_lease);
        report(masters, "batched", totals[k], &batched);
        last[0] = per_lease;
        last[1] = batched;
        last_total = totals[k];
        if (per_lease.failed + per_lease.lost + batched.failed + batched.lost > 0) {
            why = "renewals failed";
            break;
        }
        if (per_lease.self_cpu > 0.9 || per_lease.server_cpu > 0.9) {
            why = per_lease.server_cpu > 0.9 ? "a master's core saturated"
                                             : "the gateways' own core saturated";
            break;
        }
    }
    if (last_total == 0) {
        return;
    }
    const char *names[2] = {"per_lease", "batched"};
    for (int b = 0; b < 2; b++) {
        char id[64], name[200];
        double half = leases_at(last[b].us_per_renewal, 0.5);
        double full = leases_at(last[b].us_per_renewal, 1.0);
        printf("    %-9s at %zu leases (ramp ended: %s): %.2f us of master CPU per renewal ->"
               " one core keeps %.0f leases alive at 50%% and at most %.0f at 100%% (TTL 10 s)\n",
               b ? "batched" : "per-lease", last_total, why, last[b].us_per_renewal, half, full);
        snprintf(id, sizeof id, "capacity.m%zu.%s.us_per_renewal", masters, names[b]);
        snprintf(name, sizeof name, "%zu master(s), %s: master CPU per lease renewal", masters,
                 names[b]);
        bench_result(id, last[b].us_per_renewal, "us", name);
        snprintf(id, sizeof id, "capacity.m%zu.%s.leases_50pct", masters, names[b]);
        snprintf(name, sizeof name,
                 "%zu master(s), %s: leases one core keeps alive at 50%% CPU (TTL 10 s)", masters,
                 names[b]);
        bench_result(id, half, "leases", name);
    }
    double ratio = last[1].us_per_renewal > 0 ? last[0].us_per_renewal / last[1].us_per_renewal : 0;
    printf("    ratio per-lease / batched master CPU per renewal: %.1fx\n", ratio);
    char id[64];
    snprintf(id, sizeof id, "capacity.m%zu.ratio", masters);
    bench_result(id, ratio, "x", "per-lease / batched master CPU per lease renewal");
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (!bench_begin_stop("bench_fleet_capacity", "/tmp/elk-benchcap-XXXXXX", stop_all, tmpdir,
                          sizeof tmpdir)) {
        return 2;
    }
    elk_posix_entropy(&entropy);
    gws = calloc(GATEWAYS, sizeof *gws);
    if (gws == NULL) {
        return 2;
    }
    for (size_t g = 0; g < GATEWAYS; g++) {
        gws[g].locks = calloc(CONFIG_ELK_MAX_LOCKS, sizeof *gws[g].locks);
        gws[g].names = calloc(CONFIG_ELK_MAX_LOCKS, sizeof *gws[g].names);
        if (gws[g].locks == NULL || gws[g].names == NULL) {
            return 2;
        }
    }
    for (size_t m = 0; m < MAX_MASTERS; m++) {
        ports[m] = bench_free_port();
        pids[m] = bench_redis_start(tmpdir, ports[m], false, NULL);
    }
    usleep(300 * 1000);
    printf("bench_fleet_capacity: %s build, %u gateways in this process, redis-servers :%u "
           ":%u :%u, CONFIG_ELK_MAX_LOCKS=%d, pool block %d B\n",
           ELK_BENCH_BUILD_TYPE, GATEWAYS, ports[0], ports[1], ports[2], CONFIG_ELK_MAX_LOCKS,
           CONFIG_ELK_POOL_BLOCK_SIZE);
    ramp(1, quick);
    ramp(3, quick);
    printf("  reproduce: bench_fleet_capacity%s (tests/bench/run-all.sh builds it in "
           "build-bench/)\n",
           quick ? " --quick" : "");
    return 0;
}
