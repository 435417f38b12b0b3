/* SPDX-License-Identifier: MIT */
/*
 * Stopping the process group that drives an actuator: see elkfw/supervise.h.
 */
#define _GNU_SOURCE
#include "elkfw/supervise.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The fields of /proc/PID/stat that matter here. The command name (field 2) may hold
 * spaces and parentheses, so parsing starts after its last ')'. */
typedef struct proc_stat {
    char state;
    pid_t ppid;
    pid_t pgrp;
    uint64_t start; /* field 22: start time in clock ticks after boot */
} proc_stat_t;

static bool read_proc_stat(pid_t pid, proc_stat_t *ps)
{
    char path[64], buf[512];
    FILE *f;
    size_t n;
    const char *p;
    long ppid, pgrp;
    unsigned long long start;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    f = fopen(path, "re");
    if (f == NULL) {
        return false;
    }
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (p == NULL || sscanf(p + 1, " %c %ld %ld", &ps->state, &ppid, &pgrp) != 3) {
        return false;
    }
    /* fields 6 to 21 skipped; a kernel that shows no start time leaves it 0 */
    if (sscanf(p + 1,
               " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d "
               "%llu",
               &start) != 1) {
        start = 0;
    }
    ps->ppid = (pid_t)ppid;
    ps->pgrp = (pid_t)pgrp;
    ps->start = (uint64_t)start;
    return true;
}

/* Zombies drive nothing and take no signal. */
static bool proc_live(const proc_stat_t *p)
{
    return p->state != 'Z' && p->state != 'X';
}

/* Does process pid run as uid (real, effective and saved)? A process whose status
 * cannot be read while it still exists counts as foreign; one that is gone, as not
 * there (*gone). */
static bool proc_runs_as(pid_t pid, uid_t uid, bool *gone, char *why, size_t cap)
{
    char path[64], line[256];
    unsigned long r = 0, e = 0, sv = 0;
    bool found = false;
    proc_stat_t ps;
    FILE *f;
    *gone = false;
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    f = fopen(path, "re");
    if (f != NULL) {
        while (!found && fgets(line, sizeof line, f) != NULL) {
            found = sscanf(line, "Uid: %lu %lu %lu", &r, &e, &sv) == 3;
        }
        fclose(f);
    }
    if (!found) {
        if (!read_proc_stat(pid, &ps) || !proc_live(&ps)) {
            *gone = true;
            return false;
        }
        snprintf(why, cap, "cannot read the user of process %ld (/proc/%ld/status)", (long)pid,
                 (long)pid);
        return false;
    }
    if (r != (unsigned long)uid || e != (unsigned long)uid || sv != (unsigned long)uid) {
        snprintf(why, cap,
                 "process %ld in the group runs as uid %lu (effective %lu, saved %lu), not as the "
                 "client's uid %lu",
                 (long)pid, r, e, sv, (unsigned long)uid);
        return false;
    }
    return true;
}

/* A pidfd pins the process, not its number: a signal sent through it reaches the process
 * whose /proc entry was read after it was opened, or nobody. -1 where pidfds are missing
 * (old kernel or libc, a seccomp filter): kill() by pid then. */
static int proc_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static void proc_signal(int pidfd, pid_t pid, int sig)
{
#ifdef SYS_pidfd_send_signal
    if (pidfd >= 0) {
        (void)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
        return;
    }
#endif
    (void)pidfd;
    (void)kill(pid, sig);
}

/* Signal process pid if it is (still) a live member of pgid running as uid. */
static void member_signal(pid_t pid, pid_t pgid, uid_t uid, int sig)
{
    proc_stat_t ps;
    bool gone;
    char why[200];
    int fd = proc_pidfd(pid);
    if (fd < 0 && errno == ESRCH) {
        return;
    }
    if (read_proc_stat(pid, &ps) && ps.pgrp == pgid && proc_live(&ps) &&
        proc_runs_as(pid, uid, &gone, why, sizeof why)) {
        proc_signal(fd, pid, sig);
    }
    if (fd >= 0) {
        close(fd);
    }
}

typedef enum members { MEMBERS_NONE, MEMBERS_OWNED, MEMBERS_FOREIGN } members_t;

/* One pass over /proc for the live members of pgid: with sig 0 only checks that each
 * runs as uid (stops at the first that does not); else signals each one that still does
 * at that moment. */
