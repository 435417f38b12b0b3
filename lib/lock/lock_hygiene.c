/* SPDX-License-Identifier: MIT */
/*
 * Vote hygiene: masters that restarted (empty, or maybe) or whose clock jumped ahead get
 * no vote until the longest lease could have expired (docs/design.md "Masters that
 * restart or jump").
 *
 * Redlock is safe only while a master keeps a lease's key for the whole TTL. A master
 * that restarted without its data, or whose clock jumped ahead (Redis expires keys by its
 * own wall clock), may have dropped keys it should hold; if it voted at once, a second
 * holder could get a quorum while the first one's deadline stands. A quarantine of W =
 * the longest TTL + drift (+ lock_delay) from the moment the loss may have happened
 * outlasts every lease the node could have lost.
 *
 * On every (re)connection the node is probed (ELK_LOCK_SCRIPT_PROBE, once, before any
 * request of the locks) and has no vote until the reply is in:
 *   run_id known (+info): it restarted at most uptime ago: quarantine until lr + W -
 *       uptime (lr + W with the marker gone), unless its data survived (the fleet marker was
 *       written by an earlier run and AOF is on); a marker gone within the same run
 *       (FLUSHALL) quarantines for W;
 *   run_id unknown (no +info): a marker this client saw before on this node means no
 *       restart since; otherwise quarantine for W (a restart cannot be ruled out);
 *   anything else (error, NOPERM, timeout, disconnect, a malformed reply): W. Fail closed.
 * Every reading of the server's TIME (the probe, each ACQUIRE and EXTEND reply, of decided
 * rounds too) is compared with the node's reference reading, kept across reconnects and
 * restarts (the wall clock is the host's): a server whose clock jumped beyond the drift bound,
 * ahead or back, is quarantined for W, and that reply does not count; a reply compared with a
 * reference older than the TTL does not count either. The clock is read again (refresh) when
 * the reference is TTL/2 old. Residual: docs/design.md "What the clock check proves".
 * Amnesia within a connection (issue 26): the fleet marker records when it was made
 * ("<id>@<server ms>"); the probe and every ACQUIRE and EXTEND reply carry it, and a marker
 * younger than W (made anew after a FLUSHALL, an eviction, a failover to an empty replica)
 * takes the reply's vote away and quarantines the node until the marker is W old. The
 * client also keeps, per node, the highest server clock it read: the floor it sends for
 * the token (elk_lock__token_floor).
 * A quarantine is never shortened. A RELEASE always goes (deleting our own value is safe).
 */
#include <string.h>

#include "../util/fmt.h"
#include "elk/lock_scripts.h"
#include "lock_internal.h"

/* The probe (EVAL <script> 1 <prefix>marker <32 hex>: about 600 bytes with the longest key)
 * is the first request of a connection: an empty transmit buffer (one pool block) must hold
 * it, or no node would ever pass its check. (C99 has no static_assert.) */
typedef char elk_lock_probe_fits_a_block[(sizeof(ELK_LOCK_SCRIPT_PROBE) + CONFIG_ELK_MAX_KEY_LEN +
                                              2u * ELK_LOCK_RANDOM_BYTES + 100u <=
                                          CONFIG_ELK_POOL_BLOCK_SIZE)
                                             ? 1
                                             : -1];

/* Server times are clamped into [0, 2^62]: differences never overflow, whatever a
 * broken or hostile server sends. */
#define LK_MS_MAX ((int64_t)1 << 62)
/* Half of 2^53 us in ms: a token floor (ref_server + elapsed, both below it) stays exact in
 * the scripts' doubles. */
#define LK_FLOOR_MAX_MS ((int64_t)4503599627370)
/* A marker's creation time beyond 15 digits of ms is no time: the marker counts as old. */
#define LK_MARKER_MAX ((int64_t)999999999999999)

/* LK_NOINLINE (lock_internal.h) on the helpers below: gcc -Os inlined them into their
 * callers for 200 bytes more on Cortex-M4 (measured: 2736 -> 2530 bytes of code). */

/* FNV-1a (64 bits) of run ids and marker values: 16 bytes a node instead of two
 * 40-byte strings. 0 means "none seen". */
static LK_NOINLINE uint64_t lk_fnv(uint64_t h, const uint8_t *p, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++) {
        h = (h ^ p[k]) * 0x100000001b3u;
    }
    return h;
}
#define LK_FNV_BASIS 0xcbf29ce484222325u

static uint64_t lk_hash(const uint8_t *p, size_t n)
{
    uint64_t h = lk_fnv(LK_FNV_BASIS, p, n);
    return h != 0u ? h : 1u;
}

/* W: quarantine_ms, or the longest ttl + drift + lock_delay over the registered locks
 * (the default lease's ttl + drift when there is none). */
