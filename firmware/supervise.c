/* SPDX-License-Identifier: MIT */
/*
 * Stopping the process group that drives an actuator: see elkfw/supervise.h.
 */
#define _GNU_SOURCE
#include "elkfw/supervise.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fields of /proc/PID/stat that matter here. The command name (field 2) may hold
 * spaces and parentheses, so parsing starts after its last ')'. */
typedef struct proc_stat {
    char state;
    pid_t ppid;
    pid_t pgrp;
} proc_stat_t;

static bool read_proc_stat(pid_t pid, proc_stat_t *ps)
{
    char path[64], buf[512];
    FILE *f;
    size_t n;
    const char *p;
    long ppid, pgrp;
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
    ps->ppid = (pid_t)ppid;
    ps->pgrp = (pid_t)pgrp;
    return true;
}

bool elkfw_sup_group_allowed(pid_t pgid, pid_t peer_pid, char *why, size_t cap)
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
    if (peer.pgrp == pgid) {
        return true;
    }
    if (!read_proc_stat(pgid, &leader) || leader.pgrp != pgid || leader.ppid != peer_pid) {
        snprintf(why, cap,
                 "process group %ld is neither the client's own nor led by a child of the client "
                 "(pid %ld)",
                 (long)pgid, (long)peer_pid);
        return false;
    }
    return true;
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

void elkfw_sup_watch(elkfw_sup_t *sup, pid_t pgid)
{
    memset(sup, 0, sizeof *sup);
    sup->pgid = pgid;
    sup->stage = pgid > 1 ? ELKFW_SUP_WATCHING : ELKFW_SUP_NONE;
}

void elkfw_sup_stop(elkfw_sup_t *sup, uint64_t now, uint32_t stop_margin_ms, bool term_now)
{
    if (sup->stage != ELKFW_SUP_WATCHING) {
        return;
    }
    if (term_now) {
        (void)kill(-sup->pgid, SIGTERM);
    }
    sup->stage = ELKFW_SUP_TERM_SENT;
    sup->kill_at = now + stop_margin_ms;
    sup->give_up_at = sup->kill_at + ELKFW_SUP_KILL_GRACE_MS;
}

elkfw_sup_verdict_t elkfw_sup_step(elkfw_sup_t *sup, uint64_t now, uint64_t *next)
{
    uint64_t due;
    if (sup->stage != ELKFW_SUP_TERM_SENT && sup->stage != ELKFW_SUP_KILL_SENT) {
        return ELKFW_SUP_IDLE;
    }
    if (!elkfw_sup_group_alive(sup->pgid)) {
        elkfw_sup_clear(sup);
        return ELKFW_SUP_GONE;
    }
    if (sup->stage == ELKFW_SUP_TERM_SENT && now >= sup->kill_at) {
        (void)kill(-sup->pgid, SIGKILL);
        sup->stage = ELKFW_SUP_KILL_SENT;
    }
    if (now >= sup->give_up_at) {
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
