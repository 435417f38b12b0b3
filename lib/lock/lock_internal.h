/* SPDX-License-Identifier: MIT */
/*
 * Internal interfaces between the files of lib/lock. Not installed, not public.
 * A file calls only files below it (CONTRIBUTING.md, "Layers"; scripts/check-layers.py):
 * lock_api.c, lock_client.c > lock_engine.c > lock_round.c > lock_safety.c, lock_hygiene.c
 * > lock_session.c, lock_state.c, lock_sub.c > lock_send.c > lock_config.c, lock_value.c,
 * lock_log.c.
 */
#ifndef ELK_LOCK_INTERNAL_H
#define ELK_LOCK_INTERNAL_H

#include "elk/lock.h"
#include "elk/lock_scripts.h"

/* What a request (ticket) or a foreground round runs. */
enum { LK_NONE = 0, LK_ACQUIRE, LK_COMMIT, LK_EXTEND, LK_RELEASE };

/* lock_config.c */
uint64_t elk_lock__drift(const elk_lock_config_t *cfg);
/* ttl - drift - stop_margin of a checked cfg: a round sent at t_send holds until
 * t_send + span. Kept in the lock at init, as it depends on the config only. */
uint32_t elk_lock__span(const elk_lock_config_t *cfg);

/* lock_round.c: the mechanics of one round, the same for a foreground round and a
 * release. Start: a new seq, every node sent its request (limit: the request deadline). */
void elk_lock__round_start(elk_lock_t *lock, elk_lock_round_t *r, uint8_t kind, uint64_t now,
                           uint64_t limit);
/* Resend what the rounds of lock owe: a release to nodes back up, EVAL after NOSCRIPT. */
void elk_lock__round_resend(elk_lock_t *lock, uint64_t now);
/* The round is decided (or given up): requests still awaited at its limit are timeouts,
 * later replies are ignored. Its results stay for the event that reports it. */
void elk_lock__round_end(elk_lock_round_t *r, uint64_t now);
/* Write the renewals the steps queued (batched renewals, lock_send.c): per node, in as few
 * requests as fit; each lease still has its own ticket and result. What a node's full
 * request queue cannot take stays queued for a later poll. Called by the poll after the
 * locks' steps, before the fleet's flush. */
void elk_lock__batch_flush(elk_client_t *client, uint64_t now);
/* Write the releases elk_lock__release_all queued in client->bulk_q at once, per node: one
 * lease alone as its ordinary RELEASE, more as RELEASE_BATCH requests (as many as the node's
 * send buffer needs); what is not sent is a release's unsent request (resent one by one
 * once the node is back). The queue is empty after. */
void elk_lock__bulk_flush(elk_client_t *client, uint64_t now);

/* lock_send.c, the wire: requests and replies, no policy. Send the script of round r to
 * node i of the fleet for lock (as EVAL when r's NOSCRIPT mark for i is set); floor is
 * ACQUIRE's token floor (ARGV[5], the caller's elk_lock__token_floor); on_reply gets the
 * reply with the request's ticket as its user pointer. Whether the node may vote is the
 * caller's question, asked before. Returns ELK_OK or the reason the request was not
 * queued (on_reply will then never run). */
int elk_lock__send_script(elk_lock_t *lock, const elk_lock_round_t *r, size_t node, uint64_t now,
                          int64_t floor, elk_node_reply_fn on_reply);
/* Write lock->key then suffix into out (room for CONFIG_ELK_MAX_KEY_LEN + 16);
 * returns the length (no NUL). */
size_t elk_lock__key_with(const elk_lock_t *lock, const char *suffix, char *out);
/* lock_send.c: SCRIPT LOAD <text> of the five scripts, in the order the client preloads
 * them (ACQUIRE, EXTEND, RELEASE, COMMIT, and EXTEND_BATCH where batches can form: see
 * lock_client.c), built at compile time. */
extern const elk_resp_arg_t elk_lock__script_load[5][3];
/* send a client-level command whose reply is ignored (SCRIPT LOAD, SUBSCRIBE ...) */
int elk_lock__send_plain(elk_client_t *client, size_t node, const elk_resp_arg_t *argv, size_t argc,
                         uint64_t now);
/* A reply to a ticket's request, decoded: its top value (NULL: failed, status says why),
 * the script's result (NULL: not of the script's shape), and the server's TIME and the
 * fleet marker's creation it carried (ACQUIRE, EXTEND; 0 if none). */
typedef struct elk_lock_reply {
    int status;
    const elk_resp_node_t *top;
    const elk_resp_node_t *res;
    int64_t server_ms;
    int64_t marker_ms;
} elk_lock_reply_t;
/* Decode a reply of ticket t (the node callback's status and reply) into *out and free t. */
void elk_lock__reply_decode(elk_lock_ticket_t *t, int status, const elk_resp_reply_t *reply,
                            elk_lock_reply_t *out);
/* Record a decoded reply of ticket t in its round (a reply of another round is ignored),
 * weighed by the vote policies' verdicts on it: clock (elk_lock__clock_ok) and novote
 * (elk_lock__marker_ok), ELK_OK when none applies. */
