/* SPDX-License-Identifier: MIT */
/* Unit tests of port/sim: the event queue, PRNG, clocks, the simulated network and
 * the simulated Redis, driven through the same elk_transport_t lib/node uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "elk/lock_scripts.h"
#include "elk/sim.h"
#include "elk/sim_scripts.h"

static elk_sim_core_t core;
static elk_sim_event_t evs[4096];
static elk_sim_net_t net;
static elk_sim_scripts_t scripts;
static int wakes;

/* ------------------------------------------------------------ queue */

static void test_queue_orders_by_time_then_insertion(void **state)
{
    elk_sim_queue_t q;
    elk_sim_event_t store[8], e;
    (void)state;
    assert_int_equal(elk_sim_queue_init(&q, store, 8), ELK_OK);
    assert_int_equal(elk_sim_queue_push(&q, 50, 100, 1, 0), ELK_OK);
    assert_int_equal(elk_sim_queue_push(&q, 10, 100, 2, 0), ELK_OK);
    assert_int_equal(elk_sim_queue_push(&q, 50, 100, 3, 0), ELK_OK);
    assert_int_equal(elk_sim_queue_push(&q, 10, 100, 4, 0), ELK_OK);
    assert_int_equal(elk_sim_queue_push(&q, 30, 100, 5, 0), ELK_OK);
    assert_int_equal(elk_sim_queue_peek_time(&q), 10);
    const uint32_t want[] = {2, 4, 5, 1, 3};
    for (size_t i = 0; i < 5; i++) {
        assert_true(elk_sim_queue_pop(&q, &e));
        assert_int_equal(e.a, want[i]);
    }
    assert_false(elk_sim_queue_pop(&q, &e));
    assert_int_equal(elk_sim_queue_peek_time(&q), UINT64_MAX);
}

static void test_queue_full_is_an_error(void **state)
{
    elk_sim_queue_t q;
    elk_sim_event_t store[2];
    (void)state;
    assert_int_equal(elk_sim_queue_init(&q, NULL, 2), ELK_E_INVALID_ARG);
    assert_int_equal(elk_sim_queue_init(&q, store, 2), ELK_OK);
    assert_int_equal(elk_sim_queue_push(&q, 1, 100, 0, 0), ELK_OK);
    assert_int_equal(elk_sim_queue_push(&q, 2, 100, 0, 0), ELK_OK);
    assert_int_equal(elk_sim_queue_push(&q, 3, 100, 0, 0), ELK_E_SIM_QUEUE_FULL);
}

/* ------------------------------------------------------------ rng and clocks */

static void test_rng_is_reproducible_and_seed_dependent(void **state)
{
    elk_sim_rng_t a, b, c;
    uint8_t x[37], y[37];
    (void)state;
    elk_sim_rng_seed(&a, 42);
    elk_sim_rng_seed(&b, 42);
    elk_sim_rng_seed(&c, 43);
    bool differs = false;
    for (int i = 0; i < 100; i++) {
        uint64_t va = elk_sim_rng_next(&a);
        assert_int_equal(va, elk_sim_rng_next(&b));
        differs = differs || va != elk_sim_rng_next(&c);
    }
    assert_true(differs);
    for (int i = 0; i < 1000; i++) {
        uint64_t v = elk_sim_rng_range(&a, 5, 9);
        assert_true(v >= 5 && v <= 9);
    }
    elk_entropy_t ea = elk_sim_rng_entropy(&a), eb = elk_sim_rng_entropy(&b);
    elk_sim_rng_seed(&a, 7);
    elk_sim_rng_seed(&b, 7);
    assert_int_equal(ea.fill(ea.ctx, x, sizeof x), ELK_OK);
    assert_int_equal(eb.fill(eb.ctx, y, sizeof y), ELK_OK);
    assert_memory_equal(x, y, sizeof x);
}