static uint64_t lk_window(const elk_client_t *client)
{
    elk_lock_config_t d;
    uint64_t w = 0;
    size_t k;
    if (client->cfg.quarantine_ms != 0u) {
        return client->cfg.quarantine_ms;
    }
    elk_lock_config_defaults(&d);
    if (client->lock_count == 0u) {
        return d.ttl_ms + elk_lock__drift(&d);
    }
    for (k = 0; k < client->lock_count; k++) {
        const elk_lock_config_t *c = &client->locks[k]->cfg;
        uint64_t v = c->ttl_ms + elk_lock__drift(c) + c->lock_delay_ms;
        w = v > w ? v : w;
    }
    return w;
}

/* ms plus the drift cfg allows over ms (its ttl is ignored). */
static LK_NOINLINE int64_t lk_with_drift(const elk_lock_config_t *cfg, uint64_t ms)
{
    elk_lock_config_t c = *cfg;
    c.ttl_ms = (uint32_t)ms; /* callers keep ms below 2^32 */
    return (int64_t)(ms + elk_lock__drift(&c));
}

/* The most drift any registered lock (the defaults when none) allows over span ms. A
 * quarantine's length is server time (until the longest lease could have expired there),
 * counted here on our clock: without this margin a server clock a little slower than ours,
 * or a reading taken early in its round trip, still shows the window open when ours has
 * closed, and the first reply after the quarantine loses its vote to the same rule. */
static LK_NOINLINE uint64_t lk_margin(const elk_client_t *client, uint64_t span)
{
    uint64_t ms = span > UINT32_MAX ? UINT32_MAX : span;
    uint64_t most = 0;
    size_t k;
    if (client->lock_count == 0u) {
        elk_lock_config_t d;
        elk_lock_config_defaults(&d);
        return (uint64_t)lk_with_drift(&d, ms) - ms;
    }
    for (k = 0; k < client->lock_count; k++) {
        uint64_t m = (uint64_t)lk_with_drift(&client->locks[k]->cfg, ms) - ms;
        most = m > most ? m : most;
    }
    return most;
}

/* "quarantined: <what>[<val>][<n>]<after>" as node i's text, and no vote until `until`
 * plus lk_margin (extended, never shortened; the text changes only with it); one warning
 * line. */
static void lk_quarantine(elk_client_t *client, size_t i, uint64_t now, uint64_t until,
                          const char *what, const elk_resp_node_t *val, int64_t n,
                          const char *after)
{
    elk_lock_hygiene_t *h = &client->nodes[i].hygiene;
    char line[32];
    elk_fmt_t f;
    h->quarantines++;
    until += until > now ? lk_margin(client, until - now) : 0u;
    if (until >= h->until) {
        h->until = until;
        elk_fmt_init(&f, client->nodes[i].hygiene_text, sizeof client->nodes[i].hygiene_text);
        elk_fmt_str(&f, "quarantined: ");
        elk_fmt_str(&f, what);
        if (val != NULL) {
            elk_fmt_bytes(&f, val->str, val->len); /* printable only: it is a server's text */
        }
        if (n >= 0) {
            elk_fmt_int(&f, n);
        }
        elk_fmt_str(&f, after);
        (void)elk_fmt_cstr(&f);
    }
    elk_fmt_init(&f, line, sizeof line);
    elk_fmt_str(&f, ": no vote for ");
    elk_fmt_uint(&f, h->until > now ? h->until - now : 0u);
    elk_fmt_str(&f, " ms");
    elk_lock__log(client, ELK_LOG_WARN, NULL, i, "", client->nodes[i].hygiene_text, NULL,
                  elk_fmt_cstr(&f), ELK_OK);
}

/* Where the id part of a fleet marker's value ends: at its last "@" (the creation time
 * follows), or its end for a marker written before the creation time was kept. */
static size_t lk_marker_id_len(const elk_resp_node_t *m)
{
    size_t n = m->len;
    while (n > 0u && m->str[n - 1u] != '@') {
        n--;
    }
    return n > 0u ? n - 1u : m->len;
}

/* A marker value's creation time in server ms: the decimal digits after its last "@" (as
 * ACQUIRE and EXTEND read it: '@(%d+)$'); 0 for anything else (an old-format marker counts
 * as old). At most 15 digits (LK_MARKER_MAX): later than the year 33000 is not a time. */
static int64_t lk_marker_created(const elk_resp_node_t *m)
{
    size_t at = lk_marker_id_len(m);
    int64_t v = 0;
    size_t k;
    if (at == m->len || m->len - at - 1u == 0u || m->len - at - 1u > 15u) {
        return 0;
    }
    for (k = at + 1u; k < m->len; k++) {
        if (m->str[k] < '0' || m->str[k] > '9') {
            return 0;
        }
        v = v * 10 + (int64_t)(m->str[k] - '0');
    }
    return v;
}

