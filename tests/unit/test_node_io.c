/* SPDX-License-Identifier: MIT */
/* Node requests: exact bytes on the wire, pipelining with replies split across recv
 * calls and polls, deadlines (late replies, timeouts failing every caller), queue and
 * buffer limits, short writes, RESP3 pushes and RESP2 subscriber mode, callbacks that
 * send or close, malformed / oversized / unexpected replies, peer close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "test_main.h"

#include "elk/node.h"
#include "node_harness.h"

static node_harness_t h;
static reply_rec_t rec;

static elk_node_t *ready_node(bool resp3)
{
    elk_node_config_t c;
    elk_node_config_defaults(&c);
    c.endpoint.host = "127.0.0.1";
    c.endpoint.port = 7000;
    c.resp3 = resp3;
    node_harness_init(&h, 1, &c);
    reply_rec_init(&rec);
    node_harness_poll(&h);
    if (resp3) {
        fake_transport_push_rx_str(&h.ft[0], "%1\r\n+proto\r\n:3\r\n");
        node_harness_poll(&h);
    }
    assert_int_equal(elk_node_state(&h.nodes[0]), ELK_NODE_READY);
    fake_transport_clear_sent(&h.ft[0]);
    return &h.nodes[0];
}

static int send_cmd2(elk_node_t *n, const char *a, const char *b, uint64_t deadline)
{
    elk_resp_arg_t argv[2] = {elk_resp_arg_cstr(a), elk_resp_arg_cstr(b)};
    return elk_node_send(n, h.clock.now, argv, b != NULL ? 2 : 1, deadline, reply_rec_cb, &rec);
}

static void test_send_puts_exact_resp_on_the_wire(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    elk_resp_arg_t argv[] = {ELK_RESP_ARG_STR("SET"), ELK_RESP_ARG_STR("lk{r}"),
                             elk_resp_arg_bytes((const uint8_t *)"a\0b", 3), ELK_RESP_ARG_STR("PX"),
                             elk_resp_arg_int(10000)};
    assert_int_equal(elk_node_send(n, h.clock.now, argv, 5, 0, reply_rec_cb, &rec), ELK_OK);
    /* Nothing goes out from inside send. */
    assert_int_equal(h.ft[0].send_calls, 0);
    assert_int_equal(elk_node_inflight(n), 1);
    unsigned ev = 0;
    elk_node_wait(n, &ev);
    assert_true(ev & ELK_WAIT_WRITE);
    node_harness_poll(&h);
    size_t len;
    const uint8_t *sent = fake_transport_sent(&h.ft[0], &len);
    const char want[] =
        "*5\r\n$3\r\nSET\r\n$5\r\nlk{r}\r\n$3\r\na\0b\r\n$2\r\nPX\r\n$5\r\n10000\r\n";
    assert_int_equal(len, sizeof want - 1);
    assert_memory_equal(sent, want, len);
    assert_int_equal(rec.n, 0);
    fake_transport_push_rx_str(&h.ft[0], "+OK\r\n");
    node_harness_advance(&h, 3);
    assert_int_equal(rec.n, 1);
    assert_int_equal(rec.status[0], ELK_OK);
    assert_int_equal(rec.type[0], ELK_RESP_SIMPLE);
    assert_string_equal(rec.text[0], "OK");
    assert_int_equal(elk_node_stats(n)->last_rtt_ms, 3);
    assert_int_equal(elk_node_inflight(n), 0);
}

