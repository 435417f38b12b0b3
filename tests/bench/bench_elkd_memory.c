/* SPDX-License-Identifier: MIT */
/*
 * What elkd costs on a gateway (issue 30): its resident set (VmRSS, and the high-water
 * mark VmHWM) and its CPU per lease per renewal interval, with 1, 64, 512 and 4,096 leases
 * held through 1 client and through 64 (or as many as the build's elkd serves,
 * CONFIG_ELKD_MAX_CLIENTS), renewals batched (the default) against one request per lease
 * ([fleet] batch_renewals = off), against the peer: a Python program holding and extending
 * the same number of redis-py Locks on the same server (Debian's python3-redis, the lock
 * most gateway scripts use), in the same run, with the ratios.
 *
 *   bench_elkd_memory [--quick]          --quick: 1 and 64 leases, shorter windows
 *
 * Every case starts a fresh elkd on one redis-server (127.0.0.1, ephemeral port, mode
 * single, TTL 6 s, 3 s in --quick; renewal every CONFIG_ELK_RENEW_FRACTION_PCT of it),
 * takes the leases over the control socket (ACQUIRE, pipelined), reads the connections
 * (renewal events) for one renewal interval so that renewals run, then for a measured
 * window of three intervals: CPU is elkd's time on a CPU across it (/proc/<pid>/schedstat,
 * nanoseconds; utime + stime from /proc/<pid>/stat, in 10 ms ticks, printed beside it),
 * divided by the leases and the intervals it spans; VmRSS is read at its end. Lease counts
 * above what the build's elkd serves (CONFIG_ELKD_MAX_RESOURCES and CONFIG_ELK_MAX_LOCKS;
 * tests/bench/bench_defconfig raises both to 4096) are skipped with elkd's own refusal.
 * The Python peer extends each of its locks every interval (Lock.extend, one request per
 * lock: redis-py has no batch) and measures its own CPU (time.process_time) over the same
 * window.
 * Prints "RESULT <id> <value> <unit> <name>" lines for run-all.sh's table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_redis.h"
#include "bench_stats.h"
#include "elk_config.h"

#ifndef ELK_BENCH_ELKD
#error "ELK_BENCH_ELKD: the path of the elkd to measure (tests/bench/CMakeLists.txt)"
#endif

/* Connections of the many-clients case: 64, or the client slots the build's elkd has. */
#define MAX_CONNS (CONFIG_ELKD_MAX_CLIENTS < 64 ? CONFIG_ELKD_MAX_CLIENTS : 64)
#define WINDOW_INTERVALS 3

static pid_t pids[1];
static pid_t elkd_pid;
static uint16_t port;
static char tmpdir[64];
static unsigned ttl_s = 6;

static void stop_elkd(void)
{
    if (elkd_pid > 0) {
        kill(elkd_pid, SIGTERM);
        waitpid(elkd_pid, NULL, 0);
        elkd_pid = 0;
    }
}

static void stop_all(void)
{
    stop_elkd();
    bench_redis_stop_all(pids, 1, tmpdir);
}

static void die(const char *what)
{
    fprintf(stderr, "bench_elkd_memory: %s: %s\n", what, strerror(errno));
    stop_all();
    exit(1);
}

/* One renewal interval in seconds: the share of the TTL after which a lease is renewed. */
static double interval_s(void)
{
    return (double)ttl_s * CONFIG_ELK_RENEW_FRACTION_PCT / 100.0;
}

/* kB of a "Key:   N kB" line of /proc/<pid>/status, -1 if it is not there. */
static long status_kb(pid_t pid, const char *key)
{
    char path[64], line[256];
    long v = -1;
    size_t klen = strlen(key);
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            v = atol(line + klen + 1);
        }
    }
    fclose(f);
    return v;
}

/* utime + stime of pid in seconds (/proc/<pid>/stat fields 14 and 15), -1 if unreadable. */
static double cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    unsigned long ut, st;
    size_t n;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1.0;
    }
    n = fread(buf, 1, sizeof buf - 1u, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) {
        return -1.0;
    }
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The same in nanoseconds where the kernel keeps it (/proc/<pid>/schedstat: time on a CPU,
 * all threads): utime + stime advance in clock ticks (10 ms), too coarse for a few leases
 * in a few seconds. -1 if unreadable. */
