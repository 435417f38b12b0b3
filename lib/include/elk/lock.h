/* SPDX-License-Identifier: MIT */
/*
 * The lease engine: leases on one Redis node or on N independent masters (Redlock),
 * with renewal, clock-drift and stop margins, fencing tokens and waiting.
 *
 * Nothing here blocks or allocates. A client (elk_client_t) wraps a fleet (node.h);
 * locks (elk_lock_t, one per resource the caller wants) are caller-owned objects
 * registered with a client. Everything advances in elk_client_poll(now), which polls
 * the fleet, evaluates rounds, fires events and returns the next time it must run.
 * Time is the caller's monotonic ms clock (platform.h); never a wall clock.
 *
 * Safety rule (docs/design.md "Time, and the safety rule"): for a round whose first
 * request was handed over at t_send,
 *     deadline = t_send + ttl - drift - stop_margin,  drift = ttl*drift_ppm/1e6 + drift_fixed.
 * The holder may drive its actuator only while now < deadline (elk_lock_is_held()).
 * A round succeeds only with a quorum (N/2+1) of positive replies and deadline - now
 * >= min_validity; otherwise its partial locks are released on every node. LOST fires
 * from elk_client_poll at the deadline at the latest, whatever the network does, and
 * while a lock is held elk_client_poll never returns a wake time after its deadline.
 *
 * Fencing (design.md "Fencing tokens across a fleet"): ACQUIRE raises a counter per
 * node to max(counter + 1, the server's TIME in microseconds); the token is the max over
 * the quorum; with more than one node it is then COMMITted (counter = max(counter, token)
 * where our value still stands) and reported only after a quorum of commits, so tokens
 * grow strictly across successive holders. Tokens are large (about 1.8e15 in 2026): the
 * clock floor keeps them growing when masters lose their counters (FLUSHALL, a restart
 * without data, even all of them at once), together with the amnesia quarantine (vote
 * hygiene). The actuator guard (fence.h) still refuses a lower token.
 *
 * Scripts and their KEYS/ARGV/replies: lib/lock/include/elk/lock_scripts.h (internal, not
 * installed). They are sent with
 * EVALSHA, falling back to EVAL on NOSCRIPT (also after a server restart or flush).
 */
#ifndef ELK_LOCK_H
#define ELK_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/config.h"
#include "elk/err.h"
#include "elk/node.h"
#include "elk/platform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Random part of a lock value: 16 bytes (128 bits) as 32 lowercase hex digits. */
#define ELK_LOCK_RANDOM_BYTES 16u
/* Longest lock value: "<gateway id>:<32 hex>". */
#define ELK_LOCK_VALUE_MAX (CONFIG_ELK_GATEWAY_ID_MAX_LEN + 1u + 2u * ELK_LOCK_RANDOM_BYTES)
/* Length of the longest lock script (without its NUL): ACQUIRE's. The scripts are internal
 * (lib/lock/include/elk/lock_scripts.h); lib/lock/lock_send.c does not build unless this
 * is their longest length. */
#define ELK_LOCK_SCRIPT_LEN_MAX 483u
/* Length of the fleet marker key's name after the prefix ("marker", ELK_LOCK_MARKER_NAME;
 * checked the same way). */
#define ELK_LOCK_MARKER_NAME_LEN 6u
/* Longest request the engine sends: EVAL of its longest script (after NOSCRIPT) with
 * three keys of CONFIG_ELK_MAX_KEY_LEN and the fleet marker key (the prefix, at most as
 * long, and "marker"), a lock value, two 10-digit numbers, a flag and a 20-digit one
 * (ACQUIRE), each of at most 12 RESP arguments framed in at most 9 bytes ("$" + 5 digits +
 * 2 CRLF), plus the array header. A node's transmit buffer is one pool block, so
 * CONFIG_ELK_POOL_BLOCK_SIZE must be at least this; the library does not build
 * otherwise (a smaller block could never send the request: no lease, ever). */
/* Bytes of the largest request the lease engine sends (see above). */
#define ELK_LOCK_REQUEST_MAX                                                                       \
    (5u + 12u * 9u + 4u + ELK_LOCK_SCRIPT_LEN_MAX + 1u + 4u * CONFIG_ELK_MAX_KEY_LEN +             \
     ELK_LOCK_MARKER_NAME_LEN + ELK_LOCK_VALUE_MAX + 41u)

/* Safety check result kept per node (elk_client_node_check; truncated, NUL-terminated). */
#define ELK_LOCK_CHECK_TEXT_MAX 64u
/* Error text kept per node for events (truncated, NUL-terminated). */
#define ELK_LOCK_NODE_TEXT_MAX 48u
/* Requests one lock may have in flight across the fleet (several rounds can overlap:
 * an acquire behind a background release, a silent node still holding old ones). */
#define ELK_LOCK_TICKETS (CONFIG_ELK_MAX_NODES * 6u)

struct elk_client;
struct elk_lock;

/* How the client takes a lease: on one node, or on a quorum of masters (Redlock). */
typedef enum elk_lock_mode {
    ELK_MODE_SINGLE = 0, /* one node (fleet of exactly 1); one round trip, no commit */
    ELK_MODE_REDLOCK     /* N independent masters, quorum N/2+1, fencing commit */
} elk_lock_mode_t;

