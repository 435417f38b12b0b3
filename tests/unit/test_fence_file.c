/* port/posix/fence_file.c: durable, checksummed fencing state in a file. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "elk/fence.h"
#include "elk/fence_file.h"

typedef struct fx {
    char dir[256];
    char path[300];
} fx_t;

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof *fx);
    strcpy(fx->dir, "/tmp/elk-fence-XXXXXX");
    if (mkdtemp(fx->dir) == NULL) {
        free(fx);
        return -1;
    }
    snprintf(fx->path, sizeof fx->path, "%s/state", fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    char tmp[320];
    unlink(fx->path);
    snprintf(tmp, sizeof tmp, "%s.tmp", fx->path);
    unlink(tmp);
    chmod(fx->dir, 0700);
    rmdir(fx->dir);
    free(fx);
    return 0;
}

static void write_raw(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void read_raw(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void test_crc32_known_value(void **state)
{
    (void)state;
    /* The standard CRC-32 check value. */
    assert_int_equal(elk_fence_file_crc32("123456789", 9), 0xCBF43926u);
}

static void test_missing_file_is_zero(void **state)
{
    fx_t *fx = *state;
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    uint64_t t = 99;
    assert_int_equal(elk_fence_file_init(&ff, fx->path, &s), ELK_OK);
    assert_int_equal(s.load(s.ctx, &t), ELK_OK);
    assert_int_equal(t, 0);
}

static void test_roundtrip_and_format(void **state)
{
    fx_t *fx = *state;
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    uint64_t t = 0;
    char buf[128], expect[128], tmp[320];
    assert_int_equal(elk_fence_file_init(&ff, fx->path, &s), ELK_OK);
    assert_int_equal(s.store(s.ctx, 1234567), ELK_OK);
    assert_int_equal(s.load(s.ctx, &t), ELK_OK);
    assert_int_equal(t, 1234567);
    read_raw(fx->path, buf, sizeof buf);
    snprintf(expect, sizeof expect, "elkfence 1 1234567 %08x\n",
             elk_fence_file_crc32("elkfence 1 1234567", 18));
    assert_string_equal(buf, expect);
    snprintf(tmp, sizeof tmp, "%s.tmp", fx->path);
    assert_int_not_equal(access(tmp, F_OK), 0); /* renamed away, nothing left behind */
    assert_int_equal(s.store(s.ctx, UINT64_MAX), ELK_OK);
    assert_int_equal(s.load(s.ctx, &t), ELK_OK);
    assert_true(t == UINT64_MAX);
}

static void expect_corrupt(fx_t *fx, const char *text)
{
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    uint64_t t = 77;
    write_raw(fx->path, text);
    assert_int_equal(elk_fence_file_init(&ff, fx->path, &s), ELK_OK);
    assert_int_equal(s.load(s.ctx, &t), ELK_E_FENCE_CORRUPT);
    assert_int_equal(t, 77);
}

static void test_corrupt_files(void **state)
{
    fx_t *fx = *state;
    char good[64], line[128];
    snprintf(good, sizeof good, "elkfence 1 42 %08x\n", elk_fence_file_crc32("elkfence 1 42", 13));
    expect_corrupt(fx, "");
    expect_corrupt(fx, "garbage\n");
    expect_corrupt(fx, "elkfence 1 42 00000000\n");               /* wrong checksum */
    snprintf(line, sizeof line, "elkfence 1 43 %s", good + 14);    /* value changed, old checksum */
    expect_corrupt(fx, line);
    snprintf(line, sizeof line, "%.*s", (int)strlen(good) - 1, good); /* no newline: torn */
    expect_corrupt(fx, line);
    snprintf(line, sizeof line, "%sX", good);                       /* trailing junk */
    expect_corrupt(fx, line);
    snprintf(line, sizeof line, "elkfence 1 042 %08x\n", elk_fence_file_crc32("elkfence 1 042", 14));
    expect_corrupt(fx, line);                                       /* leading zero */
    snprintf(line, sizeof line, "elkfence 2 42 %08x\n", elk_fence_file_crc32("elkfence 2 42", 13));
    expect_corrupt(fx, line);                                       /* unknown version */
    snprintf(line, sizeof line, "elkfence 1 42 %08X\n", elk_fence_file_crc32("elkfence 1 42", 13));
    if (strcmp(line, good) != 0) {
        expect_corrupt(fx, line);                                   /* upper-case hex */
    }
    /* and the good one loads */
    write_raw(fx->path, good);
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    uint64_t t = 0;
    assert_int_equal(elk_fence_file_init(&ff, fx->path, &s), ELK_OK);
    assert_int_equal(s.load(s.ctx, &t), ELK_OK);
    assert_int_equal(t, 42);
}

