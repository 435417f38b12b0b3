/* SPDX-License-Identifier: MIT */
/*
 * One main for every cmocka test program: the tests are named once, in the call
 *
 *     int main(void)
 *     {
 *         return ELK_RUN_TESTS(test_a, test_b, test_c);
 *     }
 *
 * instead of a table of cmocka_unit_test() lines that each file wrote again. The names
 * come from the preprocessor's own spelling of the list (#__VA_ARGS__), so a test shows
 * under its function's name, as cmocka_unit_test() names it. No heap (the MCU build's
 * cmocka has none): the table is static, at most ELK_TEST_MAX tests a program.
 * Include after <cmocka.h> (or tests/mcu/cmocka/cmocka.h).
 */
#ifndef ELK_TEST_MAIN_H
#define ELK_TEST_MAIN_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define ELK_TEST_MAX 128
#define ELK_TEST_NAMES_MAX 8192

#ifdef ELK_MCU_CMOCKA_H
#define ELK_TEST_RUN_TABLE(group, tests, n, setup, teardown)                                       \
    mcu_cm_run(group, tests, (unsigned)(n), setup, teardown)
#else
#define ELK_TEST_RUN_TABLE(group, tests, n, setup, teardown)                                       \
    _cmocka_run_group_tests(group, tests, n, setup, teardown)
#endif

/* What a program runs: its group (name, fixtures around the whole group) and the fixtures
 * around each test (NULL: none). */
typedef struct {
    const char *group;
    CMFixtureFunction group_setup;
    CMFixtureFunction group_teardown;
    CMFixtureFunction setup;
    CMFixtureFunction teardown;
} elk_test_group_t;

/* Runs fns[0..n) as one cmocka group; names is "a, b, c" as the preprocessor spells the
 * list. Returns cmocka's result (the number of failed tests), or 1 with a message when the
 * list does not fit the static table. */
static inline int elk_test_run(const elk_test_group_t *g, const char *names,
                               const CMUnitTestFunction *fns, size_t n)
{
    static struct CMUnitTest tests[ELK_TEST_MAX];
    static char buf[ELK_TEST_NAMES_MAX];
    size_t len = strlen(names);
    if (n > ELK_TEST_MAX || len >= sizeof buf) {
        fprintf(stderr, "%s: %zu tests (%zu bytes of names); ELK_TEST_MAX is %d\n", g->group, n,
                len, ELK_TEST_MAX);
        return 1;
    }
    memcpy(buf, names, len + 1);
    char *p = buf;
    for (size_t i = 0; i < n; i++) {
        while (*p == ' ' || *p == ',') {
            p++;
        }
        tests[i] = (struct CMUnitTest){p, fns[i], g->setup, g->teardown, NULL};
        p += strcspn(p, ", ");
        if (*p != '\0') {
            *p++ = '\0';
        }
    }
    return ELK_TEST_RUN_TABLE(g->group, tests, n, g->group_setup, g->group_teardown);
}

#define ELK_TEST_RUN_LIST(g, ...)                                                                  \
    elk_test_run(g, #__VA_ARGS__, (const CMUnitTestFunction[]){__VA_ARGS__},                       \
                 sizeof((const CMUnitTestFunction[]){__VA_ARGS__}) / sizeof(CMUnitTestFunction))

/* The tests, no fixtures, in the group cmocka_run_group_tests() would call "tests". */
#define ELK_RUN_TESTS(...) ELK_RUN_FIXTURES("tests", NULL, NULL, NULL, NULL, __VA_ARGS__)

/* The tests in a named group, with fixtures around the group and around each test. */
#define ELK_RUN_FIXTURES(name, group_setup, group_teardown, setup, teardown, ...)                  \
    ELK_TEST_RUN_LIST(                                                                             \
        (&(const elk_test_group_t){name, group_setup, group_teardown, setup, teardown}),           \
        __VA_ARGS__)

/* The tests in a named group with setup and teardown around the whole group. */
#define ELK_RUN_GROUP(name, setup, teardown, ...)                                                  \
    ELK_RUN_FIXTURES(name, setup, teardown, NULL, NULL, __VA_ARGS__)

/* The tests in a named group, setup and teardown around each test. */
#define ELK_RUN_EACH(name, setup, teardown, ...)                                                   \
    ELK_RUN_FIXTURES(name, NULL, NULL, setup, teardown, __VA_ARGS__)

#endif