static void test_send_argument_checks(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    elk_resp_arg_t argv[1] = {ELK_RESP_ARG_STR("PING")};
    assert_int_equal(elk_node_send(NULL, 0, argv, 1, 0, NULL, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_node_send(n, 0, NULL, 1, 0, NULL, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_node_send(n, 0, argv, 0, 0, NULL, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_node_send_noreply(n, NULL, 1), ELK_E_INVALID_ARG);
    elk_node_close(n, h.clock.now);
    assert_int_equal(elk_node_send(n, 0, argv, 1, 0, reply_rec_cb, &rec), ELK_E_NOT_CONNECTED);
    assert_int_equal(elk_node_send_noreply(n, argv, 1), ELK_E_NOT_CONNECTED);
    assert_int_equal(rec.n, 0);
}

static void test_pipelined_replies_split_across_recvs_and_polls(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    assert_int_equal(send_cmd2(n, "GET", "a", 0), ELK_OK);
    assert_int_equal(send_cmd2(n, "INCR", "c", 0), ELK_OK);
    assert_int_equal(send_cmd2(n, "GET", "missing", 0), ELK_OK);
    assert_int_equal(send_cmd2(n, "LRANGE", "l", 0), ELK_OK);
    node_harness_poll(&h);
    assert_true(fake_transport_sent_eq(&h.ft[0],
                                       "*2\r\n$3\r\nGET\r\n$1\r\na\r\n"
                                       "*2\r\n$4\r\nINCR\r\n$1\r\nc\r\n"
                                       "*2\r\n$3\r\nGET\r\n$7\r\nmissing\r\n"
                                       "*2\r\n$6\r\nLRANGE\r\n$1\r\nl\r\n"));
    const char *replies = "$5\r\nhello\r\n:42\r\n$-1\r\n*2\r\n$1\r\nx\r\n$2\r\nyz\r\n";
    size_t total = strlen(replies);
    /* First 9 bytes one per poll: the first reply is still incomplete. */
    for (size_t i = 0; i < 9; i++) {
        unsigned recvs = h.ft[0].recv_calls;
        fake_transport_push_rx(&h.ft[0], replies + i, 1);
        node_harness_poll(&h);
        /* One byte is a short read: it took all there was, so no second recv. */
        assert_int_equal(h.ft[0].recv_calls - recvs, 1);
    }
    assert_int_equal(rec.n, 0);
    /* Bytes 10 and 11 complete "hello"; then 3-byte chunks over several polls. */
    fake_transport_push_rx(&h.ft[0], replies + 9, 2);
    node_harness_poll(&h);
    assert_int_equal(rec.n, 1);
    for (size_t off = 11; off < total; off += 3) {
        fake_transport_push_rx(&h.ft[0], replies + off, total - off < 3 ? total - off : 3);
        node_harness_poll(&h);
    }
    assert_int_equal(rec.n, 4);
    assert_int_equal(rec.type[0], ELK_RESP_BULK);
    assert_string_equal(rec.text[0], "hello");
    assert_int_equal(rec.type[1], ELK_RESP_INTEGER);
    assert_int_equal(rec.integer[1], 42);
    assert_int_equal(rec.type[2], ELK_RESP_NULL_BULK);
    assert_int_equal(rec.type[3], ELK_RESP_ARRAY);
    assert_int_equal(rec.integer[3], 2);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rec.status[i], ELK_OK);
    }
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
}

/* Completions tagged with the request they went to (user points at its tag). */
static int tag_order[8];
static char tag_text[8][16];
static size_t tag_n;

static void tag_cb(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    const elk_resp_node_t *top = elk_resp_reply_top(reply, NULL);
    (void)node;
    assert_int_equal(status, ELK_OK);
    assert_non_null(top);
    assert_true(tag_n < 8u && top->len < sizeof tag_text[0]);
    tag_order[tag_n] = *(const int *)user;
    memcpy(tag_text[tag_n], top->str, top->len);
    tag_text[tag_n][top->len] = '\0';
    tag_n++;
}

static void test_each_pipelined_reply_goes_to_the_request_that_asked(void **state)
{
    (void)state;
    static const int tags[3] = {1, 2, 3};
    elk_node_t *n = ready_node(false);
    tag_n = 0;
    for (int i = 0; i < 3; i++) {
        char key[2] = {(char)('a' + i), '\0'};
        elk_resp_arg_t argv[2] = {elk_resp_arg_cstr("GET"), elk_resp_arg_cstr(key)};
        assert_int_equal(elk_node_send(n, h.clock.now, argv, 2, 0, tag_cb, (void *)&tags[i]),
                         ELK_OK);
    }
    node_harness_poll(&h);
    /* All three answers arrive in one read: the oldest request gets the first. */
    fake_transport_push_rx_str(&h.ft[0], "$2\r\nva\r\n$2\r\nvb\r\n$2\r\nvc\r\n");
    node_harness_poll(&h);
    assert_int_equal(tag_n, 3);
    for (int i = 0; i < 3; i++) {
        char want[3] = {'v', (char)('a' + i), '\0'};
        assert_int_equal(tag_order[i], tags[i]);
        assert_string_equal(tag_text[i], want);
    }
    assert_int_equal(elk_node_inflight(n), 0);
}

static void test_redis_error_reply_is_delivered_not_fatal(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    send_cmd2(n, "EVALSHA", "abc", 0);
    send_cmd2(n, "PING", NULL, 0);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "-NOSCRIPT No matching script.\r\n+PONG\r\n");
    node_harness_poll(&h);
    assert_int_equal(rec.n, 2);
    assert_int_equal(rec.status[0], ELK_OK);
    assert_int_equal(rec.type[0], ELK_RESP_ERROR);
    assert_string_equal(rec.text[0], "NOSCRIPT No matching script.");
    assert_string_equal(rec.text[1], "PONG");
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
}

static void test_next_time_is_earliest_deadline(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    send_cmd2(n, "PING", NULL, 5000);
    send_cmd2(n, "PING", NULL, 1300);
    send_cmd2(n, "PING", NULL, 0); /* default: now + 1000 = 2000 */
    assert_int_equal(node_harness_poll(&h), 1300);
    assert_int_equal(elk_node_poll(n, 1299), 1300);
    assert_int_equal(rec.n, 0);
}

static void test_reply_after_deadline_is_a_timeout(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    send_cmd2(n, "SET", "k", 1100);
    node_harness_poll(&h);
    fake_clock_set(&h.clock, 1100);
    fake_transport_push_rx_str(&h.ft[0], "+OK\r\n"); /* read only now: too late */
    node_harness_poll(&h);
    assert_int_equal(rec.n, 1);
    assert_int_equal(rec.status[0], ELK_E_TIMEOUT);
    assert_int_equal(rec.type[0], 0);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->timeouts, 1);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_TIMEOUT);
    assert_int_equal(h.ft[0].close_calls, 1);
}

