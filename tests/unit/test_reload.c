/* SPDX-License-Identifier: MIT */
/* firmware/reload.c: which keys of a new configuration a running elkd may apply
 * (elkfw/reload.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "elkfw/reload.h"

static const char base[] = "[fleet]\nmode = redlock\ngateway_id = gw\n"
                           "[node a]\nhost = 127.0.0.1\nport = 7001\n"
                           "[node b]\nhost = 127.0.0.1\nport = 7002\n"
                           "[node c]\nhost = 127.0.0.1\nport = 7003\n"
                           "[resource valve]\nttl = 3s\n"
                           "[resource door]\nttl = 2s\n"
                           "[agent]\nsocket = /run/x.sock\nlog_level = info\n";

/* base with the first occurrence of from replaced by to, parsed into c */
static void parse_with(elkfw_conf_t *c, const char *from, const char *to)
{
    char text[2048], err[ELKFW_ERR_MAX];
    const char *at = from != NULL ? strstr(base, from) : NULL;
    if (at == NULL) {
        snprintf(text, sizeof text, "%s", base);
    } else {
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
    }
    assert_int_equal(elkfw_conf_parse(c, "t.conf", text, strlen(text), err, sizeof err), ELK_OK);
}

static elkfw_conf_t cur, next; /* large: not on the stack */

/* The plan from cur to the base file with from replaced by to. */
static elkfw_reload_plan_t plan_for(const char *from, const char *to)
{
    elkfw_reload_plan_t p;
    parse_with(&next, from, to);
    elkfw_reload_plan(&cur, &next, &p);
    return p;
}

static void test_same_file_changes_nothing(void **state)
{
    (void)state;
    parse_with(&cur, NULL, NULL);
    elkfw_reload_plan_t p = plan_for("\n[agent]", "\n\n# a comment moves every line\n[agent]");
    assert_null(p.fleet_key);
    assert_null(p.restart_key);
    assert_false(p.log_level_changed);
    assert_int_equal(p.added + p.changed + p.removed, 0);
    assert_int_equal(elkfw_reload_resource(&cur, &next, "valve"), ELKFW_RES_SAME);
}

static void test_resources_added_changed_removed(void **state)
{
    (void)state;
    parse_with(&cur, NULL, NULL);
    elkfw_reload_plan_t p = plan_for("[resource door]\nttl = 2s\n", "[resource pump]\nttl = 1s\n");
    assert_int_equal(p.added, 1);
    assert_int_equal(p.removed, 1);
    assert_int_equal(p.changed, 0);
    assert_int_equal(elkfw_reload_resource(&cur, &next, "pump"), ELKFW_RES_ADDED);
    assert_int_equal(elkfw_reload_resource(&cur, &next, "door"), ELKFW_RES_REMOVED);
    p = plan_for("ttl = 3s", "ttl = 5s");
    assert_int_equal(p.changed, 1);
    assert_null(p.fleet_key);
    assert_int_equal(elkfw_reload_resource(&cur, &next, "valve"), ELKFW_RES_CHANGED);
    assert_int_equal(elkfw_reload_resource(&cur, &next, "door"), ELKFW_RES_SAME);
}

/* Every setting the lock or the supervision runs with is a change of its own: a reload
 * that changes only stop_margin must give the resource its new margin (the time its
 * command gets between SIGTERM and SIGKILL), not keep the old one. */
static void test_each_resource_key_is_a_change(void **state)
{
    static const char *const keys[] = {
        "stop_margin = 1s", "renew_fraction = 40%", "min_validity = 200ms",
        "max_hold = 2h",    "max_renewals = 7",     "fencing = false",
        "wait_min = 30ms",  "wait_max = 400ms",     "release_channel = true",
        "lock_delay = 1s",  "keepalive = 1s",
    };
    size_t i;
    char to[64];
    (void)state;
    parse_with(&cur, NULL, NULL);
    for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        snprintf(to, sizeof to, "ttl = 3s\n%s\n", keys[i]);
        elkfw_reload_plan_t p = plan_for("ttl = 3s\n", to);
        if (p.changed != 1 || elkfw_reload_resource(&cur, &next, "valve") != ELKFW_RES_CHANGED) {
            fail_msg("a reload that changes only '%s' is not seen as a change", keys[i]);
        }
        assert_int_equal(elkfw_reload_resource(&cur, &next, "door"), ELKFW_RES_SAME);
        assert_null(p.fleet_key);
    }
}

static void test_drift_changes_every_resource(void **state)
{
    (void)state;
    parse_with(&cur, NULL, NULL);
    elkfw_reload_plan_t p = plan_for("gateway_id = gw\n", "gateway_id = gw\ndrift_fixed = 20ms\n");
    assert_true(p.drift_changed);
    assert_int_equal(p.changed, 2);
    assert_null(p.fleet_key);
}

static void test_quorum_keys(void **state)
{
    static const char *const edits[][3] = {
        {"port = 7003", "port = 7004", "a [node] section"},
        {"gateway_id = gw", "gateway_id = gw2", "gateway_id"},
        {"[fleet]\n", "[fleet]\nkey_prefix = x:\n", "key_prefix"},
        {"[fleet]\n", "[fleet]\nconnect_timeout = 3s\n", "connect_timeout or request_timeout"},
        {"[agent]\n", "[agent]\nsafety_check = refuse\n", "safety_check"},
    };
    size_t i;
    (void)state;
    parse_with(&cur, NULL, NULL);
    for (i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        elkfw_reload_plan_t p = plan_for(edits[i][0], edits[i][1]);
        assert_non_null(p.fleet_key);
        assert_string_equal(p.fleet_key, edits[i][2]);
    }
}

static void test_node_list_and_restart_keys(void **state)
{
    (void)state;
    parse_with(&cur, NULL, NULL);
    elkfw_reload_plan_t p =
        plan_for("[resource valve]", "[node d]\nhost = 127.0.0.1\nport = 7005\n[resource valve]");
    assert_string_equal(p.fleet_key, "the node list");
    p = plan_for("socket = /run/x.sock", "socket = /run/y.sock");
    assert_string_equal(p.restart_key, "socket");
    assert_null(p.fleet_key);
    p = plan_for("log_level = info", "log_level = debug\nlog = syslog");
    assert_string_equal(p.restart_key, "log");
    assert_true(p.log_level_changed);
}

int main(void)
{
    return ELK_RUN_TESTS(test_same_file_changes_nothing, test_resources_added_changed_removed,
                         test_each_resource_key_is_a_change, test_drift_changes_every_resource,
                         test_quorum_keys, test_node_list_and_restart_keys);
}
