/* SPDX-License-Identifier: MIT */
/* Unit tests of port/sim: the event queue, PRNG, clocks, the simulated network and
 * the simulated Redis, driven through the same elk_transport_t lib/node uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

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

/* EVAL of one of the scripts with its keys and arguments (space-separated words). */
static const char *eval(elk_transport_t *t, const char *script, int nkeys, const char *words)
{
    elk_resp_arg_t argv[16];
    char buf[512], nk[8];
    size_t argc = 0;
    snprintf(buf, sizeof buf, "%s", words);
    snprintf(nk, sizeof nk, "%d", nkeys);
    argv[argc++] = elk_resp_arg_cstr("EVAL");
    argv[argc++] = elk_resp_arg_cstr(script);
    argv[argc++] = elk_resp_arg_cstr(nk);
    for (char *tok = strtok(buf, " "); tok != NULL; tok = strtok(NULL, " ")) {
        argv[argc++] = elk_resp_arg_cstr(tok);
    }
    return call_argv(t, argv, argc);
}

/* The fields of a flat RESP2 array reply of bulk strings and integers, as text. */
typedef struct fields {
    size_t n;
    char f[8][64];
} fields_t;

static fields_t parse_array(const char *r)
{
    fields_t out;
    long n = 0;
    memset(&out, 0, sizeof out);
    assert_int_equal(sscanf(r, "*%ld\r\n", &n), 1);
    r = strstr(r, "\r\n") + 2;
    for (long i = 0; i < n && i < 8; i++) {
        if (*r == ':') {
            const char *e = strstr(r, "\r\n");
            snprintf(out.f[i], sizeof out.f[i], "%.*s", (int)(e - r - 1), r + 1);
            r = e + 2;
        } else {
            long len = 0;
            assert_int_equal(sscanf(r, "$%ld\r\n", &len), 1);
            r = strstr(r, "\r\n") + 2;
            snprintf(out.f[i], sizeof out.f[i], "%.*s", (int)len, r);
            r += len + 2;
        }
        out.n++;
    }
    return out;
}

/* server_ms of a reply read just now: the node's TIME when it ran the command, which was
 * less than the 10 ms call() waits ago. */
static void assert_node_time(const char *server_ms, size_t node)
{
    long long now = elk_sim_redis_now_ms(&net.nodes[node]);
    assert_in_range(atoll(server_ms), now - 10, now);
}

/* ACQUIRE/EXTEND reply {result, server_us, marker_ms}: the result; server_us must be the
 * node's TIME in us, marker_ms the creation of the fleet marker "M" (made by the first
 * call, or earlier). */
static long long pair_result(const char *reply, size_t node)
{
    fields_t f = parse_array(reply);
    char ms[32];
    assert_int_equal(f.n, 3);
    snprintf(ms, sizeof ms, "%lld", atoll(f.f[1]) / 1000);
    assert_node_time(ms, node);
    assert_in_range(atoll(f.f[2]), 1, atoll(ms));
    return atoll(f.f[0]);
}

/* A token just handed out by node: its clock in us when the call ran (the floor), unless
 * the counter was above it (then it is larger still). */
static bool is_fresh_token(long long tok, size_t node)
{
    return tok >= elk_sim_redis_now_us(&net.nodes[node]) - 10000;
}

/* The fence counter L:f's value, as a number. */
static long long counter(elk_transport_t *t)
{
    const char *r = call(t, "GET L:f");
    return r[0] == '$' ? atoll(strstr(r, "\r\n") + 2) : -1;
}

