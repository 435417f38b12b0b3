/* SPDX-License-Identifier: MIT */
/* The heap-free cmocka subset of tests/mcu/cmocka/cmocka.h. Output follows cmocka's
 * ("[ RUN      ]", "[       OK ]", "[  FAILED  ]", "[  PASSED  ] N test(s)."), and
 * the runner returns the number of failed tests, as cmocka_run_group_tests does. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmocka.h"

static jmp_buf mcu_cm_jump;

void mcu_cm_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("[   LINE   ] --- %s:%d: error: %s\n", file, line, msg);
    longjmp(mcu_cm_jump, 1);
}

void mcu_cm_int(intmax_t a, intmax_t b, int want_equal, const char *ea, const char *eb,
                const char *file, int line)
{
    if ((a == b) != (want_equal != 0)) {
        mcu_cm_fail(file, line, "%s (%" PRIdMAX ") %s %s (%" PRIdMAX ")", ea, a,
                    want_equal ? "!=" : "==", eb, b);
    }
}

void mcu_cm_mem(const void *a, const void *b, uintmax_t n, const char *ea, const char *eb,
                const char *file, int line)
{
    if (memcmp(a, b, (size_t)n) != 0) {
        mcu_cm_fail(file, line, "%s and %s differ in their %" PRIuMAX " bytes", ea, eb, n);
    }
}

void mcu_cm_str(const char *a, const char *b, int want_equal, const char *ea, const char *eb,
                const char *file, int line)
{
    if ((strcmp(a, b) == 0) != (want_equal != 0)) {
        mcu_cm_fail(file, line, "%s \"%s\" %s %s \"%s\"", ea, a, want_equal ? "!=" : "==", eb, b);
    }
}

static int run_one(const struct CMUnitTest *t)
{
    /* volatile: read after a longjmp from inside the test */
    void *volatile state = t->initial_state;
    printf("[ RUN      ] %s\n", t->name);
    if (setjmp(mcu_cm_jump) != 0) {
        printf("[  FAILED  ] %s\n", t->name);
        return 1;
    }
    if (t->setup_func != NULL && t->setup_func((void **)&state) != 0) {
        mcu_cm_fail(__FILE__, __LINE__, "setup of %s failed", t->name);
    }
    t->test_func((void **)&state);
    if (t->teardown_func != NULL && t->teardown_func((void **)&state) != 0) {
        mcu_cm_fail(__FILE__, __LINE__, "teardown of %s failed", t->name);
    }
    printf("[       OK ] %s\n", t->name);
    return 0;
}

int mcu_cm_run(const char *group, const struct CMUnitTest *tests, unsigned n,
               CMFixtureFunction setup, CMFixtureFunction teardown)
{
    void *state = NULL;
    unsigned i;
    int failed = 0;
    printf("[==========] %s: Running %u test(s).\n", group, n);
    if (setup != NULL && setup(&state) != 0) {
        printf("[  ERROR   ] %s: group setup failed\n", group);
        return (int)n;
    }
    for (i = 0; i < n; i++) {
        failed += run_one(&tests[i]);
    }
    if (teardown != NULL) {
        (void)teardown(&state);
    }
    printf("[==========] %s: %u test(s) run.\n", group, n);
    printf("[  PASSED  ] %u test(s).\n", n - (unsigned)failed);
    if (failed != 0) {
        printf("[  FAILED  ] %d test(s).\n", failed);
    }
    return failed;
}
