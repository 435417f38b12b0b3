/* SPDX-License-Identifier: MIT */
/* lib/node against real redis-server processes (plain TCP through port/posix):
 * round trips, pipelining, AUTH with requirepass and ACL users (right and wrong),
 * RESP3 and RESP2, pub/sub pushes in both, a server killed mid-request and restarted,
 * a server paused with SIGSTOP (the request deadline holds), and a 3-node fleet. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/node.h"
#include "elk/port_posix.h"
#include "fleet.h"
#include "stack.h"
#include "ts_log.h"

#define POOL_BLOCKS 16

/* Everything one test needs for up to three nodes: the shared stack, without a client. */
typedef struct ctx {
    elk_ts_stack_t st;
    elk_entropy_t entropy;
    elk_ts_log_t log;
    size_t count;
} ctx_t;

static ctx_t c;

static elk_node_config_t cfg_for(elk_tf_t *f, size_t i)
{
    elk_node_config_t cfg;
    elk_node_config_defaults(&cfg);
    cfg.endpoint = elk_tf_endpoint(f, i);
    cfg.backoff_min_ms = 20;
    cfg.backoff_max_ms = 200;
    return cfg;
}

static void ctx_init(size_t count, const elk_node_config_t *cfgs)
{
    memset(&c, 0, sizeof c);
    elk_posix_entropy(&c.entropy);
    elk_ts_log_init(&c.log, ELK_LOG_ERROR, false);
    c.count = count;
    elk_ts_stack_opts_t o = {.count = count,
                             .node_cfgs = cfgs,
                             .pool_blocks = POOL_BLOCKS,
                             .entropy = &c.entropy,
                             .log = &c.log.log};
    assert_int_equal(elk_ts_stack_init(&c.st, &o), ELK_OK);
}

static void ctx_close(void)
{
    assert_int_equal(elk_ts_stack_close(&c.st), POOL_BLOCKS);
}

typedef bool (*cond_fn)(void *arg);

/* Drive the fleet until cond holds or timeout_ms passes; returns whether cond held. */
static bool run_until(cond_fn cond, void *arg, unsigned timeout_ms)
{
    return elk_ts_run_fleet(&c.st.fleet, cond, arg, timeout_ms, 0);
}

static bool all_ready(void *arg)
{
    (void)arg;
    return elk_fleet_ready_count(&c.st.fleet) == c.count;
}

static bool node_in_state(void *arg)
{
    const elk_node_state_t *want = arg;
    return elk_node_state(&c.st.nodes[0]) == *want;
}

typedef elk_ts_replies_t done_t; /* completions, recorded by elk_ts_replies_on */

/* Send argv on node i and run until it completes; returns the completion index. */
static int call(size_t i, done_t *d, const elk_resp_arg_t *argv, size_t argc)
{
    int before = d->n;
    assert_int_equal(
        elk_node_send(&c.st.nodes[i], elk_posix_now_ms(), argv, argc, 0, elk_ts_replies_on, d),
        ELK_OK);
    elk_ts_goal_t g = {d, before + 1};
    assert_true(run_until(elk_ts_replies_reached, &g, 5000));
    return before;
}

/* One default server, and the configuration of a node for it (to adjust). */
static elk_node_config_t start_one(elk_tf_t *f)
{
    elk_tf_options_t o;
    elk_tf_options_defaults(&o);
    assert_int_equal(elk_tf_start(f, &o), 0);
    return cfg_for(f, 0);
}

/* The context over that one node, and the node ready. */
static void one_ready(const elk_node_config_t *cfg)
{
    ctx_init(1, cfg);
    assert_true(run_until(all_ready, NULL, 5000));
}

/* ------------------------------------------------------------------ tests */

