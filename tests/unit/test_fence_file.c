/* SPDX-License-Identifier: MIT */
/* port/posix/fence_file.c: durable, checksummed fencing state in a file. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>
#include "test_main.h"

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

/* Files in dir whose name starts with prefix. */
static int count_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    }
    closedir(d);
    return n;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    DIR *d;
    struct dirent *e;
    chmod(fx->dir, 0700);
    d = opendir(fx->dir);
    while (d != NULL && (e = readdir(d)) != NULL) {
        char p[600];
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(p, sizeof p, "%s/%s", fx->dir, e->d_name);
        unlink(p);
    }
    if (d != NULL) {
        closedir(d);
    }
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

/* ---------------------------------------------------------------- interposed calls
 * The test executable defines fsync, fdatasync, rename and flock: its definitions win
 * over the C library's for the fence_file.c linked in (they reach the kernel through
 * syscall and renameat, never themselves). They record the order in which the temp file
 * is synced and renamed, and run a hook between elk_fence_file_lock's open and its flock. */
static struct {
    bool on;
    ino_t synced[32]; /* files fsynced since the last rename */
    size_t n_synced;
    int renames, renames_unsynced; /* renames of a file not fsynced first */
    ino_t dir_due;                 /* a rename's directory, until it is fsynced */
    int dir_syncs_due, dir_syncs;
} io;
static void (*before_flock)(void);

static void note_sync(int fd)
{
    struct stat st;
    if (!io.on || fstat(fd, &st) != 0) {
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        if (io.dir_due != 0 && st.st_ino == io.dir_due) {
            io.dir_due = 0;
            io.dir_syncs++;
        }
    } else if (io.n_synced < sizeof io.synced / sizeof io.synced[0]) {
        io.synced[io.n_synced++] = st.st_ino;
    }
}

