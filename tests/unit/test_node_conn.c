/* SPDX-License-Identifier: MIT */
/* Node connection state machine: every transition, the AUTH/HELLO/SELECT handshake,
 * connect timeout, backoff growth/cap/jitter/reset, pool exhaustion, close. All I/O
 * through the scripted transport, all time from the manual clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "test_main.h"

#include "elk/node.h"
#include "node_harness.h"

static node_harness_t h;

/* State-change recorder. */
typedef struct {
    int n;
    elk_node_state_t state[64];
    int err[64];
} state_rec_t;
static state_rec_t sr;

static void on_state(void *user, elk_node_t *node, elk_node_state_t st, int err)
{
    (void)node;
    state_rec_t *r = user;
    if (r->n < 64) {
        r->state[r->n] = st;
        r->err[r->n] = err;
        r->n++;
    }
}

static elk_node_t *setup1(const elk_node_config_t *cfg)
{
    node_harness_init(&h, 1, cfg);
    memset(&sr, 0, sizeof sr);
    elk_node_on_state(&h.nodes[0], on_state, &sr);
    return &h.nodes[0];
}

static elk_node_config_t base_cfg(void)
{
    elk_node_config_t c;
    elk_node_config_defaults(&c);
    c.endpoint.host = "10.0.0.7";
    c.endpoint.port = 6380;
    return c;
}

static void test_config_defaults(void **state)
{
    (void)state;
    elk_node_config_t c;
    memset(&c, 0xA5, sizeof c);
    elk_node_config_defaults(&c);
    assert_int_equal(c.connect_timeout_ms, 2000);
    assert_int_equal(c.request_timeout_ms, 1000);
    assert_int_equal(c.backoff_min_ms, 100);
    assert_int_equal(c.backoff_max_ms, 5000);
    assert_null(c.username);
    assert_null(c.password);
    assert_null(c.endpoint.host);
    assert_int_equal(c.db, 0);
    assert_false(c.resp3);
}

