/* SPDX-License-Identifier: MIT */
/*
 * The program-wide set-up of the lease primitives' real-server tests
 * (test_{lock,sem,multi,fair}_{redis,tls}): one fleet, the entropy source, the stderr log
 * and, in the TLS variants, one TLS configuration that trusts the fixture's CA. A *_tls.c
 * variant defines ELK_IT_TLS before it includes its plain source; ELK_IT_GROUP_SETUP then
 * names the TLS group setup. Linked only by those tests (tests/integration/CMakeLists.txt).
 * Include after <cmocka.h>.
 */
#ifndef ELK_TEST_IT_ENV_H
#define ELK_TEST_IT_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "elk/platform.h"
#include "fleet.h"
#include "stack.h"
#include "ts_log.h"

typedef struct elk_it_env {
    elk_tf_t tf;           /* the running test's fleet; stopped after every test */
    elk_entropy_t entropy; /* for elk_ts_stack_opts_t.entropy */
    elk_ts_log_t log;      /* its .log for elk_ts_stack_opts_t.log */
    void *tls;             /* for elk_ts_stack_opts_t.tls: &shared over TLS, NULL plain */
#ifdef ELK_TS_HAVE_TLS
    elk_tls_shared_t shared; /* valid while tls is set (the TLS group setup succeeded) */
#endif
} elk_it_env_t;

/* The one environment of the program (static storage of it_env.c: the fleet's exit hooks
 * reach it after a failed assertion). */
extern elk_it_env_t elk_it;

/* cmocka group setups: ignore SIGPIPE, ready the entropy and the log; the TLS one also
 * generates the certificates and the TLS configuration. 0, or -1 when that failed. */
int elk_it_setup_plain(void **state);
int elk_it_setup_tls(void **state);

/* cmocka group teardown: stop the fleet, free the TLS configuration. Returns 0. */
int elk_it_group_teardown(void **state);

/* cmocka test teardown: stop the fleet, also after a failed assertion. Returns 0. */
int elk_it_test_teardown(void **state);

/* Start elk_it.tf: n servers, plain or TLS as the group is, whose lock user is IT_USER
 * with the least-privilege rules (acl_rules.h) when lock_user, else the fixture's
 * defaults. 0, or -1 after the fixture's message. */
int elk_it_fleet_up(size_t n, bool lock_user);

/* Run check(1), check(3) and check(5) as the cmocka group `group`, the tests named
 * test_<name>_one_server, test_<name>_three_servers, test_<name>_five_servers, with
 * group_setup and the teardowns above. Returns cmocka's count of failed tests. */
typedef void (*elk_it_check_fn)(size_t servers);
int elk_it_run_fleet_sizes(const char *group, const char *name, elk_it_check_fn check,
                           CMFixtureFunction group_setup);

/* Fill eps[0..n) with elk_it.tf's endpoints and return the stack options of gateway id
 * over them: key prefix "it:", one server single mode else Redlock, the group's TLS, the
 * environment's entropy and log. eps (CONFIG_ELK_MAX_NODES entries, the caller's) must
 * live until elk_ts_stack_init; the caller adds node_cfg (and subscribers). */
elk_ts_stack_opts_t elk_it_stack_opts(elk_endpoint_t *eps, size_t n, const char *id);

/* Open st, gateway id over the first n servers, with the node timeouts of the semaphore,
 * all-or-nothing and fair tests (connect 1000 ms, request 2000 ms), as IT_USER when
 * lock_user. Fails the test when it does not open. */
void elk_it_stack_open(elk_ts_stack_t *st, size_t n, const char *id, bool lock_user);

/* Set *c to those tests' lock configuration: the defaults with TTL 3000 ms, margin 20 ms,
 * rounds of 1000 ms, retry waits of 20..100 ms. */
void elk_it_lock_config(elk_lock_config_t *c);

/* run_until condition (arg: an elk_ts_stack_t): every node of the fleet (and of the
 * subscriber fleet, if any) ready, no start-up request in flight, every node voting. */
bool elk_it_stack_ready(void *arg);

/* Connect st's client and drive it until elk_it_stack_ready (30 s bounds each); fails the
 * test otherwise. */
void elk_it_stack_connect(elk_ts_stack_t *st);

/* How many of elk_it.tf's first n servers hold value at key (GET on their own record). */
size_t elk_it_servers_with(size_t n, const char *key, const char *value);

#ifdef ELK_IT_TLS
#define ELK_IT_GROUP_SETUP elk_it_setup_tls
#else
#define ELK_IT_GROUP_SETUP elk_it_setup_plain
#endif

#endif /* ELK_TEST_IT_ENV_H */
