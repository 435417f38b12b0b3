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

#ifndef ELK_HOSTILE_BIN
#error "ELK_HOSTILE_BIN must name the elk-hostile-server binary"
#endif

#define POOL_BLOCKS 4

static _Alignas(8) uint8_t pool_mem[POOL_BLOCKS * CONFIG_ELK_POOL_BLOCK_SIZE];

static struct {
    elk_pool_t pool;
    elk_entropy_t entropy;
    elk_log_t log;
    elk_posix_tcp_t tcp;
    elk_transport_t tr;
    elk_node_t node;
    elk_fleet_t fleet;
    elk_client_t client;
    elk_lock_t lock;
    int acquired, failed, lost, released;
    int fail_err;
    uint64_t token;
    bool held_seen;
} T;

static pid_t current_srv = -1;

static void log_write(void *ctx, int level, const char *module, const char *text, size_t len)
{
    (void)ctx;
    if (getenv("ELK_TEST_VERBOSE") != NULL)
        fprintf(stderr, "  [%s %d] %.*s\n", module, level, (int)len, text);
}

static void on_event(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    (void)user;
    (void)lock;
    switch (ev->type) {
    case ELK_LOCK_EV_ACQUIRED:
        T.acquired++;
        T.token = ev->token;
        break;
    case ELK_LOCK_EV_ACQUIRE_FAILED:
        T.failed++;
        T.fail_err = ev->err;
        break;
    case ELK_LOCK_EV_LOST: T.lost++; break;
    case ELK_LOCK_EV_RELEASED: T.released++; break;
    default: break;
    }
}

static void setup_client(int port)
{
    memset(&T, 0, sizeof T);
    assert_int_equal(elk_pool_init(&T.pool, pool_mem, sizeof pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE,
                                   POOL_BLOCKS),
                     ELK_OK);
    elk_posix_entropy(&T.entropy);
    T.log.write = log_write;
    T.log.level = ELK_LOG_DEBUG;
    elk_node_config_t ncfg;
    elk_node_config_defaults(&ncfg);
    ncfg.endpoint.host = "127.0.0.1";
    ncfg.endpoint.port = (uint16_t)port;
    ncfg.resp3 = true;
    ncfg.connect_timeout_ms = 600;
    ncfg.request_timeout_ms = 400;
    ncfg.backoff_min_ms = 50;
    ncfg.backoff_max_ms = 200;
    assert_int_equal(elk_posix_tcp_init(&T.tcp, NULL, &T.tr), ELK_OK);
    assert_int_equal(elk_node_init(&T.node, &ncfg, &T.tr, &T.pool, &T.entropy, &T.log), ELK_OK);
    assert_int_equal(elk_fleet_init(&T.fleet, &T.node, 1), ELK_OK);
    elk_client_config_t cc;
    elk_client_config_defaults(&cc);
    cc.mode = ELK_MODE_SINGLE;
    cc.gateway_id = "hostile-test";
    assert_int_equal(elk_client_init(&T.client, &cc, &T.fleet, &T.entropy, &T.log), ELK_OK);
    elk_lock_config_t lc;
    elk_lock_config_defaults(&lc);
    lc.ttl_ms = 3000;
    lc.stop_margin_ms = 100;
    lc.round_timeout_ms = 400;
    assert_int_equal(elk_lock_init(&T.lock, &T.client, "valve", &lc, on_event, NULL), ELK_OK);
}

typedef bool (*cond_fn)(void);

static bool run_until(cond_fn cond, unsigned timeout_ms)
{
    uint64_t end = elk_posix_now_ms() + timeout_ms;
    for (;;) {
        uint64_t now = elk_posix_now_ms();
        uint64_t next = elk_client_poll(&T.client, now);
        if (elk_lock_is_held(&T.lock, now))
            T.held_seen = true;
        if (cond())
            return true;
        if (now >= end)
            return false;
        elk_wait_t w[2];
        size_t n = elk_fleet_waits(&T.fleet, w, 2);
        uint64_t until = next < end ? next : end;
        if (until > now + 50)
            until = now + 50;
        elk_posix_wait(w, n, until, NULL);
    }
}

static bool ready(void) { return elk_client_ready(&T.client); }
static bool decided(void) { return T.acquired + T.failed > 0; }
static bool idle(void) { return !elk_lock_busy(&T.lock); }

static void teardown_client(void)
{
    uint64_t now = elk_posix_now_ms();
    if (elk_lock_state(&T.lock) != ELK_LOCK_IDLE)
        (void)elk_lock_release(&T.lock, now);
    (void)run_until(idle, 5000);
    assert_int_equal(elk_lock_deinit(&T.lock), ELK_OK);
    elk_node_close(&T.node, elk_posix_now_ms());
    assert_int_equal(elk_pool_available(&T.pool), POOL_BLOCKS);
}

static pid_t start_server(const char *mode, const char *extra)
{
    char *argv[8] = {ELK_HOSTILE_BIN, "--mode", (char *)mode, "--only=EVALSHA,EVAL",
                     (char *)extra, NULL};
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
                 elk_node_state_name(elk_node_state(&T.node)),
                 elk_err_name(elk_node_stats(&T.node)->last_error));
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
    assert_int_equal(T.acquired, 1);
    assert_int_equal(T.failed, 0);
    assert_true(T.held_seen);
    assert_int_equal(T.token, 1); /* the valid server answers ":1": counter after INCR */
    print_message("valid        -> ACQUIRED token %llu (control case)\n",
                  (unsigned long long)T.token);
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
        {"garbage", "--after=0"},
        {"huge", NULL},
        {"huge-array", NULL},
        {"negative", NULL},
        {"deep", NULL},
        {"bad-type", NULL},
        {"truncated", NULL},
        {"random", "--seed=3"},
        {"endless", NULL},
        {"silent", NULL},
        {"close", NULL},
        {"drip", "--drip-ms=300"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        one_round(cases[i].mode, cases[i].extra);
        if (T.acquired != 0 || T.held_seen)
            fail_msg("%s: the lease was reported acquired on a hostile reply (token %llu)",
                     cases[i].mode, (unsigned long long)T.token);
        assert_int_equal(T.failed, 1);
        if (T.fail_err >= 0 || strcmp(elk_err_name(T.fail_err), "ELK_E_UNKNOWN") == 0)
            fail_msg("%s: ACQUIRE_FAILED without a named error (%d)", cases[i].mode, T.fail_err);
        print_message("%-12s -> ACQUIRE_FAILED %s\n", cases[i].mode, elk_err_name(T.fail_err));
        teardown_client();
        stop_server(current_srv);
    }
}

static int teardown(void **state)
{
    (void)state;
    if (current_srv > 0) {
        elk_node_close(&T.node, elk_posix_now_ms());
        elk_tt_stop(current_srv);
        current_srv = -1;
    }
    return 0;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_valid_server_grants, teardown),
        cmocka_unit_test_teardown(test_hostile_never_grants, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
