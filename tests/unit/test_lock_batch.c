/* SPDX-License-Identifier: MIT */
/*
 * Batched renewals (issue 30, docs/design.md "Renewals in batches"): the leases one client
 * holds renew with one EXTEND_BATCH request per node per tick, each lease still judged on
 * its own result by the engine, each deadline counted from the send time of the request
 * that carried it. Real lib/node connections on scripted transports, answered by the
 * in-memory Redis (support/lock_fake_redis.c), with a manual clock, as test_lock_engine.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "elk/lock.h"
#include "elk/lock_scripts.h"
#include "lock_fake_redis.h"
#include "node_harness.h"

#include "lock_events.h"

#define NODES 3u
#define LOCKS 24u

typedef struct bworld {
    node_harness_t h;
    lfr_server_t srv[NODES];
    elk_client_t client;
    elk_lock_t lock[LOCKS];
    elk_ts_events_t rec[LOCKS];
    size_t n;
} bworld_t;

static bworld_t B;

static uint64_t NOW(void)
{
    return B.h.clock.now;
}

static elk_lock_config_t cfg_ttl(uint32_t ttl)
{
    elk_lock_config_t c;
    elk_lock_config_defaults(&c);
    c.ttl_ms = ttl;
    c.stop_margin_ms = 50;
    return c;
}

/* n locks on resources named by prefix + index, on NODES fake servers; batching as said. */
static void setup(size_t n, const char *prefix, bool batch)
{
    elk_node_config_t nc;
    elk_client_config_t cc;
    elk_lock_config_t c = cfg_ttl(1000);
    memset(&B, 0, sizeof B);
    elk_node_config_defaults(&nc);
    nc.endpoint.host = "127.0.0.1";
    nc.endpoint.port = 6379;
    node_harness_init(&B.h, NODES, &nc);
    for (size_t i = 0; i < NODES; i++) {
        lfr_init(&B.srv[i], &B.h.clock.now);
        lfr_attach(&B.srv[i], &B.h.ft[i]);
    }
    elk_client_config_defaults(&cc);
    assert_true(cc.batch_renewals); /* on by default */
    cc.gateway_id = "gwA";
    cc.key_prefix = "t:";
    cc.batch_renewals = batch;
    assert_int_equal(elk_client_init(&B.client, &cc, &B.h.fleet, &B.h.entropy_if, &B.h.log_if),
                     ELK_OK);
    B.n = n;
    for (size_t k = 0; k < n; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s%zu", prefix, k);
        assert_int_equal(
            elk_lock_init(&B.lock[k], &B.client, name, &c, elk_ts_events_on, &B.rec[k]), ELK_OK);
    }
}

static uint64_t pump(void)
{
    uint64_t next = UINT64_MAX;
    for (int round = 0; round < 200; round++) {
        size_t served = 0;
        size_t rx = 0;
        next = elk_client_poll(&B.client, NOW());
        for (size_t i = 0; i < NODES; i++) {
            served += lfr_serve(&B.srv[i]);
        }
        for (size_t i = 0; i < NODES; i++) {
            rx += fake_transport_rx_pending(&B.h.ft[i]);
        }
        if (served == 0 && rx == 0 && next > NOW()) {
            return next;
        }
    }
    return next;
}

static void run_until(uint64_t t)
{
    fake_clock_run_until(&B.h.clock, t, pump);
}

/* Acquire locks [from, to) now, one after the other (a send buffer holds only a few
 * ACQUIREs), and run until each is held. */
static void acquire(size_t from, size_t to)
{
    for (size_t k = from; k < to; k++) {
        assert_int_equal(elk_lock_acquire(&B.lock[k], NOW(), 0), ELK_E_WOULD_BLOCK);
        pump();
    }
    for (size_t k = from; k < to; k++) {
        assert_true(elk_lock_is_held(&B.lock[k], NOW()));
    }
}

static unsigned batch_calls(size_t i)
{
    return B.srv[i].extend_batch_calls;
}

static void connect_all(void)
{
    pump();
    assert_true(elk_client_ready(&B.client));
}