static void test_init_rejects_bad_arguments(void **state)
{
    (void)state;
    node_harness_init(&h, 1, NULL);
    elk_node_t n;
    elk_node_config_t c = base_cfg();
    assert_int_equal(elk_node_init(NULL, &c, &h.tr[0], &h.pool, &h.entropy_if, NULL),
                     ELK_E_INVALID_ARG);
    assert_int_equal(elk_node_init(&n, NULL, &h.tr[0], &h.pool, &h.entropy_if, NULL),
                     ELK_E_INVALID_ARG);
    assert_int_equal(elk_node_init(&n, &c, NULL, &h.pool, &h.entropy_if, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_node_init(&n, &c, &h.tr[0], NULL, &h.entropy_if, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_node_init(&n, &c, &h.tr[0], &h.pool, NULL, NULL), ELK_E_INVALID_ARG);
    elk_transport_t bad = h.tr[0];
    bad.recv = NULL;
    assert_int_equal(elk_node_init(&n, &c, &bad, &h.pool, &h.entropy_if, NULL), ELK_E_INVALID_ARG);
    c.endpoint.host = NULL;
    assert_int_equal(elk_node_init(&n, &c, &h.tr[0], &h.pool, &h.entropy_if, NULL),
                     ELK_E_INVALID_ARG);
    /* A zeroed config gets the documented defaults, not a spinning zero backoff. */
    memset(&c, 0, sizeof c);
    c.endpoint.host = "127.0.0.1";
    assert_int_equal(elk_node_init(&n, &c, &h.tr[0], &h.pool, &h.entropy_if, NULL), ELK_OK);
    assert_int_equal(n.cfg.backoff_min_ms, 100);
    assert_int_equal(n.cfg.connect_timeout_ms, 2000);
    assert_int_equal(elk_node_state(&n), ELK_NODE_DISCONNECTED);
    assert_false(elk_node_is_ready(&n));
    assert_int_equal(elk_node_wait(&n, NULL), -1);
}

static void test_state_names(void **state)
{
    (void)state;
    assert_string_equal(elk_node_state_name(ELK_NODE_DISCONNECTED), "disconnected");
    assert_string_equal(elk_node_state_name(ELK_NODE_CONNECTING), "connecting");
    assert_string_equal(elk_node_state_name(ELK_NODE_AUTH), "auth");
    assert_string_equal(elk_node_state_name(ELK_NODE_HELLO), "hello");
    assert_string_equal(elk_node_state_name(ELK_NODE_SELECT), "select");
    assert_string_equal(elk_node_state_name(ELK_NODE_READY), "ready");
    assert_string_equal(elk_node_state_name(ELK_NODE_BACKOFF), "backoff");
    assert_string_equal(elk_node_state_name((elk_node_state_t)99), "unknown");
}

static void test_plain_connect_goes_ready_in_one_poll(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    elk_node_t *n = setup1(&c);
    size_t free_before = elk_pool_available(&h.pool);
    uint64_t next = node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    assert_true(elk_node_is_ready(n));
    assert_int_equal(next, UINT64_MAX); /* nothing in flight: only the descriptor matters */
    assert_int_equal(h.ft[0].open_calls, 1);
    assert_string_equal(h.ft[0].last_endpoint.host, "10.0.0.7");
    assert_int_equal(h.ft[0].last_endpoint.port, 6380);
    assert_int_equal(h.ft[0].tx_total, 0); /* no AUTH/HELLO/SELECT configured */
    assert_int_equal(elk_pool_available(&h.pool), free_before - 2);
    assert_int_equal(sr.n, 2);
    assert_int_equal(sr.state[0], ELK_NODE_CONNECTING);
    assert_int_equal(sr.state[1], ELK_NODE_READY);
    assert_int_equal(elk_node_stats(n)->connects, 1);
    assert_int_equal(elk_node_stats(n)->failures, 0);
    assert_false(elk_node_stats(n)->resp3);
    unsigned ev = 0;
    assert_int_equal(elk_node_wait(n, &ev), 100);
    assert_true(ev & ELK_WAIT_READ);
    assert_false(ev & ELK_WAIT_WRITE);
    assert_true(fake_log_contains(&h.log, "10.0.0.7:6380 ready (RESP2)"));
}

static void test_connect_in_progress_over_several_polls(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    elk_node_t *n = setup1(&c);
    fake_transport_script_progress(&h.ft[0], 0);
    fake_transport_script_progress(&h.ft[0], 0);
    h.ft[0].wait_events = ELK_WAIT_WRITE; /* a TCP connect in progress waits for writable */
    uint64_t next = node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_CONNECTING);
    assert_int_equal(next, 1000 + 2000); /* the connect deadline */
    unsigned ev = 0;
    assert_int_equal(elk_node_wait(n, &ev), 100);
    assert_int_equal(ev, ELK_WAIT_WRITE);
    node_harness_advance(&h, 10);
    assert_int_equal(elk_node_state(n), ELK_NODE_CONNECTING);
    node_harness_advance(&h, 10);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    assert_int_equal(h.ft[0].progress_calls, 3);
}

static void test_open_refused_goes_to_backoff(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    elk_node_t *n = setup1(&c);
    size_t free_before = elk_pool_available(&h.pool);
    fake_transport_script_open(&h.ft[0], ELK_E_CONNECT_REFUSED);
    uint64_t next = node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_CONNECT_REFUSED);
    assert_int_equal(elk_node_stats(n)->failures, 1);
    assert_int_equal(elk_pool_available(&h.pool), free_before); /* blocks given back */
    assert_true(next >= 1000 + 50 && next <= 1000 + 100);
    assert_int_equal(sr.state[sr.n - 1], ELK_NODE_BACKOFF);
    assert_int_equal(sr.err[sr.n - 1], ELK_E_CONNECT_REFUSED);
    assert_true(fake_log_contains(&h.log, "ELK_E_CONNECT_REFUSED"));
    assert_int_equal(elk_node_wait(n, NULL), -1);
}

static void test_progress_error_goes_to_backoff(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    elk_node_t *n = setup1(&c);
    fake_transport_script_progress(&h.ft[0], ELK_E_TLS_UNKNOWN_CA);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_TLS_UNKNOWN_CA);
    assert_int_equal(h.ft[0].close_calls, 1);
    assert_false(h.ft[0].is_open);
}

static void test_backoff_waits_then_reconnects(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    elk_node_t *n = setup1(&c);
    fake_transport_script_open(&h.ft[0], ELK_E_CONNECT_REFUSED);
    uint64_t next = node_harness_poll(&h);
    assert_int_equal(h.ft[0].open_calls, 1);
    /* Polling early does nothing. */
    fake_clock_set(&h.clock, next - 1);
    assert_int_equal(node_harness_poll(&h), next);
    assert_int_equal(h.ft[0].open_calls, 1);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    fake_clock_set(&h.clock, next);
    node_harness_poll(&h);
    assert_int_equal(h.ft[0].open_calls, 2);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    assert_int_equal(elk_node_stats(n)->connects, 1);
}

