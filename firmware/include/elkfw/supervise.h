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
    elkfw_sup_stage_t stage;
    uint64_t kill_at;    /* TERM_SENT: when to send SIGKILL */
    uint64_t give_up_at; /* TERM_SENT, KILL_SENT: when to stop waiting for the group */
} elkfw_sup_t;

/* What a step found. */
typedef enum elkfw_sup_verdict {
    ELKFW_SUP_IDLE = 0, /* nothing supervised, or still WATCHING */
    ELKFW_SUP_STOPPING, /* signals sent, group still there: call again by *next */
    ELKFW_SUP_GONE,     /* no process of the group is left (the supervision is cleared) */
    ELKFW_SUP_GIVE_UP   /* the bound passed with the group still there: reported once */
} elkfw_sup_verdict_t;

/* Check that pgid is a process group that the client process peer_pid may hand to
 * elkd: pgid > 1, pgid is the group of peer_pid itself or of a direct child of it
 * (read from /proc). A client can therefore never make elkd signal a group it did not
 * start. Returns true, or false with a reason in why (cap bytes, NUL-terminated). */
bool elkfw_sup_group_allowed(pid_t pgid, pid_t peer_pid, char *why, size_t cap);

/* True while any process of group pgid is alive (zombies do not count: they drive
 * nothing, and an init that never reaps must not keep a lease from being released). */
bool elkfw_sup_group_alive(pid_t pgid);

/* Begin watching pgid (stage WATCHING). */
void elkfw_sup_watch(elkfw_sup_t *sup, pid_t pgid);

/* Start stopping the group: SIGTERM now (term_now; false when its connected client was
 * told and sends SIGTERM itself, so the command's own exit is not taken for a signal
 * from nowhere), SIGKILL at now + stop_margin_ms, give up at that plus
 * ELKFW_SUP_KILL_GRACE_MS. Does nothing without a group, or when stopping already
 * started (the first bound stands). */
void elkfw_sup_stop(elkfw_sup_t *sup, uint64_t now, uint32_t stop_margin_ms, bool term_now);

/* Advance a stop in progress: is the group gone, is SIGKILL due, is the bound over?
 * Lowers *next to the time it must run again (while stopping). */
elkfw_sup_verdict_t elkfw_sup_step(elkfw_sup_t *sup, uint64_t now, uint64_t *next);

/* True while a stop is in progress (SIGTERM or SIGKILL sent, group not yet gone). */
static inline bool elkfw_sup_stopping(const elkfw_sup_t *sup)
{
    return sup->stage == ELKFW_SUP_TERM_SENT || sup->stage == ELKFW_SUP_KILL_SENT;
}

/* Forget the group (the lease ended cleanly, or a give-up was handled). */
void elkfw_sup_clear(elkfw_sup_t *sup);

#endif /* ELKFW_SUPERVISE_H */
