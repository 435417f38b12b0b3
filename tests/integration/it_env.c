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

#include "elk/port_posix.h"
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

int elk_it_fleet_start(elk_tf_options_t *o)
{
    o->tls = elk_it.tls != NULL;
    return elk_tf_start(&elk_it.tf, o);
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