static void test_reply_just_before_deadline_is_on_time(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    send_cmd2(n, "SET", "k", 1100);
    node_harness_poll(&h);
    fake_clock_set(&h.clock, 1099);
    fake_transport_push_rx_str(&h.ft[0], "+OK\r\n");
    node_harness_poll(&h);
    assert_int_equal(rec.n, 1);
    assert_int_equal(rec.status[0], ELK_OK);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
}

static void test_timeout_fails_every_inflight_and_reconnects(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    size_t free0 = elk_pool_available(&h.pool);
    send_cmd2(n, "GET", "a", 3000);
    send_cmd2(n, "GET", "b", 1200); /* expires first */
    send_cmd2(n, "GET", "c", 1200);
    send_cmd2(n, "GET", "d", 4000);
    uint64_t next = node_harness_poll(&h);
    assert_int_equal(next, 1200);
    fake_transport_push_rx_str(&h.ft[0], "$1\r\n"); /* half a reply: must not matter */
    node_harness_poll(&h);
    fake_clock_set(&h.clock, next);
    next = node_harness_poll(&h);
    assert_int_equal(rec.n, 4);
    assert_int_equal(rec.status[0], ELK_E_DISCONNECTED);
    assert_int_equal(rec.status[1], ELK_E_TIMEOUT);
    assert_int_equal(rec.status[2], ELK_E_TIMEOUT);
    assert_int_equal(rec.status[3], ELK_E_DISCONNECTED);
    assert_int_equal(elk_node_stats(n)->timeouts, 2);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_inflight(n), 0);
    assert_int_equal(elk_pool_available(&h.pool), free0 + 2);
    assert_true(next > 1200 && next <= 1300);
    /* After the backoff a fresh connection serves new requests. */
    fake_clock_set(&h.clock, next);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    fake_transport_clear_sent(&h.ft[0]);
    fake_transport_clear_rx(&h.ft[0]);
    send_cmd2(n, "PING", NULL, 0);
    node_harness_poll(&h);
    assert_true(fake_transport_sent_eq(&h.ft[0], "*1\r\n$4\r\nPING\r\n"));
    fake_transport_push_rx_str(&h.ft[0], "+PONG\r\n");
    node_harness_poll(&h);
    assert_last_reply(&rec, 5, ELK_OK, "PONG");
}

static void test_queue_full(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    for (int i = 0; i < CONFIG_ELK_NODE_MAX_INFLIGHT; i++) {
        assert_int_equal(send_cmd2(n, "PING", NULL, 0), ELK_OK);
    }
    assert_int_equal(send_cmd2(n, "PING", NULL, 0), ELK_E_QUEUE_FULL);
    assert_int_equal(elk_node_inflight(n), CONFIG_ELK_NODE_MAX_INFLIGHT);
    node_harness_poll(&h);
    for (int i = 0; i < CONFIG_ELK_NODE_MAX_INFLIGHT; i++) {
        fake_transport_push_rx_str(&h.ft[0], "+PONG\r\n");
    }
    node_harness_poll(&h);
    assert_int_equal(rec.n, CONFIG_ELK_NODE_MAX_INFLIGHT); /* the refused one never completes */
    assert_int_equal(send_cmd2(n, "PING", NULL, 0), ELK_OK);
}

static void test_command_larger_than_block(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    static uint8_t big[CONFIG_ELK_POOL_BLOCK_SIZE];
    memset(big, 'x', sizeof big);
    elk_resp_arg_t argv[] = {ELK_RESP_ARG_STR("SET"), ELK_RESP_ARG_STR("k"),
                             elk_resp_arg_bytes(big, sizeof big)};
    assert_int_equal(elk_node_send(n, h.clock.now, argv, 3, 0, reply_rec_cb, &rec),
                     ELK_E_BUF_TOO_SMALL);
    assert_int_equal(elk_node_inflight(n), 0);
    assert_int_equal(h.ft[0].tx_total, 0);
    /* The node is still usable. */
    assert_int_equal(send_cmd2(n, "PING", NULL, 0), ELK_OK);
}