static double cpu_fine_s(pid_t pid)
{
    char path[64];
    unsigned long long ns;
    int ok;
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1.0;
    }
    ok = fscanf(f, "%llu", &ns) == 1;
    fclose(f);
    return ok ? (double)ns / 1e9 : -1.0;
}

static void write_conf(const char *path, const char *sock, size_t leases, bool batch)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        die("write the configuration");
    }
    fprintf(f,
            "[fleet]\nmode = single\ngateway_id = bench\nkey_prefix = mem:\ntls = off\n"
            "batch_renewals = %s\n[node 1]\nhost = 127.0.0.1\nport = %u\n"
            "[agent]\nsocket = %s\nlog_level = warn\nmax_clients_per_uid = %d\n",
            batch ? "on" : "off", port, sock, MAX_CONNS);
    for (size_t i = 0; i < leases; i++) {
        fprintf(f, "[resource r%zu]\nttl = %us\n", i, ttl_s);
    }
    fclose(f);
}

/* elkd --check's first complaint about conf, into why (empty when it takes conf). */
static void check_conf(const char *conf, char *why, size_t cap)
{
    char cmd[512];
    why[0] = '\0';
    snprintf(cmd, sizeof cmd, "%s --check -c %s 2>&1 >/dev/null", ELK_BENCH_ELKD, conf);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        return;
    }
    int rc;
    if (fgets(why, (int)cap, p) != NULL) {
        why[strcspn(why, "\n")] = '\0';
    }
    rc = pclose(p);
    if (rc == 0) {
        why[0] = '\0';
    }
}

static void start_elkd(const char *conf, const char *sock)
{
    elkd_pid = fork();
    if (elkd_pid < 0) {
        die("fork");
    }
    if (elkd_pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execl(ELK_BENCH_ELKD, "elkd", "-f", "-c", conf, "--log", "stderr", (char *)NULL);
        _exit(127);
    }
    for (int k = 0; k < 600; k++) { /* 60 s */
        if (access(sock, F_OK) == 0) {
            return;
        }
        usleep(100 * 1000);
    }
    errno = ETIMEDOUT;
    die("elkd's socket");
}

static int connect_sock(const char *sock)
{
    struct sockaddr_un sa;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) {
        die("socket");
    }
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(sock) >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        die("socket path");
    }
    memcpy(sa.sun_path, sock, strlen(sock) + 1u);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        die("connect to elkd");
    }
    return fd;
}

/* Lines of one connection read so far: what lies after its last newline is kept. */
typedef struct inbuf {
    char buf[1 << 16];
    size_t have;
} inbuf_t;

static inbuf_t inbufs[64];

/* Read what fd has into in; counts the whole lines starting with prefix. -1: closed. */
static long read_lines(int fd, inbuf_t *in, const char *prefix)
{
    long hits = 0;
    ssize_t n = recv(fd, in->buf + in->have, sizeof in->buf - in->have - 1u, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        return -1;
    }
    in->have += n > 0 ? (size_t)n : 0u;
    char *start = in->buf, *nl;
    while ((nl = memchr(start, '\n', in->have - (size_t)(start - in->buf))) != NULL) {
        hits += strncmp(start, prefix, strlen(prefix)) == 0;
        start = nl + 1;
    }
    in->have -= (size_t)(start - in->buf);
    memmove(in->buf, start, in->have);
    return hits;
}

/* Send every line, then read until `want` lines starting with "OK " have come (events
 * and other answers are read past). Returns the OK lines seen. */