void elk_lock__reply_record(const elk_lock_ticket_t *t, const elk_lock_reply_t *rp, int clock,
                            int novote);
/* lock_send.c, batched renewals and releases in bulk (docs/design.md "Renewals in
 * batches", "Releases in bulk"). Queue node i's EXTEND or RELEASE of round r of lock in
 * queue[i] (client->batch_q: this poll's batched renewals; client->bulk_q: the releases of
 * elk_client_release_all): a ticket taken and filled as for a request sent now. ELK_OK, or
 * why not (ELK_E_NOT_CONNECTED, ELK_E_QUEUE_FULL: no ticket free). */
int elk_lock__queue_batched(elk_lock_t *lock, const elk_lock_round_t *r, size_t node, uint64_t now,
                            elk_lock_ticket_t **queue);
/* Take the tickets of node's next request out of queue[node]: the first live one and the
 * later ones that may share its request (the same script; for renewals the same verb, ttl
 * and drift terms) while they fit the node's send buffer (written first when full) and
 * ELK_LOCK_BATCH_MAX; tickets of rounds that ended since they were queued are dropped.
 * *out gets them as a chain (the order of the request's keys); returns their number (0:
 * queue empty). */
size_t elk_lock__batch_collect(elk_client_t *client, size_t node, uint64_t now,
                               elk_lock_ticket_t **queue, elk_lock_ticket_t **out);
/* Send the chain of n >= 2 tickets at head as one EXTEND_BATCH request to node, or, for
 * release tickets, one RELEASE_BATCH (as EVAL) (head is on_reply's user pointer). ELK_OK
 * or why it was not queued (on_reply will then not run; the tickets are still the
 * caller's). */
int elk_lock__send_batch(elk_client_t *client, size_t node, elk_lock_ticket_t *head, size_t n,
                         uint64_t now, elk_node_reply_fn on_reply);
/* Decode a reply to the batch whose chain starts at head into *out: res points at the first
 * lease's result (NULL: not of the script's shape), server_ms and marker_ms as for EXTEND
 * (0 for a release).
 * The tickets stay taken. */
void elk_lock__batch_decode(const elk_lock_ticket_t *head, int status,
                            const elk_resp_reply_t *reply, elk_lock_reply_t *out);
/* Lease k's reply (the k-th ticket t of the chain) out of the decoded batch reply: the
 * same as batch with res at its own result; frees t. */
void elk_lock__batch_reply_of(elk_lock_ticket_t *t, const elk_lock_reply_t *batch, size_t k,
                              elk_lock_reply_t *out);
/* Write the fleet marker key "<prefix>marker" into out (room for CONFIG_ELK_MAX_KEY_LEN +
 * sizeof(ELK_LOCK_MARKER_NAME)); returns its length (no NUL). */
size_t elk_lock__marker_key(const elk_client_t *client, char *out);

/* lock_engine.c: the state machine. The transitions below change state and queue
 * requests; they never write to the network. One that queued marks the client due
 * (client->due): the caller, lock_api.c, then writes them. */
uint64_t elk_lock__step(elk_lock_t *lock, uint64_t now);
/* Whether lock's renewal (first try or retry) is due by now and no round runs: the poll
 * then lets leases due soon join it (client->renew_tick, batched renewals). */
bool elk_lock__renew_due(const elk_lock_t *lock, uint64_t now);
/* A node came back (its quarantine ended): a waiting acquire tries again now. */
void elk_lock__wake_waiter(elk_lock_t *lock);
/* When lock needs its next step (never before now). */
uint64_t elk_lock__wake(const elk_lock_t *lock, uint64_t now);
/* elk_lock_acquire, _release, _abandon without the write (same arguments and returns). */
int elk_lock__acquire(elk_lock_t *lock, uint64_t now, uint64_t wait_deadline);
int elk_lock__release(elk_lock_t *lock, uint64_t now);
int elk_lock__abandon(elk_lock_t *lock, uint64_t now);
/* elk_client_release_all without the final write: every lock's release (as
 * elk_lock__release, whatever its hold count), the releases to one node in bulk. Returns
 * the number of leases whose release started. */
int elk_lock__release_all(elk_client_t *client, uint64_t now);

/* lock_value.c: a fresh lock value "<gateway id>:<32 hex digits>" into lock->value
 * (ELK_OK or ELK_E_ENTROPY), and a retry delay in [wait_min_ms, wait_max_ms]. */
int elk_lock__new_value(elk_lock_t *lock);
uint32_t elk_lock__random_delay(const elk_lock_t *lock);

/* lock_sub.c: SUBSCRIBE to lock's release channel on every node (once a wait), and
 * UNSUBSCRIBE where it is subscribed. */
void elk_lock__subscribe(elk_lock_t *lock);
void elk_lock__unsubscribe(elk_lock_t *lock);
/* a node (re)connected: SUBSCRIBE again if lock is waiting on the release channel */
void elk_lock__resubscribe(elk_lock_t *lock, size_t node);
/* A release message (channel, payload = the released value) arrived on node's connection. */
void elk_lock__release_message(elk_client_t *client, const uint8_t *channel, size_t len,
                               const uint8_t *payload, size_t plen);

