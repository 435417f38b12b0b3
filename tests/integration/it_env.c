/* SPDX-License-Identifier: MIT */
/* The program-wide set-up of the lease primitives' real-server tests (it_env.h). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "elk/blocking.h"
#include "elk/port_posix.h"
#include "acl_rules.h"
#include "it_env.h"
#include "test_main.h"

elk_it_env_t elk_it;

static void it_env_init(void)
{
    signal(SIGPIPE, SIG_IGN);
    elk_posix_entropy(&elk_it.entropy);
    elk_ts_log_init(&elk_it.log, 0, false);
}

int elk_it_setup_plain(void **state)
{
    (void)state;
    it_env_init();
    return 0;
}

int elk_it_setup_tls(void **state)
{
    (void)state;
    it_env_init();
#ifdef ELK_TS_HAVE_TLS
    const elk_tf_certs_t *certs = elk_tf_certs();
    if (certs == NULL) {
        return -1;
    }
    elk_tls_config_t tc;
    memset(&tc, 0, sizeof tc);
    tc.ca_file = certs->ca_crt;
    if (elk_tls_shared_init(&elk_it.shared, &tc, &elk_it.entropy) != ELK_OK) {
        return -1;
    }
    elk_it.tls = &elk_it.shared;
    return 0;
#else
    fprintf(stderr, "TLS tests in a build without port/mbedtls\n");
    return -1;
#endif
}

int elk_it_group_teardown(void **state)
{
    (void)state;
    elk_tf_stop(&elk_it.tf);
#ifdef ELK_TS_HAVE_TLS
    if (elk_it.tls != NULL) {
        elk_tls_shared_free(&elk_it.shared);
        elk_it.tls = NULL;
    }
#endif
    return 0;
}

int elk_it_test_teardown(void **state)
{
    (void)state;
    elk_tf_stop(&elk_it.tf);
    return 0;
}

int elk_it_fleet_up(size_t n, bool lock_user)
{
    elk_tf_options_t o;
    if (lock_user) {
        elk_it_least_privilege_fleet(&o, n);
    } else {
        elk_tf_options_defaults(&o);
        o.count = n;
    }
    o.tls = elk_it.tls != NULL;
    return elk_tf_start(&elk_it.tf, &o);
}

typedef struct it_case {
    elk_it_check_fn check;
    size_t servers;
} it_case_t;

/* One fleet size: the case is the test's prestate. */
static void it_run_case(void **state)
{
    const it_case_t *c = *state;
    c->check(c->servers);
}

int elk_it_run_fleet_sizes(const char *group, const char *name, elk_it_check_fn check,
                           CMFixtureFunction group_setup)
{
    static const size_t sizes[3] = {1, 3, 5};
    static const char *const words[3] = {"one_server", "three_servers", "five_servers"};
    static char names[3][96];
    static it_case_t cases[3];
    struct CMUnitTest tests[3];
    for (size_t i = 0; i < 3; i++) {
        snprintf(names[i], sizeof names[i], "test_%s_%s", name, words[i]);
        cases[i] = (it_case_t){check, sizes[i]};
        tests[i] =
            (struct CMUnitTest){names[i], it_run_case, NULL, elk_it_test_teardown, &cases[i]};
    }
    return ELK_TEST_RUN_TABLE(group, tests, 3, group_setup, elk_it_group_teardown);
}

elk_ts_stack_opts_t elk_it_stack_opts(elk_endpoint_t *eps, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++) {
        eps[i] = elk_tf_endpoint(&elk_it.tf, i);
    }
    return (elk_ts_stack_opts_t){
        .count = n,
        .endpoints = eps,
        .tls = elk_it.tls,
        .gateway_id = id,
        .key_prefix = "it:",
        .mode = n == 1 ? ELK_MODE_SINGLE : ELK_MODE_REDLOCK,
        .entropy = &elk_it.entropy,
        .log = &elk_it.log.log,
    };
}

void elk_it_stack_open(elk_ts_stack_t *st, size_t n, const char *id, bool lock_user)
{
    elk_node_config_t nc;
    elk_node_config_defaults(&nc);
    nc.connect_timeout_ms = 1000;
    nc.request_timeout_ms = 2000;
    if (lock_user) {
        nc.username = IT_USER;
        nc.password = IT_PASSWORD;
    }
    elk_endpoint_t eps[CONFIG_ELK_MAX_NODES];
    elk_ts_stack_opts_t so = elk_it_stack_opts(eps, n, id);
    so.node_cfg = &nc;
    assert_int_equal(elk_ts_stack_init(st, &so), ELK_OK);
}

void elk_it_lock_config(elk_lock_config_t *c)
{
    elk_lock_config_defaults(c);
    c->ttl_ms = 3000;
    c->stop_margin_ms = 20;
    c->round_timeout_ms = 1000; /* generous: the machine may be loaded */
    c->wait_min_ms = 20;
    c->wait_max_ms = 100;
}

bool elk_it_stack_ready(void *arg)
{
    elk_ts_stack_t *st = arg;
    /* every node, not just a quorum, so each test starts from a known fleet */
    if (elk_fleet_ready_count(&st->fleet) < st->n ||
        (st->subs && elk_fleet_ready_count(&st->sfleet) < st->n)) {
        return false;
    }
    /* and the start-up requests (PROBE, SCRIPT LOAD, CONFIG GET) answered, so that a
     * gateway left unpolled while the next one connects has nothing in flight to time out;
     * and every node votes: a freshly started server is quarantined for about a TTL (vote
     * hygiene: it cannot be told from one that restarted empty) */
    size_t busy = 0;
    for (size_t i = 0; i < st->n; i++) {
        busy += elk_node_inflight(&st->nodes[i]) + !elk_client_node_votes(&st->client, i);
    }
    return busy == 0;
}

void elk_it_stack_connect(elk_ts_stack_t *st)
{
    assert_int_equal(elk_blocking_connect(&st->client, 30000, NULL), ELK_OK);
    assert_true(elk_ts_run_client(&st->client, elk_it_stack_ready, st, 30000, 0));
}

size_t elk_it_servers_with(size_t n, const char *key, const char *value)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *r = elk_tf_cmd(&elk_it.tf, i, "GET %s", key);
        c += r != NULL && r->type == REDIS_REPLY_STRING && strcmp(r->str, value) == 0;
        if (r) {
            freeReplyObject(r);
        }
    }
    return c;
}
