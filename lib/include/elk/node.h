/* SPDX-License-Identifier: MIT */
/*
 * One Redis connection as a state machine, and a fleet that drives several.
 *
 * States: DISCONNECTED -> CONNECTING (transport open/progress, which includes the
 * TLS handshake when the transport is port/mbedtls) -> AUTH -> HELLO -> SELECT ->
 * READY; any failure goes to BACKOFF and reconnects after an exponential delay
 * with jitter, up to a cap. Requests are pipelined: replies are matched to
 * requests in order. A request that passes its deadline closes the connection
 * (the order of later replies can no longer be trusted) and every request still
 * in flight completes with ELK_E_TIMEOUT or ELK_E_DISCONNECTED.
 *
 * Nothing here blocks: elk_node_poll / elk_fleet_poll do whatever I/O is possible
 * now and return the next time they need to run; the caller waits on the
 * descriptors they report (or just polls, on an RTOS).
 */
#ifndef ELK_NODE_H
#define ELK_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/config.h"
#include "elk/err.h"
#include "elk/platform.h"
#include "elk/pool.h"
#include "elk/resp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Connection state of one node (elk_node_state). */
typedef enum elk_node_state {
    ELK_NODE_DISCONNECTED = 0,
    ELK_NODE_CONNECTING, /* transport open + progress (TCP connect, TLS handshake) */
    ELK_NODE_AUTH,
    ELK_NODE_HELLO,
    ELK_NODE_SELECT,
    ELK_NODE_READY,
    ELK_NODE_BACKOFF
} elk_node_state_t;

struct elk_node;

/* Completion of one request. status is ELK_OK with reply set (the reply may itself be
 * a Redis error: check elk_resp_is_error), or a negative elk_err_t with reply NULL:
 *   ELK_E_TIMEOUT       this request passed its deadline (the connection was reset),
 *   ELK_E_DISCONNECTED  the connection went down first (another request timed out, the
 *                       peer closed, elk_node_close was called, ...),
 *   ELK_E_RESP_*        this request's reply was malformed or larger than a pool block.
 * The reply's views are valid only during the call (and not after the callback calls
 * elk_node_close). Called from inside elk_node_poll / elk_fleet_poll / elk_node_close,
 * never re-entrantly from elk_node_send. The callback may call elk_node_send (the new
 * request goes out on the next poll) or elk_node_close; it must not call
 * elk_node_poll (a nested poll returns at once without doing anything). */
typedef void (*elk_node_reply_fn)(void *user, struct elk_node *node, int status,
                                  const elk_resp_reply_t *reply);

/* Out-of-band message: a RESP3 push (pub/sub message or subscribe confirmation,
 * invalidation), or, on a node in subscriber mode (elk_node_set_subscriber), a RESP2
 * pub/sub array ["message", channel, payload], ["subscribe", channel, n], ... The
 * reply's nodes[0] is the top-level PUSH/ARRAY, or an error: the server refused an
 * elk_node_send_noreply command (e.g. -NOPERM). Views valid during the call. The
 * handler may call elk_node_send / elk_node_send_noreply / elk_node_close. */
typedef void (*elk_node_push_fn)(void *user, struct elk_node *node, const elk_resp_reply_t *push);

/* State change notification (for logs and for the lock engine). err says why a
 * connection went down (ELK_OK for a normal transition). On a failure it runs after
 * the connection is torn down and before the in-flight requests are failed. On READY
 * the handler may already call elk_node_send (e.g. SCRIPT LOAD, re-SUBSCRIBE); it may
 * also call elk_node_close. */
typedef void (*elk_node_state_fn)(void *user, struct elk_node *node, elk_node_state_t state,
                                  int err);

