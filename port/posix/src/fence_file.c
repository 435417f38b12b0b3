/* SPDX-License-Identifier: MIT */
/* Fencing state in a file: atomic replace (temp + fsync + rename + fsync dir),
 * serialised across processes by flock(2) on "<path>.lock". */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* flock(2): BSD and Linux, not POSIX; fcntl locks are per process */

#include "elk/fence_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ELK_FENCE_FILE_MAGIC "elkfence 1 "
#define ELK_FENCE_FILE_LINE_MAX 64u
/* Room for "<path>.tmp.<pid>.<n>" (at most 36 more bytes) and "<path>.lock". */
#define ELK_FENCE_FILE_NAME_MAX (ELK_FENCE_FILE_PATH_MAX + 40u)

uint32_t elk_fence_file_crc32(const void *data, size_t len)
{
    const uint8_t *p = (const uint8_t *)data;
    uint32_t crc = 0xFFFFFFFFu;
    size_t i;
    int bit;
    for (i = 0; i < len; i++) {
        crc ^= p[i];
        for (bit = 0; bit < 8; bit++) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

int elk_fence_file_init(elk_fence_file_t *ff, const char *path, elk_fence_storage_t *storage)
{
    size_t n;
    if (ff == NULL || path == NULL || storage == NULL) {
        return ELK_E_INVALID_ARG;
    }
    n = strlen(path);
    if (n == 0 || n > ELK_FENCE_FILE_PATH_MAX) {
        return ELK_E_INVALID_ARG;
    }
    ff->path = path;
    ff->last_errno = 0;
    ff->lock_fd = -1;
    ff->wait_ms = ELK_FENCE_FILE_WAIT_FOREVER;
    ff->tmp_seq = 0;
    ff->inherited_fd = -1;
    storage->ctx = ff;
    storage->load = elk_fence_file_load;
    storage->store = elk_fence_file_store;
    storage->lock = elk_fence_file_lock;
    storage->unlock = elk_fence_file_unlock;
    return ELK_OK;
}

void elk_fence_file_set_inherited(elk_fence_file_t *ff, int fd)
{
    if (ff != NULL) {
        ff->inherited_fd = fd;
    }
}

void elk_fence_file_set_wait(elk_fence_file_t *ff, uint32_t wait_ms)
{
    if (ff != NULL) {
        ff->wait_ms = wait_ms;
    }
}

/* Format the body "elkfence 1 <token>" into out; returns its length. */
static size_t elk_fence_file_body(uint64_t token, char *out, size_t cap)
{
    int n = snprintf(out, cap, ELK_FENCE_FILE_MAGIC "%llu", (unsigned long long)token);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

int elk_fence_file_load(void *ctx, uint64_t *token)
{
    elk_fence_file_t *ff = (elk_fence_file_t *)ctx;
    char buf[ELK_FENCE_FILE_LINE_MAX + 1];
    char body[ELK_FENCE_FILE_LINE_MAX];
    size_t got = 0, body_len, i;
    uint64_t v = 0;
    unsigned long crc_read;
    char *end;
    int fd;

    if (ff == NULL || token == NULL || ff->path == NULL) {
        return ELK_E_INVALID_ARG;
    }
    fd = open(ff->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            ff->last_errno = 0;
            *token = 0;
            return ELK_OK;
        }
        ff->last_errno = errno;
        return ELK_E_FENCE_STORAGE;
    }
    for (;;) {
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            ff->last_errno = errno;
            close(fd);
            return ELK_E_FENCE_STORAGE;
        }
        if (r == 0) {
            break;
        }
        got += (size_t)r;
        if (got == sizeof buf - 1) {
            break; /* longer than any valid file: corrupt */
        }
    }
    close(fd);
    buf[got] = '\0';
    ff->last_errno = 0;

    /* "elkfence 1 <digits> <8 hex>\n" exactly, nothing else. */
    if (got < sizeof(ELK_FENCE_FILE_MAGIC) - 1u + 1u + 1u + 8u + 1u || got >= sizeof buf - 1 ||
        memcmp(buf, ELK_FENCE_FILE_MAGIC, sizeof(ELK_FENCE_FILE_MAGIC) - 1u) != 0 ||
        buf[got - 1] != '\n') {
        return ELK_E_FENCE_CORRUPT;
    }
    i = sizeof(ELK_FENCE_FILE_MAGIC) - 1u;
    if (elk_fence_parse_token(buf + i, strcspn(buf + i, " "), &v) != ELK_OK) {
        return ELK_E_FENCE_CORRUPT;
    }
    i += strcspn(buf + i, " ");
    if (buf[i] != ' ' || got - (i + 1) != 9u) {
        return ELK_E_FENCE_CORRUPT;
    }
    for (body_len = i + 1; body_len < i + 9; body_len++) {
        char c = buf[body_len];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return ELK_E_FENCE_CORRUPT;
        }
    }
    crc_read = strtoul(buf + i + 1, &end, 16);
    if (end != buf + i + 9) {
        return ELK_E_FENCE_CORRUPT;
    }
    body_len = elk_fence_file_body(v, body, sizeof body);
    /* The body must round-trip exactly (no leading zeros) and match the checksum. */
    if (body_len != i || memcmp(body, buf, i) != 0 ||
        (uint32_t)crc_read != elk_fence_file_crc32(body, body_len)) {
        return ELK_E_FENCE_CORRUPT;
    }
    *token = v;
    return ELK_OK;
}

