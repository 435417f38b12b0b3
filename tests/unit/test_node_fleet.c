/* SPDX-License-Identifier: MIT */
/* Fleet: init checks, quorum sizes, polling every node, earliest next time, the wait
 * list, and the ready count as nodes come and go. */
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

static void test_init_checks(void **state)
{
    (void)state;
    node_harness_init(&h, 3, NULL);
    elk_fleet_t f;
    assert_int_equal(elk_fleet_init(NULL, h.nodes, 3), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fleet_init(&f, NULL, 3), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fleet_init(&f, h.nodes, 0), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fleet_init(&f, h.nodes, CONFIG_ELK_MAX_NODES + 1), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fleet_init(&f, h.nodes, 3), ELK_OK);
    for (uint8_t i = 0; i < 3; i++) {
        assert_int_equal(h.nodes[i].index, i);
    }
}

static void test_quorum_sizes(void **state)
{
    (void)state;
    const size_t want[] = {0, 1, 2, 2, 3, 3, 4, 4, 5};
    for (size_t n = 1; n <= CONFIG_ELK_MAX_NODES && n < 9; n++) {
        node_harness_init(&h, n, NULL);
        assert_int_equal(elk_fleet_quorum(&h.fleet), want[n]);
    }
    assert_int_equal(elk_fleet_quorum(NULL), 0);
}

static void test_poll_drives_every_node_and_waits_list_them(void **state)
{
    (void)state;
    node_harness_init(&h, 3, NULL);
    elk_wait_t w[8];
    assert_int_equal(elk_fleet_waits(&h.fleet, w, 8), 0); /* nothing open yet */
    assert_int_equal(elk_fleet_ready_count(&h.fleet), 0);
    fake_transport_script_open(&h.ft[1], ELK_E_CONNECT_REFUSED);
    uint64_t next = node_harness_poll(&h);
    assert_int_equal(elk_fleet_ready_count(&h.fleet), 2);
    assert_int_equal(elk_node_state(&h.nodes[1]), ELK_NODE_BACKOFF);
    /* The earliest thing any node needs is node 1's reconnect. */
    assert_int_equal(next, h.nodes[1].next_attempt);
    assert_int_equal(elk_fleet_waits(&h.fleet, w, 8), 2);
    assert_int_equal(w[0].fd, 100);
    assert_int_equal(w[1].fd, 102);
    assert_true(w[0].events & ELK_WAIT_READ);
    assert_int_equal(elk_fleet_waits(&h.fleet, w, 1), 1); /* respects max */
    /* A request on node 2 with an earlier deadline becomes the next time. */
    elk_resp_arg_t ping[] = {ELK_RESP_ARG_STR("PING")};
    assert_int_equal(elk_node_send(&h.nodes[2], h.clock.now, ping, 1, h.clock.now + 10, NULL, NULL),
                     ELK_OK);
    assert_int_equal(node_harness_poll(&h), h.clock.now + 10);
    fake_transport_push_rx_str(&h.ft[2], "+PONG\r\n");
    node_harness_poll(&h);
    fake_clock_set(&h.clock, next);
    node_harness_poll(&h);
    assert_int_equal(elk_fleet_ready_count(&h.fleet), 3);
    assert_int_equal(node_harness_poll(&h), UINT64_MAX);
}

static void test_null_fleet_is_harmless(void **state)
{
    (void)state;
    elk_wait_t w[2];
    assert_int_equal(elk_fleet_poll(NULL, 1), UINT64_MAX);
    assert_int_equal(elk_fleet_waits(NULL, w, 2), 0);
    assert_int_equal(elk_fleet_ready_count(NULL), 0);
}

int main(void)
{
    return ELK_RUN_TESTS(test_init_checks, test_quorum_sizes,
                         test_poll_drives_every_node_and_waits_list_them,
                         test_null_fleet_is_harmless);
}
