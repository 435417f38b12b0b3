/* SPDX-License-Identifier: MIT */
/*
 * Fair waiting: waiters of one resource are granted in the order they came, not by who
 * retries luckiest (docs/design.md "Fair waiting").
 *
 * The lock stays the only arbiter of exclusion; fairness is a cooperative layer over an
 * ordinary elk_lock_t. A waiter takes a ticket in a queue kept on the fleet's masters
 * (keys <prefix>{resource}:q, :qx and :qseq, the lock's hash slot) and keeps it alive as a
 * short lease of its own (ticket_ttl_ms, renewed every third of it), so a waiter that
 * crashed drops out of the queue within one ticket TTL on the servers' clocks. Only the
 * waiter a quorum of masters names the head (nobody live ahead of it) asks for the lock,
 * with the lock's own retries and release channel, so a release wakes the head alone. On
 * the grant it leaves the queue and the lease is an ordinary lease (renewal, deadline,
 * token, LOST, release).
 *
 * Best effort: a master that lost its data has the queue rebuilt by the next renewal of
 * every ticket; clock faults and gateways that ask for the lock without this layer can
 * reorder grants. Exclusion never depends on the queue.
 *
 * The layer sends its own scripts (QUEUE_KEEP, QUEUE_LEAVE) on the client's nodes and has
 * timers of its own: call elk_fair_poll after every elk_client_poll and wake by the sooner
 * of the two. Caller-owned, no heap. Built only with CONFIG_ELK_FAIR.
 */
#ifndef ELK_FAIR_H
#define ELK_FAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "elk/lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest waiter id: "<gateway id>:<16 hex digits>". */
#define ELK_FAIR_ID_MAX (CONFIG_ELK_GATEWAY_ID_MAX_LEN + 17u)

struct elk_fair;

/* Event callback: ev is the event of the lock behind the fair handle, as elk_lock_event_fn
 * describes it, plus ACQUIRE_FAILED when the wait ends in the queue (err ELK_E_LOCK_TIMEOUT
 * past the wait deadline while others were ahead, ELK_E_LOCK_BUSY without a wait deadline,
 * ELK_E_FLEET_UNAVAILABLE when no quorum of masters gave a ticket). Runs from inside
 * elk_client_poll or elk_fair_poll; it may call elk_fair_release / elk_fair_acquire. */
typedef void (*elk_fair_event_fn)(void *user, struct elk_fair *fair, const elk_lock_event_t *ev);

/* Where a fair handle stands (elk_fair_phase). */
typedef enum elk_fair_phase {
    ELK_FAIR_IDLE = 0, /* not waiting (held or not: see the lock) */
    ELK_FAIR_TAKING,   /* asking the masters for a ticket */
    ELK_FAIR_QUEUED,   /* has a ticket, others ahead: keeps it, looks again every poll */
    ELK_FAIR_LOCKING   /* at the head: the lock's acquire runs */
} elk_fair_phase_t;

/* One request to one node (internal): the reply callback's user pointer. */
typedef struct elk_fair_slot {
    struct elk_fair *fair;
    uint32_t seq;  /* the round it belongs to; replies of older rounds only free the slot */
    uint8_t node;  /* index in the fleet */
    bool in_use;   /* a reply is awaited */
    bool eval;     /* already the EVAL fallback */
    int64_t value; /* the ticket it carried (0: take a new one) */
} elk_fair_slot_t;

/* A fair handle of one holder on one resource. Fields are internal. */
typedef struct elk_fair {
    elk_lock_t lock;
    elk_fair_event_fn on_event;
    void *user;
    uint32_t ticket_ttl_ms;
    uint32_t poll_ms; /* a waiter not at the head looks again this often */
    elk_fair_phase_t phase;
    uint64_t wait_deadline; /* of the acquire in progress (0: none) */
    uint64_t next_keep;     /* the next QUEUE_KEEP round */
    uint64_t round_at;      /* when the round out was sent */
    int64_t ticket;         /* the ticket (max over a quorum), 0 before one */
    uint32_t seq;           /* round number */
    uint16_t pending_mask;  /* nodes asked in the round in flight that have not answered */
    uint16_t ok_mask;       /* nodes (with a vote) that answered in it */
    uint16_t head_mask;     /* of those, nodes that said nobody live is ahead */
    int64_t round_max;      /* the highest ticket answered in the round */
    uint32_t round_ahead;   /* the fewest waiters ahead any node said in the round */
    uint32_t ahead;         /* the same, of the last round a quorum answered */
    bool round_open;        /* a round is out and not yet decided */
    bool flush_due;         /* requests queued inside a poll: flush them */
    elk_fair_slot_t slot[CONFIG_ELK_MAX_NODES];
    char id[ELK_FAIR_ID_MAX + 1u];
    char qkey[CONFIG_ELK_MAX_KEY_LEN + 1u];   /* <lock key>:q */
    char qxkey[CONFIG_ELK_MAX_KEY_LEN + 1u];  /* <lock key>:qx */
    char seqkey[CONFIG_ELK_MAX_KEY_LEN + 1u]; /* <lock key>:qseq */
} elk_fair_t;