/* The amnesia rule (docs/design.md "Masters that forget within a connection"): node i's
 * fleet marker was created at marker_ms (server ms; 0: before creation times were kept,
 * old) and the server's clock read server_ms in the same script, received at lr. A marker
 * younger than W was made after the node lost its data (FLUSHALL, a failover to an empty
 * replica, an eviction that took the marker): keys of leases granted before it may be gone,
 * so no vote until the marker is W old, measured on our clock from lr (the server read its
 * clock before lr: the remaining time can only be longer). The creation is taken at the end
 * of its ms (the latest it can have been); a marker from the future (a clock set back)
 * counts as just made. Returns ELK_E_NODE_AMNESIA (quarantined) or ELK_OK. */
static int lk_marker_rule(elk_client_t *client, size_t i, int64_t marker_ms, int64_t server_ms,
                          uint64_t lr)
{
    uint64_t w = lk_window(client);
    int64_t age;
    if (marker_ms <= 0 || marker_ms > LK_MARKER_MAX) {
        return ELK_OK;
    }
    /* both clamped: no overflow */
    age = (server_ms < 0 ? 0 : server_ms > LK_MS_MAX ? LK_MS_MAX : server_ms) - (marker_ms + 1);
    if (age >= (int64_t)w) {
        return ELK_OK;
    }
    age = age < 0 ? 0 : age;
    /* one quarantine (and one log line) per loss, not one per reply or probe that sees it */
    if (lr + (w - (uint64_t)age) + lk_margin(client, w - (uint64_t)age) >
        client->nodes[i].hygiene.until) {
        lk_quarantine(client, i, lr, lr + (w - (uint64_t)age), "data lost (marker ", NULL,
                      age / 1000, " s old)");
    }
    return ELK_E_NODE_AMNESIA;
}

int elk_lock__marker_ok(elk_client_t *client, size_t i, int64_t server_ms, int64_t marker_ms,
                        uint64_t now)
{
    if (!client->cfg.vote_hygiene) {
        return ELK_OK;
    }
    return lk_marker_rule(client, i, marker_ms, server_ms, now);
}

int64_t elk_lock__token_floor(const elk_client_t *client, uint64_t now)
{
    int64_t best = 0;
    size_t i;
    for (i = 0; i < client->fleet->count; i++) {
        const elk_lock_hygiene_t *h = &client->nodes[i].hygiene;
        /* floor_off is within +-2^62 (readings clamped) and now below 2^62: no overflow; the
         * result below 2^53 us (the scripts' exact range), or nothing */
        int64_t v = h->has_floor && now < LK_FLOOR_MAX_MS * 1000 ? (int64_t)now + h->floor_off : 0;
        if (v > 0 && v < 2 * LK_FLOOR_MAX_MS && v * 1000 > best) {
            best = v * 1000;
        }
    }
    return best;
}

/* How far a reading (server_ms, taken between the local times ls and lr) is off node i's
 * reference beyond cfg's drift bound: > 0 the server's clock ran that many ms ahead of the
 * longest local elapsed time; < 0 it fell behind the shortest; 0 within the bound. Either
 * reading may be the earlier one (replies of overlapping rounds): the bounds hold anyway. */
static LK_NOINLINE int64_t lk_jump(const elk_lock_hygiene_t *h, const elk_lock_config_t *cfg,
                                   int64_t server_ms, uint64_t ls, uint64_t lr)
{
    int64_t srv = server_ms - h->ref_server;
    uint64_t most = lr - h->ref_ls;                   /* the two readings at most this far apart */
    int64_t least = (int64_t)ls - (int64_t)h->ref_lr; /* and at least this far */
    uint64_t mag = least < 0 ? (uint64_t)-least : (uint64_t)least; /* <= most unless < 0 */
    int64_t drift;
    if (lr < h->ref_ls || most > UINT32_MAX || mag > UINT32_MAX) {
        return 0; /* out of order, or 49 days without a reading: nothing to compare */
    }
    if (srv > lk_with_drift(cfg, most)) {
        return srv - (int64_t)most;
    }
    /* least - drift(|least|): the server's elapsed time may be that much shorter */
    drift = lk_with_drift(cfg, mag) - (int64_t)mag;
    if (srv < least - drift) {
        return srv - least;
    }
    return 0;
}

/* The kept finer reference (best_*) is there and younger than cfg's TTL at lr. */
static bool lk_best_live(const elk_lock_hygiene_t *h, const elk_lock_config_t *cfg, uint64_t lr)
{
    return h->has_best && lr >= h->best_ls && lr - h->best_ls <= cfg->ttl_ms;
}