static void test_clock_rate_offset_and_inverse(void **state)
{
    uint64_t now = 0;
    elk_sim_clock_t fast, slow;
    (void)state;
    elk_sim_clock_init(&fast, &now, 5000, 10000);       /* +1% */
    elk_sim_clock_init(&slow, &now, 123456789, -20000); /* -2% */
    now = 1000000;                                      /* 1 s true */
    assert_int_equal(elk_sim_clock_local_us_at(&fast, now), 5000 + 1000000 + 10000);
    assert_int_equal(elk_sim_clock_local_us_at(&slow, now), 123456789 + 1000000 - 20000);
    elk_clock_t k = elk_sim_clock_iface(&fast);
    assert_int_equal(k.now_ms(k.ctx), (5000 + 1010000) / 1000);
    for (uint64_t l = 1000; l < 200000; l += 7777) {
        uint64_t t = elk_sim_clock_true_at(&fast, l);
        assert_true(elk_sim_clock_local_us_at(&fast, t) / 1000 >= (int64_t)l);
        assert_true(t == 0 || elk_sim_clock_local_us_at(&fast, t - 1) / 1000 < (int64_t)l);
        t = elk_sim_clock_true_at(&slow, l + 123456);
        assert_true(elk_sim_clock_local_us_at(&slow, t) / 1000 >= (int64_t)(l + 123456));
        assert_true(elk_sim_clock_local_us_at(&slow, t - 1) / 1000 < (int64_t)(l + 123456));
    }
    elk_sim_clock_jump(&fast, 2000000); /* wall clock steps 2 s forward */
    assert_int_equal(elk_sim_clock_local_us_at(&fast, now), 2005000 + 1010000);
    elk_sim_clock_jump(&fast, -9000000); /* far back: readings clamp at 0, never negative */
    assert_int_equal(elk_sim_clock_local_us_at(&fast, now), 0);
}

/* ------------------------------------------------------------ network + Redis */

static void on_wake(void *user, uint8_t gw, uint64_t at)
{
    (void)user;
    (void)gw;
    (void)at;
    wakes++;
}

static int setup_net(void **state)
{
    elk_sim_net_params_t p;
    (void)state;
    memset(&p, 0, sizeof p);
    p.delay_min_us = 100;
    p.delay_max_us = 900;
    p.retry_us = 50000;
    memset(&core, 0, sizeof core);
    elk_sim_rng_seed(&core.rng, 1);
    assert_int_equal(elk_sim_queue_init(&core.queue, evs, 4096), ELK_OK);
    assert_int_equal(elk_sim_net_init(&net, &core, &p, 2, 3, on_wake, NULL), ELK_OK);
    elk_sim_scripts_init(&scripts, &net, false);
    assert_int_equal(elk_sim_net_set_scripts(&net, scripts.entry, ELK_SIM_EDGELOCK_SCRIPTS),
                     ELK_OK);
    wakes = 0;
    return 0;
}

static void run_until(uint64_t t)
{
    elk_sim_event_t e;
    while (elk_sim_queue_peek_time(&core.queue) <= t && elk_sim_queue_pop(&core.queue, &e)) {
        core.now_us = e.at_us;
        assert_true(elk_sim_net_handle(&net, &e));
    }
    if (core.now_us < t) {
        core.now_us = t;
    }
}

static elk_transport_t connect_to(size_t gw, size_t node)
{
    elk_transport_t t = elk_sim_net_transport(&net, gw, node);
    elk_endpoint_t ep = {"127.0.0.1", (uint16_t)(ELK_SIM_PORT_BASE + node), NULL};
    assert_int_equal(t.open(t.ctx, &ep), ELK_OK);
    assert_int_equal(t.progress(t.ctx), 0);
    run_until(core.now_us + 10000);
    assert_int_equal(t.progress(t.ctx), 1);
    return t;
}

/* Sends one command (argv) and returns its reply as text (static buffer). */
static const char *call_argv(elk_transport_t *t, const elk_resp_arg_t *argv, size_t argc)
{
    static char reply[2048];
    size_t len;
    uint8_t buf[1024];
    assert_int_equal(elk_resp_encode_command(buf, sizeof buf, argv, argc, &len), ELK_OK);
    assert_int_equal(t->send(t->ctx, buf, len), (int32_t)len);
    run_until(core.now_us + 10000);
    int32_t n = t->recv(t->ctx, (uint8_t *)reply, sizeof reply - 1);
    assert_true(n > 0);
    reply[n] = '\0';
    return reply;
}

/* Send one command (words separated by single spaces) and return the raw reply. */
static const char *call(elk_transport_t *t, const char *cmdline)
{
    elk_resp_arg_t argv[16];
    char words[512];
    size_t argc = 0;
    snprintf(words, sizeof words, "%s", cmdline);
    for (char *tok = strtok(words, " "); tok != NULL; tok = strtok(NULL, " ")) {
        argv[argc++] = elk_resp_arg_cstr(tok);
    }
    return call_argv(t, argv, argc);
}