static void test_plain_round_trip(void **state)
{
    (void)state;
    elk_tf_t f;
    elk_node_config_t cfg = start_one(&f);
    one_ready(&cfg);
    assert_false(elk_node_stats(&c.st.nodes[0])->resp3);
    static done_t d;
    memset(&d, 0, sizeof d);
    elk_resp_arg_t set[] = {ELK_RESP_ARG_STR("SET"), ELK_RESP_ARG_STR("elk:node:k"),
                            ELK_RESP_ARG_STR("v\r\n1"), ELK_RESP_ARG_STR("PX"),
                            elk_resp_arg_int(60000)};
    int k = call(0, &d, set, 5);
    assert_int_equal(d.status[k], ELK_OK);
    assert_string_equal(d.text[k], "OK");
    /* The server holds exactly the bytes, checked out of band. */
    redisReply *r = elk_tf_cmd(&f, 0, "GET elk:node:k");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, 4);
    assert_memory_equal(r->str, "v\r\n1", 4);
    freeReplyObject(r);
    elk_resp_arg_t get[] = {ELK_RESP_ARG_STR("GET"), ELK_RESP_ARG_STR("elk:node:k")};
    k = call(0, &d, get, 2);
    assert_string_equal(d.text[k], "v\r\n1");
    elk_resp_arg_t bad[] = {ELK_RESP_ARG_STR("NOSUCHCOMMAND")};
    k = call(0, &d, bad, 1);
    assert_int_equal(d.status[k], ELK_OK); /* a Redis error is a reply, not a failure */
    assert_true(strncmp(d.text[k], "ERR unknown command", 19) == 0);
    assert_int_equal(elk_node_state(&c.st.nodes[0]), ELK_NODE_READY);
    ctx_close();
    elk_tf_stop(&f);
}

/* Keep the pipeline full: refill from the completion callback. */
typedef struct pipe_state {
    done_t d;
    int sent, total;
    size_t max_inflight;
} pipe_state_t;

static void pipe_done(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    pipe_state_t *p = user;
    elk_ts_replies_on(&p->d, node, status, reply);
    elk_resp_arg_t incr[] = {ELK_RESP_ARG_STR("INCR"), ELK_RESP_ARG_STR("elk:node:ctr")};
    if (p->sent < p->total &&
        elk_node_send(node, elk_posix_now_ms(), incr, 2, 0, pipe_done, p) == ELK_OK) {
        p->sent++;
    }
}

static void test_pipelining_100_requests(void **state)
{
    (void)state;
    elk_tf_t f;
    elk_node_config_t cfg = start_one(&f);
    one_ready(&cfg);
    static pipe_state_t p;
    memset(&p, 0, sizeof p);
    p.total = 100;
    elk_resp_arg_t incr[] = {ELK_RESP_ARG_STR("INCR"), ELK_RESP_ARG_STR("elk:node:ctr")};
    /* Fill the window before the first poll: all of these go out in one write. */
    while (elk_node_send(&c.st.nodes[0], elk_posix_now_ms(), incr, 2, 0, pipe_done, &p) == ELK_OK) {
        p.sent++;
    }
    p.max_inflight = elk_node_inflight(&c.st.nodes[0]);
    assert_int_equal(p.max_inflight, CONFIG_ELK_NODE_MAX_INFLIGHT);
    elk_ts_goal_t g = {&p.d, 100};
    assert_true(run_until(elk_ts_replies_reached, &g, 10000));
    assert_int_equal(p.d.n, 100);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(p.d.status[i], ELK_OK);
        assert_int_equal(p.d.ival[i], i + 1); /* replies matched in order */
    }
    redisReply *r = elk_tf_cmd(&f, 0, "GET elk:node:ctr");
    assert_non_null(r);
    assert_string_equal(r->str, "100");
    freeReplyObject(r);
    ctx_close();
    elk_tf_stop(&f);
}