/* n leases with batching on, connected and all held: the time before the acquisitions. */
static uint64_t all_held(size_t n)
{
    setup(n, "r", true);
    connect_all();
    uint64_t t0 = NOW();
    acquire(0, n);
    return t0;
}

/* ---------------------------------------------------------------- tests */

/* 16 leases, half acquired 50 ms after the others (within the window: half the 330 ms
 * renewal interval), renew with one request per node at the first one's tick; with
 * batching off, the same renewals cost one EXTEND per lease per node. */
static void test_one_request_per_node(void **state)
{
    (void)state;
    for (int batch = 1; batch >= 0; batch--) {
        setup(16, "r", batch != 0);
        connect_all();
        uint64_t t0 = NOW();
        acquire(0, 8);
        B.h.clock.now += 50;
        acquire(8, 16);
        run_until(t0 + 385); /* without batching, the late ones renew at t0 + 380 */
        for (size_t k = 0; k < 16; k++) {
            assert_int_equal(elk_lock_renewals(&B.lock[k]), 1);
            assert_non_null(elk_ts_events_first(&B.rec[k], ELK_LOCK_EV_RENEWED));
        }
        for (size_t i = 0; i < NODES; i++) {
            if (batch) {
                assert_int_equal(batch_calls(i), 1);
                assert_int_equal(B.srv[i].extend_batch_leases, 16);
                assert_int_equal(B.srv[i].extend_calls, 0);
            } else {
                assert_int_equal(batch_calls(i), 0);
                assert_int_equal(B.srv[i].extend_calls, 16);
            }
        }
        /* From then on they renew together: one request per node per tick. */
        run_until(t0 + 3000);
        for (size_t i = 0; batch && i < NODES; i++) {
            assert_int_equal(B.srv[i].extend_calls, 0);
            assert_int_equal(B.srv[i].extend_batch_leases, 16u * batch_calls(i));
        }
        for (size_t k = 0; k < 16; k++) {
            assert_true(elk_lock_is_held(&B.lock[k], NOW()));
            assert_int_equal(elk_ts_events_count(&B.rec[k], ELK_LOCK_EV_SUSPECT), 0);
        }
    }
}

/* One lease's value gone on a quorum (another value on 2 of 3 nodes): that lease is LOST
 * at once with ELK_E_LOCK_TAKEN and releases nothing; the others in the same requests
 * renew. */
static void test_value_gone_one_lease(void **state)
{
    (void)state;
    uint64_t t0 = all_held(8);
    const char *key = elk_lock_key(&B.lock[3]);
    lfr_set(&B.srv[0], key, "gwZ:other", 5000);
    lfr_set(&B.srv[1], key, "gwZ:other", 5000);
    run_until(t0 + 335);
    for (size_t i = 0; i < NODES; i++) {
        assert_int_equal(batch_calls(i), 1);
        assert_int_equal(B.srv[i].extend_calls, 0);
    }
    const elk_lock_event_t *lost = elk_ts_events_first(&B.rec[3], ELK_LOCK_EV_LOST);
    assert_non_null(lost);
    assert_int_equal(lost->err, ELK_E_LOCK_TAKEN);
    assert_false(elk_lock_is_held(&B.lock[3], NOW()));
    for (size_t k = 0; k < 8; k++) {
        if (k == 3) {
            continue;
        }
        assert_int_equal(elk_lock_renewals(&B.lock[k]), 1);
        assert_int_equal(elk_ts_events_count(&B.rec[k], ELK_LOCK_EV_LOST), 0);
        assert_true(elk_lock_is_held(&B.lock[k], NOW()));
    }
    /* Nothing released after that loss (design.md: such a quorum may count nodes that never
     * held our value): the value still standing on node 2 runs out by itself. */
    run_until(NOW() + 200);
    for (size_t i = 0; i < NODES; i++) {
        assert_int_equal(B.srv[i].release_calls, 0);
    }
    assert_string_equal(lfr_get(&B.srv[0], key), "gwZ:other");
}

/* Every lease's new deadline is the batch's send time + span, not its reply's time: the
 * replies are held back 40 ms. */