static void test_short_writes_and_tx_block_full(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    static uint8_t val[CONFIG_ELK_POOL_BLOCK_SIZE * 2 / 5];
    memset(val, 'v', sizeof val);
    elk_resp_arg_t argv[] = {ELK_RESP_ARG_STR("SET"), ELK_RESP_ARG_STR("k"),
                             elk_resp_arg_bytes(val, sizeof val)};
    fake_transport_script_send(&h.ft[0], 7); /* a short write */
    fake_transport_script_send(&h.ft[0], 0); /* then the socket buffer is full */
    fake_transport_script_send(&h.ft[0], 0);
    assert_int_equal(elk_node_send(n, h.clock.now, argv, 3, 0, reply_rec_cb, &rec), ELK_OK);
    assert_int_equal(elk_node_send(n, h.clock.now, argv, 3, 0, reply_rec_cb, &rec), ELK_OK);
    /* A third does not fit next to two unsent ones. */
    assert_int_equal(elk_node_send(n, h.clock.now, argv, 3, 0, reply_rec_cb, &rec),
                     ELK_E_QUEUE_FULL);
    node_harness_poll(&h);
    size_t len;
    fake_transport_sent(&h.ft[0], &len);
    assert_int_equal(len, 7);
    unsigned ev = 0;
    elk_node_wait(n, &ev);
    assert_true(ev & ELK_WAIT_WRITE);
    /* After the first 7 bytes left, still no room for the third (only 7 bytes freed). */
    assert_int_equal(elk_node_send(n, h.clock.now, argv, 3, 0, reply_rec_cb, &rec),
                     ELK_E_QUEUE_FULL);
    node_harness_poll(&h); /* would block again */
    node_harness_poll(&h); /* default: everything goes */
    fake_transport_sent(&h.ft[0], &len);
    size_t one;
    elk_resp_encode_command(NULL, 0, argv, 3, &one);
    assert_int_equal(len, 2 * one);
    elk_node_wait(n, &ev);
    assert_false(ev & ELK_WAIT_WRITE);
    assert_int_equal(elk_node_send(n, h.clock.now, argv, 3, 0, reply_rec_cb, &rec), ELK_OK);
    /* The recording is exactly two whole commands followed by nothing else. */
    fake_cmd_t cmd;
    assert_int_equal(fake_transport_pop_command(&h.ft[0], &cmd), 1);
    assert_true(fake_cmd_is(&cmd, "set"));
    assert_int_equal(cmd.len[2], sizeof val);
    assert_int_equal(fake_transport_pop_command(&h.ft[0], &cmd), 1);
    assert_int_equal(fake_transport_pop_command(&h.ft[0], &cmd), 0);
}

static void test_send_error_fails_connection(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    send_cmd2(n, "PING", NULL, 0);
    fake_transport_script_send(&h.ft[0], ELK_E_IO);
    node_harness_poll(&h);
    assert_int_equal(rec.n, 1);
    assert_int_equal(rec.status[0], ELK_E_DISCONNECTED);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_IO);
}

static void test_peer_close_fails_inflight(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    send_cmd2(n, "GET", "a", 0);
    send_cmd2(n, "GET", "b", 0);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "$1\r\n1\r\n");
    fake_transport_push_rx_result(&h.ft[0], ELK_E_CLOSED);
    /* The reply comes in a short read, which ends this poll's reading; the close is
     * read on the next poll (a socket's descriptor stays readable at end of stream). */
    node_harness_poll(&h);
    assert_int_equal(rec.n, 1);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    node_harness_poll(&h);
    assert_int_equal(rec.n, 2);
    assert_int_equal(rec.status[0], ELK_OK);
    assert_string_equal(rec.text[0], "1");
    assert_int_equal(rec.status[1], ELK_E_DISCONNECTED);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_CLOSED);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
}

/* Push handler recorder. */
typedef struct {
    int n;
    int type[16];
    char kind[16][32];
    char payload[16][32];
    int close_on; /* close the node inside the handler on this push (1-based), 0 never */
} push_rec_t;
static push_rec_t pr;

static void copy_str(char *dst, size_t cap, const elk_resp_node_t *n)
{
    size_t len = n->str != NULL ? (n->len < cap - 1 ? n->len : cap - 1) : 0;
    if (len) {
        memcpy(dst, n->str, len);
    }
    dst[len] = '\0';
}

static void on_push(void *user, elk_node_t *node, const elk_resp_reply_t *push)
{
    push_rec_t *p = user;
    if (p->n >= 16) {
        return;
    }
    int i = p->n++;
    p->type[i] = push->nodes[0].type;
    if (push->count > 1) {
        copy_str(p->kind[i], sizeof p->kind[i], &push->nodes[1]);
    }
    if (push->count > 3) {
        copy_str(p->payload[i], sizeof p->payload[i], &push->nodes[3]);
    }
    if (p->close_on == p->n) {
        elk_node_close(node, 0);
    }
}

static void test_resp3_push_goes_to_handler_not_to_requests(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(true);
    memset(&pr, 0, sizeof pr);
    elk_node_on_push(n, on_push, &pr);
    elk_resp_arg_t sub[] = {ELK_RESP_ARG_STR("SUBSCRIBE"), ELK_RESP_ARG_STR("lk{r}:released")};
    assert_int_equal(elk_node_send_noreply(n, sub, 2), ELK_OK);
    assert_int_equal(elk_node_inflight(n), 0);
    send_cmd2(n, "GET", "a", 0);
    node_harness_poll(&h);
    assert_true(fake_transport_sent_eq(&h.ft[0],
                                       "*2\r\n$9\r\nSUBSCRIBE\r\n$14\r\nlk{r}:released\r\n"
                                       "*2\r\n$3\r\nGET\r\n$1\r\na\r\n"));
    fake_transport_push_rx_str(&h.ft[0],
                               ">3\r\n$9\r\nsubscribe\r\n$14\r\nlk{r}:released\r\n:1\r\n");
    fake_transport_push_rx_str(&h.ft[0],
                               ">3\r\n$7\r\nmessage\r\n$14\r\nlk{r}:released\r\n$4\r\nfree\r\n");
    fake_transport_push_rx_split(&h.ft[0], "$3\r\nval\r\n", 4);
    fake_transport_push_rx_str(&h.ft[0],
                               ">3\r\n$7\r\nmessage\r\n$14\r\nlk{r}:released\r\n$5\r\nagain\r\n");
    uint64_t next = node_harness_poll(&h);
    assert_int_equal(pr.n, 3);
    assert_int_equal(pr.type[0], ELK_RESP_PUSH);
    assert_string_equal(pr.kind[0], "subscribe");
    assert_string_equal(pr.kind[1], "message");
    assert_string_equal(pr.payload[1], "free");
    assert_string_equal(pr.payload[2], "again");
    assert_int_equal(rec.n, 1);
    assert_string_equal(rec.text[0], "val");
    assert_int_equal(next, UINT64_MAX);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
}