/* What to do when a server's settings make locks unsafe (checked on each connection, and
 * again every elk_client_safety_recheck_ms while connected). */
typedef enum elk_safety_policy {
    ELK_SAFETY_OFF = 0, /* do not check */
    ELK_SAFETY_WARN,    /* log a warning, use the node anyway */
    ELK_SAFETY_REFUSE   /* fail closed: no vote until checked; a node with an eviction policy
                           (ELK_E_UNSAFE_SERVER) or that cannot be checked (NOPERM, error,
                           timeout: ELK_E_SERVER_UNCHECKED) never votes. Persistence
                           (aof_enabled, appendfsync) only warns. lib/lock/lock_safety.c */
} elk_safety_policy_t;

/* Where a lock stands (elk_lock_state); only HELD, RENEWING and SUSPECT are held. */
typedef enum elk_lock_state {
    ELK_LOCK_IDLE = 0,   /* not held, nothing in flight */
    ELK_LOCK_ACQUIRING,  /* acquire round in flight */
    ELK_LOCK_COMMITTING, /* Redlock fencing commit round in flight (not yet held) */
    ELK_LOCK_HELD,       /* held, now < deadline */
    ELK_LOCK_RENEWING,   /* held, renewal round in flight or being retried */
    ELK_LOCK_RELEASING,  /* not held; the release round still runs in the background */
    ELK_LOCK_WAITING, /* not held; busy or unavailable, retry scheduled before the wait deadline */
    ELK_LOCK_LOST,    /* the deadline passed without a confirmed renewal (until release/acquire) */
    ELK_LOCK_SUSPECT  /* held (now < deadline), but a renewal round missed its quorum (failed,
                         or still short of it ttl/20 after it was sent: silent nodes time out
                         only at the deadline): retried until the deadline; the actuator may
                         go to a safe position early.
                         Only elk_lock_state() reports it (elk_lock_is_held() stays true). */
} elk_lock_state_t;

/* Per-resource settings. Fill with elk_lock_config_defaults, then change fields. */
typedef struct elk_lock_config {
    uint32_t ttl_ms; /* lease TTL set on the servers (default CONFIG_ELK_DEFAULT_TTL_MS) */
    uint32_t renew_fraction_pct; /* renew at t_send + ttl*pct/100; 0 = never renew
                                     (default CONFIG_ELK_RENEW_FRACTION_PCT) */
    uint32_t drift_factor_ppm;   /* default CONFIG_ELK_DRIFT_FACTOR_PPM */
    uint32_t drift_fixed_ms;     /* default CONFIG_ELK_DRIFT_FIXED_MS */
    uint32_t stop_margin_ms;     /* time the actuator needs to reach its safe state (default 0) */
    uint32_t min_validity_ms;    /* a round leaving less than this is a failure (default 0:
                                     any validity > 0) */
    uint32_t max_hold_ms;        /* stop renewing once held this long in total; 0 = no cap
                                     (default CONFIG_ELK_DEFAULT_MAX_HOLD_MS) */
    uint32_t max_renewals;       /* stop renewing after this many renewals; 0 = no cap */
    uint32_t wait_min_ms;        /* retry delay range while waiting (default 50..250 ms) */
    uint32_t wait_max_ms;
    uint32_t round_timeout_ms; /* cap on one round's per-node request time; 0 = the latest
                                     useful moment (acquire: deadline - min_validity; renew:
                                     deadline). Default 0. */
    uint32_t lock_delay_ms;    /* after a lease ends without a release (holder crashed or lost
                                     it), no new grant until this long after it could last have
                                     been valid; kept by the servers (a marker key), so it holds
                                     across gateways. 0 (default): no delay */
    uint32_t keepalive_ms;     /* 0 (default): off. Otherwise renewal needs proof of life: a
                                     renewal round (first try or retry) starts only if
                                     elk_lock_keepalive was called (or the hold began) within
                                     the last keepalive_ms; a miss stops renewal for the hold
                                     (RENEW_STOPPED, LOST at the deadline with
                                     ELK_E_KEEPALIVE_MISSED) */
    bool fencing;              /* fencing counter + token (default true); off: token 0 */
    bool use_release_channel;  /* waiters SUBSCRIBE to the release channel (RESP3 nodes;
                                     RESP2 nodes fall back to retry delays). Default true. */
} elk_lock_config_t;

/* Fill cfg with the defaults documented above. */
void elk_lock_config_defaults(elk_lock_config_t *cfg);

/* The rule a lease configuration breaks (elk_lock_config_explain). */
typedef enum elk_lock_config_fault {
    ELK_LOCK_CFG_OK = 0,
    ELK_LOCK_CFG_TTL_ZERO,            /* ttl_ms is 0 */
    ELK_LOCK_CFG_RENEW_FRACTION,      /* renew_fraction_pct above 90 */
    ELK_LOCK_CFG_WAIT_RANGE,          /* wait_min_ms above wait_max_ms */
    ELK_LOCK_CFG_NO_VALIDITY,         /* drift + stop_margin + min_validity >= ttl */
    ELK_LOCK_CFG_RENEW_AFTER_DEADLINE /* the first renewal would start at or after the deadline */
} elk_lock_config_fault_t;

/* Check a config; returns ELK_OK or ELK_E_INVALID_ARG (see elk_lock_config_explain). */
int elk_lock_config_check(const elk_lock_config_t *cfg);