/* lk_jump against the kept finer reference (best_*) instead of ref_*. */
static LK_NOINLINE int64_t lk_jump_from_best(const elk_lock_hygiene_t *h,
                                             const elk_lock_config_t *cfg, int64_t server_ms,
                                             uint64_t ls, uint64_t lr)
{
    elk_lock_hygiene_t b = *h;
    b.ref_server = h->best_server;
    b.ref_ls = h->best_ls;
    b.ref_lr = h->best_lr;
    return lk_jump(&b, cfg, server_ms, ls, lr);
}

/* How much forward jump a comparison of a reading (sent at ls, received at lr) with node i's
 * reference cannot tell from drift: the two readings' round trips plus cfg's drift rate over
 * the time between them (lk_jump's tolerance beyond the fixed term). It ranks references. */
static LK_NOINLINE uint64_t lk_blind(const elk_lock_hygiene_t *h, const elk_lock_config_t *cfg,
                                     uint64_t ls, uint64_t lr)
{
    uint64_t since = lr - h->ref_ls;
    if (lr < h->ref_ls || since > UINT32_MAX) {
        return UINT64_MAX; /* out of order or too old: nothing can be ruled out */
    }
    return (h->ref_lr - h->ref_ls) + (lr - ls) +
        (uint64_t)(lk_with_drift(cfg, since) - (int64_t)since) - cfg->drift_fixed_ms;
}

/* How fast node i's clock ran against ours from the reference to a reading (server_ms, sent
 * at ls, received at lr), in ppm, over the midpoints of the two round trips (so that they
 * cancel out: under load a round trip can be as long as the drift it would hide). A jump in
 * no local time at all gets the largest rate its way (it agrees with no drift). */
static LK_NOINLINE int64_t lk_rate(const elk_lock_hygiene_t *h, int64_t server_ms, int64_t jump,
                                   uint64_t ls, uint64_t lr)
{
    int64_t mid = ((int64_t)(ls + lr) - (int64_t)(h->ref_ls + h->ref_lr)) / 2;
    int64_t d = server_ms - h->ref_server - mid;
    if (mid <= 0 || mid > INT32_MAX) {
        return jump > 0 ? INT32_MAX : -INT32_MAX;
    }
    d = d > INT32_MAX ? INT32_MAX : d < -INT32_MAX ? -INT32_MAX : d;
    return d * 1000000 / mid;
}

/* The local clock suspect (elk_client_local_clock_suspect): node i's clock just jumped, at
 * `ppm` (lk_rate), seen at lr. When every connected node (at least 2) jumped the same way
 * within the window W, at rates within a factor of 2, the likely cause is this gateway's own
 * clock: said once per spell (a spell lasts until W after the last agreeing jump). Diagnosis
 * only: the quarantines stand as they are. */
static void lk_local_clock(elk_client_t *client, size_t i, uint64_t lr, int64_t ppm)
{
    elk_lock_hygiene_t *h = &client->nodes[i].hygiene;
    uint64_t w = lk_window(client);
    int64_t lo = INT64_MAX;
    int64_t hi = 0;
    size_t n = 0;
    size_t k;
    char line[64];
    elk_fmt_t f;
    ppm = ppm > INT32_MAX ? INT32_MAX : ppm < -INT32_MAX ? -INT32_MAX : ppm;
    h->jump_at = lr;
    h->jump_ppm = (int32_t)ppm;
    for (k = 0; k < client->fleet->count; k++) {
        const elk_lock_hygiene_t *o = &client->nodes[k].hygiene;
        int64_t r = o->jump_ppm < 0 ? -(int64_t)o->jump_ppm : o->jump_ppm;
        if (!elk_node_is_ready(&client->fleet->nodes[k])) {
            continue;
        }
        if (o->jump_at == 0u || o->jump_at + w < lr || (o->jump_ppm < 0) != (ppm < 0)) {
            return; /* a connected node without a like jump lately: its servers' fault */
        }
        lo = r < lo ? r : lo;
        hi = r > hi ? r : hi;
        n++;
    }
    if (n < 2u || hi > 2 * lo) {
        return;
    }
    client->clock_suspect_ppm = (int32_t)ppm;
    if (lr >= client->clock_suspect_until) {
        client->clock_suspect_spells++;
        elk_fmt_init(&f, line, sizeof line);
        elk_fmt_uint(&f, n);
        elk_fmt_str(&f,
                    ppm < 0 ? " connected nodes fell behind ours by "
                            : " connected nodes ran ahead of ours by ");
        elk_fmt_int(&f, ppm < 0 ? -ppm : ppm);
        elk_fmt_str(&f, " ppm");
        elk_lock__log(client, ELK_LOG_ERROR, NULL, i, "", "the clocks of all ", NULL,
                      elk_fmt_cstr(&f), ELK_E_LOCAL_CLOCK);
    }
    client->clock_suspect_until = lr + w;
}