static void test_scripts_evalsha_noscript_and_restart(void **state)
{
    char cmd[512];
    (void)state;
    elk_transport_t t = connect_to(0, 1);
    snprintf(cmd, sizeof cmd, "EVALSHA %s 4 L L:fence L:delay M gw0:aa 1000 1 0",
             ELK_LOCK_SCRIPT_ACQUIRE_SHA1);
    assert_true(strncmp(call(&t, cmd), "-NOSCRIPT", 9) == 0);
    /* SCRIPT LOAD takes the exact text (with spaces), so send it as one argument. */
    elk_resp_arg_t argv[3] = {elk_resp_arg_cstr("SCRIPT"), elk_resp_arg_cstr("LOAD"),
                              elk_resp_arg_cstr(ELK_LOCK_SCRIPT_ACQUIRE)};
    char reply[256];
    assert_non_null(strstr(call_argv(&t, argv, 3), ELK_LOCK_SCRIPT_ACQUIRE_SHA1));
    assert_true(is_fresh_token(pair_result(call(&t, cmd), 1), 1)); /* taken: the clock floor */
    assert_int_equal(pair_result(call(&t, cmd), 1), -1);           /* busy */
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
    snprintf(cmd, sizeof cmd, "EVALSHA %s 4 L L:fence L:delay M gw0:aa 1000 1 0",
             ELK_LOCK_SCRIPT_ACQUIRE_SHA1);
    assert_true(strncmp(call(&t, cmd), "-NOSCRIPT", 9) == 0);
    elk_sim_net_crash(&net, 1);
    elk_sim_net_restart(&net, 1, ELK_SIM_RESTART_LOSE);
    t.close(t.ctx);
    t = connect_to(0, 1);
    assert_string_equal(call(&t, "GET L"), "$-1\r\n");
    /* A wrong number of keys (the pre-issue-20 ACQUIRE, the pre-amnesia one) is refused, not
     * misread. */
    assert_true(
        strncmp(eval(&t, ELK_LOCK_SCRIPT_ACQUIRE, 2, "L L:fence gw0:aa 1000 1"), "-ERR", 4) == 0);
    assert_true(strncmp(eval(&t, ELK_LOCK_SCRIPT_ACQUIRE, 3, "L L:fence L:d gw0:aa 1000 1 0"),
                        "-ERR", 4) == 0);
    assert_true(strncmp(eval(&t, ELK_LOCK_SCRIPT_EXTEND, 2, "L L:d gw0:aa 1000 0"), "-ERR", 4) ==
                0);
}

/* Lock delay: ACQUIRE leaves a marker living ttl + delay, refuses with -2 while it
 * stands, EXTEND pushes it out, a clean RELEASE deletes it (only its own), and the
 * server's TIME in each reply is the node's wall clock, steps included. */
static void test_lock_delay_marker(void **state)
{
    (void)state;
    elk_transport_t t = connect_to(0, 0);
    long long t1 = pair_result(eval(&t, ELK_LOCK_SCRIPT_ACQUIRE, 4, "L L:f L:d M a 100 1 300"), 0);
    assert_true(is_fresh_token(t1, 0));
    assert_string_equal(call(&t, "GET L:d"), "$1\r\na\r\n");
    assert_in_range(atoi(call(&t, "PTTL L:d") + 1), 370, 400); /* ttl + delay, 30 ms on */
    run_until(core.now_us + 150000); /* the lease expired, the marker stands */
    assert_string_equal(call(&t, "GET L"), "$-1\r\n");
    assert_int_equal(pair_result(eval(&t, ELK_LOCK_SCRIPT_ACQUIRE, 4, "L L:f L:d M b 100 1 0"), 0),
                     ELK_LOCK_ACQUIRE_DELAYED);
    assert_string_equal(call(&t, "GET L"), "$-1\r\n"); /* nothing taken, counter untouched */
    assert_int_equal(counter(&t), t1);
    run_until(core.now_us + 300000); /* 400 ms after the acquire: the delay is over */
    long long t2 = pair_result(eval(&t, ELK_LOCK_SCRIPT_ACQUIRE, 4, "L L:f L:d M b 100 1 0"), 0);
    assert_true(t2 > t1 && is_fresh_token(t2, 0));
    assert_int_equal(counter(&t), t2);
    assert_string_equal(call(&t, "GET L:d"), "$-1\r\n"); /* delay 0: no marker */
    /* EXTEND with a delay sets the marker to ttl + delay from now; a wrong value changes
     * nothing. */
    assert_int_equal(pair_result(eval(&t, ELK_LOCK_SCRIPT_EXTEND, 3, "L L:d M x 500 250"), 0), 0);
    assert_string_equal(call(&t, "GET L:d"), "$-1\r\n");
    assert_int_equal(pair_result(eval(&t, ELK_LOCK_SCRIPT_EXTEND, 3, "L L:d M b 500 250"), 0), 1);
    assert_in_range(atoi(call(&t, "PTTL L") + 1), 480, 500);
    assert_in_range(atoi(call(&t, "PTTL L:d") + 1), 720, 750);
    /* A node clock step forward shows in TIME and shortens both. */
    elk_sim_net_clock_jump(&net, 0, 600000);
    assert_int_equal(pair_result(eval(&t, ELK_LOCK_SCRIPT_ACQUIRE, 4, "L L:f L:d M c 100 0 0"), 0),
                     ELK_LOCK_ACQUIRE_DELAYED);
    /* RELEASE by another value leaves the marker; ours deletes it, and then the key. */
    assert_string_equal(eval(&t, ELK_LOCK_SCRIPT_RELEASE, 2, "L L:d other L:released"), ":0\r\n");
    assert_string_equal(call(&t, "GET L:d"), "$1\r\nb\r\n");
    assert_string_equal(eval(&t, ELK_LOCK_SCRIPT_RELEASE, 2, "L L:d b L:released"), ":0\r\n");
    assert_string_equal(call(&t, "GET L:d"), "$-1\r\n");
    assert_int_equal(pair_result(eval(&t, ELK_LOCK_SCRIPT_ACQUIRE, 4, "L L:f L:d M c 100 0 0"), 0),
                     0);
    assert_string_equal(eval(&t, ELK_LOCK_SCRIPT_RELEASE, 2, "L L:d c L:released"), ":1\r\n");
    assert_true(
        strncmp(eval(&t, ELK_LOCK_SCRIPT_ACQUIRE, 4, "L L:f L:d M c 100 0 -5"), "-ERR", 4) == 0);
}