static void test_connect_timeout(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.connect_timeout_ms = 500;
    elk_node_t *n = setup1(&c);
    for (int i = 0; i < 100; i++) {
        fake_transport_script_progress(&h.ft[0], 0);
    }
    node_harness_poll(&h);
    node_harness_advance(&h, 499);
    assert_int_equal(elk_node_state(n), ELK_NODE_CONNECTING);
    node_harness_advance(&h, 1);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_CONNECT_TIMEOUT);
    assert_int_equal(h.ft[0].close_calls, 1);
}

static void test_auth_user_and_password(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.username = "gw";
    c.password = "s3cret";
    elk_node_t *n = setup1(&c);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_AUTH);
    assert_true(
        fake_transport_sent_eq(&h.ft[0], "*3\r\n$4\r\nAUTH\r\n$2\r\ngw\r\n$6\r\ns3cret\r\n"));
    assert_int_equal(elk_node_send(n, h.clock.now, (elk_resp_arg_t[]){ELK_RESP_ARG_STR("PING")}, 1,
                                   0, reply_rec_cb, NULL),
                     ELK_E_NOT_CONNECTED);
    fake_transport_push_rx_split(&h.ft[0], "+OK\r\n", 2);
    node_harness_advance(&h, 5);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    assert_int_equal(sr.state[0], ELK_NODE_CONNECTING);
    assert_int_equal(sr.state[1], ELK_NODE_AUTH);
    assert_int_equal(sr.state[2], ELK_NODE_READY);
}

static void test_auth_password_only(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.password = "pw";
    elk_node_t *n = setup1(&c);
    node_harness_poll(&h);
    assert_true(fake_transport_sent_eq(&h.ft[0], "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n"));
    fake_transport_push_rx_str(&h.ft[0], "+OK\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
}

static void test_auth_refused(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.username = "gw";
    c.password = "wrong";
    elk_node_t *n = setup1(&c);
    node_harness_poll(&h);
    fake_transport_push_rx_str(
        &h.ft[0], "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_AUTH);
    assert_int_equal(elk_node_stats(n)->connects, 0);
    assert_int_equal(h.ft[0].close_calls, 1);
    assert_true(
        fake_log_contains(&h.log, "AUTH refused: WRONGPASS invalid username-password pair"));
    assert_int_equal(sr.err[sr.n - 1], ELK_E_AUTH);
}

static void test_auth_password_only_refused(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.password = "nope";
    elk_node_t *n = setup1(&c);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0],
                               "-ERR AUTH <password> called without any password configured\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_AUTH);
}

/* A server that answers the handshake with the wrong type (":1" to AUTH, a bulk string
 * to HELLO, ":0" to SELECT) must not be treated as having accepted it. */
static void test_handshake_wrong_reply_types(void **state)
{
    (void)state;
    static const struct {
        const char *password;
        bool resp3;
        uint32_t db;
        const char *reply;
    } cases[] = {
        {"pw", false, 0, ":1\r\n"},         {"pw", false, 0, "$2\r\nOK\r\n"},
        {NULL, true, 0, "$5\r\nhello\r\n"}, {NULL, true, 0, "+OK\r\n"},
        {NULL, false, 2, ":0\r\n"},         {NULL, false, 2, "+NOPE\r\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        elk_node_config_t c = base_cfg();
        c.password = cases[i].password;
        c.resp3 = cases[i].resp3;
        c.db = cases[i].db;
        elk_node_t *n = setup1(&c);
        node_harness_poll(&h);
        fake_transport_push_rx_str(&h.ft[0], cases[i].reply);
        node_harness_poll(&h);
        assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
        assert_int_equal(elk_node_stats(n)->last_error, ELK_E_UNEXPECTED_REPLY);
        assert_int_equal(elk_node_stats(n)->connects, 0);
    }
}

static void test_hello3_accepted(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.resp3 = true;
    elk_node_t *n = setup1(&c);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_HELLO);
    assert_true(fake_transport_sent_eq(&h.ft[0], "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"));
    fake_transport_push_rx_split(
        &h.ft[0],
        "%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.11\r\n"
        "$5\r\nproto\r\n:3\r\n",
        7);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    assert_true(elk_node_stats(n)->resp3);
    assert_true(fake_log_contains(&h.log, "ready (RESP3)"));
}

static void test_hello3_refused_falls_back_to_resp2(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.resp3 = true;
    elk_node_t *n = setup1(&c);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0],
                               "-ERR unknown command 'HELLO', with args beginning with: '3'\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    assert_false(elk_node_stats(n)->resp3);
    assert_int_equal(elk_node_stats(n)->failures, 0);
    assert_true(fake_log_contains(&h.log, "HELLO 3 refused, using RESP2"));
}