/* What a reading says of node i's vote (lk_reading). */
enum { LK_CLOCK_OK, LK_CLOCK_BLIND, LK_CLOCK_JUMP };

/* Node i's reference becomes the reading (server ms, sent at ls, received at lr). A finer
 * reference that gives way to a slower reading stays the one to beat for its TTL (elk-sim
 * seed 1004453: a stalled client's replies, all read at one late moment, replaced it and a
 * +51 ms step went unseen); a jump or an aged reference (restart) starts over. */
static void lk_move_reference(elk_lock_hygiene_t *h, const elk_lock_config_t *cfg, bool restart,
                              int64_t ms, uint64_t ls, uint64_t lr)
{
    bool worse = h->has_ref && lr - ls > h->ref_lr - h->ref_ls; /* a longer round trip */
    bool best_live = lk_best_live(h, cfg, lr);
    if (restart) {
        h->has_best = false;
    } else if (worse && (!best_live || h->ref_lr - h->ref_ls <= h->best_lr - h->best_ls)) {
        h->best_server = h->ref_server;
        h->best_ls = h->ref_ls;
        h->best_lr = h->ref_lr;
        h->has_best = true;
    } else {
        h->has_best = best_live && h->best_lr - h->best_ls < lr - ls; /* still the finer */
    }
    h->ref_server = ms;
    h->ref_ls = ls;
    h->ref_lr = lr;
    h->has_ref = true;
}

/* A reading of node i's clock, compared with the reference. A jump beyond the bound either
 * way quarantines the node for W from lr and the reply does not count: a net backward reading
 * does not rule out a forward jump in between (back, a key set, forward: that key is cut
 * short), and a server that steps its clock is not to be trusted for a TTL anyway. A
 * reference older than cfg's TTL gives no vote either, without quarantine: the drift allowed
 * since (1 % of the time) hides jumps larger than the lease's drift margin. The reference
 * moves to this reading after a jump, when it is half that old, or when the reading is the more
 * precise one: its round trip no longer than the reference's plus the drift since (a precise
 * recent reference beats a sloppy new reading). Round trips are not held against the vote:
 * on a slow network no reply would ever count (docs/design.md, what it cannot see). */
static int lk_reading(elk_client_t *client, size_t i, const elk_lock_config_t *cfg,
                      int64_t server_ms, uint64_t ls, uint64_t lr)
{
    elk_lock_hygiene_t *h = &client->nodes[i].hygiene;
    int64_t ms = server_ms < 0 ? 0 : server_ms > LK_MS_MAX ? LK_MS_MAX : server_ms;
    int64_t jump = h->has_ref ? lk_jump(h, cfg, ms, ls, lr) : 0;
    uint64_t blind = h->has_ref ? lk_blind(h, cfg, ls, lr) : UINT64_MAX;
    int64_t rate = jump != 0 ? lk_rate(h, ms, jump, ls, lr) : 0; /* before the ref moves */
    bool old = blind == UINT64_MAX || lr - h->ref_ls > cfg->ttl_ms;
    if (jump == 0 && lk_best_live(h, cfg, lr)) {
        jump = lk_jump_from_best(h, cfg, ms, ls, lr);
        rate = jump != 0 ? lk_rate(h, ms, jump, ls, lr) : 0;
    }
    /* the token floor never goes back, even when the server's clock does */
    if (!h->has_floor || ms - (int64_t)lr > h->floor_off) {
        h->floor_off = ms - (int64_t)lr;
        h->has_floor = true;
    }
    /* half a TTL old: replaced by any reading, or the refreshes (TTL/2 apart) could let a
     * precise reference age past the TTL (elk-sim harsh seed 100449: quarantines forever) */
    if (jump != 0 || lr - h->ref_ls >= cfg->ttl_ms / 2u || old || blind / 2u >= lr - ls) {
        lk_move_reference(h, cfg, jump != 0 || old, ms, ls, lr);
    }
    if (jump == 0) {
        return old ? LK_CLOCK_BLIND : LK_CLOCK_OK;
    }
    h->clock_jumps++;
    lk_local_clock(client, i, lr, rate);
    lk_quarantine(client, i, lr, lr + lk_window(client),
                  jump > 0 ? "clock ran " : "clock went back ", NULL, jump > 0 ? jump : -jump,
                  jump > 0 ? " ms ahead" : " ms");
    return LK_CLOCK_JUMP;
}

