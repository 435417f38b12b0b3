/* Fencing state in a file: atomic replace (temp + fsync + rename + fsync dir). */
#define _POSIX_C_SOURCE 200809L

#include "elk/fence_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELK_FENCE_FILE_MAGIC "elkfence 1 "
#define ELK_FENCE_FILE_LINE_MAX 64u

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
    storage->ctx = ff;
    storage->load = elk_fence_file_load;
    storage->store = elk_fence_file_store;
    return ELK_OK;
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

/* fsync the directory holding path so the rename itself is durable. */
static int elk_fence_file_sync_dir(const char *path)
{
    char dir[ELK_FENCE_FILE_PATH_MAX + 1];
    const char *slash = strrchr(path, '/');
    int fd, rc;
    if (slash == NULL) {
        strcpy(dir, ".");
    } else if (slash == path) {
        strcpy(dir, "/");
    } else {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
    }
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    rc = fsync(fd);
    close(fd);
    return rc;
}

int elk_fence_file_store(void *ctx, uint64_t token)
{
    elk_fence_file_t *ff = (elk_fence_file_t *)ctx;
    char tmp[ELK_FENCE_FILE_PATH_MAX + 8];
    char line[ELK_FENCE_FILE_LINE_MAX];
    size_t body_len, line_len;
    int n, fd;

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
    line_len = body_len + (size_t)n;
    n = snprintf(tmp, sizeof tmp, "%s.tmp", ff->path);
    if (n <= 0 || (size_t)n >= sizeof tmp) {
        return ELK_E_INVALID_ARG;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        ff->last_errno = errno;
        return ELK_E_FENCE_STORAGE;
    }
    if (elk_fence_file_write_all(fd, line, line_len) != 0 || fsync(fd) != 0) {
        ff->last_errno = errno;
        close(fd);
        unlink(tmp);
        return ELK_E_FENCE_STORAGE;
    }
    if (close(fd) != 0) {
        ff->last_errno = errno;
        unlink(tmp);
        return ELK_E_FENCE_STORAGE;
    }
    if (rename(tmp, ff->path) != 0) {
        ff->last_errno = errno;
        unlink(tmp);
        return ELK_E_FENCE_STORAGE;
    }
    if (elk_fence_file_sync_dir(ff->path) != 0) {
        ff->last_errno = errno;
        return ELK_E_FENCE_STORAGE;
    }
    ff->last_errno = 0;
    return ELK_OK;
}