static void test_deadline_from_send_time(void **state)
{
    (void)state;
    elk_lock_config_t c = cfg_ttl(1000);
    uint64_t span = c.ttl_ms - elk_lock_config_drift(&c) - c.stop_margin_ms;
    setup(6, "r", true);
    connect_all();
    uint64_t t0 = NOW();
    acquire(0, 3);
    B.h.clock.now += 20;
    acquire(3, 6);
    uint64_t old = elk_lock_deadline(&B.lock[5]);
    for (size_t i = 0; i < NODES; i++) {
        B.srv[i].hold = true;
    }
    run_until(t0 + 340); /* the first three are due at t0 + 330, the others join them */
    uint64_t sent = 0;
    for (size_t i = 0; i < NODES; i++) {
        assert_int_equal(batch_calls(i), 1);
        for (size_t l = 0; l < B.srv[i].nlog; l++) {
            if (strcmp(B.srv[i].log[l].which, "extendb") == 0) {
                sent = B.srv[i].log[l].at;
            }
        }
    }
    assert_true(sent >= t0 + 330 && sent < t0 + 340);
    B.h.clock.now += 40;
    for (size_t i = 0; i < NODES; i++) {
        B.srv[i].hold = false;
        lfr_flush(&B.srv[i]);
    }
    pump();
    for (size_t k = 0; k < 6; k++) {
        assert_int_equal(elk_lock_renewals(&B.lock[k]), 1);
        assert_int_equal(elk_lock_deadline(&B.lock[k]), sent + span);
    }
    /* the late ones renewed early, which moved their deadline forward all the same */
    assert_true(elk_lock_deadline(&B.lock[5]) > old);
}

/* Leases whose keys are long do not all fit one request in a pool block: the batch is split
 * into as few requests as fit, and every lease renews. */
static void test_split_to_fit(void **state)
{
    (void)state;
    char prefix[100];
    memset(prefix, 'x', 90);
    prefix[90] = '\0';
    setup(20, prefix, true);
    connect_all();
    uint64_t t0 = NOW();
    acquire(0, 20);
    run_until(t0 + 335);
    /* the bytes one lease takes in the request (its key and value as bulk strings) and the
     * request's shared part (lock_send.c bounds it the same way) */
    size_t key = strlen(elk_lock_key(&B.lock[19]));
    size_t val = strlen(elk_lock_value(&B.lock[19]));
    size_t item = (5u + key + (key >= 100u ? 1u : 0u)) + (5u + val);
    size_t fixed = 6u + 47u + 12u + 8u + 13u + 16u;
    size_t per = (CONFIG_ELK_POOL_BLOCK_SIZE - fixed) / item;
    size_t want = (20u + per - 1u) / per;
    assert_true(want >= 2u); /* the test means a split */
    for (size_t i = 0; i < NODES; i++) {
        assert_int_equal(B.srv[i].extend_batch_leases, 20);
        assert_int_equal(batch_calls(i), want);
        assert_int_equal(B.srv[i].extend_calls, 0);
    }
    for (size_t k = 0; k < 20; k++) {
        assert_int_equal(elk_lock_renewals(&B.lock[k]), 1);
        assert_true(elk_lock_is_held(&B.lock[k], NOW()));
    }
}

/* Nodes that lost their scripts answer the batch NOSCRIPT: each lease's round resends as
 * EVAL (batched again) and renews. */
static void test_noscript_resends_eval(void **state)
{
    (void)state;
    uint64_t t0 = all_held(5);
    unsigned noscript = B.srv[1].noscript;
    for (size_t i = 0; i < NODES; i++) {
        B.srv[i].scripts_loaded = false;
    }
    run_until(t0 + 335);
    assert_int_equal(B.srv[1].noscript, noscript + 1u); /* the batch's EVALSHA */
    assert_int_equal(batch_calls(1), 1);                /* then its EVAL ran */
    assert_int_equal(B.srv[1].extend_batch_leases, 5);
    assert_true(B.srv[1].log[B.srv[1].nlog - 1].eval);
    for (size_t k = 0; k < 5; k++) {
        assert_int_equal(elk_lock_renewals(&B.lock[k]), 1);
    }
}

/* ------------------------------------------------------ releases in bulk */