static void test_hello_noauth_is_an_auth_failure_not_a_fallback(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.resp3 = true; /* no password configured, but the server wants one */
    elk_node_t *n = setup1(&c);
    node_harness_poll(&h);
    fake_transport_push_rx_str(
        &h.ft[0],
        "-NOAUTH HELLO must be called with the client already authenticated, "
        "otherwise the HELLO <proto> AUTH <user> <pass> option can be used\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_AUTH);
    assert_true(fake_log_contains(&h.log, "server requires AUTH (configure a password): NOAUTH"));
}

static void test_select_noauth_is_an_auth_failure(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.db = 1;
    elk_node_t *n = setup1(&c);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "-NOAUTH Authentication required.\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_AUTH);
}

static void test_full_handshake_sequence(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.username = "u";
    c.password = "p";
    c.resp3 = true;
    c.db = 12;
    elk_node_t *n = setup1(&c);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_AUTH);
    assert_true(fake_transport_sent_eq(&h.ft[0], "*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$1\r\np\r\n"));
    fake_transport_clear_sent(&h.ft[0]);
    fake_transport_push_rx_str(&h.ft[0], "+OK\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_HELLO);
    assert_true(fake_transport_sent_eq(&h.ft[0], "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"));
    fake_transport_clear_sent(&h.ft[0]);
    fake_transport_push_rx_str(&h.ft[0], "%1\r\n+proto\r\n:3\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_SELECT);
    assert_true(fake_transport_sent_eq(&h.ft[0], "*2\r\n$6\r\nSELECT\r\n$2\r\n12\r\n"));
    fake_transport_push_rx_str(&h.ft[0], "+OK\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    int want[] = {ELK_NODE_CONNECTING, ELK_NODE_AUTH, ELK_NODE_HELLO, ELK_NODE_SELECT,
                  ELK_NODE_READY};
    assert_int_equal(sr.n, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(sr.state[i], want[i]);
    }
    assert_true(fake_log_contains(&h.log, "ready (RESP3, db 12)"));
}

static void count_push(void *user, elk_node_t *node, const elk_resp_reply_t *push)
{
    (void)node;
    (void)push;
    (*(int *)user)++;
}

/* A handshake reply is judged between reads of one receive pass: what came behind it in
 * the same read is routed at once in the new state, and the pass goes on where it was (a
 * short read took all there was, so it reads no more). */
static void test_handshake_reply_and_what_follows_it_in_one_read(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.password = "pw";
    elk_node_t *n = setup1(&c);
    int pushes = 0;
    elk_node_on_push(n, count_push, &pushes);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_AUTH);
    fake_transport_push_rx_str(&h.ft[0], "+OK\r\n>2\r\n$7\r\nmessage\r\n$1\r\nx\r\n");
    unsigned recvs = h.ft[0].recv_calls;
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    assert_int_equal(pushes, 1);
    /* One recv in the AUTH step, one in the READY step that follows in the same poll. */
    assert_int_equal(h.ft[0].recv_calls - recvs, 2);
}

static void test_select_refused(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.db = 99;
    elk_node_t *n = setup1(&c);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_SELECT);
    fake_transport_push_rx_str(&h.ft[0], "-ERR DB index is out of range\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_SELECT);
    assert_true(fake_log_contains(&h.log, "SELECT refused: ERR DB index is out of range"));
}

static void test_handshake_counts_against_connect_timeout(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.password = "p";
    c.connect_timeout_ms = 300;
    elk_node_t *n = setup1(&c);
    fake_transport_script_progress(&h.ft[0], 0);
    node_harness_poll(&h);         /* t=1000 connecting */
    node_harness_advance(&h, 200); /* t=1200 AUTH sent */
    assert_int_equal(elk_node_state(n), ELK_NODE_AUTH);
    assert_int_equal(node_harness_advance(&h, 50), 1300); /* deadline counts from 1000 */
    node_harness_advance(&h, 50); /* t=1300: the whole sequence took too long */
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_CONNECT_TIMEOUT);
}