/* How to reach and log in to one Redis node (elk_node_init copies it). */
typedef struct elk_node_config {
    elk_endpoint_t endpoint;     /* strings owned by the caller, alive as long as the node */
    const char *username;        /* ACL user, or NULL for password-only AUTH */
    const char *password;        /* NULL: no AUTH */
    uint32_t db;                 /* SELECT db when non-zero */
    bool resp3;                  /* try HELLO 3 (falls back to RESP2 if refused) */
    uint32_t connect_timeout_ms; /* TCP + TLS + AUTH/HELLO/SELECT, default 2000 */
    uint32_t request_timeout_ms; /* default per-request deadline, default 1000 */
    uint32_t backoff_min_ms;     /* first reconnect delay, default 100 */
    uint32_t backoff_max_ms;     /* cap, default 5000 (raised to backoff_min_ms if below) */
    /* Optional (NULL: none). Read right after bytes come in, so that a reply's receive time
     * (elk_node_received_at) is not the poll's `now`, taken before a preemption that may
     * have lasted longer than the clock check allows. Same origin as the caller's now. */
    const elk_clock_t *clock;
} elk_node_config_t; /* elk_node_init treats a 0 timeout/backoff as its default */

/* Fill cfg with defaults (all zero/NULL, timeouts as documented above). */
void elk_node_config_defaults(elk_node_config_t *cfg);

/* A request in flight: its reply callback, user pointer and deadline. */
typedef struct elk_node_request {
    elk_node_reply_fn cb;
    void *user;
    uint64_t deadline;
} elk_node_request_t;

/* Counters of one node for status output (elk_node_stats). */
typedef struct elk_node_stats {
    uint32_t connects;    /* successful connections */
    uint32_t failures;    /* connection attempts or connections that failed */
    uint32_t timeouts;    /* requests that passed their deadline */
    uint32_t last_rtt_ms; /* round trip of the most recent reply */
    int last_error;       /* most recent failure (elk_err_t), ELK_OK if none */
    bool tls;             /* set by the caller when the transport is TLS (for status) */
    bool resp3;           /* HELLO 3 accepted */
} elk_node_stats_t;

/* Unconfirmed no-reply commands ((UN)SUBSCRIBE) one node tracks at a time. */
#define ELK_NODE_MAX_NOREPLY 8u

/* One Redis node: caller-allocated, set up by elk_node_init, driven by elk_node_poll. */
typedef struct elk_node {
    /* Internal: the node module owns these fields; read them through functions. */
    elk_node_config_t cfg;
    elk_transport_t transport;
    elk_pool_t *pool;
    const elk_entropy_t *entropy;
    const elk_log_t *log;
    elk_node_state_t state;
    uint64_t state_since;
    uint64_t next_attempt;
    uint32_t backoff_ms;
    uint8_t *tx; /* pool block: encoded requests not yet sent */
    size_t tx_len, tx_sent;
    uint8_t *rx;               /* pool block: reply bytes (RESP reader buffer) */
    uint16_t head, count;      /* ring of in-flight requests */
    uint16_t unsent;           /* newest in-flight requests not all written yet */
    uint8_t handshake_pending; /* internal handshake replies still expected */
    elk_node_push_fn on_push;
    void *push_user;
    elk_node_state_fn on_state;
    void *state_user;
    elk_node_stats_t stats;
    uint8_t index;            /* position in its fleet */
    bool subscriber;          /* RESP2 pub/sub arrays go to on_push */
    uint8_t in_poll;          /* guards against a nested elk_node_poll */
    uint32_t epoch;           /* bumped on every teardown: callbacks that closed the node */
    uint64_t connect_started; /* start of the current connect (connect timeout base) */
    uint64_t rx_at;           /* when the bytes being routed were read (elk_node_received_at) */
    /* The large members last: the small ones above stay within short load/store offsets
     * (smaller code on Cortex-M). */
    elk_resp_reader_t reader;
    elk_node_request_t inflight[CONFIG_ELK_NODE_MAX_INFLIGHT];
    /* FIFO of unconfirmed no-reply commands: for each, the value nr_answered (in-order
     * replies read, modulo 2^16) will have when its own answer is due. A refusal is an
     * in-order error, so it must not be matched to a request. */
    uint16_t nr_due[ELK_NODE_MAX_NOREPLY];
    uint16_t nr_answered;
    uint8_t nr_head, nr_count;
    uint64_t sent_at[CONFIG_ELK_NODE_MAX_INFLIGHT];
    elk_resp_node_t reply_nodes[CONFIG_ELK_RESP_MAX_NODES];
} elk_node_t;

