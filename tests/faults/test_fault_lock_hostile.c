/* SPDX-License-Identifier: MIT */
/*
 * lib/lock (single-node mode) against elk-hostile-server, the pathology applied only
 * to the lock scripts (EVALSHA/EVAL); the handshake, SCRIPT LOAD and CONFIG GET are
 * answered well. Whatever the server sends, the engine must never report the lease
 * as acquired on a reply that is not a valid grant: ACQUIRE_FAILED comes with a named
 * error, elk_lock_is_held() stays false, nothing crashes (this binary also runs under
 * ASan and valgrind), and the pool is whole afterwards. The "valid" server is the
 * control case: there the same code path must see a grant (token 1), so a test that
 * only ever saw failures could not pass for the wrong reason.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "test_main.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elk/err.h"
#include "elk/lock.h"
#include "elk/node.h"
#include "elk/port_posix.h"
#include "elk_tooltest.h"
#include "ts_log.h"
#include "lock_events.h"
#include "stack.h"

#ifndef ELK_HOSTILE_BIN
#error "ELK_HOSTILE_BIN must name the elk-hostile-server binary"
#endif

#define POOL_BLOCKS 4

static struct {
    elk_entropy_t entropy;
    elk_ts_log_t log;
    elk_ts_stack_t st;
    elk_lock_t lock;
    elk_ts_events_t rec;
    bool held_seen;
} T;

static pid_t current_srv = -1;

static int acquired(void)
{
    return (int)elk_ts_events_count(&T.rec, ELK_LOCK_EV_ACQUIRED);
}
static int failed(void)
{
    return (int)elk_ts_events_count(&T.rec, ELK_LOCK_EV_ACQUIRE_FAILED);
}

/* The token of the last grant (0: none). */
static uint64_t token(void)
{
    const elk_lock_event_t *ev = elk_ts_events_last(&T.rec, ELK_LOCK_EV_ACQUIRED);
    return ev != NULL ? ev->token : 0;
}

/* The reason of the last failed acquire (ELK_OK: none). */
static int fail_err(void)
{
    const elk_lock_event_t *ev = elk_ts_events_last(&T.rec, ELK_LOCK_EV_ACQUIRE_FAILED);
    return ev != NULL ? ev->err : ELK_OK;
}

static void setup_client(int port)
{
    memset(&T, 0, sizeof T);
    elk_posix_entropy(&T.entropy);
    elk_ts_log_init(&T.log, 0, false);
    elk_node_config_t ncfg;
    elk_node_config_defaults(&ncfg);
    ncfg.resp3 = true;
    ncfg.connect_timeout_ms = 600;
    ncfg.request_timeout_ms = 400;
    ncfg.backoff_min_ms = 50;
    ncfg.backoff_max_ms = 200;
    elk_endpoint_t ep = {.host = "127.0.0.1", .port = (uint16_t)port};
    elk_ts_stack_opts_t o = {.count = 1,
                             .endpoints = &ep,
                             .node_cfg = &ncfg,
                             .gateway_id = "hostile-test",
                             .mode = ELK_MODE_SINGLE,
                             .pool_blocks = POOL_BLOCKS,
                             .entropy = &T.entropy,
                             .log = &T.log.log};
    assert_int_equal(elk_ts_stack_init(&T.st, &o), ELK_OK);
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    lc.ttl_ms = 3000;
    lc.stop_margin_ms = 100;
    lc.round_timeout_ms = 400;
    assert_int_equal(elk_lock_init(&T.lock, &T.st.client, "valve", &lc, elk_ts_events_on, &T.rec),
                     ELK_OK);
}

typedef bool (*cond_fn)(void);
typedef struct cond_box {
    cond_fn f;
} cond_box_t;

/* Whether cond() holds, noting on the way whether the lease was ever held. */
static bool check_cond(void *arg)
{
    if (elk_lock_is_held(&T.lock, elk_posix_now_ms()))
        T.held_seen = true;
    return ((const cond_box_t *)arg)->f();
}

static bool run_until(cond_fn cond, unsigned timeout_ms)
{
    cond_box_t c = {cond};
    return elk_ts_run_client(&T.st.client, check_cond, &c, timeout_ms, 50);
}