static void test_peer_closes_during_handshake(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.password = "p";
    elk_node_t *n = setup1(&c);
    node_harness_poll(&h);
    fake_transport_push_rx_result(&h.ft[0], ELK_E_CLOSED);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_CLOSED);
}

/* Fail the connect every time and collect the delays poll reports. */
static void collect_delays(elk_node_t *n, uint32_t *out, int count)
{
    for (int i = 0; i < count; i++) {
        fake_transport_script_open(&h.ft[0], ELK_E_CONNECT_REFUSED);
        uint64_t now = h.clock.now;
        uint64_t next = node_harness_poll(&h);
        assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
        out[i] = (uint32_t)(next - now);
        fake_clock_set(&h.clock, next);
    }
}

static void test_backoff_grows_and_caps_min_jitter(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.backoff_min_ms = 100;
    c.backoff_max_ms = 1000;
    elk_node_t *n = setup1(&c);
    fake_entropy_set_fixed(&h.entropy, 0x00); /* jitter 0: delay = d/2 exactly */
    uint32_t d[7];
    collect_delays(n, d, 7);
    uint32_t want[7] = {50, 100, 200, 400, 500, 500, 500};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(d[i], want[i]);
    }
}

static void test_backoff_jitter_stays_in_range_and_varies(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.backoff_min_ms = 100;
    c.backoff_max_ms = 3200;
    elk_node_t *n = setup1(&c);
    uint32_t d[40];
    collect_delays(n, d, 40);
    uint32_t base = 100;
    int distinct_at_cap = 0;
    uint32_t first_at_cap = 0;
    for (int i = 0; i < 40; i++) {
        assert_true(d[i] >= base - base / 2);
        assert_true(d[i] <= base);
        if (base == 3200) {
            if (first_at_cap == 0) {
                first_at_cap = d[i];
            } else if (d[i] != first_at_cap) {
                distinct_at_cap++;
            }
        }
        base = base * 2 > 3200 ? 3200 : base * 2;
    }
    assert_true(distinct_at_cap > 0); /* jitter really comes from the entropy source */
    assert_true(h.entropy.calls >= 40);
}

static void test_backoff_without_entropy_uses_full_delay(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    elk_node_t *n = setup1(&c);
    fake_entropy_fail_next(&h.entropy, 1);
    uint32_t d[1];
    collect_delays(n, d, 1);
    assert_int_equal(d[0], 100);
}

static void test_backoff_resets_after_successful_connect(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.backoff_min_ms = 100;
    c.backoff_max_ms = 10000;
    elk_node_t *n = setup1(&c);
    fake_entropy_set_fixed(&h.entropy, 0x00);
    uint32_t d[4];
    collect_delays(n, d, 4);
    assert_int_equal(d[3], 400);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    /* The connection drops: the next delay starts from the minimum again. */
    fake_transport_push_rx_result(&h.ft[0], ELK_E_IO);
    uint64_t now = h.clock.now;
    uint64_t next = node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(next - now, 50);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_IO);
    assert_int_equal(elk_node_stats(n)->failures, 5);
}

static void test_pool_exhaustion_is_a_failure_not_a_crash(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    elk_node_t *n = setup1(&c);
    uint8_t *taken[NODE_HARNESS_POOL_BLOCKS];
    size_t k = 0;
    /* Leave one block: the node gets tx but not rx, and must give tx back. */
    while (elk_pool_available(&h.pool) > 1) {
        assert_int_equal(elk_pool_get(&h.pool, &taken[k]), ELK_OK);
        k++;
    }
    uint64_t next = node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_POOL_EMPTY);
    assert_int_equal(elk_pool_available(&h.pool), 1);
    assert_int_equal(h.ft[0].open_calls, 0);
    assert_true(fake_log_contains(&h.log, "ELK_E_POOL_EMPTY"));
    for (size_t i = 0; i < k; i++) {
        assert_int_equal(elk_pool_put(&h.pool, taken[i]), ELK_OK);
    }
    fake_clock_set(&h.clock, next);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
}