static void auth_case(const char *user, const char *server_pass, const char *client_pass,
                      bool expect_ok)
{
    elk_tf_t f;
    elk_tf_options_t o;
    elk_tf_options_defaults(&o);
    if (user != NULL) {
        o.acl_user = user;
        o.acl_password = server_pass;
    } else {
        o.requirepass = server_pass;
    }
    assert_int_equal(elk_tf_start(&f, &o), 0);
    elk_node_config_t cfg = cfg_for(&f, 0);
    cfg.username = user;
    cfg.password = client_pass;
    ctx_init(1, &cfg);
    if (expect_ok) {
        assert_true(run_until(all_ready, NULL, 5000));
        static done_t d;
        memset(&d, 0, sizeof d);
        elk_resp_arg_t who[] = {ELK_RESP_ARG_STR("ACL"), ELK_RESP_ARG_STR("WHOAMI")};
        int k = call(0, &d, who, 2);
        assert_string_equal(d.text[k], user != NULL ? user : "default");
    } else {
        elk_node_state_t want = ELK_NODE_BACKOFF;
        assert_true(run_until(node_in_state, &want, 5000));
        assert_int_equal(elk_node_stats(&c.st.nodes[0])->last_error, ELK_E_AUTH);
        assert_int_equal(elk_node_stats(&c.st.nodes[0])->connects, 0);
        /* It keeps retrying with backoff, and keeps being refused. */
        elk_node_state_t ready = ELK_NODE_READY;
        assert_false(run_until(node_in_state, &ready, 300));
        assert_true(elk_node_stats(&c.st.nodes[0])->failures >= 2);
    }
    ctx_close();
    elk_tf_stop(&f);
}

static void test_auth_requirepass_ok(void **state)
{
    (void)state;
    auth_case(NULL, "pa55-word", "pa55-word", true);
}

static void test_auth_requirepass_wrong(void **state)
{
    (void)state;
    auth_case(NULL, "pa55-word", "guess", false);
}

static void test_auth_acl_user_ok(void **state)
{
    (void)state;
    auth_case("gateway7", "acl-secret", "acl-secret", true);
}

static void test_auth_acl_user_wrong(void **state)
{
    (void)state;
    auth_case("gateway7", "acl-secret", "not-it", false);
}

/* Push recorder. */
typedef struct pushes {
    int n;
    int type[16];
    char kind[16][32];
    char payload[16][32];
} pushes_t;

static void on_push(void *user, elk_node_t *node, const elk_resp_reply_t *push)
{
    (void)node;
    pushes_t *p = user;
    if (p->n >= 16 || push->count < 3) {
        return;
    }
    int i = p->n++;
    p->type[i] = push->nodes[0].type;
    snprintf(p->kind[i], sizeof p->kind[i], "%.*s", (int)push->nodes[1].len,
             (const char *)push->nodes[1].str);
    const elk_resp_node_t *last = &push->nodes[push->count - 1];
    if (last->str != NULL) {
        snprintf(p->payload[i], sizeof p->payload[i], "%.*s", (int)last->len,
                 (const char *)last->str);
    } else {
        snprintf(p->payload[i], sizeof p->payload[i], "%lld", (long long)last->integer);
    }
}

static bool pushes_reached(void *arg)
{
    const pushes_t *p = arg;
    return p->n >= 2;
}