static size_t request_all(int fd, inbuf_t *in, const char *lines, size_t len, size_t want)
{
    size_t off = 0, ok = 0;
    time_t end = time(NULL) + 120;
    while ((off < len || ok < want) && time(NULL) < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN | (off < len ? POLLOUT : 0)};
        if (poll(&p, 1, 1000) <= 0) {
            continue;
        }
        if ((p.revents & POLLOUT) && off < len) {
            ssize_t n = send(fd, lines + off, len - off, MSG_NOSIGNAL);
            off += n > 0 ? (size_t)n : 0u;
        }
        if (p.revents & (POLLIN | POLLHUP)) {
            long hits = read_lines(fd, in, "OK ");
            if (hits < 0) {
                break;
            }
            ok += (size_t)hits;
        }
    }
    return ok;
}

/* Read every connection for seconds (elkd's renewal events; a client that reads nothing is
 * dropped as stalled); returns the EVENT LOST lines seen. */
static unsigned drain(const int *fds, size_t n, double seconds)
{
    struct pollfd p[64];
    unsigned lost = 0;
    double end = bench_now_s() + seconds;
    for (size_t c = 0; c < n; c++) {
        p[c] = (struct pollfd){.fd = fds[c], .events = POLLIN};
    }
    while (bench_now_s() < end) {
        int ms = (int)((end - bench_now_s()) * 1000.0) + 1;
        if (poll(p, (nfds_t)n, ms) <= 0) {
            continue;
        }
        for (size_t c = 0; c < n; c++) {
            if (p[c].revents & (POLLIN | POLLHUP)) {
                long hits = read_lines(fds[c], &inbufs[c], "EVENT LOST");
                lost += hits > 0 ? (unsigned)hits : 0u;
                p[c].fd = hits < 0 ? -1 : p[c].fd;
            }
        }
    }
    return lost;
}

typedef struct run {
    long rss_kb, hwm_kb; /* -1: not measured */
    size_t held;
    double cpu_s, window_s; /* CPU used in the measured window (fine), and its length */
    double ticks_s;         /* the same from utime + stime (-1: not measured) */
    unsigned lost;
} run_t;

/* CPU per lease per renewal interval, in microseconds. */
static double per_lease_us(const run_t *r)
{
    if (r->held == 0 || r->window_s <= 0.0) {
        return 0.0;
    }
    return r->cpu_s * 1e6 / (double)r->held / (r->window_s / interval_s());
}

/* The leases spread over the connections, each connection's ACQUIREs pipelined. */
static size_t acquire_all(const int *fds, size_t conns, size_t leases)
{
    size_t held = 0;
    for (size_t c = 0; c < conns; c++) {
        size_t cap = (leases / conns + 1u) * 32u, len = 0, n = 0;
        char *lines = malloc(cap);
        if (lines == NULL) {
            die("malloc");
        }
        for (size_t i = c; i < leases; i += conns) {
            len += (size_t)snprintf(lines + len, cap - len, "ACQUIRE r%zu 60000\n", i);
            n++;
        }
        held += request_all(fds[c], &inbufs[c], lines, len, n);
        free(lines);
    }
    return held;
}

static run_t measure_elkd(size_t leases, size_t conns, bool batch, char *why, size_t why_cap)
{
    char conf[128], sock[128];
    int fds[64];
    run_t m = {-1, -1, 0, 0.0, 0.0, -1.0, 0};
    snprintf(conf, sizeof conf, "%s/elkd-%zu.conf", tmpdir, leases);
    snprintf(sock, sizeof sock, "%s/elkd.sock", tmpdir);
    unlink(sock);
    write_conf(conf, sock, leases, batch);
    check_conf(conf, why, why_cap);
    if (why[0] != '\0') {
        return m;
    }
    start_elkd(conf, sock);
    memset(inbufs, 0, sizeof inbufs);
    for (size_t c = 0; c < conns; c++) {
        fds[c] = connect_sock(sock);
    }
    m.held = acquire_all(fds, conns, leases);
    m.lost = drain(fds, conns, interval_s() + 0.5); /* the first renewals ran */
    double c0 = cpu_s(elkd_pid), f0 = cpu_fine_s(elkd_pid), t0 = bench_now_s();
    m.lost += drain(fds, conns, WINDOW_INTERVALS * interval_s());
    double c1 = cpu_s(elkd_pid), f1 = cpu_fine_s(elkd_pid), t1 = bench_now_s();
    m.ticks_s = c1 - c0;
    m.cpu_s = f0 >= 0.0 && f1 >= 0.0 ? f1 - f0 : m.ticks_s;
    m.window_s = t1 - t0;
    m.rss_kb = status_kb(elkd_pid, "VmRSS");
    m.hwm_kb = status_kb(elkd_pid, "VmHWM");
    for (size_t c = 0; c < conns; c++) {
        close(fds[c]); /* a closed connection releases its leases */
    }
    stop_elkd();
    return m;
}