/* A clean RELEASE publishes after deleting the marker: the waiter woken by it finds the
 * resource free at once. */
static void test_release_wakes_waiter_with_marker_gone(void **state)
{
    char reply[256];
    (void)state;
    elk_transport_t holder = connect_to(0, 2);
    elk_transport_t waiter = connect_to(1, 2);
    assert_non_null(strstr(call(&waiter, "SUBSCRIBE L:released"), "subscribe"));
    long long t1 =
        pair_result(eval(&holder, ELK_LOCK_SCRIPT_ACQUIRE, 4, "L L:f L:d M h 1000 1 5000"), 2);
    assert_string_equal(eval(&holder, ELK_LOCK_SCRIPT_RELEASE, 2, "L L:d h L:released"), ":1\r\n");
    run_until(core.now_us + 10000);
    int32_t n = waiter.recv(waiter.ctx, (uint8_t *)reply, sizeof reply - 1);
    assert_true(n > 0);
    reply[n] = '\0';
    assert_non_null(strstr(reply, "message"));
    assert_true(
        pair_result(eval(&holder, ELK_LOCK_SCRIPT_ACQUIRE, 4, "L L:f L:d M w 1000 1 0"), 2) > t1);
}

/* A marker value "<id>@<digits>" (what follows the digits is not looked at). */
static bool is_marker_of(const char *marker, const char *id)
{
    size_t n = strlen(id);
    return strncmp(marker, id, n) == 0 && marker[n] == '@' && marker[n + 1] >= '0' &&
        marker[n + 1] <= '9';
}

static fields_t probe(elk_transport_t *t)
{
    fields_t f = parse_array(eval(t, ELK_LOCK_SCRIPT_PROBE, 1, "elk:marker 0123456789abcdef"));
    assert_int_equal(f.n, 5);
    return f;
}

/* Node 1 restarts (mode); gateway 0 reconnects over *t and probes it. */
static fields_t restart_and_probe(elk_transport_t *t, int mode)
{
    elk_sim_net_crash(&net, 1);
    elk_sim_net_restart(&net, 1, mode);
    t->close(t->ctx);
    *t = connect_to(0, 1);
    return probe(t);
}

/* PROBE: run_id (new at each restart), uptime (wall-clock, from the restart), the marker
 * (created when missing and then reported ""), aof_enabled (what the last restart did
 * with the data), server_ms; INFO refused by the ACL leaves the INFO fields "". */
static void test_probe_restarts_marker_and_uptime(void **state)
{
    char first[64];
    (void)state;
    elk_transport_t t = connect_to(0, 1);
    fields_t f = probe(&t);
    assert_int_equal(strlen(f.f[0]), ELK_SIM_RUN_ID_LEN);
    assert_int_equal(strspn(f.f[0], "0123456789abcdef"), ELK_SIM_RUN_ID_LEN);
    assert_string_equal(f.f[1], "3600"); /* up an hour before the net was set up */
    assert_string_equal(f.f[2], "");     /* marker missing: created now */
    assert_string_equal(f.f[3], "1");
    assert_node_time(f.f[4], 1);
    snprintf(first, sizeof first, "%s", f.f[0]);
    run_until(core.now_us + 2000000);
    f = probe(&t);
    assert_string_equal(f.f[0], first);
    assert_string_equal(f.f[1], "3602");
    /* the marker holds the run_id that wrote it, "@" and the TIME it was written at */
    assert_true(is_marker_of(f.f[2], first));
    /* Restart without the data: new run_id, uptime from 0, marker gone, AOF off. */
    f = restart_and_probe(&t, ELK_SIM_RESTART_LOSE);
    assert_string_not_equal(f.f[0], first);
    assert_string_equal(f.f[1], "0");
    assert_string_equal(f.f[2], "");
    assert_string_equal(f.f[3], "0");
    snprintf(first, sizeof first, "%s", f.f[0]);
    /* A forward step of the wall clock counts in the uptime, as in Redis; a backward step
     * past the start leaves no uptime to read. */
    elk_sim_net_clock_jump(&net, 1, 5000000);
    f = probe(&t);
    assert_string_equal(f.f[1], "5");
    assert_node_time(f.f[4], 1);
    elk_sim_net_clock_jump(&net, 1, -9000000);
    assert_string_equal(probe(&t).f[1], "");
    /* Restart with the data: the marker of the earlier run survived. */
    f = restart_and_probe(&t, ELK_SIM_RESTART_KEEP);
    assert_string_not_equal(f.f[0], first);
    assert_true(is_marker_of(f.f[2], first));
    assert_string_equal(f.f[3], "1");
    /* Without +info: no run_id, uptime or AOF; the marker still answers. */
    net.nodes[1].info_denied = true;
    f = probe(&t);
    assert_string_equal(f.f[0], "");
    assert_string_equal(f.f[1], "");
    assert_true(is_marker_of(f.f[2], first));
    assert_string_equal(f.f[3], "");
    assert_true(strncmp(eval(&t, ELK_LOCK_SCRIPT_SAFETY, 0, ""), "-ERR", 4) == 0);
    assert_string_equal(call(&t, "DEL elk:marker"), ":1\r\n");
    assert_string_equal(probe(&t).f[2], "");
    assert_true(is_marker_of(strstr(call(&t, "GET elk:marker"), "\r\n") + 2, "0123456789abcdef"));
}