static void resp_case(bool resp3)
{
    elk_tf_t f;
    elk_node_config_t cfg = start_one(&f);
    cfg.resp3 = resp3;
    one_ready(&cfg);
    assert_int_equal(elk_node_stats(&c.st.nodes[0])->resp3, resp3);
    static done_t d;
    memset(&d, 0, sizeof d);
    /* A map-valued command shows which protocol the server speaks to us. */
    elk_resp_arg_t hs[] = {ELK_RESP_ARG_STR("HSET"), ELK_RESP_ARG_STR("elk:h"),
                           ELK_RESP_ARG_STR("f"), ELK_RESP_ARG_STR("v")};
    call(0, &d, hs, 4);
    elk_resp_arg_t hg[] = {ELK_RESP_ARG_STR("HGETALL"), ELK_RESP_ARG_STR("elk:h")};
    int k = call(0, &d, hg, 2);
    assert_int_equal(d.status[k], ELK_OK);
    assert_int_equal(d.type[k], resp3 ? ELK_RESP_MAP : ELK_RESP_ARRAY);
    assert_int_equal(d.ival[k], 2); /* field and value */

    /* Pub/sub: RESP3 pushes share the connection; RESP2 needs subscriber mode. */
    static pushes_t p;
    memset(&p, 0, sizeof p);
    elk_node_on_push(&c.st.nodes[0], on_push, &p);
    if (!resp3) {
        elk_node_set_subscriber(&c.st.nodes[0], true);
    }
    elk_resp_arg_t sub[] = {ELK_RESP_ARG_STR("SUBSCRIBE"), ELK_RESP_ARG_STR("elk{r}:released")};
    assert_int_equal(elk_node_send_noreply(&c.st.nodes[0], sub, 2), ELK_OK);
    int tries = 0;
    while (p.n < 1 && tries++ < 100) {
        run_until(pushes_reached, &p, 20);
    }
    assert_int_equal(p.n, 1);
    assert_string_equal(p.kind[0], "subscribe");
    assert_int_equal(p.type[0], resp3 ? ELK_RESP_PUSH : ELK_RESP_ARRAY);
    redisReply *r = elk_tf_cmd(&f, 0, "PUBLISH elk{r}:released gone");
    assert_non_null(r);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    assert_true(run_until(pushes_reached, &p, 5000));
    assert_string_equal(p.kind[1], "message");
    assert_string_equal(p.payload[1], "gone");
    /* A request still gets its own reply on the subscribed connection. */
    elk_resp_arg_t ping[] = {ELK_RESP_ARG_STR("PING")};
    k = call(0, &d, ping, 1);
    assert_int_equal(d.status[k], ELK_OK);
    ctx_close();
    elk_tf_stop(&f);
}

static void test_resp3(void **state)
{
    (void)state;
    resp_case(true);
}

static void test_resp2(void **state)
{
    (void)state;
    resp_case(false);
}

/* A server where HELLO is renamed away refuses it like a pre-6 Redis: the node falls
 * back to RESP2 and works. */
static void test_hello_refused_server_side_falls_back(void **state)
{
    (void)state;
    elk_tf_t f;
    elk_tf_options_t o;
    elk_tf_options_defaults(&o);
    static const char *const extra[] = {"--rename-command", "HELLO", "", NULL};
    o.extra_args = extra;
    assert_int_equal(elk_tf_start(&f, &o), 0);
    elk_node_config_t cfg = cfg_for(&f, 0);
    cfg.resp3 = true;
    ctx_init(1, &cfg);
    assert_true(run_until(all_ready, NULL, 5000));
    assert_false(elk_node_stats(&c.st.nodes[0])->resp3);
    assert_int_equal(elk_node_stats(&c.st.nodes[0])->failures, 0);
    static done_t d;
    memset(&d, 0, sizeof d);
    elk_resp_arg_t hs[] = {ELK_RESP_ARG_STR("HSET"), ELK_RESP_ARG_STR("elk:h2"),
                           ELK_RESP_ARG_STR("f"), ELK_RESP_ARG_STR("v")};
    call(0, &d, hs, 4);
    elk_resp_arg_t hg[] = {ELK_RESP_ARG_STR("HGETALL"), ELK_RESP_ARG_STR("elk:h2")};
    int k = call(0, &d, hg, 2);
    assert_int_equal(d.type[k], ELK_RESP_ARRAY); /* RESP2 framing */
    ctx_close();
    elk_tf_stop(&f);
}

static bool node1_select_refused(void *arg)
{
    (void)arg;
    return elk_node_stats(&c.st.nodes[1])->last_error == ELK_E_SELECT;
}