/* The peer, written to a file: python3 holding `n` redis-py Locks on the server, extending
 * each every interval; prints "held rss_kb hwm_kb cpu_s window_s failed_extends". */
static const char peer_py[] =
    "import os, sys, time, redis\n"
    "port, n, ttl, interval, settle, window = int(sys.argv[1]), int(sys.argv[2]), "
    "int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])\n"
    "r = redis.Redis(host='127.0.0.1', port=port)\n"
    "held = [l for l in (r.lock('py:r%d' % i, timeout=ttl) for i in range(n))\n"
    "        if l.acquire(blocking=False)]\n"
    "failed = 0\n"
    "due = time.monotonic() + interval\n"
    "def run_until(end):\n"
    "    global due, failed\n"
    "    while time.monotonic() < end:\n"
    "        if time.monotonic() >= due:\n"
    "            for l in held:\n"
    "                try:\n"
    "                    l.extend(ttl, replace_ttl=True)\n"
    "                except Exception:\n"
    "                    failed += 1\n"
    "            due += interval\n"
    "        else:\n"
    "            time.sleep(max(0.0, min(due, end) - time.monotonic()))\n"
    "run_until(time.monotonic() + settle)\n"
    "c0, t0 = time.process_time(), time.monotonic()\n"
    "run_until(t0 + window)\n"
    "c1, t1 = time.process_time(), time.monotonic()\n"
    "st = dict(l.split(':', 1) for l in open('/proc/self/status'))\n"
    "print(len(held), int(st['VmRSS'].split()[0]), int(st['VmHWM'].split()[0]),\n"
    "      c1 - c0, t1 - t0, failed)\n"
    "for l in held:\n"
    "    try:\n"
    "        l.release()\n"
    "    except Exception:\n"
    "        pass\n";

static run_t measure_python(size_t leases)
{
    char path[128], cmd[512];
    run_t m = {-1, -1, 0, 0.0, 0.0, -1.0, 0};
    snprintf(path, sizeof path, "%s/peer.py", tmpdir);
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(peer_py, f) < 0 || fclose(f) != 0) {
        die("write the Python peer");
    }
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %u %zu %u %.3f %.3f %.3f 2>/dev/null", path,
             port, leases, ttl_s, interval_s(), interval_s() + 0.5,
             WINDOW_INTERVALS * interval_s());
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        return m;
    }
    if (fscanf(p, "%zu %ld %ld %lf %lf %u", &m.held, &m.rss_kb, &m.hwm_kb, &m.cpu_s, &m.window_s,
               &m.lost) != 6) {
        m.rss_kb = m.hwm_kb = -1;
    }
    pclose(p);
    return m;
}

static void print_run(const char *who, const run_t *r)
{
    char ticks[48] = "";
    if (r->ticks_s >= 0.0) {
        snprintf(ticks, sizeof ticks, ", utime+stime %.2f s", r->ticks_s);
    }
    printf("    %-28s VmRSS %6ld kB (VmHWM %6ld kB)   CPU %8.2f us per lease per renewal "
           "(%.4f s%s in %.1f s; %zu held, %u lost)\n",
           who, r->rss_kb, r->hwm_kb, per_lease_us(r), r->cpu_s, ticks, r->window_s, r->held,
           r->lost);
}