static void test_resp2_subscriber_mode(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    memset(&pr, 0, sizeof pr);
    elk_node_on_push(n, on_push, &pr);
    elk_node_set_subscriber(n, true);
    elk_resp_arg_t sub[] = {ELK_RESP_ARG_STR("SUBSCRIBE"), ELK_RESP_ARG_STR("a"),
                            ELK_RESP_ARG_STR("b")};
    assert_int_equal(elk_node_send_noreply(n, sub, 3), ELK_OK);
    send_cmd2(n, "PING", NULL, 0);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n");
    fake_transport_push_rx_str(&h.ft[0], "*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n");
    fake_transport_push_rx_str(&h.ft[0], "*2\r\n$4\r\npong\r\n$0\r\n\r\n"); /* PING's reply */
    fake_transport_push_rx_str(&h.ft[0], "*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$5\r\nhello\r\n");
    fake_transport_push_rx_str(&h.ft[0],
                               "*4\r\n$8\r\npmessage\r\n$2\r\na*\r\n$2\r\nab\r\n$1\r\nz\r\n");
    node_harness_poll(&h);
    assert_int_equal(pr.n, 4);
    assert_int_equal(pr.type[0], ELK_RESP_ARRAY);
    assert_string_equal(pr.kind[0], "subscribe");
    assert_string_equal(pr.kind[1], "subscribe");
    assert_string_equal(pr.kind[2], "message");
    assert_string_equal(pr.payload[2], "hello");
    assert_string_equal(pr.kind[3], "pmessage");
    assert_int_equal(rec.n, 1);
    assert_int_equal(rec.type[0], ELK_RESP_ARRAY);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
}

/* A refused SUBSCRIBE is answered in order (-NOPERM), not by a push: that error is the
 * SUBSCRIBE's, logged and handed to on_push. It must not go to the oldest request, or
 * every later reply goes to the request before its own (a renewal confirmed by another
 * request's reply). */
static void test_refused_subscribe_does_not_shift_replies(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(true);
    memset(&pr, 0, sizeof pr);
    elk_node_on_push(n, on_push, &pr);
    elk_resp_arg_t sub[] = {ELK_RESP_ARG_STR("SUBSCRIBE"), ELK_RESP_ARG_STR("lk{r}:released")};
    send_cmd2(n, "GET", "a", 0);
    assert_int_equal(elk_node_send_noreply(n, sub, 2), ELK_OK);
    send_cmd2(n, "GET", "b", 0);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "$2\r\nva\r\n");
    fake_transport_push_rx_str(&h.ft[0],
                               "-NOPERM this user has no permissions to access one "
                               "of the channels used as arguments\r\n");
    fake_transport_push_rx_str(&h.ft[0], "$2\r\nvb\r\n");
    node_harness_poll(&h);
    assert_int_equal(rec.n, 2);
    assert_int_equal(rec.type[0], ELK_RESP_BULK);
    assert_string_equal(rec.text[0], "va");
    assert_int_equal(rec.type[1], ELK_RESP_BULK);
    assert_string_equal(rec.text[1], "vb");
    assert_int_equal(pr.n, 1);
    assert_int_equal(pr.type[0], ELK_RESP_ERROR);
    assert_true(fake_log_contains(&h.log, "SUBSCRIBE refused (grant the channel pattern"));
    assert_true(fake_log_contains(&h.log, "release_channel = off): NOPERM this user"));
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    /* Confirmed or refused, it is no longer outstanding: the next error is a request's. */
    send_cmd2(n, "GET", "c", 0);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "-ERR c\r\n");
    node_harness_poll(&h);
    assert_int_equal(rec.n, 3);
    assert_int_equal(rec.type[2], ELK_RESP_ERROR);
    assert_int_equal(pr.n, 1);
}

