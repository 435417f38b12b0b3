/* SPDX-License-Identifier: MIT */
/*
 * `elk run --on-suspect CMD` / `--on-lost CMD`: a shell command run when the lease
 * becomes SUSPECT (a renewal missed its quorum, the deadline not yet passed) or is lost,
 * so an actuator can go to a safe position early. A hook runs under /bin/sh -c in a
 * process group of its own, with ELK_EVENT, ELK_RESOURCE, ELK_TOKEN (and ELK_FENCE_TOKEN,
 * for elk guard), ELK_TIME_LEFT_MS in its environment, stdin from /dev/null, stdout and
 * stderr on elk's stderr. It never blocks elk's loop: it is started, stepped by the
 * clock and reaped on SIGCHLD. It is bounded in time: SIGTERM to its group once the
 * timeout has passed, SIGKILL ELKFW_HOOK_KILL_GRACE_MS later. A hook that fails or is
 * stopped is reported on stderr with what to do.
 */
#ifndef ELKFW_HOOKS_H
#define ELKFW_HOOKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* --hook-timeout's default. */
#define ELKFW_HOOK_TIMEOUT_MS 5000u
/* From SIGTERM to SIGKILL of a hook that overran its timeout. */
#define ELKFW_HOOK_KILL_GRACE_MS 1000u

typedef enum elkfw_hook_stage {
    ELKFW_HOOK_IDLE = 0,  /* not running */
    ELKFW_HOOK_RUNNING,   /* started; SIGTERM at term_at */
    ELKFW_HOOK_TERM_SENT, /* timed out, SIGTERM sent; SIGKILL at kill_at */
    ELKFW_HOOK_KILL_SENT  /* SIGKILL sent; waiting to reap it */
} elkfw_hook_stage_t;

typedef struct elkfw_hook {
    const char *event;    /* "suspect" or "lost": ELK_EVENT and the option in messages */
    const char *cmd;      /* the shell command (caller-owned); NULL: no hook */
    uint32_t timeout_ms;  /* from the start to SIGTERM */
    const char *resource; /* of the running hook (caller-owned), for messages */
    pid_t pid;            /* while running: its pid, which is also its process group */
    elkfw_hook_stage_t stage;
    uint64_t term_at, kill_at;
    unsigned runs;       /* times started */
    int last_status;     /* wait status of the last run that ended */
    bool last_timed_out; /* the last run that ended overran its timeout */
} elkfw_hook_t;

/* What the hook is told about the lease. */
typedef struct elkfw_hook_lease {
    const char *resource;
    uint64_t token;
    uint64_t time_left_ms; /* ELK_TIME_LEFT_MS: validity left (suspect), or ms before the
                              lease can have expired anywhere (lost) */
} elkfw_hook_lease_t;

/* Set up a hook slot for event with cmd (NULL: none) and timeout_ms (> 0). */
void elkfw_hook_init(elkfw_hook_t *h, const char *event, const char *cmd, uint32_t timeout_ms);

/* Start the hook at now. Returns true if it started; false without a cmd, while an earlier
 * run is still going (said on stderr: one run at a time), or if fork failed (said). */
bool elkfw_hook_start(elkfw_hook_t *h, const elkfw_hook_lease_t *lease, uint64_t now);

/* Reap the hook if it has ended (call on SIGCHLD; never blocks): reports a failure, a
 * signal or an overrun on stderr. Returns true if it ended now. */
bool elkfw_hook_reap(elkfw_hook_t *h);

/* Enforce the timeout at now (SIGTERM, then SIGKILL to its group); lowers *next to when
 * it must be called again while the hook runs. */
void elkfw_hook_step(elkfw_hook_t *h, uint64_t now, uint64_t *next);

/* True while the hook's process has not been reaped. */
static inline bool elkfw_hook_running(const elkfw_hook_t *h)
{
    return h->pid > 0;
}

#endif /* ELKFW_HOOKS_H */
