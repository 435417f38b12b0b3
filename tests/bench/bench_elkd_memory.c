/* SPDX-License-Identifier: MIT */
/*
 * What elkd costs in memory on a gateway (issue 30): its resident set (VmRSS, and the
 * high-water mark VmHWM) with 1, 64 and 4,096 leases held through 1 client and through as
 * many clients as it serves (16, ELKD_MAX_CLIENTS), and 32 (the most resources an elkd
 * configuration holds today, ELKFW_MAX_RESOURCES: the larger counts are skipped with
 * elkd's own reason, until it serves more), against the peer: a Python program
 * holding the same number of redis-py Locks on the same server (Debian's python3-redis, the
 * lock most gateway scripts use), in the same run, with the ratio.
 *
 *   bench_elkd_memory [--quick]          --quick: 1 and 32 leases
 *
 * Every case starts a fresh elkd (the bench build's, tests/bench/bench_defconfig:
 * CONFIG_ELK_MAX_LOCKS 4096) on one redis-server (127.0.0.1, ephemeral port, mode single,
 * TTL 10 s), takes the leases over the control socket (ACQUIRE, pipelined), waits one
 * renewal period so that renewals ran, reads /proc/<pid>/status, releases and stops it.
 * Leases above CONFIG_ELK_MAX_LOCKS are skipped. Prints "RESULT <id> <value> <unit>
 * <name>" lines for run-all.sh's table.
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

#define MAX_CONNS 16

static pid_t pids[1];
static pid_t elkd_pid;
static uint16_t port;
static char tmpdir[64];

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

static void write_conf(const char *path, const char *sock, size_t leases)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        die("write the configuration");
    }
    fprintf(f,
            "[fleet]\nmode = single\ngateway_id = bench\nkey_prefix = mem:\ntls = off\n"
            "[node 1]\nhost = 127.0.0.1\nport = %u\n"
            "[agent]\nsocket = %s\nlog_level = warn\nmax_clients_per_uid = %d\n",
            port, sock, MAX_CONNS);
    for (size_t i = 0; i < leases; i++) {
        fprintf(f, "[resource r%zu]\nttl = 10s\n", i);
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

/* Send every line, then read until `want` lines starting with "OK " have come (events
 * and other answers are read past). Returns the OK lines seen. */
static size_t request_all(int fd, const char *lines, size_t len, size_t want)
{
    size_t off = 0, ok = 0, have = 0;
    static char buf[1 << 16];
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
            ssize_t n = recv(fd, buf + have, sizeof buf - have - 1u, 0);
            if (n <= 0) {
                break;
            }
            have += (size_t)n;
            buf[have] = '\0';
            char *start = buf, *nl;
            while ((nl = memchr(start, '\n', have - (size_t)(start - buf))) != NULL) {
                ok += strncmp(start, "OK ", 3) == 0;
                start = nl + 1;
            }
            have -= (size_t)(start - buf);
            memmove(buf, start, have);
        }
    }
    return ok;
}

typedef struct mem {
    long rss_kb, hwm_kb;
    size_t held;
} mem_t;

static mem_t measure_elkd(size_t leases, size_t conns)
{
    char conf[128], sock[128];
    int fds[MAX_CONNS];
    char why[256];
    mem_t m = {0, 0, 0};
    snprintf(conf, sizeof conf, "%s/elkd-%zu.conf", tmpdir, leases);
    snprintf(sock, sizeof sock, "%s/elkd.sock", tmpdir);
    unlink(sock);
    write_conf(conf, sock, leases);
    check_conf(conf, why, sizeof why);
    if (why[0] != '\0') {
        printf("  %4zu leases, %2zu client%s: skipped, elkd refuses the configuration: %s\n",
               leases, conns, conns == 1u ? " " : "s", why);
        m.rss_kb = -1;
        return m;
    }
    start_elkd(conf, sock);
    for (size_t c = 0; c < conns; c++) {
        fds[c] = connect_sock(sock);
    }
    /* the leases spread over the connections, each connection's ACQUIREs pipelined */
    for (size_t c = 0; c < conns; c++) {
        size_t cap = (leases / conns + 1u) * 32u, len = 0, n = 0;
        char *lines = malloc(cap);
        if (lines == NULL) {
            die("malloc");
        }
        for (size_t i = c; i < leases; i += conns) {
            len += (size_t)snprintf(lines + len, cap - len, "ACQUIRE r%zu 30000\n", i);
            n++;
        }
        m.held += request_all(fds[c], lines, len, n);
        free(lines);
    }
    sleep(4); /* a third of the TTL: every lease renewed once */
    m.rss_kb = status_kb(elkd_pid, "VmRSS");
    m.hwm_kb = status_kb(elkd_pid, "VmHWM");
    for (size_t c = 0; c < conns; c++) {
        close(fds[c]); /* a closed connection releases its leases */
    }
    stop_elkd();
    return m;
}