/* Where a SUBSCRIBE's answer is due, a success reply means the stream is out of step. */
static void test_success_reply_where_subscribe_answer_due_fails_connection(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(true);
    elk_resp_arg_t sub[] = {ELK_RESP_ARG_STR("SUBSCRIBE"), ELK_RESP_ARG_STR("ch")};
    assert_int_equal(elk_node_send_noreply(n, sub, 2), ELK_OK);
    send_cmd2(n, "GET", "a", 0);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "$2\r\nva\r\n");
    node_harness_poll(&h);
    assert_int_equal(rec.n, 1);
    assert_int_equal(rec.status[0], ELK_E_DISCONNECTED);
    assert_int_not_equal(elk_node_state(n), ELK_NODE_READY);
}

/* Unconfirmed no-reply commands are bounded; a confirmation frees a place. */
static void test_noreply_queue_full(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(true);
    elk_resp_arg_t sub[] = {ELK_RESP_ARG_STR("SUBSCRIBE"), ELK_RESP_ARG_STR("ch")};
    for (unsigned i = 0; i < ELK_NODE_MAX_NOREPLY; i++) {
        assert_int_equal(elk_node_send_noreply(n, sub, 2), ELK_OK);
    }
    assert_int_equal(elk_node_send_noreply(n, sub, 2), ELK_E_QUEUE_FULL);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
    node_harness_poll(&h);
    assert_int_equal(elk_node_send_noreply(n, sub, 2), ELK_OK);
}

static void test_resp2_message_without_subscriber_mode_is_unexpected(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    memset(&pr, 0, sizeof pr);
    elk_node_on_push(n, on_push, &pr);
    fake_transport_push_rx_str(&h.ft[0], "*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$5\r\nhello\r\n");
    node_harness_poll(&h);
    assert_int_equal(pr.n, 0);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_UNEXPECTED_REPLY);
    assert_true(fake_log_contains(&h.log, "reply with no request pending"));
}

/* then-hook: send one more request from inside the callback (only once). */
static void send_again(reply_rec_t *r, elk_node_t *node, int status)
{
    (void)status;
    if (r->n == 1) {
        elk_resp_arg_t argv[] = {ELK_RESP_ARG_STR("GET"), ELK_RESP_ARG_STR("next")};
        assert_int_equal(elk_node_send(node, h.clock.now, argv, 2, 0, reply_rec_cb, r), ELK_OK);
        /* Not re-entrant: the new request's callback has not run. */
        assert_int_equal(r->n, 1);
    }
}

static void test_callback_sends_again(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    rec.then = send_again;
    send_cmd2(n, "GET", "first", 0);
    node_harness_poll(&h);
    fake_transport_clear_sent(&h.ft[0]);
    fake_transport_push_rx_str(&h.ft[0], "$1\r\n1\r\n");
    node_harness_poll(&h);
    assert_int_equal(rec.n, 1);
    /* The follow-up left in the same poll. */
    assert_true(fake_transport_sent_eq(&h.ft[0], "*2\r\n$3\r\nGET\r\n$4\r\nnext\r\n"));
    fake_transport_push_rx_str(&h.ft[0], "$1\r\n2\r\n");
    node_harness_poll(&h);
    assert_int_equal(rec.n, 2);
    assert_string_equal(rec.text[1], "2");
}

static void close_in_callback(reply_rec_t *r, elk_node_t *node, int status)
{
    (void)status;
    if (r->n == 1) {
        elk_node_close(node, h.clock.now);
        /* The other callers completed from inside close. */
        assert_int_equal(r->n, 3);
        assert_int_equal(elk_node_state(node), ELK_NODE_DISCONNECTED);
        elk_resp_arg_t argv[] = {ELK_RESP_ARG_STR("PING")};
        assert_int_equal(elk_node_send(node, 0, argv, 1, 0, reply_rec_cb, r), ELK_E_NOT_CONNECTED);
    }
}

static void test_callback_closes_node(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    size_t free0 = elk_pool_available(&h.pool);
    rec.then = close_in_callback;
    send_cmd2(n, "GET", "a", 0);
    send_cmd2(n, "GET", "b", 0);
    send_cmd2(n, "GET", "c", 0);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
    uint64_t next = node_harness_poll(&h);
    assert_int_equal(rec.n, 3);
    assert_int_equal(rec.status[0], ELK_OK);
    assert_int_equal(rec.status[1], ELK_E_DISCONNECTED);
    assert_int_equal(rec.status[2], ELK_E_DISCONNECTED);
    assert_int_equal(elk_node_state(n), ELK_NODE_DISCONNECTED);
    assert_int_equal(elk_pool_available(&h.pool), free0 + 2);
    assert_int_equal(next, h.clock.now); /* poll again to reconnect */
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
}

static void test_push_handler_closes_node(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(true);
    memset(&pr, 0, sizeof pr);
    pr.close_on = 1;
    elk_node_on_push(n, on_push, &pr);
    send_cmd2(n, "GET", "a", 0);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], ">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n$1\r\na\r\n");
    node_harness_poll(&h);
    assert_int_equal(pr.n, 1);
    assert_int_equal(rec.n, 1);
    assert_int_equal(rec.status[0], ELK_E_DISCONNECTED);
    assert_int_equal(elk_node_state(n), ELK_NODE_DISCONNECTED);
}