static void test_guard_over_file_survives_restart(void **state)
{
    fx_t *fx = *state;
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    elk_fence_t f;
    assert_int_equal(elk_fence_file_init(&ff, fx->path, &s), ELK_OK);
    assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
    assert_int_equal(elk_fence_check(&f, 5), ELK_OK);
    assert_int_equal(elk_fence_check(&f, 5), ELK_OK);
    assert_int_equal(elk_fence_check(&f, 4), ELK_E_FENCE_STALE);

    /* A new process (new guard, new storage object) remembers 5. */
    elk_fence_file_t ff2;
    elk_fence_storage_t s2;
    elk_fence_t f2;
    assert_int_equal(elk_fence_file_init(&ff2, fx->path, &s2), ELK_OK);
    assert_int_equal(elk_fence_init(&f2, &s2), ELK_OK);
    assert_int_equal(elk_fence_highest(&f2), 5);
    assert_int_equal(elk_fence_check(&f2, 4), ELK_E_FENCE_STALE);
    assert_int_equal(elk_fence_check(&f2, 6), ELK_OK);
}

static void test_corrupt_file_fails_closed(void **state)
{
    fx_t *fx = *state;
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    elk_fence_t f;
    char buf[128];
    write_raw(fx->path, "elkfence 1 9 deadbeef\n");
    assert_int_equal(elk_fence_file_init(&ff, fx->path, &s), ELK_OK);
    assert_int_equal(elk_fence_init(&f, &s), ELK_E_FENCE_STORAGE);
    assert_int_equal(elk_fence_storage_error(&f), ELK_E_FENCE_CORRUPT);
    assert_int_equal(elk_fence_check(&f, 1000), ELK_E_FENCE_STORAGE);
    /* and the corrupt file is left for a person to inspect, not overwritten */
    read_raw(fx->path, buf, sizeof buf);
    assert_string_equal(buf, "elkfence 1 9 deadbeef\n");
}

static void test_unwritable_directory(void **state)
{
    fx_t *fx = *state;
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    char path[400];
    snprintf(path, sizeof path, "%s/no/such/dir/state", fx->dir);
    assert_int_equal(elk_fence_file_init(&ff, path, &s), ELK_OK);
    assert_int_equal(s.store(s.ctx, 3), ELK_E_FENCE_STORAGE);
    assert_int_not_equal(ff.last_errno, 0);
}

static void test_unreadable_path(void **state)
{
    fx_t *fx = *state;
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    uint64_t t;
    /* a directory where the file should be: open works but read fails (EISDIR) */
    assert_int_equal(mkdir(fx->path, 0700), 0);
    assert_int_equal(elk_fence_file_init(&ff, fx->path, &s), ELK_OK);
    assert_int_equal(s.load(s.ctx, &t), ELK_E_FENCE_STORAGE);
    assert_int_equal(s.store(s.ctx, 3), ELK_E_FENCE_STORAGE);
    rmdir(fx->path);
}

static void test_init_rejects_bad_path(void **state)
{
    (void)state;
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    assert_int_equal(elk_fence_file_init(&ff, "", &s), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fence_file_init(&ff, NULL, &s), ELK_E_INVALID_ARG);
    assert_int_equal(elk_fence_file_init(NULL, "/tmp/x", &s), ELK_E_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32_known_value),
        cmocka_unit_test_setup_teardown(test_missing_file_is_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roundtrip_and_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_guard_over_file_survives_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_file_fails_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_path, setup, teardown),
        cmocka_unit_test(test_init_rejects_bad_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