/* Each lease's requests on server i, in the order it ran them, must be exactly what its lock
 * issued, in that order: no RELEASE (batched or not) of a value is followed by a request that
 * carries the same value (it would have overtaken the release), and the release of a value
 * follows its ACQUIRE. Returns the number of releases seen. */
static size_t check_release_last(const lfr_server_t *srv)
{
    size_t releases = 0;
    for (size_t j = 0; j < srv->nops; j++) {
        const lfr_op_t *o = &srv->ops[j];
        bool rel = strncmp(o->which, "release", 7) == 0;
        if (!rel) {
            continue;
        }
        releases++;
        bool acquired_before = false;
        for (size_t m = 0; m < j; m++) {
            acquired_before |= strcmp(srv->ops[m].which, "acquire") == 0 &&
                strcmp(srv->ops[m].value, o->value) == 0;
        }
        assert_true(acquired_before);
        for (size_t m = j + 1; m < srv->nops; m++) {
            if (strcmp(srv->ops[m].value, o->value) == 0) {
                fail_msg("%s of %s on %s ran after its %s", srv->ops[m].which, o->value, o->key,
                         o->which);
            }
        }
    }
    return releases;
}

/* n leases held, then all released: with elk_client_release_all one RELEASE_BATCH per node
 * carries them all, with elk_lock_release on each (per lease) one RELEASE each. Every key is
 * gone and RELEASED fires for every lease either way. */
static void test_release_all_one_request_per_node(void **state)
{
    (void)state;
    const size_t n = 16; /* they fit one request (24 would not: test_split_to_fit) */
    for (int bulk = 1; bulk >= 0; bulk--) {
        (void)all_held(n);
        if (bulk) {
            assert_int_equal(elk_client_release_all(&B.client, NOW()), (int)n);
        } else {
            for (size_t k = 0; k < n; k++) {
                assert_int_equal(elk_lock_release(&B.lock[k], NOW()), ELK_OK);
                pump();
            }
        }
        pump();
        for (size_t i = 0; i < NODES; i++) {
            assert_int_equal(B.srv[i].release_batch_calls, bulk ? 1u : 0u);
            assert_int_equal(B.srv[i].release_batch_leases, bulk ? n : 0u);
            assert_int_equal(B.srv[i].release_calls, bulk ? 0u : n);
            assert_int_equal(check_release_last(&B.srv[i]), n);
        }
        for (size_t k = 0; k < n; k++) {
            const elk_lock_event_t *ev = elk_ts_events_first(&B.rec[k], ELK_LOCK_EV_RELEASED);
            assert_non_null(ev);
            assert_int_equal(ev->ok, NODES);
            assert_int_equal(elk_lock_state(&B.lock[k]), ELK_LOCK_IDLE);
            for (size_t i = 0; i < NODES; i++) {
                assert_null(lfr_get(&B.srv[i], elk_lock_key(&B.lock[k])));
            }
        }
        /* nothing left to release: a second call starts nothing */
        assert_int_equal(elk_client_release_all(&B.client, NOW()), 0);
    }
}

/* One lease's key on one node now holds another holder's value: the batch leaves it there
 * (that lease's result on that node is "busy"), deletes everything else. */
static void test_release_all_keeps_another_holders_value(void **state)
{
    (void)state;
    (void)all_held(8);
    const char *key = elk_lock_key(&B.lock[5]);
    lfr_set(&B.srv[2], key, "gwZ:other", 5000);
    assert_int_equal(elk_client_release_all(&B.client, NOW()), 8);
    pump();
    assert_string_equal(lfr_get(&B.srv[2], key), "gwZ:other");
    assert_null(lfr_get(&B.srv[0], key));
    for (size_t k = 0; k < 8; k++) {
        const elk_lock_event_t *ev = elk_ts_events_first(&B.rec[k], ELK_LOCK_EV_RELEASED);
        assert_non_null(ev);
        assert_int_equal(ev->ok, k == 5 ? NODES - 1u : NODES);
        assert_int_equal(ev->nodes[2].status, k == 5 ? ELK_LOCK_NODE_BUSY : ELK_LOCK_NODE_OK);
    }
    for (size_t i = 0; i < NODES; i++) {
        assert_int_equal(B.srv[i].release_batch_calls, 1);
    }
}