/* lock_session.c: the per-node session records. The client a record belongs to (records
 * are the client's nodes[] array: the callbacks of the vote policies get a record). */
elk_client_t *elk_lock__session_client(elk_lock_session_t *s);
/* ELK_OK when node i may get a request of round kind `kind` (LK_*) now, else why not:
 * ELK_E_UNSAFE_SERVER, ELK_E_SERVER_UNCHECKED (safety check), ELK_E_NODE_QUARANTINED. */
int elk_lock__node_vote(const elk_client_t *client, size_t i, uint8_t kind, uint64_t now);
/* When node's reply now being delivered was read: its receive time, never before the
 * poll's now (the clock check's lr; elk_node_received_at). */
uint64_t elk_lock__received_at(const elk_client_t *client, const elk_node_t *node);

/* lock_state.c: the one way the lock's state changes (the transitions a debug build
 * allows are in one table there). */
void elk_lock__set_state(elk_lock_t *lock, elk_lock_state_t to);

/* lock_safety.c: node i just became READY: check its settings per client->cfg.safety. */
void elk_lock__safety_start(elk_client_t *client, size_t i, uint64_t now);
/* Node i's check again while connected, every elk_client_safety_recheck_ms (only the SAFETY
 * script: one request). Returns when it is due next (UINT64_MAX: nothing to wait for). */
uint64_t elk_lock__safety_recheck(elk_client_t *client, size_t i, uint64_t now);

/* lock_hygiene.c: vote hygiene (docs/design.md "Masters that restart or jump").
 * Node i just became READY: send the PROBE (before any request of the locks). */
void elk_lock__hygiene_start(elk_client_t *client, size_t i, uint64_t now);
/* Keeps node i's clock reference younger than half the shortest TTL: with no reading for that
 * long (an idle client, a quarantined node, which gets no lock requests) the PROBE is sent
 * again, for its TIME only (no pending state: the vote stays). Returns when it is due next
 * (UINT64_MAX: nothing to wait for). */
uint64_t elk_lock__hygiene_refresh(elk_client_t *client, size_t i, uint64_t now);
/* A reply of node i to a request of lock sent at t_send carried the server's TIME,
 * server_ms, read between t_send and now. ELK_OK: the reply's vote counts. Else it counts
 * as ERROR with the code returned: ELK_E_CLOCK_JUMP when the server's clock jumped beyond
 * lock's drift bound (either way) since the node's reference (the node is quarantined);
 * ELK_E_CLOCK_UNVERIFIED when the reference is too old or imprecise to rule a jump out.
 * Called for every such reply, of a decided round too: it keeps the reference fresh. */
int elk_lock__clock_ok(elk_client_t *client, const elk_lock_t *lock, size_t i, int64_t server_ms,
                       uint64_t t_send, uint64_t now);

/* The fleet marker a reply of node i carried (ACQUIRE, EXTEND: its creation time marker_ms
 * in server ms, 0 for an old-format marker; the server's TIME server_ms read in the
 * same script), received at now. ELK_OK, or ELK_E_NODE_AMNESIA: the marker is younger than
 * W, the node lost its data within W (docs/design.md "Masters that forget within a
 * connection"); it is quarantined until the marker is W old and the reply does not count.
 * Called for every such reply, of decided rounds too. ELK_OK with vote_hygiene off. */
int elk_lock__marker_ok(elk_client_t *client, size_t i, int64_t server_ms, int64_t marker_ms,
                        uint64_t now);
/* The floor ACQUIRE gets for its token (ARGV[5], us): the highest server clock this client's
 * readings say the fleet has reached by now (per node the highest reading ever, plus the local
 * time since it was received: a clock set back does not lower it), quarantined nodes
 * included, so that a master whose clock runs (or ran) ahead lifts every token, also after
 * the masters lost their counters (docs/design.md "Fencing tokens across a fleet"). 0 with
 * no reading (vote hygiene off). */
int64_t elk_lock__token_floor(const elk_client_t *client, uint64_t now);
/* lock_log.c: a lock line "<key>: <head><what><val><after>[ token N][: <error>]" (lock
 * not NULL) or a node line "node <host>:<port>: <head><what><val><after>[: <error>]" (node,
 * lock NULL); val may be NULL; cut at CONFIG_ELK_MAX_KEY_LEN + 200 bytes. */
void elk_lock__log(const elk_client_t *client, int level, const elk_lock_t *lock, size_t node,
                   const char *head, const char *what, const elk_resp_node_t *val,
                   const char *after, int err);

/* For a helper gcc -Os would otherwise copy into each caller (measured on Cortex-M4).
 * Only when optimising for size: at -O2 the compiler's inlining saves instructions. */
#if defined(__GNUC__) && defined(__OPTIMIZE_SIZE__)
#define LK_NOINLINE __attribute__((noinline))
#else
#define LK_NOINLINE
#endif

/* Bit helpers for per-node masks. */
#define LK_BIT(i) (1u << (unsigned)(i))

#endif /* ELK_LOCK_INTERNAL_H */