/* The same check, saying which rule failed. *fault (may be NULL) gets the first rule broken
 * (ELK_LOCK_CFG_OK if none). This is the one copy of the safety rule: an agent that reads
 * its own configuration file calls it rather than computing margins itself. Returns ELK_OK,
 * or ELK_E_INVALID_ARG (also for a NULL cfg). */
int elk_lock_config_explain(const elk_lock_config_t *cfg, elk_lock_config_fault_t *fault);

/* The drift allowance of a config in ms: ttl x drift_factor_ppm / 10^6, rounded up (an
 * allowance short by a millisecond is unsafe), plus drift_fixed_ms. For messages. */
uint64_t elk_lock_config_drift(const elk_lock_config_t *cfg);

/* Outcome on one node in the round an event reports. */
typedef enum elk_lock_node_status {
    ELK_LOCK_NODE_NONE = 0, /* not asked, or no answer before the round was decided */
    ELK_LOCK_NODE_OK,       /* positive reply */
    ELK_LOCK_NODE_BUSY,     /* held by another holder (acquire) / our value gone (renew, commit) */
    ELK_LOCK_NODE_ERROR,    /* error reply, not connected, queue full... (see err, text) */
    ELK_LOCK_NODE_TIMEOUT   /* no reply before the request deadline */
} elk_lock_node_status_t;

/* One node's answer in a round (elk_lock_round_t), for logs and status. */
typedef struct elk_lock_node_result {
    uint8_t status;                    /* elk_lock_node_status_t */
    int err;                           /* ELK_OK, or why: ELK_E_SERVER_ERROR, ELK_E_NOT_CONNECTED,
                                          ELK_E_TIMEOUT, ELK_E_UNSAFE_SERVER, ... */
    int64_t value;                     /* the script's integer reply (token, counter, 0/1) */
    uint32_t rtt_ms;                   /* reply time - round t_send */
    int64_t server_ms;                 /* the server's TIME in the reply (ACQUIRE, EXTEND) in
                                          ms (the script's microseconds / 1000), 0 if none:
                                          for the clock check */
    char text[ELK_LOCK_NODE_TEXT_MAX]; /* server error text (truncated), "" if none */
} elk_lock_node_result_t;

/* What an elk_lock_event_t reports to the lock's on_event callback. */
typedef enum elk_lock_event_type {
    ELK_LOCK_EV_ACQUIRED = 1,   /* token, deadline, validity_ms set */
    ELK_LOCK_EV_ACQUIRE_FAILED, /* err: ELK_E_LOCK_BUSY, ELK_E_LOCK_DELAY (a busy quorum where at
                                  least one node's busy reply was a lock-delay marker),
                                  ELK_E_FLEET_UNAVAILABLE, ELK_E_LOCK_TIMEOUT, ELK_E_VALIDITY,
                                  ELK_E_ENTROPY, ELK_E_BUF_TOO_SMALL */
    ELK_LOCK_EV_RETRY,        /* a round failed while waiting; err says why; a retry is scheduled */
    ELK_LOCK_EV_RENEWED,      /* deadline moved: deadline, validity_ms, renewals set */
    ELK_LOCK_EV_RENEW_FAILED, /* one renewal round failed (err); retried until the deadline. The
                                 first failed round of a spell fires SUSPECT instead. */
    ELK_LOCK_EV_RENEW_STOPPED, /* a cap was reached (err ELK_E_MAX_HOLD or ELK_E_MAX_RENEWALS) or
                                  the keepalive was missed (ELK_E_KEEPALIVE_MISSED): no more
                                  renewals; LOST follows at the deadline unless released first */
    ELK_LOCK_EV_LOST,          /* stop the actuator now. err names the cause: ELK_E_LOCK_LOST (the
                                  deadline passed before a quorum confirmed a renewal),
                                  ELK_E_FLEET_LOST (the same, with fewer than a quorum of nodes
                                  reachable), ELK_E_LOCK_TAKEN (a quorum no longer holds our value;
                                  fires at once, before the deadline), ELK_E_MAX_HOLD,
                                  ELK_E_MAX_RENEWALS, ELK_E_KEEPALIVE_MISSED,
                                  ELK_E_LOCK_ABANDONED (elk_lock_abandon). The
                                  engine deletes its keys stop_margin_ms later (once the actuator
                                  must have stopped), not before, so no successor starts early;
                                  with lock_delay_ms it leaves them to expire (a release would
                                  delete the lock-delay marker). */
    ELK_LOCK_EV_RELEASED,      /* the background release round ended (per-node detail in nodes) */
    ELK_LOCK_EV_SUSPECT,       /* a renewal round missed its quorum while the deadline has not
                                  passed (it failed, or it still runs short of a quorum ttl/20
                                  after it was sent, when a failed round would be retried):
                                  still held until deadline (validity_ms says how long),
                                  retried; err says why. Fires once per suspect spell, in place
                                  of that round's RENEW_FAILED; the spell ends with RECOVERED,
                                  LOST, release, abandon or a new acquisition. */
    ELK_LOCK_EV_RECOVERED      /* a renewal confirmed the lease after SUSPECT: HELD again
                                  (deadline, validity_ms, renewals set; RENEWED does not fire) */
} elk_lock_event_type_t;