/* Issue 26: data lost without a restart. FLUSHALL empties the node and keeps the connection
 * (and the script cache); an eviction takes the keys with a TTL (and the marker when asked);
 * a failover resets the connection, and the empty replica has a new run_id and an hour's
 * uptime, so only the fleet marker (missing: the PROBE makes it, and says "") tells. */
static void test_flush_evict_failover(void **state)
{
    char first[64];
    (void)state;
    elk_transport_t t = connect_to(0, 1);
    fields_t f = probe(&t);
    snprintf(first, sizeof first, "%s", f.f[0]);
    assert_string_equal(call(&t, "SET L v PX 5000"), "+OK\r\n");
    assert_string_equal(call(&t, "SET L:f 7"), "+OK\r\n");
    elk_sim_net_flush(&net, 1);
    assert_string_equal(call(&t, "GET L"), "$-1\r\n"); /* the same connection answers */
    assert_string_equal(call(&t, "GET L:f"), "$-1\r\n");
    assert_string_equal(probe(&t).f[2], ""); /* the marker went too: made anew */
    assert_string_equal(call(&t, "SET L v PX 5000"), "+OK\r\n");
    assert_string_equal(call(&t, "SET L:f 7"), "+OK\r\n");
    elk_sim_net_evict(&net, 1, "elk:marker", false);
    assert_string_equal(call(&t, "GET L"), "$-1\r\n");
    assert_string_equal(call(&t, "GET L:f"), "$1\r\n7\r\n"); /* no TTL: kept */
    assert_true(is_marker_of(strstr(call(&t, "GET elk:marker"), "\r\n") + 2, first));
    elk_sim_net_evict(&net, 1, "elk:marker", true);
    assert_string_equal(call(&t, "GET elk:marker"), "$-1\r\n");
    f = probe(&t);
    assert_string_equal(f.f[2], "");
    elk_sim_net_failover(&net, 1);
    char reply[64];
    assert_int_equal(t.recv(t.ctx, (uint8_t *)reply, sizeof reply), ELK_E_CLOSED);
    t.close(t.ctx);
    t = connect_to(0, 1);
    assert_string_equal(call(&t, "GET L:f"), "$-1\r\n");
    f = probe(&t);
    assert_string_not_equal(f.f[0], first);
    assert_string_equal(f.f[1], "3600"); /* a replica up an hour: no restart to see */
    assert_string_equal(f.f[2], "");
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
    /* The simulator's parts alone, then the tests on a simulated network (setup_net). */
    int failed = ELK_RUN_TESTS(
        test_queue_orders_by_time_then_insertion, test_queue_full_is_an_error,
        test_rng_is_reproducible_and_seed_dependent, test_clock_rate_offset_and_inverse);
    return failed +
        ELK_RUN_EACH("net", setup_net, NULL, test_set_nx_px_get_expiry_on_node_clock,
                     test_hello3_switches_to_resp3, test_scripts_evalsha_noscript_and_restart,
                     test_lock_delay_marker, test_release_wakes_waiter_with_marker_gone,
                     test_probe_restarts_marker_and_uptime, test_flush_evict_failover,
                     test_partition_delays_but_never_reorders,
                     test_commit_noop_control_leaves_counters);
}