static int elk_fence_file_write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Split path into its directory (for fsync and the stale-temp scan) and base name. */
static const char *elk_fence_file_dir(const char *path, char *dir)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        strcpy(dir, ".");
        return path;
    }
    if (slash == path) {
        strcpy(dir, "/");
    } else {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
    }
    return slash + 1;
}

/* fsync the directory holding path so the rename itself is durable. */
static int elk_fence_file_sync_dir(const char *path)
{
    char dir[ELK_FENCE_FILE_PATH_MAX + 1];
    int fd, rc;
    (void)elk_fence_file_dir(path, dir);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    rc = fsync(fd);
    close(fd);
    return rc;
}

/* Remove "<base>.tmp*" files beside path. Called only under the lock, when no live
 * writer can own one: they are what a crash between create and rename leaves. Best
 * effort: a file that cannot be removed only costs disk space, never a refusal. */
static void elk_fence_file_sweep(const char *path)
{
    char dir[ELK_FENCE_FILE_PATH_MAX + 1];
    const char *base = elk_fence_file_dir(path, dir);
    size_t blen = strlen(base);
    struct dirent *e;
    DIR *d = opendir(dir);
    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, base, blen) == 0 && strncmp(e->d_name + blen, ".tmp", 4) == 0) {
            (void)unlinkat(dirfd(d), e->d_name, 0);
        }
    }
    closedir(d);
}

/* Create a temp file no other writer uses (O_EXCL); its name goes to tmp. */
static int elk_fence_file_create_tmp(elk_fence_file_t *ff, char *tmp, size_t cap)
{
    int tries, n, fd = -1;
    for (tries = 0; tries < 16 && fd < 0; tries++) {
        n = snprintf(tmp, cap, "%s.tmp.%ld.%lu", ff->path, (long)getpid(),
                     (unsigned long)ff->tmp_seq++);
        if (n <= 0 || (size_t)n >= cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) {
            return -1;
        }
    }
    return fd;
}