int elk_lock__clock_ok(elk_client_t *client, const elk_lock_t *lock, size_t i, int64_t server_ms,
                       uint64_t t_send, uint64_t now)
{
    static const int says[] = {ELK_OK, ELK_E_CLOCK_UNVERIFIED, ELK_E_CLOCK_JUMP};
    if (!client->cfg.vote_hygiene) {
        return ELK_OK;
    }
    return says[lk_reading(client, i, &lock->cfg, server_ms, t_send, now)];
}

/* The strictest drift terms over the client's locks (the defaults without one), for the
 * probe's reading: no lock's leases may be shortened unseen across a reconnect. */
static LK_NOINLINE void lk_strict(const elk_client_t *client, elk_lock_config_t *out)
{
    size_t k;
    elk_lock_config_defaults(out);
    for (k = 0; k < client->lock_count; k++) {
        const elk_lock_config_t *c = &client->locks[k]->cfg;
        if (k == 0u || c->drift_factor_ppm < out->drift_factor_ppm) {
            out->drift_factor_ppm = c->drift_factor_ppm;
        }
        if (k == 0u || c->drift_fixed_ms < out->drift_fixed_ms) {
            out->drift_fixed_ms = c->drift_fixed_ms;
        }
        if (k == 0u || c->ttl_ms < out->ttl_ms) {
            out->ttl_ms = c->ttl_ms; /* the smallest drift margin, for lk_reading's blind test */
        }
    }
}

/* uptime_in_seconds as ms; false unless 1..9 decimal digits. */
static bool lk_uptime_ms(const elk_resp_node_t *n, uint64_t *ms)
{
    uint64_t v = 0;
    uint32_t k;
    if (n->len == 0u || n->len > 9u) {
        return false;
    }
    for (k = 0; k < n->len; k++) {
        if (n->str[k] < '0' || n->str[k] > '9') {
            return false;
        }
        v = v * 10u + (uint64_t)(n->str[k] - '0');
    }
    *ms = v * 1000u;
    return true;
}

/* The node showed it kept its data across its restart: the marker was there, written by
 * an earlier run (its value is not this run's run_id), and AOF is on. */
static LK_NOINLINE bool lk_kept(const elk_resp_node_t *f)
{
    size_t id = lk_marker_id_len(&f[2]); /* "<run_id>@<s>": the run that wrote it */
    return f[2].len != 0u && !(id == f[0].len && memcmp(f[2].str, f[0].str, f[0].len) == 0) &&
        elk_resp_str_eq(&f[3], "1");
}

/* Hash of the marker value the probe f just wrote: "<id>@<ms>", id the run_id f[0] when the
 * server told it, else the random id whose FNV state (lk_fnv, not lk_hash) is probe_state. */
static uint64_t lk_made(const elk_resp_node_t *f, uint64_t probe_state, int64_t ms)
{
    uint8_t d[24];
    size_t n = sizeof d;
    uint64_t v = ms > 0 ? (uint64_t)ms : 0u;
    uint64_t h = f[0].len != 0u ? lk_fnv(LK_FNV_BASIS, f[0].str, f[0].len) : probe_state;
    do {
        d[--n] = (uint8_t)('0' + v % 10u);
        v /= 10u;
    } while (v != 0u);
    d[--n] = '@';
    h = lk_fnv(h, &d[n], sizeof d - n);
    return h != 0u ? h : 1u;
}

/* Why the probe's reply quarantines a node (lk_probe_rule). */
static const char *const lk_probe_says[] = {
    "restart not ruled out (no +info)",
    "probe failed: uptime ",
    "data lost (marker gone) in this run",
    "restarted ",
    "clock unchecked (reference too old or imprecise)",
};

/* The probe's reply f[0..4] = {run_id, uptime_s, marker, aof_enabled, server_ms}: decide
 * node i's vote (file comment), take server_ms as its clock reference. */