/* An event. Everything it points to is valid only during the callback. */
typedef struct elk_lock_event {
    elk_lock_event_type_t type;
    int err;                  /* ELK_OK or the reason (see the types above) */
    uint64_t now;             /* the poll time at which it fired */
    uint64_t token;           /* fencing token (0 with fencing off) */
    uint64_t deadline;        /* local deadline (held: drive only while now < deadline) */
    uint32_t validity_ms;     /* deadline - now, 0 if past */
    uint32_t renewals;        /* renewals confirmed in this hold */
    uint8_t ok, busy, failed; /* node counts in the round reported */
    uint8_t quorum;           /* nodes needed */
    uint8_t node_count;       /* entries in nodes[] (the fleet size) */
    const elk_lock_node_result_t *nodes; /* per-node detail of the round reported */
} elk_lock_event_t;

/* Event callback. Runs from inside elk_client_poll only (never from acquire/release).
 * It may call elk_lock_release / elk_lock_acquire on any lock, not elk_client_poll. */
typedef void (*elk_lock_event_fn)(void *user, struct elk_lock *lock, const elk_lock_event_t *ev);

/* A request ticket: the user pointer of one request handed to a node. Internal. */
typedef struct elk_lock_ticket {
    struct elk_lock *lock;
    uint32_t seq; /* round the request belongs to; replies of older rounds are ignored */
    uint8_t node; /* index in the fleet */
    uint8_t kind; /* which script (internal) */
    uint8_t in_use;
    uint8_t eval; /* already the EVAL fallback */
    /* Batched renewals (elk_client_config_t.batch_renewals): the next ticket queued for the
     * same node, then the next lease carried by the same request (its reply's next result).
     * Here, in what was padding before t_send on 32-bit targets. */
    struct elk_lock_ticket *next;
    uint64_t t_send; /* when it was sent: the lower bound of its reply's server TIME */
} elk_lock_ticket_t;

/* Most leases one batched renewal request carries (EXTEND_BATCH): its reply, an array of
 * two values plus one per lease, must fit CONFIG_ELK_RESP_MAX_NODES values, and its
 * arguments sit on the stack of elk_client_poll (two per lease). A batch larger than
 * this, or than the node's send buffer holds, goes in several requests. */
#define ELK_LOCK_BATCH_MAX_                                                                        \
    (CONFIG_ELK_RESP_MAX_NODES - 3 < 256 ? CONFIG_ELK_RESP_MAX_NODES - 3 : 256)
/* 1 (no batch: every lease its own EXTEND) when a reply may hold fewer than 5 values. */
#define ELK_LOCK_BATCH_MAX (CONFIG_ELK_RESP_MAX_NODES < 5 ? 1 : ELK_LOCK_BATCH_MAX_)

/* One round of requests across the fleet (internal): a foreground round (acquire,
 * commit, extend) or a background release. The same type, sends, replies and resends
 * serve both; a lock has one of each. */
typedef struct elk_lock_round {
    uint64_t t_send; /* first request handed over (deadlines, rtt) */
    uint64_t limit;  /* request deadline; a release gives up then */
    uint32_t seq;    /* replies of other rounds are ignored */
    /* Per node bits (CONFIG_ELK_MAX_NODES is at most 15): */
    uint16_t pending_mask; /* reply awaited */
    uint16_t eval_mask;    /* NOSCRIPT answered, resend as EVAL */
    uint16_t unsent_mask;  /* not connected or queue full when sent (a release
                                          resends it once the node is back) */
    uint8_t kind;          /* script of the round (internal); 0: none runs */
    elk_lock_node_result_t results[CONFIG_ELK_MAX_NODES];
} elk_lock_round_t;

/* One lease on one resource. Caller-owned; fields are internal: use the functions.
 * Field order is for code size: what the engine touches most comes first, where
 * 16-bit Thumb loads and stores reach (bytes up to offset 31, words up to 124). */
typedef struct elk_lock {
    struct elk_client *client;
    elk_lock_state_t state; /* changed by lock_state.c only; SUSPECT is the flag below */
    bool renew_stopped;
    bool suspect;    /* held, but the last renewal round missed its quorum: SUSPECT */
    bool subscribed; /* SUBSCRIBE sent for this wait */
    bool wake_now;   /* a release message arrived: retry at once */
    bool waiting;    /* acquire was asked to wait (wait_deadline > now) */
    bool rel_notify; /* fire RELEASED when the release round ends */
    uint16_t key_len, value_len, rel_value_len; /* of key, value, rel_value below */
    uint16_t lost_value_len;
    int last_err; /* reason of the last failed acquire or the loss */
    uint32_t gen; /* round number generator */
    uint32_t renewals;
    uint32_t hold_count;
    uint32_t sub_mask;  /* subscribed on the command connection */
    uint32_t sub2_mask; /* subscribed on the RESP2 subscriber connection */
    uint32_t span_ms;   /* ttl - drift - stop_margin, from cfg at init */
    elk_lock_config_t cfg;
    elk_lock_event_fn on_event;
    void *user;
    uint64_t acquired_at; /* t_send of the acquiring round (max_hold) */
    uint64_t deadline;    /* held until (exclusive) */
    uint64_t next_renew;
    uint64_t next_retry; /* waiting: next attempt; renewing: next round */
    uint64_t wait_deadline;
    uint64_t lost_release_at; /* after a loss: release once the actuator has stopped */
    uint64_t token;
    uint64_t keepalive_at; /* last elk_lock_keepalive (or set_keepalive, or the hold's start) */
    elk_lock_round_t fg;   /* acquire, commit or extend round */
    elk_lock_round_t rel;  /* background release of rel_value */
    /* "<prefix>{<resource>}"; ":fence" / ":released" are appended when sending */
    char key[CONFIG_ELK_MAX_KEY_LEN + 1u];
    char value[ELK_LOCK_VALUE_MAX + 1u];     /* value of the current acquisition */
    char rel_value[ELK_LOCK_VALUE_MAX + 1u]; /* value the background release deletes */
    /* value of the lost lease, deleted at lost_release_at: a new acquisition (and its
     * partial release) inside stop_margin must not change what that release deletes */
    char lost_value[ELK_LOCK_VALUE_MAX + 1u];
    elk_lock_ticket_t tickets[ELK_LOCK_TICKETS];
} elk_lock_t;