static bool ready(void)
{
    return elk_client_ready(&T.st.client);
}
static bool decided(void)
{
    return acquired() + failed() > 0;
}
static bool idle(void)
{
    return !elk_lock_busy(&T.lock);
}

static void teardown_client(void)
{
    uint64_t now = elk_posix_now_ms();
    if (elk_lock_state(&T.lock) != ELK_LOCK_IDLE)
        (void)elk_lock_release(&T.lock, now);
    (void)run_until(idle, 5000);
    assert_int_equal(elk_lock_deinit(&T.lock), ELK_OK);
    elk_ts_stack_close(&T.st);
    assert_int_equal(elk_pool_available(&T.st.pool), POOL_BLOCKS);
}

static pid_t start_server(const char *mode, const char *extra)
{
    char *argv[8] = {ELK_HOSTILE_BIN,       "--mode",      (char *)mode,
                     "--only=EVALSHA,EVAL", (char *)extra, NULL};
    int port;
    pid_t pid = elk_tt_spawn(argv, &port, 1, 5000);
    assert_true(pid > 0);
    current_srv = pid;
    setup_client(port);
    return pid;
}

static void stop_server(pid_t pid)
{
    current_srv = -1;
    elk_tt_stop(pid);
}

/* One acquire round against MODE: returns after the round is decided. */
static void one_round(const char *mode, const char *extra)
{
    pid_t srv = start_server(mode, extra);
    if (!run_until(ready, 10000))
        fail_msg("%s: client never ready (node %s, %s)", mode,
                 elk_node_state_name(elk_node_state(&T.st.nodes[0])),
                 elk_err_name(elk_node_stats(&T.st.nodes[0])->last_error));
    int rc = elk_lock_acquire(&T.lock, elk_posix_now_ms(), 0);
    assert_int_equal(rc, ELK_E_WOULD_BLOCK);
    if (!run_until(decided, 10000))
        fail_msg("%s: acquire round never decided (state %s)", mode,
                 elk_lock_state_name(elk_lock_state(&T.lock)));
    (void)srv;
}

static void test_valid_server_grants(void **state)
{
    (void)state;
    one_round("valid", NULL);
    assert_int_equal(acquired(), 1);
    assert_int_equal(failed(), 0);
    assert_true(T.held_seen);
    assert_int_equal(token(), 1); /* the valid server answers ":1": counter after INCR */
    print_message("valid        -> ACQUIRED token %llu (control case)\n",
                  (unsigned long long)token());
    teardown_client();
    stop_server(current_srv);
}

static void test_hostile_never_grants(void **state)
{
    (void)state;
    static const struct {
        const char *mode, *extra;
    } cases[] = {
        {"wrong-type", NULL}, /* "+OK" to EVALSHA: not a counter */
        {"garbage", "--after=0"}, {"huge", NULL},         {"huge-array", NULL},
        {"negative", NULL},       {"deep", NULL},         {"bad-type", NULL},
        {"truncated", NULL},      {"random", "--seed=3"}, {"endless", NULL},
        {"silent", NULL},         {"close", NULL},        {"drip", "--drip-ms=300"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        one_round(cases[i].mode, cases[i].extra);
        if (acquired() != 0 || T.held_seen)
            fail_msg("%s: the lease was reported acquired on a hostile reply (token %llu)",
                     cases[i].mode, (unsigned long long)token());
        assert_int_equal(failed(), 1);
        if (fail_err() >= 0 || strcmp(elk_err_name(fail_err()), "ELK_E_UNKNOWN") == 0)
            fail_msg("%s: ACQUIRE_FAILED without a named error (%d)", cases[i].mode, fail_err());
        print_message("%-12s -> ACQUIRE_FAILED %s\n", cases[i].mode, elk_err_name(fail_err()));
        teardown_client();
        stop_server(current_srv);
    }
}

static int teardown(void **state)
{
    (void)state;
    if (current_srv > 0) {
        elk_ts_stack_close(&T.st);
        elk_tt_stop(current_srv);
        current_srv = -1;
    }
    return 0;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    return ELK_RUN_EACH("tests", NULL, teardown, test_valid_server_grants,
                        test_hostile_never_grants);
}
