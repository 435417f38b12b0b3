/* SPDX-License-Identifier: MIT */
/*
 * The lease state machine of one lock: which round runs when (acquire, commit, extend,
 * release), quorum and validity decisions, renewal and wait timers, events, and the
 * transitions of the public calls (lock_api.c calls them, then writes what they queued).
 * The mechanics of a round are lock_round.c's.
 *
 * Node callbacks (lock_send.c) only record replies; every decision is taken here,
 * from elk_client_poll, so events never fire from inside a node's poll and a
 * silent node can never delay the clock-driven LOST.
 */
#include <string.h>

#include "lock_internal.h"

#define LK_NEVER UINT64_MAX

static size_t lk_nodes(const elk_lock_t *lock)
{
    return lock->client->fleet->count;
}

static LK_NOINLINE uint64_t lk_min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static void lk_count(const elk_lock_node_result_t *r, size_t n, uint8_t *ok, uint8_t *busy,
                     uint8_t *failed)
{
    size_t i;
    *ok = *busy = *failed = 0;
    for (i = 0; i < n; i++) {
        if (r[i].status == ELK_LOCK_NODE_OK) {
            (*ok)++;
        } else if (r[i].status == ELK_LOCK_NODE_BUSY) {
            (*busy)++;
        } else if (r[i].status != ELK_LOCK_NODE_NONE) {
            (*failed)++;
        }
    }
}

static unsigned lk_popcount(uint32_t m)
{
    unsigned c = 0;
    while (m != 0u) {
        m &= m - 1u;
        c++;
    }
    return c;
}

/* Log and report an event; its per-node detail is the foreground round's, or the
 * background release's for RELEASED. */