static void lk_probe_rule(elk_client_t *client, size_t i, const elk_resp_node_t *f, bool refresh,
                          uint64_t lr)
{
    elk_lock_hygiene_t *h = &client->nodes[i].hygiene;
    elk_lock_config_t strict;
    uint64_t w = lk_window(client);
    uint64_t run = f[0].len != 0u ? lk_hash(f[0].str, f[0].len) : 0u;
    /* the marker's value now: as read, or just written (run_id, else our random id, "@" and
     * the server's TIME f[4]) */
    uint64_t marker =
        f[2].len != 0u ? lk_hash(f[2].str, f[2].len) : lk_made(f, h->probe_hash, f[4].integer);
    /* when the marker was made, in server ms (0: before times were kept) */
    int64_t made = f[2].len != 0u ? lk_marker_created(&f[2]) : f[4].integer;
    bool same_run = run != 0u && run == h->run_hash;
    bool same_marker = marker == h->marker_hash;
    uint64_t up = 0;
    uint64_t cut = 0;
    unsigned why = 5u; /* no quarantine */
    const char *after = "";
    /* The reference survives a new run: the wall clock is the host's, not the process's,
     * so a jump while the node was down or before this probe is seen here. A reading too
     * blind to rule out a jump (a reference from before a long outage) quarantines: the
     * next readings compare with this one, and a jump hidden in it would stay unseen. A
     * client's first contact (no reference) has nothing to compare: see design.md. */
    bool had_ref = h->has_ref;
    lk_strict(client, &strict);
    bool blind = lk_reading(client, i, &strict, f[4].integer, h->probe_at, lr) == LK_CLOCK_BLIND;
    /* One quarantine call for the five reasons (each call site costs flash). A refresh reads
     * the clock only: the connection's own probe decided the rest. */
    if (refresh) {
        /* a refresh comes back old only when its reply was stalled: quarantining for that
         * kept harsh-profile nodes out for good (elk-sim seed 100253); it counts a jump */
        why = 5u;
    } else if (run == 0u) {
        why = same_marker ? 5u : 0u;
    } else if (!lk_uptime_ms(&f[1], &up)) {
        why = 1u;
    } else if (same_run && !same_marker) {
        why = 2u; /* the same run lost the marker: its data was flushed, not restarted */
    } else if (up < w && !lk_kept(f)) {
        why = 3u;
        /* the data went at the restart, or later (a FLUSHALL after it) if the marker is
         * gone: then W from now, as the marker this probe made says (same reason shown) */
        cut = f[2].len != 0u ? up : 0u;
        after = " s ago";
    } else if (blind && had_ref) {
        why = 4u;
    }
    if (!refresh) {
        h->run_hash = run;
        h->marker_hash = marker;
    }
    if (why < 5u) {
        lk_quarantine(client, i, lr, lr + w - cut, lk_probe_says[why], why == 1u ? &f[1] : NULL,
                      why == 3u ? (int64_t)(up / 1000u) : -1, after);
    }
    /* a refresh too: the marker it reads is as good as a lock request's */
    (void)lk_marker_rule(client, i, made, f[4].integer, lr);
}

/* PROBE's reply (or its failure) for node i: the node's vote from now on. */
static void lk_on_probe(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    elk_lock_session_t *s = (elk_lock_session_t *)user;
    elk_client_t *client = elk_lock__session_client(s);
    size_t i = s->index;
    size_t idx = 0;
    const elk_resp_node_t *top = status == ELK_OK ? elk_resp_reply_top(reply, &idx) : NULL;
    const elk_resp_node_t *f = top != NULL ? &reply->nodes[idx + 1u] : NULL;
    size_t k;
    bool refresh = client->nodes[i].hygiene.refreshing;
    client->nodes[i].hygiene.pending = false;
    client->nodes[i].hygiene.refreshing = false;
    client->dirty = true; /* a waiting round may now reach its quorum */
    /* {4 strings, integer}: an array of 5 scalars (an error has no children) */
    for (k = 0; top != NULL && top->type == ELK_RESP_ARRAY && top->integer == 5 &&
         top->subtree == 5u && k < 5u;
         k++) {
        if (f[k].type != (k < 4u ? ELK_RESP_BULK : ELK_RESP_INTEGER)) {
            break;
        }
    }
    if (k == 5u) {
        lk_probe_rule(client, i, f, refresh, elk_lock__received_at(client, node));
        return;
    }
    if (refresh) {
        return; /* no reading: the reference ages, and past a TTL the votes stop counting */
    }
    /* fail closed: nothing learnt, a restart cannot be ruled out */
    lk_quarantine(client, i, client->now, client->now + lk_window(client),
                  "probe failed: ", elk_resp_is_error(top) ? top : NULL, -1,
                  elk_resp_is_error(top)
                      ? ""
                      : elk_err_name(status != ELK_OK ? status : ELK_E_UNEXPECTED_REPLY));
}