int fsync(int fd)
{
    note_sync(fd);
    return (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd)
{
    note_sync(fd);
    return (int)syscall(SYS_fdatasync, fd);
}

int rename(const char *from, const char *to)
{
    struct stat st, dir;
    if (io.on && stat(from, &st) == 0) {
        bool synced = false;
        char d[400];
        const char *slash = strrchr(to, '/');
        for (size_t i = 0; i < io.n_synced; i++) {
            synced = synced || io.synced[i] == st.st_ino;
        }
        io.renames++;
        io.renames_unsynced += !synced;
        io.n_synced = 0;
        snprintf(d, sizeof d, "%.*s", slash != NULL ? (int)(slash - to) : 1,
                 slash != NULL ? to : ".");
        if (stat(d, &dir) == 0) {
            io.dir_due = dir.st_ino;
            io.dir_syncs_due++;
        }
    }
    return renameat(AT_FDCWD, from, AT_FDCWD, to);
}

int flock(int fd, int op)
{
    void (*hook)(void) = before_flock;
    before_flock = NULL; /* once: the hook may take a lock itself */
    if (hook != NULL) {
        hook();
    }
    return (int)syscall(SYS_flock, fd, op);
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
    expect_corrupt(fx, "elkfence 1 42 00000000\n");             /* wrong checksum */
    snprintf(line, sizeof line, "elkfence 1 43 %s", good + 14); /* value changed, old checksum */
    expect_corrupt(fx, line);
    snprintf(line, sizeof line, "%.*s", (int)strlen(good) - 1, good); /* no newline: torn */
    expect_corrupt(fx, line);
    snprintf(line, sizeof line, "%sX", good); /* trailing junk */
    expect_corrupt(fx, line);
    snprintf(line, sizeof line, "elkfence 1 042 %08x\n",
             elk_fence_file_crc32("elkfence 1 042", 14));
    expect_corrupt(fx, line); /* leading zero */
    snprintf(line, sizeof line, "elkfence 2 42 %08x\n", elk_fence_file_crc32("elkfence 2 42", 13));
    expect_corrupt(fx, line); /* unknown version */
    snprintf(line, sizeof line, "elkfence 1 42 %08X\n", elk_fence_file_crc32("elkfence 1 42", 13));
    if (strcmp(line, good) != 0) {
        expect_corrupt(fx, line); /* upper-case hex */
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

static void file_with_suffix(const fx_t *fx, const char *suffix, const char *text)
{
    char p[400];
    snprintf(p, sizeof p, "%s%s", fx->path, suffix);
    write_raw(p, text);
}

/* A crash at each point of a store leaves one of these on disk; in every case the next
 * guard loads the old or the new value (never lower, never "corrupt"), accepts a higher
 * token, and removes the leftovers. */
static void test_crash_points(void **state)
{
    fx_t *fx = *state;
    static const struct {
        const char *what, *state_text, *tmp_text;
        uint64_t expect;
    } pts[] = {
        {"before the temp file", "elkfence 1 7 ", NULL, 7},
        {"temp created, nothing written", "elkfence 1 7 ", "", 7},
        {"temp half written", "elkfence 1 7 ", "elkfence 1 8", 7},
        {"temp written and synced, not renamed", "elkfence 1 7 ", "elkfence 1 8 XXXX\n", 7},
        {"renamed, directory not synced", "elkfence 1 8 ", NULL, 8},
    };
    size_t i;
    for (i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        elk_fence_file_t ff;
        elk_fence_storage_t s;
        elk_fence_t f;
        uint64_t base = pts[i].expect;
        assert_int_equal(elk_fence_file_init(&ff, fx->path, &s), ELK_OK);
        assert_int_equal(s.store(s.ctx, base), ELK_OK);
        if (pts[i].tmp_text != NULL) {
            file_with_suffix(fx, ".tmp.4242.0", pts[i].tmp_text);
            file_with_suffix(fx, ".tmp", pts[i].tmp_text); /* the old fixed name too */
        }
        assert_int_equal(elk_fence_init(&f, &s), ELK_OK);
        assert_int_equal(elk_fence_highest(&f), pts[i].expect);
        assert_int_equal(elk_fence_check(&f, base - 1), ELK_E_FENCE_STALE);
        assert_int_equal(elk_fence_check(&f, base + 1), ELK_OK);
        assert_int_equal(count_files(fx->dir, "state.tmp"), 0);
        assert_int_equal(ff.lock_fd, -1);
        assert_int_equal(unlink(fx->path), 0);
    }
}

/* Temp names are unique: a leftover with our own next name is skipped (O_EXCL), even
 * without the lock (no sweep then). */
static void test_tmp_names_unique(void **state)
{
    fx_t *fx = *state;
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    uint64_t t;
    char suffix[64];
    assert_int_equal(elk_fence_file_init(&ff, fx->path, &s), ELK_OK);
    snprintf(suffix, sizeof suffix, ".tmp.%ld.0", (long)getpid());
    file_with_suffix(fx, suffix, "junk");
    assert_int_equal(s.store(s.ctx, 5), ELK_OK);
    assert_int_equal(s.load(s.ctx, &t), ELK_OK);
    assert_int_equal(t, 5);
    assert_int_equal(count_files(fx->dir, "state.tmp"), 1); /* not ours to remove unlocked */
}

/* The lock: created 0600 when missing, exclusive across open files, bounded wait. */
static void test_lock_file(void **state)
{
    fx_t *fx = *state;
    elk_fence_file_t a, b;
    elk_fence_storage_t sa, sb;
    elk_fence_t fa, fb;
    char lock[400];
    struct stat st;
    snprintf(lock, sizeof lock, "%s.lock", fx->path);
    assert_int_equal(elk_fence_file_init(&a, fx->path, &sa), ELK_OK);
    assert_int_equal(elk_fence_file_init(&b, fx->path, &sb), ELK_OK);
    assert_non_null(sa.lock);
    assert_int_equal(elk_fence_init(&fa, &sa), ELK_OK);
    assert_int_equal(elk_fence_init(&fb, &sb), ELK_OK);
    assert_int_equal(elk_fence_begin(&fa, 3), ELK_OK);
    assert_true(a.lock_fd >= 0);
    assert_int_equal(stat(lock, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(sa.lock(sa.ctx), ELK_E_STATE);
    elk_fence_file_set_wait(&b, 0);
    assert_int_equal(elk_fence_begin(&fb, 4), ELK_E_FENCE_BUSY);
    elk_fence_file_set_wait(&b, 30);
    assert_int_equal(elk_fence_begin(&fb, 4), ELK_E_FENCE_BUSY);
    assert_int_equal(elk_fence_end(&fa), ELK_OK);
    assert_int_equal(a.lock_fd, -1);
    assert_int_equal(elk_fence_begin(&fb, 4), ELK_OK);
    assert_int_equal(elk_fence_end(&fb), ELK_OK);
    /* missing lock file: made again; the lock file is never removed by the guard */
    assert_int_equal(unlink(lock), 0);
    assert_int_equal(elk_fence_check(&fa, 4), ELK_OK);
    assert_int_equal(stat(lock, &st), 0);
    assert_int_equal(elk_fence_check(&fa, 3), ELK_E_FENCE_STALE);
}

/* A lock that cannot be made (no directory) is a storage failure with its errno. */
static void test_lock_unmakeable(void **state)
{
    fx_t *fx = *state;
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    char path[400];
    snprintf(path, sizeof path, "%s/no/dir/state", fx->dir);
    assert_int_equal(elk_fence_file_init(&ff, path, &s), ELK_OK);
    assert_int_equal(s.lock(s.ctx), ELK_E_FENCE_STORAGE);
    assert_int_not_equal(ff.last_errno, 0);
    assert_int_equal(ff.lock_fd, -1);
    s.unlock(s.ctx); /* harmless when not held */
}

/* A guard inside a held step decides under its parent's hold (the inherited descriptor)
 * instead of waiting for it; ending it never ends the parent's hold. A descriptor that
 * is not that lock file is ignored. */
static void test_inherited_lock(void **state)
{
    fx_t *fx = *state;
    elk_fence_file_t a, b, c;
    elk_fence_storage_t sa, sb, sc;
    elk_fence_t fa, fb, fc;
    assert_int_equal(elk_fence_file_init(&a, fx->path, &sa), ELK_OK);
    assert_int_equal(elk_fence_file_init(&b, fx->path, &sb), ELK_OK);
    assert_int_equal(elk_fence_file_init(&c, fx->path, &sc), ELK_OK);
    assert_int_equal(elk_fence_init(&fa, &sa), ELK_OK);
    assert_int_equal(elk_fence_init(&fb, &sb), ELK_OK);
    assert_int_equal(elk_fence_init(&fc, &sc), ELK_OK);
    assert_int_equal(elk_fence_begin(&fa, 5), ELK_OK);
    elk_fence_file_set_wait(&b, 0);
    elk_fence_file_set_inherited(&b, a.lock_fd);
    assert_int_equal(elk_fence_check(&fb, 6), ELK_OK); /* no wait for the parent */
    assert_int_equal(elk_fence_check(&fb, 5), ELK_E_FENCE_STALE);
    elk_fence_file_set_wait(&c, 0);
    elk_fence_file_set_inherited(&c, 0);                         /* stdin: not the lock file */
    assert_int_equal(elk_fence_check(&fc, 7), ELK_E_FENCE_BUSY); /* the parent still holds it */
    assert_int_equal(elk_fence_end(&fa), ELK_OK);
    assert_int_equal(elk_fence_check(&fc, 7), ELK_OK);
}

/* Durability: the temp file's bytes are fsynced before it is renamed over the state (a
 * crash after the rename must never find an empty or partial file there: the guard would
 * fail closed on it, or, on a file system that orders metadata, read an older token), and
 * the directory is fsynced after the rename. Recorded by the interposed calls above. */
static void test_store_syncs_before_rename(void **state)
{
    fx_t *fx = *state;
    elk_fence_file_t ff;
    elk_fence_storage_t s;
    uint64_t t = 0;
    assert_int_equal(elk_fence_file_init(&ff, fx->path, &s), ELK_OK);
    memset(&io, 0, sizeof io);
    io.on = true;
    assert_int_equal(s.store(s.ctx, 41), ELK_OK);
    assert_int_equal(s.store(s.ctx, 42), ELK_OK);
    io.on = false;
    assert_int_equal(io.renames, 2);
    assert_int_equal(io.renames_unsynced, 0);
    assert_int_equal(io.dir_syncs_due, 2);
    assert_int_equal(io.dir_syncs, 2);
    assert_int_equal(s.load(s.ctx, &t), ELK_OK);
    assert_int_equal(t, 42);
}

/* Between a guard's open of "<path>.lock" and its flock, the lock file is unlinked or
 * replaced and another guard locks the file now at the path. The first guard's flock then
 * succeeds on a file nobody else will ever lock: it must see that (fstat against stat),
 * lock the current file instead, and so wait for the other guard, never run beside it. */
static char race_lock_name[400];
static bool race_replace;
static elk_fence_t *race_other;
static int race_other_rc;
static uint64_t race_token; /* the other guard's; the first guard's is one more */

static void race_swap_lock_file(void)
{
    if (race_replace) {
        char fresh[420];
        snprintf(fresh, sizeof fresh, "%s.new", race_lock_name);
        write_raw(fresh, "");
        assert_int_equal(rename(fresh, race_lock_name), 0);
    } else {
        assert_int_equal(unlink(race_lock_name), 0);
    }
    race_other_rc = elk_fence_begin(race_other, race_token);
}

static void test_lock_file_replaced_while_locking(void **state)
{
    fx_t *fx = *state;
    snprintf(race_lock_name, sizeof race_lock_name, "%s.lock", fx->path);
    for (int replace = 0; replace <= 1; replace++) {
        elk_fence_file_t a, b;
        elk_fence_storage_t sa, sb;
        elk_fence_t fa, fb;
        struct stat held, at_path;
        assert_int_equal(elk_fence_file_init(&a, fx->path, &sa), ELK_OK);
        assert_int_equal(elk_fence_file_init(&b, fx->path, &sb), ELK_OK);
        assert_int_equal(elk_fence_init(&fa, &sa), ELK_OK);
        assert_int_equal(elk_fence_init(&fb, &sb), ELK_OK);
        write_raw(race_lock_name, ""); /* the file a opens first */
        race_replace = replace != 0;
        race_other = &fb;
        race_other_rc = -1;
        race_token = 10u * (uint64_t)(replace + 1);
        elk_fence_file_set_wait(&a, 0);
        before_flock = race_swap_lock_file;
        int rc = elk_fence_begin(&fa, race_token + 1u);
        before_flock = NULL;
        assert_int_equal(race_other_rc, ELK_OK); /* b holds the file at the path */
        assert_int_equal(rc, ELK_E_FENCE_BUSY);  /* so a must not proceed too */
        assert_int_equal(a.lock_fd, -1);
        assert_int_equal(elk_fence_end(&fb), ELK_OK);
        assert_int_equal(elk_fence_begin(&fa, race_token + 1u), ELK_OK);
        assert_int_equal(fstat(a.lock_fd, &held), 0);
        assert_int_equal(stat(race_lock_name, &at_path), 0);
        assert_true(held.st_ino == at_path.st_ino && held.st_dev == at_path.st_dev);
        assert_int_equal(elk_fence_end(&fa), ELK_OK);
    }
}

int main(void)
{
    /* The tests on files in a fresh directory (setup), then the ones that need none. */
    int failed = ELK_RUN_EACH(
        "files", setup, teardown, test_missing_file_is_zero, test_roundtrip_and_format,
        test_corrupt_files, test_guard_over_file_survives_restart, test_corrupt_file_fails_closed,
        test_unwritable_directory, test_unreadable_path, test_crash_points, test_tmp_names_unique,
        test_lock_file, test_lock_unmakeable, test_inherited_lock, test_store_syncs_before_rename,
        test_lock_file_replaced_while_locking);
    return failed + ELK_RUN_TESTS(test_crc32_known_value, test_init_rejects_bad_path);
}