/* Prepare a node; no I/O yet. cfg is copied (its strings are not). transport is
 * copied; its ctx stays owned by the caller. pool supplies two blocks (tx, rx) while
 * connected. entropy provides backoff jitter; log may be NULL.
 * Returns ELK_OK or ELK_E_INVALID_ARG. */
int elk_node_init(elk_node_t *node, const elk_node_config_t *cfg, const elk_transport_t *transport,
                  elk_pool_t *pool, const elk_entropy_t *entropy, const elk_log_t *log);

/* Queue a command (argv encoded straight into the node's tx block, nothing copied
 * twice; argv's bytes need not outlive the call). cb (may be NULL) runs exactly once,
 * from a later poll or close. deadline is absolute (ms, the caller's clock); 0 means
 * now + request_timeout_ms. Nothing is sent from inside this call: the bytes go out
 * on the next elk_node_poll. Returns ELK_OK, ELK_E_INVALID_ARG, ELK_E_NOT_CONNECTED
 * (state not READY: cb will not run), ELK_E_QUEUE_FULL (CONFIG_ELK_NODE_MAX_INFLIGHT
 * in flight, or the tx block is full of unsent bytes: poll and retry),
 * ELK_E_BUF_TOO_SMALL (command larger than a pool block). On any error cb never runs. */
int elk_node_send(elk_node_t *node, uint64_t now, const elk_resp_arg_t *argv, size_t argc,
                  uint64_t deadline, elk_node_reply_fn cb, void *user);

/* Queue a command that gets no in-order reply: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE,
 * PUNSUBSCRIBE of ONE channel, whose confirmation arrives as a push (RESP3) or, in
 * subscriber mode, as a RESP2 pub/sub array, both delivered to on_push. If the server
 * refuses it (an in-order error such as -NOPERM), the error is logged and delivered to
 * on_push (its top node is an error), never to a request: later replies stay matched.
 * Takes no in-flight slot and has no deadline. Returns ELK_OK, ELK_E_INVALID_ARG,
 * ELK_E_NOT_CONNECTED, ELK_E_QUEUE_FULL (tx block full of unsent bytes, or
 * ELK_NODE_MAX_NOREPLY commands still unconfirmed), ELK_E_BUF_TOO_SMALL. */
int elk_node_send_noreply(elk_node_t *node, const elk_resp_arg_t *argv, size_t argc);

/* RESP2 pub/sub: when on, every reply that is an array whose first element is
 * "message", "pmessage", "smessage", "subscribe", "unsubscribe", "psubscribe",
 * "punsubscribe", "ssubscribe" or "sunsubscribe" goes to on_push instead of being
 * matched to a request (in RESP2 a subscribed connection gets these unasked). Use it
 * on a node dedicated to SUBSCRIBE when HELLO 3 is off or refused; RESP3 pushes need
 * no flag. Persists across reconnects (re-subscribe after each READY). */
void elk_node_set_subscriber(elk_node_t *node, bool on);

/* Requests in flight (sent or queued, reply not yet delivered). */
size_t elk_node_inflight(const elk_node_t *node);

/* Bytes one more command may take in the node's send buffer now (a pool block less the
 * bytes queued and not yet written); 0 when not connected. For a caller that sizes a
 * command to fit (lib/lock's batched renewals). */
size_t elk_node_tx_room(const elk_node_t *node);

