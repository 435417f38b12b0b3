/* SPDX-License-Identifier: MIT */
/*
 * Supervision of the process group that drives an actuator under a lease (Linux).
 *
 * `elk run` starts its command in a process group of its own and tells elkd that
 * group (SUPERVISE). When the connection that holds the lease ends uncleanly (elk run
 * killed, or dropped because it stopped reading), or the lease is lost or elkd stops,
 * elkd stops that group itself: SIGTERM, SIGKILL once the resource's stop_margin has
 * passed, and it releases the lease only once no process of the group is left. If it
 * cannot confirm that within stop_margin plus a short grace, it gives up on the group
 * and lets the lease run out at its deadline instead (elk_lock_abandon): a successor
 * must never start while the old command may still drive, and a lease must never be
 * renewed for a command nobody supervises.
 *
 * elkd may hold CAP_KILL, so it must never become a way for one account to signal
 * another's processes: a group is supervised only while every live process in it runs
 * as the client's uid (real, effective and saved uid; SO_PEERCRED of the connection),
 * checked at SUPERVISE and again right before every signal. Signals go to each checked
 * member through a pidfd (kill() where pidfds are missing), never to the whole group at
 * once, so a process that joins between the check and the signal is not reached. A
 * group that no longer passes is not signalled at all: the supervision gives up and the
 * lease runs out at its deadline (docs/design.md, "Commands that outlive their client").
 */
#ifndef ELKFW_SUPERVISE_H
#define ELKFW_SUPERVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* After SIGKILL, how long a group may take to disappear (reaping by init, exit of
 * processes in uninterruptible sleep) before elkd gives up on it. */
#define ELKFW_SUP_KILL_GRACE_MS 1000u

typedef enum elkfw_sup_stage {
    ELKFW_SUP_NONE = 0,  /* no group supervised */
    ELKFW_SUP_WATCHING,  /* group known, its client still connected: nothing to do */
    ELKFW_SUP_TERM_SENT, /* SIGTERM sent; SIGKILL at kill_at */
    ELKFW_SUP_KILL_SENT, /* SIGKILL sent; give up at give_up_at */
    ELKFW_SUP_GAVE_UP    /* could not confirm the group gone: the lease is left to run out */
} elkfw_sup_stage_t;

typedef struct elkfw_sup {
    pid_t pgid; /* 0: none */
    uid_t uid;  /* the client's uid: every live member must run as it */
    /* Start time (clock ticks after boot, /proc/PID/stat field 22) of process pgid at
     * SUPERVISE, 0 if the leader was already gone. A process pgid that started at another
     * time later means the number was freed, i.e. the group was empty at some point: ours
     * is gone, and the group now under that number is someone else's. */
    uint64_t leader_start;
    elkfw_sup_stage_t stage;
    uint64_t kill_at;    /* TERM_SENT: when to send SIGKILL */
    uint64_t give_up_at; /* TERM_SENT, KILL_SENT: when to stop waiting for the group */
    char why[200];       /* GAVE_UP: why (the bound passed, or the group is not the client's) */
} elkfw_sup_t;

/* What a step found. */
typedef enum elkfw_sup_verdict {
    ELKFW_SUP_IDLE = 0, /* nothing supervised, or still WATCHING */
    ELKFW_SUP_STOPPING, /* signals sent, group still there: call again by *next */
    ELKFW_SUP_GONE,     /* no process of the group is left (the supervision is cleared) */
    ELKFW_SUP_GIVE_UP   /* the bound passed with the group still there, or a signal was due
                           to a group with a process of another user: reported once, the
                           reason in sup->why */
} elkfw_sup_verdict_t;

/* Check that pgid is a process group that the client process peer_pid, connected as
 * uid, may hand to elkd: pgid > 1, pgid is the group of peer_pid itself or of a direct
 * child of it, and elkfw_sup_group_owned(pgid, uid) (all read from /proc). A client can
 * therefore never make elkd signal a group it did not start, nor a process of another
 * user (root included: uid 0 may hand over a group whose every process runs as uid 0).
 * Returns true, or false with a reason in why (cap bytes, NUL-terminated). */
bool elkfw_sup_group_allowed(pid_t pgid, pid_t peer_pid, uid_t uid, char *why, size_t cap);

/* True when group pgid has at least one live process and every live process in it
 * (zombies drive nothing and take no signal) has real, effective and saved uid equal to
 * uid. A process whose /proc entry cannot be read counts as foreign (fail closed).
 * False with the first offender (or "no live process") in why. */
bool elkfw_sup_group_owned(pid_t pgid, uid_t uid, char *why, size_t cap);

/* True while any process of group pgid is alive (zombies do not count: they drive
 * nothing, and an init that never reaps must not keep a lease from being released). */
bool elkfw_sup_group_alive(pid_t pgid);

/* How many members elkfw_sup_group_wait watches at once (any one ending wakes it, and
 * the caller looks again), and how often it looks where pidfds are missing. */
#define ELKFW_SUP_WAIT_MAX 32
#define ELKFW_SUP_RECHECK_MS 10

/* Wait at most timeout_ms for a live member of group pgid to end, on pidfds of its
 * members: the caller then asks elkfw_sup_group_alive. Where pidfds are missing (Linux
 * before 5.3) waits ELKFW_SUP_RECHECK_MS at most. Returns 1 when a member ended (or none
 * was left), 0 at the timeout (or a signal), -1 when poll failed. */
int elkfw_sup_group_wait(pid_t pgid, int timeout_ms);

/* Begin watching pgid for the client uid (stage WATCHING); notes the leader's start time
 * (see leader_start). */
void elkfw_sup_watch(elkfw_sup_t *sup, pid_t pgid, uid_t uid);

/* Start stopping the group: SIGTERM now (term_now; false when its connected client was
 * told and sends SIGTERM itself, so the command's own exit is not taken for a signal
 * from nowhere), SIGKILL at now + stop_margin_ms, give up at that plus
 * ELKFW_SUP_KILL_GRACE_MS. Does nothing without a group, or when stopping already
 * started (the first bound stands). Returns false when SIGTERM was due but the group is
 * no longer the client's (elkfw_sup_group_owned): nothing was signalled, the stage is
 * GAVE_UP with the reason in sup->why, and the caller must let the lease run out. */
bool elkfw_sup_stop(elkfw_sup_t *sup, uint64_t now, uint32_t stop_margin_ms, bool term_now);

/* Advance a stop in progress: is the group gone, is SIGKILL due (sent again at every
 * step once due, to reach what the group forked meanwhile), is the bound over? A
 * SIGKILL due to a group that is no longer the client's is not sent: GIVE_UP. Lowers
 * *next to the time it must run again (while stopping). */
elkfw_sup_verdict_t elkfw_sup_step(elkfw_sup_t *sup, uint64_t now, uint64_t *next);

/* True while a stop is in progress (SIGTERM or SIGKILL sent, group not yet gone). */
static inline bool elkfw_sup_stopping(const elkfw_sup_t *sup)
{
    return sup->stage == ELKFW_SUP_TERM_SENT || sup->stage == ELKFW_SUP_KILL_SENT;
}

/* Forget the group (the lease ended cleanly, or a give-up was handled). */
void elkfw_sup_clear(elkfw_sup_t *sup);

#endif /* ELKFW_SUPERVISE_H */