/* The peer: python3 holding `leases` redis-py Locks (timeout 10 s) on the same server,
 * its VmRSS and VmHWM as it reads them itself. */
static mem_t measure_python(size_t leases)
{
    char cmd[1024];
    mem_t m = {-1, -1, 0};
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import redis\n"
             "r = redis.Redis(host='127.0.0.1', port=%u)\n"
             "ls = [r.lock('py:r%%d' %% i, timeout=10) for i in range(%zu)]\n"
             "n = sum(1 for l in ls if l.acquire(blocking=False))\n"
             "st = dict(l.split(':', 1) for l in open('/proc/self/status'))\n"
             "print(n, int(st['VmRSS'].split()[0]), int(st['VmHWM'].split()[0]))\n"
             "[l.release() for l in ls]\" 2>/dev/null",
             port, leases);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        return m;
    }
    if (fscanf(p, "%zu %ld %ld", &m.held, &m.rss_kb, &m.hwm_kb) != 3) {
        m.rss_kb = m.hwm_kb = -1;
    }
    pclose(p);
    return m;
}

static void one_case(size_t leases, size_t conns)
{
    char id[64], name[160];
    mem_t e = measure_elkd(leases, conns);
    if (e.rss_kb < 0) {
        return;
    }
    mem_t py = conns == 1u ? measure_python(leases) : (mem_t){-1, -1, 0};
    printf("  %4zu leases, %2zu client%s: elkd VmRSS %6ld kB (VmHWM %6ld kB, %zu held)", leases,
           conns, conns == 1u ? " " : "s", e.rss_kb, e.hwm_kb, e.held);
    if (py.rss_kb > 0) {
        printf("   python3 + redis-py VmRSS %6ld kB (%zu held)   ratio elkd/python %.2f", py.rss_kb,
               py.held, (double)e.rss_kb / (double)py.rss_kb);
    }
    printf("\n");
    snprintf(id, sizeof id, "mem.elkd.l%zu.c%zu_kb", leases, conns);
    snprintf(name, sizeof name, "elkd VmRSS, %zu leases held by %zu client(s)", leases, conns);
    bench_result(id, (double)e.rss_kb, "kB", name);
    if (py.rss_kb > 0) {
        snprintf(id, sizeof id, "mem.python.l%zu_kb", leases);
        snprintf(name, sizeof name, "python3 + redis-py VmRSS, %zu Locks held", leases);
        bench_result(id, (double)py.rss_kb, "kB", name);
    }
    if (e.held != leases) {
        printf("    (elkd held %zu of %zu: the figure is for what it held)\n", e.held, leases);
    }
}

int main(int argc, char **argv)
{
    static const size_t counts[] = {1, 32, 64, 4096};
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (!bench_begin_stop("bench_elkd_memory", "/tmp/elk-benchmem-XXXXXX", stop_all, tmpdir,
                          sizeof tmpdir)) {
        return 2;
    }
    port = bench_free_port();
    pids[0] = bench_redis_start(tmpdir, port, false, NULL);
    usleep(300 * 1000);
    printf("bench_elkd_memory: %s build, elkd %s, redis-server :%u, CONFIG_ELK_MAX_LOCKS=%d\n",
           ELK_BENCH_BUILD_TYPE, ELK_BENCH_ELKD, port, CONFIG_ELK_MAX_LOCKS);
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        if (counts[k] > (size_t)CONFIG_ELK_MAX_LOCKS || (quick && counts[k] > 32u)) {
            printf("  %4zu leases: skipped (%s)\n", counts[k],
                   quick ? "--quick" : "above CONFIG_ELK_MAX_LOCKS");
            continue;
        }
        one_case(counts[k], 1);
        if (counts[k] >= MAX_CONNS) {
            one_case(counts[k], MAX_CONNS);
        }
    }
    printf("  reproduce: bench_elkd_memory%s (tests/bench/run-all.sh builds it in build-bench/)\n",
           quick ? " --quick" : "");
    return 0;
}