/* Write line into a fresh temp file, fsync it and rename it over path. */
static int elk_fence_file_replace(elk_fence_file_t *ff, const char *line, size_t len)
{
    char tmp[ELK_FENCE_FILE_NAME_MAX];
    int fd = elk_fence_file_create_tmp(ff, tmp, sizeof tmp);
    if (fd < 0) {
        return -1;
    }
    if (elk_fence_file_write_all(fd, line, len) != 0 || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return -1;
    }
    if (close(fd) != 0 || rename(tmp, ff->path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

int elk_fence_file_store(void *ctx, uint64_t token)
{
    elk_fence_file_t *ff = (elk_fence_file_t *)ctx;
    char line[ELK_FENCE_FILE_LINE_MAX];
    size_t body_len;
    int n;

    if (ff == NULL || ff->path == NULL) {
        return ELK_E_INVALID_ARG;
    }
    body_len = elk_fence_file_body(token, line, sizeof line);
    if (body_len == 0) {
        return ELK_E_INTERNAL;
    }
    n = snprintf(line + body_len, sizeof line - body_len, " %08lx\n",
                 (unsigned long)elk_fence_file_crc32(line, body_len));
    if (n <= 0 || (size_t)n >= sizeof line - body_len) {
        return ELK_E_INTERNAL;
    }
    if (ff->lock_fd >= 0) {
        elk_fence_file_sweep(ff->path);
    }
    if (elk_fence_file_replace(ff, line, body_len + (size_t)n) != 0 ||
        elk_fence_file_sync_dir(ff->path) != 0) {
        ff->last_errno = errno;
        return ELK_E_FENCE_STORAGE;
    }
    ff->last_errno = 0;
    return ELK_OK;
}

/* Same file still at "<path>.lock"? Someone may have removed or replaced it while we
 * waited; a lock on an unlinked file would exclude nobody. */
static int elk_fence_file_lock_current(int fd, const char *name)
{
    struct stat a, b;
    if (fstat(fd, &a) != 0 || stat(name, &b) != 0) {
        return 0;
    }
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* flock fd exclusively within wait_ms of sleeps. 0: held; -1 with errno (EWOULDBLOCK:
 * the wait ran out). */
static int elk_fence_file_flock(int fd, uint32_t wait_ms)
{
    uint32_t slept = 0, step = 1;
    if (wait_ms == ELK_FENCE_FILE_WAIT_FOREVER) {
        while (flock(fd, LOCK_EX) != 0) {
            if (errno != EINTR) {
                return -1;
            }
        }
        return 0;
    }
    for (;;) {
        struct timespec ts;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            return 0;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        }
        if (slept >= wait_ms) {
            errno = EWOULDBLOCK;
            return -1;
        }
        step = step > wait_ms - slept ? wait_ms - slept : step;
        ts.tv_sec = (time_t)(step / 1000u);
        ts.tv_nsec = (long)(step % 1000u) * 1000000L;
        (void)nanosleep(&ts, NULL);
        slept += step;
        step = step < 16u ? step * 2u : 16u; /* short tries first: most steps are short */
    }
}

/* A copy of the inherited descriptor when it is "<path>.lock" and its open file holds the
 * lock (flock on the same open file succeeds at once); else -1. */
static int elk_fence_file_adopt(const elk_fence_file_t *ff, const char *name)
{
    int fd;
    if (ff->inherited_fd < 0) {
        return -1;
    }
    fd = fcntl(ff->inherited_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    if (!elk_fence_file_lock_current(fd, name) || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Open (create 0600) and flock name; loops when the file was replaced meanwhile. */
static int elk_fence_file_lock_open(elk_fence_file_t *ff, const char *name)
{
    for (;;) {
        int fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0 || elk_fence_file_flock(fd, ff->wait_ms) != 0) {
            int e = errno;
            if (fd >= 0) {
                close(fd);
            }
            errno = e;
            return -1;
        }
        if (elk_fence_file_lock_current(fd, name)) {
            return fd;
        }
        close(fd); /* lost a race with a removal of the lock file: lock the new one */
    }
}

int elk_fence_file_lock(void *ctx)
{
    elk_fence_file_t *ff = (elk_fence_file_t *)ctx;
    char name[ELK_FENCE_FILE_NAME_MAX];
    int fd, n;
    if (ff == NULL || ff->path == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (ff->lock_fd >= 0) {
        return ELK_E_STATE;
    }
    n = snprintf(name, sizeof name, "%s.lock", ff->path);
    if (n <= 0 || (size_t)n >= sizeof name) {
        return ELK_E_INVALID_ARG;
    }
    fd = elk_fence_file_adopt(ff, name);
    if (fd < 0) {
        fd = elk_fence_file_lock_open(ff, name);
    }
    if (fd < 0) {
        ff->last_errno = errno == EWOULDBLOCK ? 0 : errno;
        return errno == EWOULDBLOCK ? ELK_E_FENCE_BUSY : ELK_E_FENCE_STORAGE;
    }
    ff->lock_fd = fd;
    ff->last_errno = 0;
    return ELK_OK;
}

void elk_fence_file_unlock(void *ctx)
{
    elk_fence_file_t *ff = (elk_fence_file_t *)ctx;
    if (ff != NULL && ff->lock_fd >= 0) {
        (void)close(ff->lock_fd);
        ff->lock_fd = -1;
    }
}