static void test_close_returns_blocks_and_poll_reconnects(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    elk_node_t *n = setup1(&c);
    size_t free0 = elk_pool_available(&h.pool);
    node_harness_poll(&h);
    assert_int_equal(elk_pool_available(&h.pool), free0 - 2);
    elk_node_close(n, h.clock.now);
    assert_int_equal(elk_node_state(n), ELK_NODE_DISCONNECTED);
    assert_int_equal(elk_pool_available(&h.pool), free0);
    assert_int_equal(h.ft[0].close_calls, 1);
    assert_int_equal(elk_node_stats(n)->failures, 0);
    elk_node_close(n, h.clock.now); /* twice is harmless */
    assert_int_equal(h.ft[0].close_calls, 1);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    assert_int_equal(elk_node_stats(n)->connects, 2);
}

static reply_rec_t ready_rec;

/* On READY, queue a command from inside the state handler (what the lock engine does
 * to load its scripts). */
static void send_on_ready(void *user, elk_node_t *node, elk_node_state_t st, int err)
{
    on_state(user, node, st, err);
    if (st == ELK_NODE_READY) {
        elk_resp_arg_t argv[] = {ELK_RESP_ARG_STR("SCRIPT"), ELK_RESP_ARG_STR("LOAD"),
                                 ELK_RESP_ARG_STR("return 1")};
        assert_int_equal(elk_node_send(node, h.clock.now, argv, 3, 0, reply_rec_cb, &ready_rec),
                         ELK_OK);
    }
}

static void test_state_handler_may_send_on_ready(void **state)
{
    (void)state;
    elk_node_config_t c = base_cfg();
    c.password = "p";
    elk_node_t *n = setup1(&c);
    reply_rec_init(&ready_rec);
    elk_node_on_state(n, send_on_ready, &sr);
    node_harness_poll(&h);
    fake_transport_clear_sent(&h.ft[0]);
    fake_transport_push_rx_str(&h.ft[0], "+OK\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    /* Sent in the same poll that reached READY. */
    assert_true(
        fake_transport_sent_eq(&h.ft[0], "*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n$8\r\nreturn 1\r\n"));
    fake_transport_push_rx_str(&h.ft[0], "$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n");
    node_harness_poll(&h);
    assert_last_reply(&ready_rec, 1, ELK_OK, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}

static void test_null_node_is_harmless(void **state)
{
    (void)state;
    assert_int_equal(elk_node_poll(NULL, 5), UINT64_MAX);
    elk_node_close(NULL, 5);
    assert_int_equal(elk_node_state(NULL), ELK_NODE_DISCONNECTED);
    assert_false(elk_node_is_ready(NULL));
    assert_null(elk_node_stats(NULL));
    assert_int_equal(elk_node_inflight(NULL), 0);
    unsigned ev = 7;
    assert_int_equal(elk_node_wait(NULL, &ev), -1);
    assert_int_equal(ev, 0);
}

int main(void)
{
    return ELK_RUN_TESTS(
        test_config_defaults, test_init_rejects_bad_arguments, test_state_names,
        test_plain_connect_goes_ready_in_one_poll, test_connect_in_progress_over_several_polls,
        test_open_refused_goes_to_backoff, test_progress_error_goes_to_backoff,
        test_backoff_waits_then_reconnects, test_connect_timeout, test_auth_user_and_password,
        test_auth_password_only, test_auth_refused, test_auth_password_only_refused,
        test_handshake_wrong_reply_types, test_hello3_accepted,
        test_hello3_refused_falls_back_to_resp2,
        test_hello_noauth_is_an_auth_failure_not_a_fallback, test_select_noauth_is_an_auth_failure,
        test_full_handshake_sequence, test_handshake_reply_and_what_follows_it_in_one_read,
        test_select_refused, test_handshake_counts_against_connect_timeout,
        test_peer_closes_during_handshake, test_backoff_grows_and_caps_min_jitter,
        test_backoff_jitter_stays_in_range_and_varies, test_backoff_without_entropy_uses_full_delay,
        test_backoff_resets_after_successful_connect, test_pool_exhaustion_is_a_failure_not_a_crash,
        test_close_returns_blocks_and_poll_reconnects, test_state_handler_may_send_on_ready,
        test_null_node_is_harmless);
}