static void test_set_nx_px_get_expiry_on_node_clock(void **state)
{
    (void)state;
    elk_transport_t t = connect_to(0, 0);
    assert_string_equal(call(&t, "PING"), "+PONG\r\n");
    assert_string_equal(call(&t, "SET k v1 NX PX 100"), "+OK\r\n");
    assert_string_equal(call(&t, "SET k v2 NX PX 100"), "$-1\r\n");
    assert_string_equal(call(&t, "GET k"), "$2\r\nv1\r\n");
    /* The node's clock runs 50% fast: 100 ms of node time pass in ~67 ms true. */
    net.nodes[0].clock.rate_ppm = 500000;
    net.nodes[0].clock.offset_us -= (int64_t)core.now_us / 2;
    run_until(core.now_us + 75000);
    assert_string_equal(call(&t, "GET k"), "$-1\r\n");
    assert_string_equal(call(&t, "INCR c"), ":1\r\n");
    assert_string_equal(call(&t, "INCR c"), ":2\r\n");
    assert_string_equal(call(&t, "SETNX s 5"), ":1\r\n");
    assert_string_equal(call(&t, "SETNX s 6"), ":0\r\n");
    assert_string_equal(call(&t, "GETSET s 7"), "$1\r\n5\r\n");
    assert_string_equal(call(&t, "PEXPIRE s 1000"), ":1\r\n");
    assert_string_equal(call(&t, "DEL s c nothere"), ":2\r\n");
    assert_string_equal(call(&t, "BOGUS"), "-ERR unknown command\r\n");
}

static void test_hello3_switches_to_resp3(void **state)
{
    (void)state;
    elk_transport_t t = connect_to(1, 2);
    assert_true(strncmp(call(&t, "HELLO 3"), "%7\r\n", 4) == 0);
    assert_string_equal(call(&t, "GET missing"), "_\r\n");
    assert_true(strncmp(call(&t, "HELLO 4"), "-NOPROTO", 8) == 0);
    assert_true(strncmp(call(&t, "AUTH x"), "-ERR AUTH", 9) == 0);
    assert_string_equal(call(&t, "SELECT 3"), "+OK\r\n");
    assert_true(strstr(call(&t, "CONFIG GET maxmemory-policy"), "noeviction") != NULL);
}

static void test_scripts_evalsha_noscript_and_restart(void **state)
{
    char cmd[512];
    (void)state;
    elk_transport_t t = connect_to(0, 1);
    snprintf(cmd, sizeof cmd, "EVALSHA %s 2 L L:fence gw0:aa 1000 1", ELK_LOCK_SCRIPT_ACQUIRE_SHA1);
    assert_true(strncmp(call(&t, cmd), "-NOSCRIPT", 9) == 0);
    /* SCRIPT LOAD takes the exact text (with spaces), so send it as one argument. */
    elk_resp_arg_t argv[3] = {elk_resp_arg_cstr("SCRIPT"), elk_resp_arg_cstr("LOAD"),
                              elk_resp_arg_cstr(ELK_LOCK_SCRIPT_ACQUIRE)};
    char reply[256];
    assert_non_null(strstr(call_argv(&t, argv, 3), ELK_LOCK_SCRIPT_ACQUIRE_SHA1));
    assert_string_equal(call(&t, cmd), ":1\r\n");  /* taken, counter 1 */
    assert_string_equal(call(&t, cmd), ":-1\r\n"); /* busy */
    snprintf(cmd, sizeof cmd, "EVALSHA %s 2 L L:fence gw0:aa 9", ELK_LOCK_SCRIPT_COMMIT_SHA1);
    assert_true(strncmp(call(&t, cmd), "-NOSCRIPT", 9) == 0); /* not loaded yet */
    /* Crash: the client sees the connection closed; after a restart (data kept) the
     * key survives but the script cache does not. */
    elk_sim_net_crash(&net, 1);
    assert_int_equal(t.recv(t.ctx, (uint8_t *)reply, sizeof reply), ELK_E_CLOSED);
    assert_true(wakes > 0);
    elk_sim_net_restart(&net, 1, ELK_SIM_RESTART_KEEP);
    t.close(t.ctx);
    t = connect_to(0, 1);
    assert_string_equal(call(&t, "GET L"), "$6\r\ngw0:aa\r\n");
    snprintf(cmd, sizeof cmd, "EVALSHA %s 2 L L:fence gw0:aa 1000 1", ELK_LOCK_SCRIPT_ACQUIRE_SHA1);
    assert_true(strncmp(call(&t, cmd), "-NOSCRIPT", 9) == 0);
    elk_sim_net_crash(&net, 1);
    elk_sim_net_restart(&net, 1, ELK_SIM_RESTART_LOSE);
    t.close(t.ctx);
    t = connect_to(0, 1);
    assert_string_equal(call(&t, "GET L"), "$-1\r\n");
}