static void nested_poll(reply_rec_t *r, elk_node_t *node, int status)
{
    (void)r;
    (void)status;
    /* A nested poll must be a harmless no-op. */
    assert_int_equal(elk_node_poll(node, h.clock.now), h.clock.now);
}

static void test_nested_poll_is_refused(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    rec.then = nested_poll;
    send_cmd2(n, "GET", "a", 0);
    send_cmd2(n, "GET", "b", 0);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "$1\r\na\r\n$1\r\nb\r\n");
    node_harness_poll(&h);
    assert_int_equal(rec.n, 2);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
}

static void test_malformed_reply_drops_connection_then_reconnects(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    send_cmd2(n, "GET", "a", 0);
    send_cmd2(n, "GET", "b", 0);
    send_cmd2(n, "GET", "c", 0);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "$1\r\na\r\n?what\r\n$1\r\nc\r\n");
    uint64_t now = h.clock.now;
    uint64_t next = node_harness_poll(&h);
    assert_int_equal(rec.n, 3);
    assert_int_equal(rec.status[0], ELK_OK);
    assert_int_equal(rec.status[1], ELK_E_RESP_PROTOCOL);
    assert_int_equal(rec.status[2], ELK_E_DISCONNECTED);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_RESP_PROTOCOL);
    assert_true(
        fake_log_contains(&h.log, "bad reply, dropping the connection: ELK_E_RESP_PROTOCOL"));
    assert_true(next >= now + 50 && next <= now + 100);
    fake_clock_set(&h.clock, next);
    fake_transport_clear_rx(&h.ft[0]);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_READY);
    assert_int_equal(send_cmd2(n, "PING", NULL, 0), ELK_OK);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "+PONG\r\n");
    node_harness_poll(&h);
    assert_int_equal(rec.n, 4);
    assert_int_equal(rec.status[3], ELK_OK);
}

static void test_reply_larger_than_block(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    send_cmd2(n, "GET", "big", 0);
    send_cmd2(n, "GET", "small", 0);
    node_harness_poll(&h);
    static char big[CONFIG_ELK_POOL_BLOCK_SIZE + 64];
    size_t body = CONFIG_ELK_POOL_BLOCK_SIZE + 16;
    int k = sprintf(big, "$%zu\r\n", body);
    memset(big + k, 'z', body);
    big[k + body] = '\0';
    /* Fed in pieces: however the decoder notices, the caller learns it did not fit. */
    fake_transport_push_rx_split(&h.ft[0], big, 100);
    node_harness_poll(&h);
    assert_int_equal(rec.n, 2);
    assert_int_equal(rec.status[0], ELK_E_RESP_TOO_LARGE);
    assert_int_equal(rec.status[1], ELK_E_DISCONNECTED);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_RESP_TOO_LARGE);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
}

static void test_reply_with_too_many_elements(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    send_cmd2(n, "LRANGE", "l", 0);
    node_harness_poll(&h);
    char buf[64];
    sprintf(buf, "*%d\r\n", CONFIG_ELK_RESP_MAX_NODES + 1);
    fake_transport_push_rx_str(&h.ft[0], buf);
    for (int i = 0; i < CONFIG_ELK_RESP_MAX_NODES + 1; i++) {
        fake_transport_push_rx_str(&h.ft[0], ":1\r\n");
    }
    node_harness_poll(&h);
    assert_int_equal(rec.n, 1);
    assert_true(rec.status[0] == ELK_E_RESP_TOO_MANY_NODES ||
                rec.status[0] == ELK_E_RESP_TOO_LARGE);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
}

/* The system calls of a request's round: the poll that writes it does not also read
 * (no answer can be there yet), and a short read ends the reading. */
static void test_no_read_in_the_poll_that_writes_the_only_requests(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    unsigned recvs = h.ft[0].recv_calls;
    assert_int_equal(send_cmd2(n, "GET", "a", 0), ELK_OK);
    node_harness_poll(&h);
    assert_true(fake_transport_sent_eq(&h.ft[0], "*2\r\n$3\r\nGET\r\n$1\r\na\r\n"));
    assert_int_equal(h.ft[0].recv_calls - recvs, 0);
    /* The next poll reads (the request went out before it), once: the reply is short. */
    fake_transport_push_rx_str(&h.ft[0], "$1\r\nx\r\n");
    node_harness_poll(&h);
    assert_int_equal(h.ft[0].recv_calls - recvs, 1);
    assert_int_equal(rec.n, 1);
    assert_string_equal(rec.text[0], "x");
    /* Idle now: a poll still reads, so a close or a push is seen. */
    fake_transport_push_rx_result(&h.ft[0], ELK_E_CLOSED);
    node_harness_poll(&h);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_CLOSED);
}

static void test_new_request_does_not_hide_answers_to_older_ones(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    assert_int_equal(send_cmd2(n, "GET", "a", 0), ELK_OK);
    node_harness_poll(&h);
    fake_transport_push_rx_str(&h.ft[0], "$1\r\n1\r\n");
    /* A second request is written in the same poll that must read the first answer. */
    assert_int_equal(send_cmd2(n, "GET", "b", 0), ELK_OK);
    node_harness_poll(&h);
    assert_int_equal(rec.n, 1);
    assert_string_equal(rec.text[0], "1");
    assert_int_equal(elk_node_inflight(n), 1);
}