/* Send node i's PROBE (elk_node_send's code): the reply goes to lk_on_probe. */
static int lk_send_probe(elk_client_t *client, size_t i, uint64_t now)
{
    static const elk_resp_arg_t head[3] = {
        ELK_RESP_ARG_STR("EVAL"), ELK_RESP_ARG_STR(ELK_LOCK_SCRIPT_PROBE), ELK_RESP_ARG_STR("1")};
    static const char hex[] = "0123456789abcdef";
    elk_lock_hygiene_t *h = &client->nodes[i].hygiene;
    elk_resp_arg_t argv[5];
    char key[CONFIG_ELK_MAX_KEY_LEN + sizeof(ELK_LOCK_MARKER_NAME)];
    char id[2u * ELK_LOCK_RANDOM_BYTES];
    uint8_t rnd[ELK_LOCK_RANDOM_BYTES];
    size_t k;
    int rc = ELK_E_ENTROPY;

    if (client->entropy->fill(client->entropy->ctx, rnd, sizeof rnd) == ELK_OK) {
        for (k = 0; k < sizeof rnd; k++) {
            id[2u * k] = hex[rnd[k] >> 4];
            id[2u * k + 1u] = hex[rnd[k] & 15u];
        }
        memcpy(argv, head, sizeof head);
        memset(&argv[3], 0, 2u * sizeof argv[0]);
        argv[3].ptr = (const uint8_t *)key;
        argv[3].len = elk_lock__marker_key(client, key);
        argv[4].ptr = (const uint8_t *)id;
        argv[4].len = sizeof id;
        /* deadline 0: the node's request timeout; a timeout resets the connection */
        rc = elk_node_send(&client->fleet->nodes[i], now, argv, 5, 0, lk_on_probe,
                           &client->nodes[i]);
    }
    if (rc == ELK_OK) { /* elk_node_send never calls back from inside */
        h->probe_at = now;
        h->probe_hash = lk_fnv(LK_FNV_BASIS, (const uint8_t *)id, sizeof id); /* lk_made */
    }
    return rc;
}

void elk_lock__hygiene_start(elk_client_t *client, size_t i, uint64_t now)
{
    int rc;
    client->nodes[i].hygiene.pending = false;
    client->nodes[i].hygiene.refreshing = false;
    if (!client->cfg.vote_hygiene) {
        return;
    }
    rc = lk_send_probe(client, i, now);
    if (rc != ELK_OK) {
        lk_quarantine(client, i, now, now + lk_window(client), "probe failed: ", NULL, -1,
                      elk_err_name(rc));
        return;
    }
    client->nodes[i].hygiene.pending = true;
}

uint64_t elk_lock__hygiene_refresh(elk_client_t *client, size_t i, uint64_t now)
{
    elk_lock_hygiene_t *h = &client->nodes[i].hygiene;
    elk_lock_config_t strict;
    uint64_t due;
    if (!client->cfg.vote_hygiene || !h->has_ref || h->pending || h->refreshing ||
        !elk_node_is_ready(&client->fleet->nodes[i])) {
        return UINT64_MAX;
    }
    lk_strict(client, &strict);
    /* from the last probe sent too: a refresh that failed is not retried at every poll */
    due = (h->probe_at > h->ref_ls ? h->probe_at : h->ref_ls) + strict.ttl_ms / 2u;
    if (now < due) {
        return due;
    }
    /* not sent (buffer full, entropy): the next poll tries again */
    h->refreshing = lk_send_probe(client, i, now) == ELK_OK;
    return UINT64_MAX;
}

static bool lk_node_ok(const elk_client_t *client, size_t node)
{
    return client != NULL && client->fleet != NULL && node < client->fleet->count;
}

uint64_t elk_client_node_quarantine(const elk_client_t *client, size_t node)
{
    if (!lk_node_ok(client, node) || client->now >= client->nodes[node].hygiene.until) {
        return 0;
    }
    return client->nodes[node].hygiene.until;
}

const char *elk_client_node_hygiene(const elk_client_t *client, size_t node)
{
    if (!lk_node_ok(client, node)) {
        return "";
    }
    if (!client->cfg.vote_hygiene) {
        return "off";
    }
    if (client->nodes[node].hygiene.pending ||
        (client->nodes[node].hygiene.marker_hash == 0u &&
         client->nodes[node].hygiene.until == 0u)) {
        return "pending"; /* probe in flight, or no connection yet */
    }
    return elk_client_node_quarantine(client, node) != 0u ? client->nodes[node].hygiene_text : "ok";
}

int elk_client_node_hygiene_stats(const elk_client_t *client, size_t node, uint32_t *quarantines,
                                  uint32_t *clock_jumps)
{
    if (!lk_node_ok(client, node)) {
        return ELK_E_INVALID_ARG;
    }
    if (quarantines != NULL) {
        *quarantines = client->nodes[node].hygiene.quarantines;
    }
    if (clock_jumps != NULL) {
        *clock_jumps = client->nodes[node].hygiene.clock_jumps;
    }
    return ELK_OK;
}

int elk_client_local_clock_suspect(const elk_client_t *client, int32_t *rate_ppm, uint32_t *spells)
{
    if (client == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (rate_ppm != NULL) {
        *rate_ppm = client->clock_suspect_ppm;
    }
    if (spells != NULL) {
        *spells = client->clock_suspect_spells;
    }
    return client->now < client->clock_suspect_until ? ELK_E_LOCAL_CLOCK : ELK_OK;
}