static void test_partition_delays_but_never_reorders(void **state)
{
    uint8_t buf[256];
    size_t len, n1;
    char reply[256];
    (void)state;
    elk_transport_t t = connect_to(1, 0);
    elk_resp_arg_t a1[2] = {elk_resp_arg_cstr("PING"), elk_resp_arg_cstr("one")};
    elk_resp_arg_t a2[2] = {elk_resp_arg_cstr("PING"), elk_resp_arg_cstr("two")};
    elk_sim_net_partition(&net, 1, 0, true);
    assert_int_equal(elk_resp_encode_command(buf, sizeof buf, a1, 2, &n1), ELK_OK);
    assert_int_equal(t.send(t.ctx, buf, n1), (int32_t)n1);
    run_until(core.now_us + 200);
    assert_int_equal(elk_resp_encode_command(buf, sizeof buf, a2, 2, &len), ELK_OK);
    assert_int_equal(t.send(t.ctx, buf, len), (int32_t)len);
    run_until(core.now_us + 500000);
    assert_int_equal(t.recv(t.ctx, (uint8_t *)reply, sizeof reply), 0); /* nothing crosses */
    elk_sim_net_partition(&net, 1, 0, false);
    run_until(core.now_us + 200000);
    int32_t n = t.recv(t.ctx, (uint8_t *)reply, sizeof reply - 1);
    assert_true(n > 0);
    reply[n] = '\0';
    assert_string_equal(reply, "$3\r\none\r\n$3\r\ntwo\r\n");
}

static void test_commit_noop_control_leaves_counters(void **state)
{
    char cmd[512];
    (void)state;
    elk_transport_t t = connect_to(0, 2);
    elk_resp_arg_t argv[3] = {elk_resp_arg_cstr("SCRIPT"), elk_resp_arg_cstr("LOAD"),
                              elk_resp_arg_cstr(ELK_LOCK_SCRIPT_COMMIT)};
    (void)call_argv(&t, argv, 3); /* asserts a reply came */
    assert_string_equal(call(&t, "SET L v PX 10000"), "+OK\r\n");
    snprintf(cmd, sizeof cmd, "EVALSHA %s 2 L L:fence v 9", ELK_LOCK_SCRIPT_COMMIT_SHA1);
    assert_string_equal(call(&t, cmd), ":9\r\n");
    assert_string_equal(call(&t, "GET L:fence"), "$1\r\n9\r\n");
    scripts.commit_noop = true;
    snprintf(cmd, sizeof cmd, "EVALSHA %s 2 L L:fence v 12", ELK_LOCK_SCRIPT_COMMIT_SHA1);
    assert_string_equal(call(&t, cmd), ":12\r\n");               /* claims success ... */
    assert_string_equal(call(&t, "GET L:fence"), "$1\r\n9\r\n"); /* ... but did not commit */
    snprintf(cmd, sizeof cmd, "EVALSHA %s 2 L L:fence other 50", ELK_LOCK_SCRIPT_COMMIT_SHA1);
    assert_string_equal(call(&t, cmd), ":-1\r\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_orders_by_time_then_insertion),
        cmocka_unit_test(test_queue_full_is_an_error),
        cmocka_unit_test(test_rng_is_reproducible_and_seed_dependent),
        cmocka_unit_test(test_clock_rate_offset_and_inverse),
        cmocka_unit_test_setup(test_set_nx_px_get_expiry_on_node_clock, setup_net),
        cmocka_unit_test_setup(test_hello3_switches_to_resp3, setup_net),
        cmocka_unit_test_setup(test_scripts_evalsha_noscript_and_restart, setup_net),
        cmocka_unit_test_setup(test_partition_delays_but_never_reorders, setup_net),
        cmocka_unit_test_setup(test_commit_noop_control_leaves_counters, setup_net),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