static void test_partial_write_still_reads(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    unsigned recvs = h.ft[0].recv_calls;
    /* The transport takes 5 bytes, then would block: the peer may be blocked writing to
     * us, so the node must keep reading while its own bytes wait. */
    fake_transport_script_send(&h.ft[0], 5);
    fake_transport_script_send(&h.ft[0], 0);
    fake_transport_script_send(&h.ft[0], 0); /* the step flushes again after reading */
    assert_int_equal(send_cmd2(n, "GET", "a", 0), ELK_OK);
    node_harness_poll(&h);
    assert_true(h.ft[0].recv_calls - recvs >= 1);
    unsigned ev = 0;
    elk_node_wait(n, &ev);
    assert_true(ev & ELK_WAIT_WRITE);
    node_harness_poll(&h);
    assert_true(fake_transport_sent_eq(&h.ft[0], "*2\r\n$3\r\nGET\r\n$1\r\na\r\n"));
}

static void test_flush_writes_without_reading(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    unsigned recvs = h.ft[0].recv_calls;
    fake_transport_push_rx_str(&h.ft[0], "+unread\r\n");
    assert_int_equal(send_cmd2(n, "GET", "a", h.clock.now + 500), ELK_OK);
    /* Returns the request's deadline as the next time, like elk_node_poll. */
    assert_int_equal(elk_node_flush(n, h.clock.now), h.clock.now + 500);
    assert_true(fake_transport_sent_eq(&h.ft[0], "*2\r\n$3\r\nGET\r\n$1\r\na\r\n"));
    assert_int_equal(h.ft[0].recv_calls - recvs, 0);
    assert_int_equal(rec.n, 0);
    /* A write error fails the node, as a poll would. */
    assert_int_equal(send_cmd2(n, "GET", "b", 0), ELK_OK);
    fake_transport_script_send(&h.ft[0], ELK_E_IO);
    (void)elk_node_flush(n, h.clock.now);
    assert_int_equal(elk_node_state(n), ELK_NODE_BACKOFF);
    assert_int_equal(rec.n, 2);
    assert_int_equal(rec.status[0], ELK_E_DISCONNECTED);
    assert_int_equal(elk_node_stats(n)->last_error, ELK_E_IO);
    assert_int_equal(elk_node_flush(NULL, 0), UINT64_MAX);
}

static void test_requests_survive_many_cycles_without_leaking_blocks(void **state)
{
    (void)state;
    elk_node_t *n = ready_node(false);
    size_t free0 = elk_pool_available(&h.pool);
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 5; i++) {
            assert_int_equal(send_cmd2(n, "INCR", "n", 0), ELK_OK);
        }
        node_harness_advance(&h, 1);
        for (int i = 0; i < 5; i++) {
            char r[32];
            sprintf(r, ":%d\r\n", round * 5 + i + 1);
            fake_transport_push_rx_split(&h.ft[0], r, 2);
        }
        node_harness_advance(&h, 1);
        if (round % 10 == 9) {
            elk_node_close(n, h.clock.now);
            node_harness_poll(&h);
        }
    }
    assert_int_equal(rec.n, 250);
    for (size_t i = 0; i < rec.n; i++) {
        assert_int_equal(rec.status[i], ELK_OK);
        assert_int_equal(rec.integer[i], (int64_t)i + 1);
    }
    assert_int_equal(elk_pool_available(&h.pool), free0);
    assert_int_equal(elk_node_stats(n)->connects, 6);
}

int main(void)
{
    return ELK_RUN_TESTS(
        test_send_puts_exact_resp_on_the_wire, test_send_argument_checks,
        test_pipelined_replies_split_across_recvs_and_polls,
        test_each_pipelined_reply_goes_to_the_request_that_asked,
        test_redis_error_reply_is_delivered_not_fatal, test_next_time_is_earliest_deadline,
        test_reply_after_deadline_is_a_timeout, test_reply_just_before_deadline_is_on_time,
        test_timeout_fails_every_inflight_and_reconnects, test_queue_full,
        test_command_larger_than_block, test_short_writes_and_tx_block_full,
        test_send_error_fails_connection, test_peer_close_fails_inflight,
        test_resp3_push_goes_to_handler_not_to_requests, test_resp2_subscriber_mode,
        test_refused_subscribe_does_not_shift_replies,
        test_success_reply_where_subscribe_answer_due_fails_connection, test_noreply_queue_full,
        test_resp2_message_without_subscriber_mode_is_unexpected, test_callback_sends_again,
        test_callback_closes_node, test_push_handler_closes_node, test_nested_poll_is_refused,
        test_malformed_reply_drops_connection_then_reconnects, test_reply_larger_than_block,
        test_reply_with_too_many_elements, test_no_read_in_the_poll_that_writes_the_only_requests,
        test_new_request_does_not_hide_answers_to_older_ones, test_partial_write_still_reads,
        test_flush_writes_without_reading,
        test_requests_survive_many_cycles_without_leaking_blocks);
}