/* Prepare fair for resource, registering its lock with client (as elk_lock_init: resource
 * and cfg copied, cfg NULL for the defaults). ticket_ttl_ms: the ticket's lease (0:
 * CONFIG_ELK_FAIR_TICKET_TTL_MS); a waiter not at the head looks at the queue again every
 * cfg->wait_min_ms (at least 1 ms, at most a third of the ticket TTL). on_event may be NULL.
 * Returns ELK_OK, ELK_E_INVALID_ARG (NULL, ticket TTL under 3 ms, bad cfg),
 * ELK_E_NAME_INVALID, ELK_E_NAME_TOO_LONG, ELK_E_TOO_MANY_LOCKS; on error nothing stays
 * registered. */
int elk_fair_init(elk_fair_t *fair, elk_client_t *client, const char *resource,
                  const elk_lock_config_t *cfg, uint32_t ticket_ttl_ms, elk_fair_event_fn on_event,
                  void *user);

/* Unregister the lock. Returns ELK_OK, or ELK_E_STATE while waiting, held, or with requests
 * in flight (release, then poll until elk_fair_busy() is false). */
int elk_fair_deinit(elk_fair_t *fair);

/* Start a fair acquire: take a ticket, wait for the head of the queue, then the lock.
 * wait_deadline as for elk_lock_acquire (0 or <= now: granted only if nobody is ahead and
 * the lock is free at once). Returns ELK_E_WOULD_BLOCK when started (ACQUIRED or
 * ACQUIRE_FAILED follows), ELK_OK when the lock is already held by this handle (hold count
 * + 1), ELK_E_STATE while an acquire is in progress, ELK_E_LOCK_LOST if the held lease's
 * deadline passed (release it first), ELK_E_ENTROPY (no waiter id could be made),
 * ELK_E_INVALID_ARG. */
int elk_fair_acquire(elk_fair_t *fair, uint64_t now, uint64_t wait_deadline);

/* Release one hold, or cancel a wait (the ticket is given back: QUEUE_LEAVE on every ready
 * node; a node that misses it drops the ticket within its TTL). Returns as
 * elk_lock_release: ELK_OK, ELK_E_LOCK_LOST, ELK_E_NOT_HELD. */
int elk_fair_release(elk_fair_t *fair, uint64_t now);

/* Drive the queue: evaluate answered rounds, renew the ticket, start the lock's acquire at
 * the head, end a wait at its deadline, write what was queued. Call after every
 * elk_client_poll (the replies arrive there). Returns the absolute time it must run again
 * (UINT64_MAX when idle). */
uint64_t elk_fair_poll(elk_fair_t *fair, uint64_t now);

/* Where the handle stands (ELK_FAIR_IDLE for NULL). */
elk_fair_phase_t elk_fair_phase(const elk_fair_t *fair);
/* The ticket of the current or last acquire (0 before one was had). */
int64_t elk_fair_ticket(const elk_fair_t *fair);
/* Waiters ahead of this one by the last round (the fewest any node counted; 0 at the head
 * or when not waiting). */
uint32_t elk_fair_ahead(const elk_fair_t *fair);
/* The lock behind the handle (token, deadline, state, keepalive). Owned by fair. */
elk_lock_t *elk_fair_lock(elk_fair_t *fair);
/* Whether the actuator may be driven now (elk_lock_is_held). */
bool elk_fair_is_held(const elk_fair_t *fair, uint64_t now);
/* Requests still in flight (the queue's or the lock's): keep the object alive. */
bool elk_fair_busy(const elk_fair_t *fair);

#ifdef __cplusplus
}
#endif

#endif /* ELK_FAIR_H */