static void test_select_db(void **state)
{
    (void)state;
    elk_tf_t f;
    elk_tf_options_t o;
    elk_tf_options_defaults(&o);
    assert_int_equal(elk_tf_start(&f, &o), 0);
    elk_node_config_t cfg[2] = {cfg_for(&f, 0), cfg_for(&f, 0)};
    cfg[0].db = 3;
    cfg[1].db = 99999; /* beyond "databases 16" */
    ctx_init(2, cfg);
    elk_node_state_t want = ELK_NODE_READY;
    assert_true(run_until(node_in_state, &want, 5000));
    static done_t d;
    memset(&d, 0, sizeof d);
    elk_resp_arg_t set[] = {ELK_RESP_ARG_STR("SET"), ELK_RESP_ARG_STR("elk:db"),
                            ELK_RESP_ARG_STR("three")};
    call(0, &d, set, 3);
    redisReply *r = elk_tf_cmd(&f, 0, "SELECT 3");
    freeReplyObject(r);
    r = elk_tf_cmd(&f, 0, "GET elk:db");
    assert_non_null(r);
    assert_string_equal(r->str, "three");
    freeReplyObject(r);
    r = elk_tf_cmd(&f, 0, "SELECT 0");
    freeReplyObject(r);
    /* Node 1 connects on its own schedule: wait for its refusal, not for node 0's. */
    assert_true(run_until(node1_select_refused, NULL, 5000));
    assert_int_equal(elk_node_stats(&c.st.nodes[1])->last_error, ELK_E_SELECT);
    assert_int_not_equal(elk_node_state(&c.st.nodes[1]), ELK_NODE_READY);
    ctx_close();
    elk_tf_stop(&f);
}

static void test_server_killed_mid_request_then_restarted(void **state)
{
    (void)state;
    elk_tf_t f;
    elk_node_config_t cfg = start_one(&f);
    one_ready(&cfg);
    static done_t d;
    memset(&d, 0, sizeof d);
    /* BLPOP on an empty list keeps the request in flight on the server. */
    elk_resp_arg_t blpop[] = {ELK_RESP_ARG_STR("BLPOP"), ELK_RESP_ARG_STR("elk:nothing"),
                              elk_resp_arg_int(0)};
    uint64_t now = elk_posix_now_ms();
    assert_int_equal(
        elk_node_send(&c.st.nodes[0], now, blpop, 3, now + 20000, elk_ts_replies_on, &d), ELK_OK);
    elk_fleet_poll(&c.st.fleet, elk_posix_now_ms()); /* sent */
    assert_int_equal(elk_tf_kill(&f, 0), 0);
    elk_ts_goal_t g = {&d, 1};
    assert_true(run_until(elk_ts_replies_reached, &g, 10000));
    assert_int_equal(d.status[0], ELK_E_DISCONNECTED);
    assert_int_not_equal(elk_node_state(&c.st.nodes[0]), ELK_NODE_READY);
    int err = elk_node_stats(&c.st.nodes[0])->last_error;
    assert_true(err == ELK_E_CLOSED || err == ELK_E_IO);
    /* While the server is down, reconnects fail (refused) and back off. */
    elk_node_state_t ready = ELK_NODE_READY;
    assert_false(run_until(node_in_state, &ready, 300));
    assert_true(elk_node_stats(&c.st.nodes[0])->failures >= 2);
    assert_int_equal(elk_tf_restart(&f, 0), 0);
    assert_true(run_until(all_ready, NULL, 5000));
    assert_int_equal(elk_node_stats(&c.st.nodes[0])->connects, 2);
    elk_resp_arg_t ping[] = {ELK_RESP_ARG_STR("PING")};
    int k = call(0, &d, ping, 1);
    assert_string_equal(d.text[k], "PONG");
    ctx_close();
    elk_tf_stop(&f);
}

