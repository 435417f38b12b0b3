/* SPDX-License-Identifier: MIT */
/*
 * The part of cmocka's API that edgelock's OS-free unit tests use (assertions,
 * cmocka_unit_test, cmocka_run_group_tests, fail), for the emulated MCU: no heap
 * (cmocka itself allocates its test states and checks with malloc), a failed
 * assertion prints file:line and longjmps back to the runner, as cmocka does.
 * Only for tests/mcu; the host builds use the real cmocka.
 */
#ifndef ELK_MCU_CMOCKA_H
#define ELK_MCU_CMOCKA_H

#include <setjmp.h>
#include <stdint.h>

typedef void (*CMUnitTestFunction)(void **state);
typedef int (*CMFixtureFunction)(void **state);

struct CMUnitTest {
    const char *name;
    CMUnitTestFunction test_func;
    CMFixtureFunction setup_func;
    CMFixtureFunction teardown_func;
    void *initial_state;
};

#define cmocka_unit_test(f)                                                                        \
    {                                                                                              \
#f, f, NULL, NULL, NULL                                                                    \
    }
#define cmocka_unit_test_setup_teardown(f, s, t)                                                   \
    {                                                                                              \
#f, f, s, t, NULL                                                                          \
    }
#define cmocka_run_group_tests(tests, setup, teardown)                                             \
    mcu_cm_run(#tests, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)

int mcu_cm_run(const char *group, const struct CMUnitTest *tests, unsigned n,
               CMFixtureFunction setup, CMFixtureFunction teardown);
/* Reports a failed check and ends the current test. */
void mcu_cm_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
void mcu_cm_int(intmax_t a, intmax_t b, int want_equal, const char *ea, const char *eb,
                const char *file, int line);
void mcu_cm_mem(const void *a, const void *b, uintmax_t n, const char *ea, const char *eb,
                const char *file, int line);
void mcu_cm_str(const char *a, const char *b, int want_equal, const char *ea, const char *eb,
                const char *file, int line);

#define assert_true(c) ((c) ? (void)0 : mcu_cm_fail(__FILE__, __LINE__, "%s is not true", #c))
#define assert_false(c) ((c) ? mcu_cm_fail(__FILE__, __LINE__, "%s is not false", #c) : (void)0)
#define assert_non_null(p) assert_true((p) != NULL)
#define assert_null(p) assert_true((p) == NULL)
#define assert_ptr_equal(a, b) assert_true((const void *)(a) == (const void *)(b))
#define assert_ptr_not_equal(a, b) assert_true((const void *)(a) != (const void *)(b))
#define assert_int_equal(a, b)                                                                     \
    mcu_cm_int((intmax_t)(a), (intmax_t)(b), 1, #a, #b, __FILE__, __LINE__)
#define assert_int_not_equal(a, b)                                                                 \
    mcu_cm_int((intmax_t)(a), (intmax_t)(b), 0, #a, #b, __FILE__, __LINE__)
#define assert_memory_equal(a, b, n)                                                               \
    mcu_cm_mem((a), (b), (uintmax_t)(n), #a, #b, __FILE__, __LINE__)
#define assert_string_equal(a, b) mcu_cm_str((a), (b), 1, #a, #b, __FILE__, __LINE__)
#define assert_string_not_equal(a, b) mcu_cm_str((a), (b), 0, #a, #b, __FILE__, __LINE__)
#define fail() mcu_cm_fail(__FILE__, __LINE__, "fail()")
#define fail_msg(...) mcu_cm_fail(__FILE__, __LINE__, __VA_ARGS__)
#define print_message(...) printf(__VA_ARGS__)
#define print_error(...) printf(__VA_ARGS__)

#endif /* ELK_MCU_CMOCKA_H */