/* The hook of lock[LOCKS-1]'s ACQUIRED: release everything, from inside the poll, while the
 * other leases' renewals are queued for this poll's batched write. */
static void release_all_hook(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    (void)user;
    (void)lock;
    if (ev->type == ELK_LOCK_EV_ACQUIRED) {
        assert_true(elk_client_release_all(&B.client, ev->now) > 0);
    }
}

/* Order on each node, key by key: a lease being acquired (its ACQUIRE unanswered) is
 * released in bulk after its ACQUIRE, and an acquire of the same lock right after the bulk
 * release goes after it; a release in bulk from inside a poll where renewals are queued
 * leaves no renewal of those values after it. Fails if a batched release could overtake,
 * or be overtaken by, another request for the same key on one node. */
static void test_release_all_keeps_each_keys_order(void **state)
{
    (void)state;
    setup(LOCKS, "r", true);
    connect_all();
    acquire(0, LOCKS - 2u);
    /* lock[LOCKS-2]: ACQUIRE sent, replies held back */
    for (size_t i = 0; i < NODES; i++) {
        B.srv[i].hold = true;
    }
    assert_int_equal(elk_lock_acquire(&B.lock[LOCKS - 2u], NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    assert_int_equal(elk_client_release_all(&B.client, NOW()), (int)(LOCKS - 1u));
    /* at once, outside any poll: its next ACQUIRE goes behind the bulk release */
    assert_int_equal(elk_lock_acquire(&B.lock[LOCKS - 2u], NOW(), 0), ELK_E_WOULD_BLOCK);
    for (size_t i = 0; i < NODES; i++) {
        B.srv[i].hold = false;
        lfr_serve(&B.srv[i]);
        lfr_flush(&B.srv[i]);
    }
    pump();
    assert_true(elk_lock_is_held(&B.lock[LOCKS - 2u], NOW()));
    for (size_t i = 0; i < NODES; i++) {
        const char *key = elk_lock_key(&B.lock[LOCKS - 2u]);
        const char *want[3] = {"acquire", "releaseb", "acquire"};
        size_t seen = 0;
        for (size_t j = 0; j < B.srv[i].nops; j++) {
            /* (the second hold's COMMIT, with fencing, follows its ACQUIRE) */
            if (strcmp(B.srv[i].ops[j].key, key) == 0 &&
                strcmp(B.srv[i].ops[j].which, "commit") != 0) {
                assert_true(seen < 3u);
                assert_string_equal(B.srv[i].ops[j].which, want[seen]);
                seen++;
            }
        }
        assert_int_equal(seen, 3);
        (void)check_release_last(&B.srv[i]);
    }
    /* Now from inside a poll: the held leases' renewals are due and queued when the last
     * lock's ACQUIRED fires and its hook releases everything. */
    assert_int_equal(elk_lock_release(&B.lock[LOCKS - 2u], NOW()), ELK_OK);
    pump();
    uint64_t t1 = NOW();
    acquire(0, LOCKS - 2u);
    B.rec[LOCKS - 1u].hook = release_all_hook;
    uint64_t tick = t1 + 330u;
    run_until(tick - 1u);
    B.h.clock.now = tick;
    assert_int_equal(elk_lock_acquire(&B.lock[LOCKS - 1u], NOW(), 0), ELK_E_WOULD_BLOCK);
    pump();
    for (size_t k = 0; k < LOCKS; k++) {
        assert_false(elk_lock_is_held(&B.lock[k], NOW()));
    }
    for (size_t i = 0; i < NODES; i++) {
        (void)check_release_last(&B.srv[i]);
        assert_true(B.srv[i].release_batch_calls >= 2u);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_request_per_node),
        cmocka_unit_test(test_value_gone_one_lease),
        cmocka_unit_test(test_deadline_from_send_time),
        cmocka_unit_test(test_split_to_fit),
        cmocka_unit_test(test_noscript_resends_eval),
        cmocka_unit_test(test_release_all_one_request_per_node),
        cmocka_unit_test(test_release_all_keeps_another_holders_value),
        cmocka_unit_test(test_release_all_keeps_each_keys_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