/* Advance: connect, handshake, send, receive, dispatch replies, expire deadlines,
 * reconnect. Deadlines are checked before reading, so a reply that is only read at or
 * after its request's deadline completes as ELK_E_TIMEOUT. Returns the absolute time
 * by which it must be called again (the earliest request deadline, connect deadline
 * or backoff end; UINT64_MAX when only the descriptor matters); it may be called
 * earlier, e.g. when its descriptor is ready. A DISCONNECTED node starts connecting at
 * once; a BACKOFF node when its delay has passed. Failures (refused, TLS, AUTH,
 * SELECT, connect timeout, pool empty, peer closed, malformed reply) go to BACKOFF:
 * delay = d/2 + random(0..d/2) with d = backoff_min_ms doubled per consecutive
 * failure, capped at backoff_max_ms; reset to backoff_min_ms on reaching READY. */
uint64_t elk_node_poll(elk_node_t *node, uint64_t now);

/* Inside a reply callback: the local time (the caller's ms clock) the reply's bytes were
 * read, no earlier than the now of the poll that read them (cfg.clock's reading when set,
 * else that now). Outside one: the last such time. Returns 0 for NULL. */
uint64_t elk_node_received_at(const elk_node_t *node);

/* Send what is queued, nothing else: no reading, no connecting. For a loop that has
 * just queued requests (its replies cannot be there yet; the descriptor wakes it when
 * they are). A write error fails the node as in elk_node_poll. Returns the same next
 * time as elk_node_poll would. */
uint64_t elk_node_flush(elk_node_t *node, uint64_t now);

/* Descriptor and ELK_WAIT_* events to wait on (WRITE is added while unsent bytes
 * wait); returns -1 with *events = 0 when nothing to wait on (no connection). */
int elk_node_wait(const elk_node_t *node, unsigned *events);

/* Close the connection now; in-flight callbacks complete with ELK_E_DISCONNECTED
 * (from inside this call). The node stays DISCONNECTED until elk_node_poll is called. */
void elk_node_close(elk_node_t *node, uint64_t now);

/* Current state, and shortcut for READY. */
elk_node_state_t elk_node_state(const elk_node_t *node);
bool elk_node_is_ready(const elk_node_t *node);

/* Name of a state ("ready"), for logs and status. */
const char *elk_node_state_name(elk_node_state_t state);

/* Counters and the last error, for status output. */
const elk_node_stats_t *elk_node_stats(const elk_node_t *node);

/* Register the push (pub/sub) handler and the state-change handler; either may be NULL. */
void elk_node_on_push(elk_node_t *node, elk_node_push_fn fn, void *user);
void elk_node_on_state(elk_node_t *node, elk_node_state_fn fn, void *user);

/* ------------------------------------------------------------------ fleet */

/* The nodes of one deployment, driven together from one loop. */
typedef struct elk_fleet {
    elk_node_t *nodes; /* caller-owned array */
    size_t count;      /* <= CONFIG_ELK_MAX_NODES */
} elk_fleet_t;

/* One descriptor to wait on. */
typedef struct elk_wait {
    int fd;
    unsigned events; /* ELK_WAIT_* */
} elk_wait_t;

/* Wrap count already-initialised nodes (their index fields are set here).
 * Returns ELK_OK or ELK_E_INVALID_ARG (count 0 or above CONFIG_ELK_MAX_NODES). */
int elk_fleet_init(elk_fleet_t *fleet, elk_node_t *nodes, size_t count);

/* Poll every node; returns the earliest next time any node needs. */
uint64_t elk_fleet_poll(elk_fleet_t *fleet, uint64_t now);

/* elk_node_flush every node; returns the earliest next time any node needs. */
uint64_t elk_fleet_flush(elk_fleet_t *fleet, uint64_t now);

/* Fill out[] with what to wait on (up to max entries); returns the number filled. */
size_t elk_fleet_waits(const elk_fleet_t *fleet, elk_wait_t *out, size_t max);

/* Nodes currently READY. */
size_t elk_fleet_ready_count(const elk_fleet_t *fleet);

/* Quorum size for this fleet: count/2 + 1. */
size_t elk_fleet_quorum(const elk_fleet_t *fleet);

#ifdef __cplusplus
}
#endif

#endif /* ELK_NODE_H */