static members_t members_pass(pid_t pgid, uid_t uid, int sig, char *why, size_t cap)
{
    members_t res = MEMBERS_NONE;
    struct dirent *e;
    DIR *d = opendir("/proc");
    if (d == NULL) {
        snprintf(why, cap, "cannot list /proc: %s", strerror(errno));
        return MEMBERS_FOREIGN;
    }
    while (res != MEMBERS_FOREIGN && (e = readdir(d)) != NULL) {
        proc_stat_t ps;
        bool gone;
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0 || !read_proc_stat((pid_t)pid, &ps) || ps.pgrp != pgid ||
            !proc_live(&ps)) {
            continue;
        }
        if (sig != 0) {
            member_signal((pid_t)pid, pgid, uid, sig);
            res = MEMBERS_OWNED;
        } else if (proc_runs_as((pid_t)pid, uid, &gone, why, cap)) {
            res = MEMBERS_OWNED;
        } else if (!gone) {
            res = MEMBERS_FOREIGN;
        }
    }
    closedir(d);
    return res;
}

bool elkfw_sup_group_owned(pid_t pgid, uid_t uid, char *why, size_t cap)
{
    members_t m;
    if (pgid <= 1) {
        snprintf(why, cap, "pgid must be above 1");
        return false;
    }
    m = members_pass(pgid, uid, 0, why, cap);
    if (m == MEMBERS_NONE) {
        snprintf(why, cap, "process group %ld has no live process", (long)pgid);
    }
    return m == MEMBERS_OWNED;
}

bool elkfw_sup_group_allowed(pid_t pgid, pid_t peer_pid, uid_t uid, char *why, size_t cap)
{
    proc_stat_t leader, peer;
    if (pgid <= 1 || peer_pid <= 0) {
        snprintf(why, cap, "%s",
                 peer_pid <= 0 ? "the client's pid is unknown (no SO_PEERCRED)"
                               : "pgid must be above 1");
        return false;
    }
    if (!read_proc_stat(peer_pid, &peer)) {
        snprintf(why, cap, "cannot read /proc/%ld/stat of the client (other PID namespace?)",
                 (long)peer_pid);
        return false;
    }
    if (peer.pgrp != pgid &&
        (!read_proc_stat(pgid, &leader) || leader.pgrp != pgid || leader.ppid != peer_pid)) {
        snprintf(why, cap,
                 "process group %ld is neither the client's own nor led by a child of the client "
                 "(pid %ld)",
                 (long)pgid, (long)peer_pid);
        return false;
    }
    /* The client's own group may hold processes of whoever started the client (a root
     * script that runs it through setpriv, runuser or su keeps its process group). */
    return elkfw_sup_group_owned(pgid, uid, why, cap);
}

bool elkfw_sup_group_alive(pid_t pgid)
{
    DIR *d;
    struct dirent *e;
    bool alive = false;
    if (pgid <= 1) {
        return false;
    }
    if (kill(-pgid, 0) != 0 && errno == ESRCH) {
        return false;
    }
    /* kill() counts zombies, and EPERM says nothing either way: look at each process. */
    d = opendir("/proc");
    if (d == NULL) {
        return true; /* cannot tell: assume the worst */
    }
    while (!alive && (e = readdir(d)) != NULL) {
        proc_stat_t ps;
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0) {
            continue;
        }
        if (read_proc_stat((pid_t)pid, &ps) && ps.pgrp == pgid && ps.state != 'Z' &&
            ps.state != 'X') {
            alive = true;
        }
    }
    closedir(d);
    return alive;
}

/* Pidfds of up to cap live members of group pgid into fds; returns how many, and in
 * *live whether any live member was seen. Zombies are left out: their pidfd is readable
 * at once and they drive nothing. */
static size_t member_pidfds(pid_t pgid, int *fds, size_t cap, bool *live)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    size_t n = 0;
    if (d == NULL) {
        *live = true; /* cannot tell: as elkfw_sup_group_alive, assume the worst */
        return 0;
    }
    while (n < cap && (e = readdir(d)) != NULL) {
        proc_stat_t ps;
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        int fd;
        if (*end != '\0' || pid <= 0 || !read_proc_stat((pid_t)pid, &ps) || ps.pgrp != pgid ||
            !proc_live(&ps)) {
            continue;
        }
        *live = true;
        if ((fd = proc_pidfd((pid_t)pid)) >= 0) {
            fds[n++] = fd;
        }
    }
    closedir(d);
    return n;
}