/* Client settings. Strings are owned by the caller and must outlive the client. */
typedef struct elk_client_config {
    const char *gateway_id; /* put in front of every lock value; 1..CONFIG_ELK_GATEWAY_ID_MAX_LEN
                                      bytes, no ':' needed, no spaces */
    const char *key_prefix; /* e.g. "elk:" (may be ""), prepended to "{<resource>}" */
    elk_lock_mode_t mode;   /* SINGLE needs a fleet of exactly one node */
    elk_safety_policy_t safety; /* server settings check on each (re)connection and every
                                   safety_recheck_ms (default WARN) */
    /* Optional: node state changes are forwarded here (the client registers its own
     * handlers on every node, replacing any set before elk_client_init). */
    elk_node_state_fn on_node_state;
    void *node_state_user;
    /* Optional: RESP3 pushes the lock engine does not consume are forwarded here. */
    elk_node_push_fn on_push;
    void *push_user;
    /* Optional: release-channel connections for RESP2 servers, one node per fleet node,
     * same count and order (initialised like the fleet's, caller-owned). The client puts
     * them in subscriber mode and polls them; wait on elk_client_waits, which includes
     * them. NULL: waiters on RESP2 nodes use retry delays only (RESP3 nodes share the
     * command connection and need nothing here). */
    elk_fleet_t *subscribers;
    /* Vote hygiene (docs/design.md "Masters that restart or jump"): a node that restarted
     * (or whose restart cannot be ruled out) or whose clock ran ahead gets no vote for
     * quarantine_ms. Default true; false only for negative controls and old servers. */
    bool vote_hygiene;
    /* The quarantine: at least the longest lease TTL plus drift (plus lock_delay) any
     * gateway uses on this fleet. 0 (default): the longest ttl + drift + lock_delay over
     * the locks registered with this client. */
    uint32_t quarantine_ms;
    /* The server safety check runs again on every connected node this often (one SAFETY
     * script a node per interval, lib/lock/lock_safety.c). 0 (default): half the shortest
     * lease TTL over the registered locks (elk_client_safety_recheck_ms). */
    uint32_t safety_recheck_ms;
    /* Renewals in batches (docs/design.md "Renewals in batches"): the leases of this client
     * whose renewal is due within half their renewal interval of one that is due now are
     * renewed together, one EXTEND_BATCH request per node (more when they do not
     * fit one), each lease still judged on its own result. Default true; false renews
     * every lease with its own request (the comparison for benchmarks). */
    bool batch_renewals;
} elk_client_config_t;

/* Fill cfg with defaults: gateway_id "gw", key_prefix "elk:", REDLOCK, WARN, vote
 * hygiene on, quarantine_ms 0 (automatic), batched renewals on. */
void elk_client_config_defaults(elk_client_config_t *cfg);

/* Vote hygiene text kept per node (elk_client_node_hygiene; truncated, NUL-terminated). */
#define ELK_LOCK_HYGIENE_TEXT_MAX 64u

/* Vote hygiene of one node (internal; lib/lock/lock_hygiene.c). A clock reference is one
 * reading of the server's TIME, server_ms, taken between the local times ls and lr. */
typedef struct elk_lock_hygiene {
    uint64_t until;       /* quarantined (no vote) while now < until; 0: never */
    uint64_t ref_ls;      /* clock reference: sent at (local ms) */
    uint64_t ref_lr;      /*   received at (local ms) */
    int64_t ref_server;   /*   the server's TIME in ms */
    uint64_t best_ls;     /* the more precise reference a half-TTL-old one gave way to, kept */
    uint64_t best_lr;     /*   while it is younger than a TTL: every reading is compared with */
    int64_t best_server;  /*   it too, so that a run of slow replies cannot hide a jump */
    uint64_t run_hash;    /* hash of the run_id seen last (0: none seen) */
    uint64_t marker_hash; /* hash of the fleet marker's value seen last (0: none) */
    uint64_t probe_hash;  /* FNV state after the random id the probe in flight carries */
    uint64_t probe_at;    /* when that probe was sent (its reply's ls) */
    int64_t floor_off;    /* the highest (server TIME - local receive time) of any reading, ms:
                             now + floor_off is the latest the node's clock can have reached
                             by what we saw (token floor; a clock set back does not lower it) */
    uint32_t quarantines; /* times a quarantine started or was extended (metrics) */
    uint32_t clock_jumps; /* server clock jumps seen, forward or backward (metrics) */
    uint64_t jump_at;     /* local time of the last clock jump seen (0: none) */
    int32_t jump_ppm;     /*   its rate against our clock, ppm (< 0: back; local clock) */
    bool pending;         /* no vote until the PROBE of this connection has answered */
    bool has_ref;         /* ref_* hold a reading */
    bool has_best;        /* best_* hold one */
    bool refreshing;      /* a probe sent only to read the clock (elk_lock__hygiene_refresh) */
    bool has_floor;       /* floor_off holds a reading */
} elk_lock_hygiene_t;