static void result_run(const char *key, size_t leases, const run_t *r, const char *name)
{
    char id[96], full[200];
    snprintf(id, sizeof id, "mem.%s_kb", key);
    snprintf(full, sizeof full, "%s VmRSS, %zu leases", name, leases);
    bench_result(id, (double)r->rss_kb, "kB", full);
    snprintf(id, sizeof id, "cpu.%s_us", key);
    snprintf(full, sizeof full, "%s CPU per lease per renewal, %zu leases", name, leases);
    bench_result(id, per_lease_us(r), "us", full);
}

static double ratio(double a, double b)
{
    return b > 0.0 ? a / b : 0.0;
}

/* One lease count: elkd batched and per-lease through 1 client, the Python peer, the
 * ratios, then elkd batched through MAX_CONNS clients. */
static void one_count(size_t leases)
{
    char why[256], key[64], who[64];
    run_t b = measure_elkd(leases, 1, true, why, sizeof why);
    printf("  %zu lease%s (ttl %u s, a renewal every %.2f s):\n", leases, leases == 1 ? "" : "s",
           ttl_s, interval_s());
    if (why[0] != '\0') {
        printf("    skipped, elkd refuses the configuration: %s\n", why);
        return;
    }
    run_t pl = measure_elkd(leases, 1, false, why, sizeof why);
    run_t py = measure_python(leases);
    print_run("elkd, 1 client, batched", &b);
    print_run("elkd, 1 client, per-lease", &pl);
    if (py.rss_kb > 0) {
        print_run("python3 + redis-py Lock", &py);
    }
    printf("    ratios: elkd per-lease/batched CPU %.2f; elkd batched/python CPU %.2f, "
           "VmRSS %.2f\n",
           ratio(per_lease_us(&pl), per_lease_us(&b)), ratio(per_lease_us(&b), per_lease_us(&py)),
           ratio((double)b.rss_kb, (double)py.rss_kb));
    snprintf(key, sizeof key, "elkd.l%zu.c1.batch", leases);
    result_run(key, leases, &b, "elkd batched, 1 client,");
    snprintf(key, sizeof key, "elkd.l%zu.c1.perlease", leases);
    result_run(key, leases, &pl, "elkd per-lease, 1 client,");
    if (py.rss_kb > 0) {
        snprintf(key, sizeof key, "python.l%zu", leases);
        result_run(key, leases, &py, "python3 + redis-py Lock,");
    }
    if (leases >= 64u) {
        run_t many = measure_elkd(leases, MAX_CONNS, true, why, sizeof why);
        snprintf(who, sizeof who, "elkd, %d clients, batched", MAX_CONNS);
        print_run(who, &many);
        snprintf(key, sizeof key, "elkd.l%zu.c%d.batch", leases, MAX_CONNS);
        result_run(key, leases, &many, "elkd batched, many clients,");
    }
}

int main(int argc, char **argv)
{
    static const size_t counts[] = {1, 64, 512, 4096};
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (!bench_begin_stop("bench_elkd_memory", "/tmp/elk-benchmem-XXXXXX", stop_all, tmpdir,
                          sizeof tmpdir)) {
        return 2;
    }
    ttl_s = quick ? 3u : 6u;
    port = bench_free_port();
    pids[0] = bench_redis_start(tmpdir, port, false, NULL);
    usleep(300 * 1000);
    printf("bench_elkd_memory: %s build, elkd %s, redis-server :%u, CONFIG_ELK_MAX_LOCKS=%d, "
           "CONFIG_ELKD_MAX_RESOURCES=%d, CONFIG_ELKD_MAX_CLIENTS=%d\n",
           ELK_BENCH_BUILD_TYPE, ELK_BENCH_ELKD, port, CONFIG_ELK_MAX_LOCKS,
           CONFIG_ELKD_MAX_RESOURCES, CONFIG_ELKD_MAX_CLIENTS);
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        if (quick && counts[k] > 64u) {
            printf("  %zu leases: skipped (--quick)\n", counts[k]);
            continue;
        }
        one_count(counts[k]);
    }
    printf("  reproduce: bench_elkd_memory%s (tests/bench/run-all.sh builds it in build-bench/, "
           "with tests/bench/bench_defconfig)\n",
           quick ? " --quick" : "");
    return 0;
}