int elkfw_sup_group_wait(pid_t pgid, int timeout_ms)
{
    int fds[ELKFW_SUP_WAIT_MAX];
    struct pollfd p[ELKFW_SUP_WAIT_MAX];
    bool live = false;
    size_t i, n = pgid > 1 ? member_pidfds(pgid, fds, ELKFW_SUP_WAIT_MAX, &live) : 0;
    int rc;
    if (!live) {
        return 1; /* nothing left to wait for */
    }
    if (n == 0) { /* members, but no pidfds (Linux before 5.3): look again soon */
        rc = poll(NULL, 0, timeout_ms < ELKFW_SUP_RECHECK_MS ? timeout_ms : ELKFW_SUP_RECHECK_MS);
        return rc < 0 && errno != EINTR ? -1 : 0;
    }
    for (i = 0; i < n; i++) {
        p[i].fd = fds[i];
        p[i].events = POLLIN;
        p[i].revents = 0;
    }
    rc = poll(p, (nfds_t)n, timeout_ms);
    for (i = 0; i < n; i++) {
        close(fds[i]);
    }
    return rc < 0 && errno != EINTR ? -1 : (rc > 0 ? 1 : 0);
}

void elkfw_sup_watch(elkfw_sup_t *sup, pid_t pgid, uid_t uid)
{
    proc_stat_t ps;
    memset(sup, 0, sizeof *sup);
    sup->pgid = pgid;
    sup->uid = uid;
    sup->stage = pgid > 1 ? ELKFW_SUP_WATCHING : ELKFW_SUP_NONE;
    if (pgid > 1 && read_proc_stat(pgid, &ps)) {
        sup->leader_start = ps.start;
    }
}

/* Number pgid went to a new process since SUPERVISE: the group we were told of was
 * empty at some point (the kernel frees a pid only once no process uses it as pid, pgid
 * or sid), so it is gone, and what the number names now is not ours. */
static bool sup_reused(const elkfw_sup_t *sup)
{
    proc_stat_t ps;
    return read_proc_stat(sup->pgid, &ps) && ps.start != sup->leader_start;
}

/* Send sig to every live member, after checking that each runs as the client's uid. A
 * group with any other member is not signalled at all: false, the reason in sup->why. */
static bool sup_signal(elkfw_sup_t *sup, int sig)
{
    members_t m;
    if (sup_reused(sup)) {
        return true; /* ours is gone: nothing of it left to signal */
    }
    m = members_pass(sup->pgid, sup->uid, 0, sup->why, sizeof sup->why);
    if (m == MEMBERS_FOREIGN) {
        return false;
    }
    if (m == MEMBERS_OWNED) {
        (void)members_pass(sup->pgid, sup->uid, sig, sup->why, sizeof sup->why);
    }
    return true;
}

bool elkfw_sup_stop(elkfw_sup_t *sup, uint64_t now, uint32_t stop_margin_ms, bool term_now)
{
    if (sup->stage != ELKFW_SUP_WATCHING) {
        return true;
    }
    sup->stage = ELKFW_SUP_TERM_SENT;
    sup->kill_at = now + stop_margin_ms;
    sup->give_up_at = sup->kill_at + ELKFW_SUP_KILL_GRACE_MS;
    if (term_now && !sup_signal(sup, SIGTERM)) {
        sup->stage = ELKFW_SUP_GAVE_UP;
        return false;
    }
    return true;
}

elkfw_sup_verdict_t elkfw_sup_step(elkfw_sup_t *sup, uint64_t now, uint64_t *next)
{
    uint64_t due;
    if (sup->stage != ELKFW_SUP_TERM_SENT && sup->stage != ELKFW_SUP_KILL_SENT) {
        return ELKFW_SUP_IDLE;
    }
    if (sup_reused(sup) || !elkfw_sup_group_alive(sup->pgid)) {
        elkfw_sup_clear(sup);
        return ELKFW_SUP_GONE;
    }
    if (sup->stage == ELKFW_SUP_TERM_SENT && now >= sup->kill_at) {
        sup->stage = ELKFW_SUP_KILL_SENT;
    }
    /* again at every step: what a member forked before its SIGKILL is reached too */
    if (sup->stage == ELKFW_SUP_KILL_SENT && !sup_signal(sup, SIGKILL)) {
        sup->stage = ELKFW_SUP_GAVE_UP;
        return ELKFW_SUP_GIVE_UP;
    }
    if (now >= sup->give_up_at) {
        snprintf(sup->why, sizeof sup->why, "it is still there %u ms after SIGKILL",
                 ELKFW_SUP_KILL_GRACE_MS);
        sup->stage = ELKFW_SUP_GAVE_UP;
        return ELKFW_SUP_GIVE_UP;
    }
    /* Poll the group often: the sooner it is confirmed gone, the sooner the lease goes
     * to the next holder. */
    due = sup->stage == ELKFW_SUP_TERM_SENT && sup->kill_at < now + 20u ? sup->kill_at : now + 20u;
    if (due > sup->give_up_at) {
        due = sup->give_up_at;
    }
    if (due < *next) {
        *next = due;
    }
    return ELKFW_SUP_STOPPING;
}

void elkfw_sup_clear(elkfw_sup_t *sup)
{
    memset(sup, 0, sizeof *sup);
}