/* What the client keeps for one fleet node (internal): its session on the current
 * connection and what the vote hygiene and the safety check know of it. The node
 * callbacks of lib/lock get it as their user pointer: it finds its client (index). */
typedef struct elk_lock_session {
    uint8_t index;             /* in the fleet (and in elk_client_t.nodes) */
    uint8_t fresh;             /* just became READY: load scripts, check safety */
    uint8_t unsafe;            /* no vote: 1 refused by the safety check, 2 check pending
                                  (policy REFUSE) */
    uint8_t sub_fresh;         /* subscriber connection just became READY */
    uint8_t preloaded;         /* scripts SCRIPT LOADed on this connection */
    uint8_t safety_due;        /* the safety check did not fit the send buffer behind the
                                  probe: sent after a flush */
    uint8_t safety_rechecking; /* a repeated safety check is in flight */
    uint8_t safety_says;       /* the last verdict + 1 (0: none yet on this connection) */
    uint64_t safety_at;        /* when the safety check was last sent */
    elk_lock_hygiene_t hygiene;
    char check[ELK_LOCK_CHECK_TEXT_MAX]; /* elk_client_node_check */
    /* why the node is (or was last) quarantined: elk_client_node_hygiene */
    char hygiene_text[ELK_LOCK_HYGIENE_TEXT_MAX];
} elk_lock_session_t;

/* A lock client over a fleet. Caller-owned; fields are internal. */
typedef struct elk_client {
    elk_client_config_t cfg;
    elk_fleet_t *fleet;
    const elk_entropy_t *entropy;
    const elk_log_t *log;
    size_t lock_count;
    uint64_t now;             /* time of the poll in progress */
    uint64_t next_wake;       /* what the last poll returned; 0: poll now */
    uint64_t quarantine_wake; /* the next quarantine's end (waiters retry then); 0: none */
    bool in_poll;
    bool dirty;      /* replies recorded, not yet evaluated */
    bool due;        /* an API call queued requests to write */
    bool renew_tick; /* this poll: a renewal is due now, others due soon may join it */
    elk_lock_t *locks[CONFIG_ELK_MAX_LOCKS];        /* the fields above stay at short offsets */
    elk_lock_session_t nodes[CONFIG_ELK_MAX_NODES]; /* one per fleet node, same order */
    /* per node: renewals queued by the steps for the batched write after them (a chain
     * through elk_lock_ticket_t.next; kept for a later poll only while the node's request
     * queue is full) */
    elk_lock_ticket_t *batch_q[CONFIG_ELK_MAX_NODES];
    uint16_t batch_kept; /* per node: batch_q kept for a free slot (the node is full) */
    /* per node: the releases elk_client_release_all queues and writes before it returns
     * (its own array on its stack; NULL at any other time) */
    elk_lock_ticket_t **bulk_q;
    /* the local clock suspect (elk_client_local_clock_suspect): a spell lasts while
     * now < clock_suspect_until; the rate seen last; spells so far */
    uint64_t clock_suspect_until;
    int32_t clock_suspect_ppm;
    uint32_t clock_suspect_spells;
} elk_client_t;

/* Set up a client over an initialised fleet (node.h). cfg is copied (strings are not);
 * fleet, entropy and log (may be NULL) are borrowed and must outlive the client.
 * Registers push and state handlers on every node. Returns ELK_OK, ELK_E_INVALID_ARG
 * (NULL, SINGLE with more than one node), ELK_E_NAME_TOO_LONG / ELK_E_NAME_INVALID
 * (gateway id or prefix). */
int elk_client_init(elk_client_t *client, const elk_client_config_t *cfg, elk_fleet_t *fleet,
                    const elk_entropy_t *entropy, const elk_log_t *log);

/* Drive everything: poll the fleet, evaluate rounds, start renewals and retries, fire
 * events, flush new requests. Returns the absolute time it must be called again (it
 * may be called earlier, e.g. when a descriptor from elk_fleet_waits is ready). While
 * a lock is held the returned time is <= its deadline. */
uint64_t elk_client_poll(elk_client_t *client, uint64_t now);

/* The time the last elk_client_poll asked to be called again, or 0 when an API call
 * since then (acquire, release) queued requests that only the next poll sends. A loop
 * can sleep until this time (or a descriptor), then poll. */
uint64_t elk_client_next_wake(const elk_client_t *client);

/* Fill out[] (up to max entries) with the descriptors to wait on: the fleet's and the
 * subscriber connections'. Returns the number filled. */
size_t elk_client_waits(const elk_client_t *client, elk_wait_t *out, size_t max);

/* The safety check's result for fleet node `node` (client-owned text, valid until the next
 * poll: a recheck may change it): "ok", "pending", "off", "unsafe: maxmemory-policy allkeys-lru",
 * "unchecked: INFO memory: NOPERM ...". "" for a bad index. */