static void test_server_paused_deadline_holds(void **state)
{
    (void)state;
    elk_tf_t f;
    elk_node_config_t cfg = start_one(&f);
    cfg.connect_timeout_ms = 500;
    cfg.resp3 = true; /* so a reconnect needs the server to answer HELLO */
    one_ready(&cfg);
    static done_t d;
    memset(&d, 0, sizeof d);
    assert_int_equal(elk_tf_pause(&f, 0), 0);
    elk_resp_arg_t get[] = {ELK_RESP_ARG_STR("GET"), ELK_RESP_ARG_STR("k")};
    uint64_t now = elk_posix_now_ms();
    uint64_t deadline = now + 300;
    assert_int_equal(elk_node_send(&c.st.nodes[0], now, get, 2, deadline, elk_ts_replies_on, &d),
                     ELK_OK);
    assert_int_equal(
        elk_node_send(&c.st.nodes[0], now, get, 2, deadline + 5000, elk_ts_replies_on, &d), ELK_OK);
    elk_ts_goal_t g = {&d, 2};
    assert_true(run_until(elk_ts_replies_reached, &g, 10000));
    assert_int_equal(d.status[0], ELK_E_TIMEOUT);
    assert_true(d.at[0] >= deadline); /* never before the deadline */
    assert_int_equal(d.status[1], ELK_E_DISCONNECTED);
    assert_int_equal(elk_node_stats(&c.st.nodes[0])->timeouts, 1);
    /* The kernel still accepts connections for the frozen server, but HELLO gets no
     * answer: reconnecting runs into the connect timeout. */
    elk_node_state_t ready = ELK_NODE_READY;
    assert_false(run_until(node_in_state, &ready, 800));
    assert_int_equal(elk_node_stats(&c.st.nodes[0])->last_error, ELK_E_CONNECT_TIMEOUT);
    assert_int_equal(elk_tf_resume(&f, 0), 0);
    assert_true(run_until(all_ready, NULL, 5000));
    elk_resp_arg_t ping[] = {ELK_RESP_ARG_STR("PING")};
    int k = call(0, &d, ping, 1);
    assert_string_equal(d.text[k], "PONG");
    ctx_close();
    elk_tf_stop(&f);
}

static bool ready_count_is(void *arg)
{
    return elk_fleet_ready_count(&c.st.fleet) == *(size_t *)arg;
}

static void test_fleet_of_three(void **state)
{
    (void)state;
    elk_tf_t f;
    elk_tf_options_t o;
    elk_tf_options_defaults(&o);
    o.count = 3;
    assert_int_equal(elk_tf_start(&f, &o), 0);
    elk_node_config_t cfg[3] = {cfg_for(&f, 0), cfg_for(&f, 1), cfg_for(&f, 2)};
    ctx_init(3, cfg);
    assert_true(run_until(all_ready, NULL, 5000));
    assert_int_equal(elk_fleet_quorum(&c.st.fleet), 2);
    elk_wait_t w[3];
    assert_int_equal(elk_fleet_waits(&c.st.fleet, w, 3), 3);
    static done_t d;
    memset(&d, 0, sizeof d);
    elk_resp_arg_t set[] = {ELK_RESP_ARG_STR("SET"), ELK_RESP_ARG_STR("elk{x}"),
                            ELK_RESP_ARG_STR("me"),  ELK_RESP_ARG_STR("NX"),
                            ELK_RESP_ARG_STR("PX"),  elk_resp_arg_int(30000)};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(
            elk_node_send(&c.st.nodes[i], elk_posix_now_ms(), set, 6, 0, elk_ts_replies_on, &d),
            ELK_OK);
    }
    elk_ts_goal_t g = {&d, 3};
    assert_true(run_until(elk_ts_replies_reached, &g, 5000));
    for (int i = 0; i < 3; i++) {
        assert_string_equal(d.text[i], "OK");
    }
    assert_int_equal(elk_tf_kill(&f, 1), 0);
    size_t two = 2;
    assert_true(run_until(ready_count_is, &two, 5000));
    assert_int_equal(elk_fleet_waits(&c.st.fleet, w, 3), 2);
    assert_int_equal(elk_tf_restart(&f, 1), 0);
    assert_true(run_until(all_ready, NULL, 5000));
    ctx_close();
    elk_tf_stop(&f);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    return ELK_RUN_TESTS(test_plain_round_trip, test_pipelining_100_requests,
                         test_auth_requirepass_ok, test_auth_requirepass_wrong,
                         test_auth_acl_user_ok, test_auth_acl_user_wrong, test_resp3, test_resp2,
                         test_hello_refused_server_side_falls_back, test_select_db,
                         test_server_killed_mid_request_then_restarted,
                         test_server_paused_deadline_holds, test_fleet_of_three);
}