static void lk_fire(elk_lock_t *lock, elk_lock_event_type_t type, int err, uint64_t now)
{
    const elk_lock_node_result_t *results =
        type == ELK_LOCK_EV_RELEASED ? lock->rel.results : lock->fg.results;
    elk_lock_event_t ev;
    bool held = (lock->state == ELK_LOCK_HELD || lock->state == ELK_LOCK_RENEWING);
    bool warn =
        type == ELK_LOCK_EV_LOST || type == ELK_LOCK_EV_RENEW_FAILED || type == ELK_LOCK_EV_SUSPECT;

    elk_lock__log(lock->client, warn ? ELK_LOG_WARN : ELK_LOG_INFO, lock, 0,
                  elk_lock_event_name(type), "", NULL, "", err);
    if (lock->on_event == NULL) {
        return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.err = err;
    ev.now = now;
    ev.token = lock->token;
    ev.deadline = lock->deadline;
    ev.validity_ms = (held && lock->deadline > now) ? (uint32_t)(lock->deadline - now) : 0u;
    ev.renewals = lock->renewals;
    ev.quorum = (uint8_t)elk_client_quorum(lock->client);
    ev.node_count = (uint8_t)lk_nodes(lock);
    ev.nodes = results;
    lk_count(results, lk_nodes(lock), &ev.ok, &ev.busy, &ev.failed);
    lock->on_event(lock->user, lock, &ev);
}

/* ------------------------------------------------------------------ rounds */

static uint64_t lk_cap_timeout(const elk_lock_t *lock, uint64_t now, uint64_t limit)
{
    if (lock->cfg.round_timeout_ms != 0u) {
        limit = lk_min(limit, now + lock->cfg.round_timeout_ms);
    }
    /* 0 would mean "node default" to elk_node_send, and a past deadline is useless. */
    return limit > now ? limit : now + 1u;
}

static void lk_start_round(elk_lock_t *lock, uint8_t kind, uint64_t now)
{
    uint64_t limit;
    switch (kind) {
    case LK_ACQUIRE:
        limit = now + lock->span_ms - lock->cfg.min_validity_ms;
        break;
    case LK_COMMIT:
        limit = lock->deadline - lock->cfg.min_validity_ms;
        break;
    default:
        limit = lock->deadline;
        break;
    }
    elk_lock__round_start(lock, &lock->fg, kind, now, lk_cap_timeout(lock, now, limit));
}

/* Compare-and-delete rel_value on every node, in the background; RELEASED fires at its
 * end only when the caller sets rel_notify (an explicit release). */
static void lk_release_round(elk_lock_t *lock, uint64_t now)
{
    lock->rel_notify = false;
    /* Past one TTL the key has expired anyway. */
    elk_lock__round_start(
        lock, &lock->rel, LK_RELEASE, now,
        now + (lock->cfg.round_timeout_ms != 0u ? lock->cfg.round_timeout_ms : lock->cfg.ttl_ms));
}

/* The value the (background) release will delete: the current one. */
static LK_NOINLINE void lk_keep_value(elk_lock_t *lock)
{
    memcpy(lock->rel_value, lock->value, lock->value_len + 1u);
    lock->rel_value_len = lock->value_len;
}

/* Compare-and-delete the current value on every node, in the background. */
static void lk_start_release(elk_lock_t *lock, uint64_t now)
{
    lk_keep_value(lock);
    lk_release_round(lock, now);
}

/* The foreground round is decided: late replies are ignored from here on. */
static void lk_end_round(elk_lock_t *lock, uint64_t now)
{
    elk_lock__round_end(&lock->fg, now);
}

/* The wait is over without the lock: idle, off the release channel, and say why. One
 * copy for the three ways it ends (refused round, wait deadline, no lock value). */
static void lk_give_up(elk_lock_t *lock, int err, uint64_t now)
{
    elk_lock__set_state(lock, ELK_LOCK_IDLE);
    lock->last_err = err;
    elk_lock__unsubscribe(lock);
    lk_fire(lock, ELK_LOCK_EV_ACQUIRE_FAILED, err, now);
}

static void lk_acquire_failed(elk_lock_t *lock, int err, uint64_t now)
{
    lk_end_round(lock, now);
    lock->token = 0;
    lock->deadline = 0;
    lock->last_err = err;
    /* Partial locks go at once, on every node, answered or not. */
    lk_start_release(lock, now);
    if (lock->waiting && now < lock->wait_deadline) {
        elk_lock__set_state(lock, ELK_LOCK_WAITING);
        /* wake_now stays set if a release message arrived during this round */
        lock->next_retry = lk_min(now + elk_lock__random_delay(lock), lock->wait_deadline);
        elk_lock__subscribe(lock);
        lk_fire(lock, ELK_LOCK_EV_RETRY, err, now);
        return;
    }
    lk_give_up(lock, lock->waiting ? ELK_E_LOCK_TIMEOUT : err, now);
}

/* When a lease confirmed for a round sent at `from` is next renewed: ttl * pct / 100
 * exactly, in 32-bit arithmetic (ttl = 100 q + r, pct <= 90 is checked), so Cortex-M
 * images need no 64-bit division helper; LK_NEVER when pct is 0 (no renewal). */
static LK_NOINLINE uint64_t lk_renew_at(const elk_lock_t *lock, uint64_t from)
{
    uint32_t ttl = lock->cfg.ttl_ms;
    uint32_t pct = lock->cfg.renew_fraction_pct;
    if (pct == 0u) {
        return LK_NEVER;
    }
    return from + (ttl / 100u) * pct + (ttl % 100u) * pct / 100u;
}

static void lk_become_held(elk_lock_t *lock, uint64_t now)
{
    lk_end_round(lock, now);
    elk_lock__set_state(lock, ELK_LOCK_HELD);
    lock->hold_count = 1;
    lock->renewals = 0;
    lock->renew_stopped = false;
    lock->suspect = false;
    lock->last_err = ELK_OK;
    lock->keepalive_at = now; /* the work can only start from here */
    lock->next_renew = lk_renew_at(lock, lock->acquired_at);
    elk_lock__unsubscribe(lock);
    lk_fire(lock, ELK_LOCK_EV_ACQUIRED, ELK_OK, now);
}

/* Lost: LOST fires with the release after the stop margin already scheduled or not
 * (release_later), so a caller that releases from inside the event sees the lock as it
 * stays: a release scheduled after the event ran would leave it RELEASING for good. */
static void lk_lost_as(elk_lock_t *lock, int err, uint64_t now, bool release_later)
{
    if (lock->fg.kind != LK_NONE) {
        lk_end_round(lock, now);
    }
    elk_lock__set_state(lock, ELK_LOCK_LOST);
    lock->suspect = false;
    lock->hold_count = 0;
    lock->last_err = err;
    /* Deleting the key now would let the next holder start while our actuator is still
     * within its stop_margin: release only once it must have stopped. */
    memcpy(lock->lost_value, lock->value, lock->value_len + 1u);
    lock->lost_value_len = lock->value_len;
    /* With a lock delay the keys are left to expire: RELEASE would delete the marker. */
    lock->lost_release_at =
        release_later && lock->cfg.lock_delay_ms == 0u ? now + lock->cfg.stop_margin_ms : 0u;
    lk_fire(lock, ELK_LOCK_EV_LOST, err, now);
}

static void lk_lost(elk_lock_t *lock, int err, uint64_t now)
{
    lk_lost_as(lock, err, now, true);
}

static bool lk_validity_ok(const elk_lock_t *lock, uint64_t now)
{
    return lock->deadline > now && lock->deadline - now >= lock->cfg.min_validity_ms;
}

/* The foreground round so far: a quorum of positive replies, a quorum of "busy", or
 * over (a quorum is out of reach: too few replies left, or the round's time is up).
 * Counted once for the evaluations below. */
typedef struct lk_tally {
    bool quorum;
    bool busy_quorum;
    bool over;
} lk_tally_t;

static void lk_tally(const elk_lock_t *lock, uint64_t now, lk_tally_t *t)
{
    size_t q = elk_client_quorum(lock->client);
    uint8_t ok, busy, failed;
    lk_count(lock->fg.results, lk_nodes(lock), &ok, &busy, &failed);
    t->quorum = ok >= q;
    t->busy_quorum = busy >= q;
    t->over = ok + lk_popcount(lock->fg.pending_mask) < q || now >= lock->fg.limit;
}

/* Why a quorum said busy: ELK_E_LOCK_DELAY when any busy reply was a lock-delay marker
 * (the last lease ended without a release: retrying before the delay is over is futile,
 * and the person needs to know it is not an ordinary holder), else ELK_E_LOCK_BUSY. */
static int lk_busy_err(const elk_lock_t *lock)
{
    size_t i;
    for (i = 0; i < lk_nodes(lock); i++) {
        if (lock->fg.results[i].status == ELK_LOCK_NODE_BUSY &&
            lock->fg.results[i].err == ELK_E_LOCK_DELAY) {
            return ELK_E_LOCK_DELAY;
        }
    }
    return ELK_E_LOCK_BUSY;
}

/* An ACQUIRE round, or the COMMIT round that follows it with fencing: one function,
 * as the two differ only in what a quorum of ACQUIRE replies sets up. */
static void lk_eval_acquire(elk_lock_t *lock, uint64_t now, const lk_tally_t *t)
{
    size_t n = lk_nodes(lock);
    bool acquire = lock->fg.kind == LK_ACQUIRE;
    size_t i;

    if (t->quorum && acquire) {
        uint64_t token = 0;
        for (i = 0; i < n; i++) {
            if (lock->fg.results[i].status == ELK_LOCK_NODE_OK && lock->fg.results[i].value > 0 &&
                (uint64_t)lock->fg.results[i].value > token) {
                token = (uint64_t)lock->fg.results[i].value;
            }
        }
        lock->acquired_at = lock->fg.t_send;
        lock->deadline = lock->fg.t_send + lock->span_ms;
        lock->token = lock->cfg.fencing ? token : 0u;
    }
    if (t->quorum) {
        if (!lk_validity_ok(lock, now)) {
            lk_acquire_failed(lock, ELK_E_VALIDITY, now);
            return;
        }
        if (acquire && lock->cfg.fencing && n > 1u) {
            /* Raise every node's counter to the token before anyone may use it. */
            elk_lock__set_state(lock, ELK_LOCK_COMMITTING);
            lk_start_round(lock, LK_COMMIT, now);
            return;
        }
        lk_become_held(lock, now);
        return;
    }
    if (t->over) {
        lk_acquire_failed(lock, t->busy_quorum ? lk_busy_err(lock) : ELK_E_FLEET_UNAVAILABLE, now);
    }
}

/* The pause before a failed renewal round is retried, and how long a round in flight may
 * go without a quorum before the lease is SUSPECT: ttl/20, at least 1 ms. */
static uint32_t lk_renew_pause(const elk_lock_t *lock)
{
    uint32_t d = lock->cfg.ttl_ms / 20u;
    return d != 0u ? d : 1u;
}

/* A renewal round missed its quorum before the deadline: the first miss of a spell makes
 * the lease SUSPECT (the actuator may head for its safe position early), later ones are
 * RENEW_FAILED. The caller retries until the deadline. */
static void lk_renew_missed(elk_lock_t *lock, uint64_t now)
{
    elk_lock_event_type_t type = ELK_LOCK_EV_RENEW_FAILED;
    if (!lock->suspect && now < lock->deadline) {
        lock->suspect = true;
        type = ELK_LOCK_EV_SUSPECT;
    }
    lk_fire(lock, type, ELK_E_FLEET_UNAVAILABLE, now);
}

/* A renewal round is over without a quorum: retried after a pause, SUSPECT or
 * RENEW_FAILED. */
static void lk_extend_failed(elk_lock_t *lock, uint64_t now)
{
    uint32_t delay = lk_renew_pause(lock);
    size_t k;
    for (k = 0; k < lk_nodes(lock); k++) {
        /* Our own queue was full (many renewals due in one millisecond), not the
         * fleet: retry next millisecond. Measured: ttl/20 kept 1,024 renewing locks
         * in lockstep, re-filling the queue each time, until 64 were lost. */
        if (lock->fg.results[k].err == ELK_E_QUEUE_FULL) {
            delay = 1u;
        }
    }
    lk_end_round(lock, now);
    lock->next_retry = now + delay;
    lk_renew_missed(lock, now);
}

/* When the renewal round in flight makes the lease SUSPECT if it has no quorum by then. */
static uint64_t lk_suspect_at(const elk_lock_t *lock)
{
    return lock->fg.t_send + lk_renew_pause(lock);
}

static void lk_eval_extend(elk_lock_t *lock, uint64_t now, const lk_tally_t *t)
{
    if (t->quorum) {
        uint64_t d = lock->fg.t_send + lock->span_ms;
        elk_lock_event_type_t type = lock->suspect ? ELK_LOCK_EV_RECOVERED : ELK_LOCK_EV_RENEWED;
        if (d > lock->deadline) {
            lock->deadline = d;
        }
        lock->renewals++;
        lock->next_renew = lk_renew_at(lock, lock->fg.t_send);
        elk_lock__set_state(lock, ELK_LOCK_HELD);
        lock->suspect = false;
        lk_end_round(lock, now);
        lk_fire(lock, type, ELK_OK, now);
        return;
    }
    if (t->busy_quorum) {
        /* A quorum no longer holds our value: lost at once. Nothing is released: that
         * quorum may count nodes that never held our value (outside our grant's quorum),
         * amnesic ones, or one whose clock jumped; where our value still stands (this
         * renewal may just have extended it) it keeps the next holder out until it runs
         * out, never before our deadline (elk-sim seeds 2000362 and 1000962: a release
         * here let another grant, or our own next one, inside our old validity). */
        lk_lost_as(lock, ELK_E_LOCK_TAKEN, now, false);
        return;
    }
    if (t->over) {
        lk_extend_failed(lock, now);
    } else if (!lock->suspect && now >= lk_suspect_at(lock)) {
        /* Silent nodes time out only at the round's limit (the deadline by default): a
         * round still short of its quorum a retry pause in has missed it already. The
         * round keeps running; its late quorum is RECOVERED. */
        lk_renew_missed(lock, now);
    }
}

static void lk_eval_release(elk_lock_t *lock, uint64_t now)
{
    if (lock->rel.kind == LK_NONE) {
        return;
    }
    if ((lock->rel.pending_mask != 0u || lock->rel.unsent_mask != 0u) && now < lock->rel.limit) {
        return;
    }
    elk_lock__round_end(&lock->rel, now);
    if (lock->state == ELK_LOCK_RELEASING && lock->lost_release_at == 0u) {
        elk_lock__set_state(lock, ELK_LOCK_IDLE);
    }
    if (lock->rel_notify) {
        lock->rel_notify = false;
        lk_fire(lock, ELK_LOCK_EV_RELEASED, ELK_OK, now);
    }
}

void elk_lock__wake_waiter(elk_lock_t *lock)
{
    if (lock->state == ELK_LOCK_WAITING) {
        lock->wake_now = true;
    }
}

static void lk_wait_step(elk_lock_t *lock, uint64_t now)
{
    int rc;
    if (now >= lock->wait_deadline) {
        lk_give_up(lock, ELK_E_LOCK_TIMEOUT, now);
        return;
    }
    if (!lock->wake_now && now < lock->next_retry) {
        return;
    }
    lock->wake_now = false;
    rc = elk_lock__new_value(lock);
    if (rc != ELK_OK) {
        lk_give_up(lock, rc, now);
        return;
    }
    elk_lock__set_state(lock, ELK_LOCK_ACQUIRING);
    lk_start_round(lock, LK_ACQUIRE, now);
}

/* What stops renewal now: ELK_E_KEEPALIVE_MISSED (checked before every round, retries
 * too: no round may start once the work's proof of life is overdue), then, before the
 * first try only, the caps ELK_E_MAX_RENEWALS and ELK_E_MAX_HOLD; ELK_OK for none. */
static int lk_renew_cap(const elk_lock_t *lock, uint64_t now)
{
    if (lock->cfg.keepalive_ms != 0u && now > lock->keepalive_at + lock->cfg.keepalive_ms) {
        return ELK_E_KEEPALIVE_MISSED;
    }
    if (lock->state != ELK_LOCK_HELD) {
        return ELK_OK;
    }
    if (lock->cfg.max_renewals != 0u && lock->renewals >= lock->cfg.max_renewals) {
        return ELK_E_MAX_RENEWALS;
    }
    if (lock->cfg.max_hold_ms != 0u && now - lock->acquired_at >= lock->cfg.max_hold_ms) {
        return ELK_E_MAX_HOLD;
    }
    return ELK_OK;
}

/* Why a lease whose deadline came without a confirmed renewal is lost: what stopped
 * renewal (a cap, or elk_lock_abandon), else whether the fleet was out of reach or
 * reachable nodes just did not confirm in time. The holder's log and its person need
 * the real cause, not one message for all. */
static int lk_deadline_cause(const elk_lock_t *lock)
{
    if (lock->renew_stopped) {
        return lock->last_err;
    }
    return elk_fleet_ready_count(lock->client->fleet) < elk_client_quorum(lock->client)
        ? ELK_E_FLEET_LOST
        : ELK_E_LOCK_LOST;
}

/* Requests a node's queue surely takes before its next flush: the in-flight limit, and
 * what one pool block (the node's tx buffer) holds of requests with the longest key
 * and a value (all queued in one poll; sent ones free their bytes at the flush). */
#define LK_REQ_MAX_BYTES (2u * CONFIG_ELK_MAX_KEY_LEN + 64u)
#define LK_QUEUE_ROOM                                                                              \
    (CONFIG_ELK_POOL_BLOCK_SIZE / LK_REQ_MAX_BYTES < 1u                                            \
         ? 1u                                                                                      \
         : (CONFIG_ELK_POOL_BLOCK_SIZE / LK_REQ_MAX_BYTES < CONFIG_ELK_NODE_MAX_INFLIGHT           \
                ? CONFIG_ELK_POOL_BLOCK_SIZE / LK_REQ_MAX_BYTES                                    \
                : CONFIG_ELK_NODE_MAX_INFLIGHT))

/* True when fewer than a quorum of ready nodes have queue room: a renewal round started
 * now would fail on our own queue, not the fleet. It then waits for the reply that frees
 * a slot instead (measured: 64 locks renewing together fired hundreds of RENEW_FAILED
 * events, 1,024 lost leases). A quorum with room starts the round as before. */
static bool lk_queue_short(const elk_lock_t *lock)
{
    size_t i;
    size_t room = 0;
    size_t ready = 0;
    for (i = 0; i < lk_nodes(lock); i++) {
        const elk_node_t *nd = &lock->client->fleet->nodes[i];
        if (elk_node_is_ready(nd)) {
            ready++;
            room += elk_node_inflight(nd) < (size_t)LK_QUEUE_ROOM ? 1u : 0u;
        }
    }
    return ready >= elk_client_quorum(lock->client) && room < elk_client_quorum(lock->client);
}

/* When the next renewal round is due: the first try while HELD, a retry while RENEWING
 * between rounds; LK_NEVER otherwise (renewal stopped by a cap, or not holding). */
static LK_NOINLINE uint64_t lk_renew_due_at(const elk_lock_t *lock)
{
    if (lock->state == ELK_LOCK_HELD && !lock->renew_stopped) {
        return lock->next_renew;
    }
    return lock->state == ELK_LOCK_RENEWING ? lock->next_retry : LK_NEVER;
}

/* The earliest of w and when round r needs a step (now when a resend is owed). */
static LK_NOINLINE uint64_t lk_round_wake(const elk_lock_round_t *r, uint64_t now, uint64_t w)
{
    if (r->kind == LK_NONE) {
        return w;
    }
    /* Nothing awaited (a step decides it) or an EVAL to resend: at once. */
    if (r->pending_mask == 0u || r->eval_mask != 0u) {
        return now;
    }
    return r->limit < w ? r->limit : w;
}

/* The result is never before now, so whatever is due by now returns now at once. */
/* The earliest of w and when a held lock needs a step: its deadline, its next renewal,
 * and, while a renewal round runs short of its quorum, the moment it makes the lease
 * SUSPECT. */
static uint64_t lk_hold_wake(const elk_lock_t *lock, uint64_t now, uint64_t w)
{
    w = lk_min(w, lock->deadline);
    /* A renewal deferred for queue room waits for the reply that frees a slot (the
     * descriptor wakes the caller; the deadline above still bounds the wait). With
     * no round in flight, a renewal due by now is one elk_lock__step just deferred:
     * it starts any due renewal that has room, and nothing it runs after that
     * check touches a HELD or RENEWING lock's queue room or renewal time. */
    if (lock->fg.kind == LK_NONE) {
        uint64_t r = lk_renew_due_at(lock);
        return r > now ? lk_min(w, r) : w;
    }
    return lock->suspect ? w : lk_min(w, lk_suspect_at(lock));
}

uint64_t elk_lock__wake(const elk_lock_t *lock, uint64_t now)
{
    uint64_t w = lk_round_wake(&lock->rel, now, lk_round_wake(&lock->fg, now, LK_NEVER));
    if (lock->state == ELK_LOCK_HELD || lock->state == ELK_LOCK_RENEWING) {
        w = lk_hold_wake(lock, now, w);
    }
    if (lock->state == ELK_LOCK_WAITING) {
        if (lock->wake_now) {
            return now;
        }
        w = lk_min(w, lk_min(lock->next_retry, lock->wait_deadline));
    }
    if (lock->lost_release_at != 0u) {
        w = lk_min(w, lock->lost_release_at);
    }
    return w < now ? now : w;
}

/* What runs besides the foreground round: resends owed (nearly always none: the
 * per-node scan is skipped), the end of the release round, and the release deferred
 * after a loss. */
static void lk_step_background(elk_lock_t *lock, uint64_t now)
{
    if ((lock->rel.unsent_mask | lock->fg.eval_mask | lock->rel.eval_mask) != 0u) {
        elk_lock__round_resend(lock, now);
    }
    lk_eval_release(lock, now);
    if (lock->lost_release_at != 0u && now >= lock->lost_release_at) {
        lock->lost_release_at = 0;
        memcpy(lock->rel_value, lock->lost_value, lock->lost_value_len + 1u);
        lock->rel_value_len = lock->lost_value_len;
        lk_release_round(lock, now);
    }
}

/* The foreground round so far, decided if it can be. */
static void lk_step_round(elk_lock_t *lock, uint64_t now)
{
    lk_tally_t t;
    lk_tally(lock, now, &t);
    if (lock->fg.kind == LK_EXTEND) {
        lk_eval_extend(lock, now, &t);
    } else {
        lk_eval_acquire(lock, now, &t);
    }
}

/* A due renewal (first try or retry) starts only when a quorum of nodes has queue room;
 * otherwise the next reply, which frees a slot, wakes us (see elk_lock__wake). */
static void lk_step_renew(elk_lock_t *lock, uint64_t now)
{
    int cap = lk_renew_cap(lock, now);
    if (cap != ELK_OK) {
        /* a stopped retry is no longer due (lk_renew_due_at) */
        elk_lock__set_state(lock, ELK_LOCK_HELD);
        lock->renew_stopped = true;
        lock->last_err = cap; /* the cause LOST reports at the deadline */
        lk_fire(lock, ELK_LOCK_EV_RENEW_STOPPED, cap, now);
    } else if (!lk_queue_short(lock)) {
        elk_lock__set_state(lock, ELK_LOCK_RENEWING);
        lk_start_round(lock, LK_EXTEND, now);
    }
}

bool elk_lock__renew_due(const elk_lock_t *lock, uint64_t now)
{
    return lock->fg.kind == LK_NONE && lk_renew_due_at(lock) <= now;
}

/* How early a held lease renews to join the batch of a poll where another renewal is due
 * (client->renew_tick, batched renewals): at most half its renewal interval. Early is
 * safe: the new deadline counts from this round's t_send (and never moves back). One
 * poll's leases then renew together from then on, and any two groups of leases meet: the
 * later one is due within half an interval of the earlier one's tick, or the earlier one
 * within half an interval of the later one's. 0 otherwise, and for leases that renew one
 * by one (a lock delay: EXTEND_BATCH does not push its marker out). */
static uint64_t lk_renew_early(const elk_lock_t *lock)
{
    if (!lock->client->renew_tick || lock->state != ELK_LOCK_HELD ||
        lock->cfg.lock_delay_ms != 0u || lock->cfg.renew_fraction_pct == 0u) {
        return 0;
    }
    return lk_renew_at(lock, 0) / 2u;
}

uint64_t elk_lock__step(elk_lock_t *lock, uint64_t now)
{
    lk_step_background(lock, now);
    /* The clock alone decides loss, before any reply is looked at. */
    if ((lock->state == ELK_LOCK_HELD || lock->state == ELK_LOCK_RENEWING) &&
        now >= lock->deadline) {
        lk_lost(lock, lk_deadline_cause(lock), now);
    }
    if (lock->fg.kind != LK_NONE) {
        lk_step_round(lock, now);
    }
    if (lock->fg.kind == LK_NONE && lk_renew_due_at(lock) <= now + lk_renew_early(lock)) {
        lk_step_renew(lock, now);
    }
    if (lock->state == ELK_LOCK_WAITING) {
        lk_wait_step(lock, now);
    }
    return elk_lock__wake(lock, now);
}

/* ------------------------------------------------------ API transitions */

/* Requests were queued from an API call: the client is to write them (lock_api.c). */
static void lk_mark_due(elk_lock_t *lock)
{
    lock->client->due = true;
}

int elk_lock__acquire(elk_lock_t *lock, uint64_t now, uint64_t wait_deadline)
{
    int rc;
    if (lock == NULL || lock->client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (lock->state == ELK_LOCK_HELD || lock->state == ELK_LOCK_RENEWING) {
        if (now >= lock->deadline) {
            return ELK_E_LOCK_LOST; /* the next poll reports the loss */
        }
        lock->hold_count++;
        return ELK_OK;
    }
    /* Not held: a foreground round is an acquire or commit round (ACQUIRING, COMMITTING). */
    if (lock->fg.kind != LK_NONE || lock->state == ELK_LOCK_WAITING) {
        return ELK_E_STATE;
    }
    rc = elk_lock__new_value(lock);
    if (rc != ELK_OK) {
        lock->last_err = rc;
        return rc;
    }
    lock->waiting = wait_deadline > now;
    lock->wait_deadline = wait_deadline;
    lock->wake_now = false;
    lock->last_err = ELK_OK;
    lock->token = 0;
    lock->deadline = 0;
    lock->hold_count = 0;
    lock->renewals = 0;
    lock->suspect = false;
    elk_lock__set_state(lock, ELK_LOCK_ACQUIRING);
    lk_start_round(lock, LK_ACQUIRE, now);
    lk_mark_due(lock);
    return ELK_E_WOULD_BLOCK;
}

int elk_lock__release(elk_lock_t *lock, uint64_t now)
{
    int rc = ELK_OK;
    if (lock == NULL || lock->client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    switch (lock->state) {
    case ELK_LOCK_ACQUIRING:
    case ELK_LOCK_COMMITTING:
        break; /* cancel */
    case ELK_LOCK_IDLE:
    case ELK_LOCK_RELEASING:
        return ELK_E_NOT_HELD;
    case ELK_LOCK_LOST:
        elk_lock__set_state(lock,
                            (lock->rel.kind != LK_NONE || lock->lost_release_at != 0u)
                                ? ELK_LOCK_RELEASING
                                : ELK_LOCK_IDLE);
        return ELK_E_LOCK_LOST;
    case ELK_LOCK_HELD:
    case ELK_LOCK_RENEWING:
        if (lock->hold_count > 1u) {
            lock->hold_count--;
            return ELK_OK;
        }
        if (now >= lock->deadline) {
            rc = ELK_E_LOCK_LOST;
        }
        break;
    default: /* waiting: cancel */
        break;
    }
    if (lock->fg.kind != LK_NONE) {
        lk_end_round(lock, now);
    }
    elk_lock__unsubscribe(lock);
    lock->hold_count = 0;
    lock->token = 0;
    lock->deadline = 0;
    lock->suspect = false;
    elk_lock__set_state(lock, ELK_LOCK_RELEASING);
    lk_start_release(lock, now);
    lock->rel_notify = true;
    lk_mark_due(lock);
    return rc;
}

int elk_lock__abandon(elk_lock_t *lock, uint64_t now)
{
    if (lock == NULL || lock->client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if ((lock->state != ELK_LOCK_HELD && lock->state != ELK_LOCK_RENEWING) ||
        now >= lock->deadline) {
        return ELK_E_NOT_HELD;
    }
    /* A renewal in flight could still move the deadline: forget it (its replies no
     * longer match a round), so the lease ends at the deadline already reached. Keys it
     * extends on the servers are deleted by the release that follows the loss. */
    if (lock->fg.kind != LK_NONE) {
        lk_end_round(lock, now);
    }
    elk_lock__set_state(lock, ELK_LOCK_HELD);
    lock->renew_stopped = true;
    lock->last_err = ELK_E_LOCK_ABANDONED;
    lock->suspect = false; /* it ends here, renewed or not */
    lk_mark_due(lock);
    return ELK_OK;
}

int elk_lock__release_all(elk_client_t *client, uint64_t now)
{
    elk_lock_ticket_t *q[CONFIG_ELK_MAX_NODES];
    size_t k;
    int started = 0;
    memset(q, 0, sizeof(q));
    /* Each lock's release is queued at the point of this call, then all are written
     * before it returns, before any other request of these locks can be made: on every
     * node, each key's RELEASE_BATCH entry stands exactly where its own RELEASE would
     * (docs/design.md "Releases in bulk"). */
    client->bulk_q = q;
    for (k = 0; k < client->lock_count; k++) {
        elk_lock_t *lock = client->locks[k];
        uint32_t seq = lock->rel.seq;
        if (lock->state == ELK_LOCK_HELD || lock->state == ELK_LOCK_RENEWING) {
            lock->hold_count = 1; /* every hold: the client is letting go of everything */
        }
        if (lock->state != ELK_LOCK_IDLE && lock->state != ELK_LOCK_RELEASING) {
            (void)elk_lock__release(lock, now);
            started += lock->rel.seq != seq ? 1 : 0;
        }
    }
    elk_lock__bulk_flush(client, now);
    client->bulk_q = NULL;
    return started;
}