const char *elk_client_node_check(const elk_client_t *client, size_t node);

/* True when node `node` may vote: not refused by the safety check nor waiting for it
 * under ELK_SAFETY_REFUSE, not waiting for its hygiene probe, not quarantined (whether it
 * is connected is elk_node_is_ready's business). */
bool elk_client_node_votes(const elk_client_t *client, size_t node);

/* Vote hygiene of fleet node `node`: the local time (the caller's ms clock) until which it
 * is quarantined (no vote: it restarted, or its restart cannot be ruled out, or its clock
 * ran ahead), 0 when it is not. */
uint64_t elk_client_node_quarantine(const elk_client_t *client, size_t node);

/* Vote hygiene of fleet node `node` as text for STATUS (client-owned, valid until the next
 * poll): "ok", "off", "pending" (probe not answered), "quarantined: restarted 2 s ago",
 * "quarantined: clock ran 5000 ms ahead", "quarantined: data lost (marker 3 s old)" (a
 * FLUSHALL or an empty replica within a connection: the fleet marker is younger than W),
 * ... "" for a bad index. */
const char *elk_client_node_hygiene(const elk_client_t *client, size_t node);

/* Vote hygiene counters of fleet node `node` since elk_client_init, for metrics: into
 * *quarantines the quarantines started or extended (restart, no +info, failed probe, clock
 * jump), into *clock_jumps the server clock jumps seen (forward beyond the drift bound,
 * or backward); either pointer may be NULL. Returns ELK_OK or ELK_E_INVALID_ARG. */
int elk_client_node_hygiene_stats(const elk_client_t *client, size_t node, uint32_t *quarantines,
                                  uint32_t *clock_jumps);

/* The interval of the repeated server safety check (elk_client_config_t.safety_recheck_ms,
 * or half the shortest TTL over the registered locks, or the default TTL's half without
 * one), in ms; 0 for a NULL client. */
uint32_t elk_client_safety_recheck_ms(const elk_client_t *client);

/* The longest a connected node whose settings became unsafe (CONFIG SET maxmemory-policy
 * allkeys-lru) keeps its vote under ELK_SAFETY_REFUSE, in ms: the recheck interval plus
 * the longest request timeout of the fleet's nodes (a later reply resets the connection,
 * and a new connection has no vote until checked). Under WARN the same bound applies to
 * the warning. 0 with the check off (ELK_SAFETY_OFF) or a NULL client. */
uint64_t elk_client_safety_bound_ms(const elk_client_t *client);

/* The local clock suspect (docs/design.md "When the gateway's own clock is wrong"): every
 * connected node (at least 2) showed a clock jump the same way, at rates within a factor
 * of 2 of each other, within the quarantine window. One jumping server is that server's
 * fault; all of them at one rate point at this gateway's clock (a slow oscillator, NTP
 * slewing hard, a monotonic clock that stops in suspend). Diagnosis only: the votes stay
 * withheld as the clock check decided. Returns ELK_E_LOCAL_CLOCK while the spell lasts
 * (until a quarantine window after the last agreeing jump), ELK_OK otherwise,
 * ELK_E_INVALID_ARG for a NULL client. *rate_ppm (may be NULL) gets the rate last seen
 * (> 0: the servers' clocks ran ahead of ours, so ours is slow; 0 before any spell);
 * *spells (may be NULL) the spells since elk_client_init. */
int elk_client_local_clock_suspect(const elk_client_t *client, int32_t *rate_ppm, uint32_t *spells);

/* True when at least a quorum of nodes is READY (acquire can succeed). */
bool elk_client_ready(const elk_client_t *client);

/* Nodes needed for a quorum (1 in SINGLE mode). */
size_t elk_client_quorum(const elk_client_t *client);

/* Prepare lock for resource and register it with client. resource (1..n bytes, no
 * '{', '}', spaces or control bytes) is copied; cfg is copied (NULL: defaults);
 * on_event may be NULL (then use the state queries). Returns ELK_OK,
 * ELK_E_INVALID_ARG (bad cfg), ELK_E_NAME_INVALID, ELK_E_NAME_TOO_LONG (prefix +
 * "{resource}:released" above CONFIG_ELK_MAX_KEY_LEN), ELK_E_TOO_MANY_LOCKS. */
int elk_lock_init(elk_lock_t *lock, elk_client_t *client, const char *resource,
                  const elk_lock_config_t *cfg, elk_lock_event_fn on_event, void *user);

/* Unregister a lock. Returns ELK_OK, or ELK_E_STATE while it is held, being acquired,
 * or has requests in flight (release it and poll until elk_lock_busy() is false). */
int elk_lock_deinit(elk_lock_t *lock);

/* Start acquiring. wait_deadline (absolute ms): 0 or <= now means one round, no waiting;
 * later means retry (random delay in [wait_min, wait_max], or at once on a release
 * message) until then. Returns ELK_OK if the lock is already held by this handle
 * (reentrant: hold count + 1, no event), ELK_E_WOULD_BLOCK when a round was started
 * (ACQUIRED or ACQUIRE_FAILED follows from elk_client_poll), ELK_E_STATE while an
 * acquire is already in progress, ELK_E_ENTROPY if no lock value could be made,
 * ELK_E_LOCK_LOST if held but the deadline passed (the next poll fires LOST). Allowed
 * from IDLE, RELEASING (the old release keeps running) and LOST (which it clears).
 * Outside elk_client_poll the requests are written from inside this call (and from
 * elk_lock_release), so elk_client_next_wake is then when the round needs a step, and
 * the caller's wait is for the replies; a write that fails makes the next wake "now". */
int elk_lock_acquire(elk_lock_t *lock, uint64_t now, uint64_t wait_deadline);

/* Release one hold. With hold count > 1 only decrements and returns ELK_OK. Otherwise
 * the lock is not held from this call on (stop the actuator before calling), and
 * compare-and-delete goes to every node in the background (RELEASED fires when it
 * ends). Also cancels an acquire in progress or a wait (partial locks released).
 * Returns ELK_OK, ELK_E_LOCK_LOST if the lease had been lost before this call (the
 * LOST state is cleared), ELK_E_NOT_HELD if idle. */
int elk_lock_release(elk_lock_t *lock, uint64_t now);

/* Stop renewing a held lease without releasing it: it runs out at its current
 * deadline, where LOST fires with ELK_E_LOCK_ABANDONED, and its keys are deleted
 * stop_margin later, as after any loss. For a supervisor that cannot confirm the
 * holder's actuator has stopped: releasing would let a successor in while it may still
 * drive; renewing would keep a lease nobody supervises. A renewal round in flight is
 * dropped. No event fires from this call. Returns ELK_OK, ELK_E_NOT_HELD (not held, or
 * the deadline already passed) or ELK_E_INVALID_ARG. */
int elk_lock_abandon(elk_lock_t *lock, uint64_t now);

/* Release every lease of the client at once, for a shutdown or a client that gives up on
 * all its work (docs/design.md "Releases in bulk"): for each registered lock, what
 * elk_lock_release does when it is the last hold (held: released whatever its hold count;
 * acquiring or waiting: cancelled, partial locks released; LOST: cleared; IDLE and
 * RELEASING: left alone). Each lease is still judged on its own value and its own result,
 * and RELEASED fires for each at the end of its own release round, as after elk_lock_release.
 * The requests to one node go as one RELEASE_BATCH call (more when they do not fit one
 * request or ELK_LOCK_BATCH_MAX); one lease alone, and a lease with a lock delay, as its own
 * RELEASE. They are written before this returns (queued for the poll's write inside
 * elk_client_poll), so no other request of these locks can come between. Returns the
 * number of leases whose release started (0 for none), or ELK_E_INVALID_ARG (client NULL
 * or not initialised). */
int elk_client_release_all(elk_client_t *client, uint64_t now);

/* Proof that the work holding the lease is alive (keepalive_ms, elk/lock.h); SUSPECT
 * counts as held. Returns ELK_OK, ELK_E_NOT_HELD (not held, or the deadline passed),
 * ELK_E_KEEPALIVE_MISSED (too late: renewal already stopped for this hold, the lease runs
 * out at its deadline), ELK_E_INVALID_ARG. Cheap: no request is sent. */
int elk_lock_keepalive(elk_lock_t *lock, uint64_t now);

/* Change the keepalive interval of lock (0: off) from now on, for this and later holds;
 * counts as a keepalive (a renewal already stopped for a missed one stays stopped). Each
 * hold starts with a fresh keepalive (at ACQUIRED). Returns ELK_OK or ELK_E_INVALID_ARG. */
int elk_lock_set_keepalive(elk_lock_t *lock, uint64_t now, uint32_t interval_ms);

/* State (SUSPECT while held after a renewal round missed its quorum), and whether the
 * actuator may be driven now (HELD/RENEWING/SUSPECT and now < deadline). */
elk_lock_state_t elk_lock_state(const elk_lock_t *lock);
bool elk_lock_is_held(const elk_lock_t *lock, uint64_t now);
/* Requests or a background round still in flight (the object must stay alive). */
bool elk_lock_busy(const elk_lock_t *lock);
/* Name of a state ("held"), for logs and status. */
const char *elk_lock_state_name(elk_lock_state_t state);
/* Name of an event type ("acquired"). */
const char *elk_lock_event_name(elk_lock_event_type_t type);

/* Fencing token of the current hold (0 if not held or fencing off). */
uint64_t elk_lock_token(const elk_lock_t *lock);
/* Local deadline of the current hold (0 if not held). */
uint64_t elk_lock_deadline(const elk_lock_t *lock);
/* deadline - now while held, else 0. */
uint32_t elk_lock_validity(const elk_lock_t *lock, uint64_t now);
/* Renewals confirmed in the current hold, and the reentrant hold count (0 when not held). */
uint32_t elk_lock_renewals(const elk_lock_t *lock);
uint32_t elk_lock_hold_count(const elk_lock_t *lock);
/* Reason of the last failed acquire or the loss (ELK_OK if none). */
int elk_lock_last_error(const elk_lock_t *lock);
/* The lock key "<prefix>{<resource>}" (NUL-terminated, owned by the lock) and the
 * value of the current or last acquisition ("gw:hex", "" before the first). */
const char *elk_lock_key(const elk_lock_t *lock);
const char *elk_lock_value(const elk_lock_t *lock);

#ifdef __cplusplus
}
#endif

#endif /* ELK_LOCK_H */
