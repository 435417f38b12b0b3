/*
 * Durable storage for the fencing guard (elk/fence.h) on POSIX: one small file.
 *
 * Format (one line of text, so a person can read it with cat):
 *     elkfence 1 <token> <crc32 of "elkfence 1 <token>" as 8 hex digits>\n
 * A store writes "<path>.tmp", fsyncs it, renames it over <path> and fsyncs the
 * directory, so after a crash the file holds either the old or the new value,
 * never a torn one. A file that does not match the format or checksum is reported
 * as ELK_E_FENCE_CORRUPT and the guard refuses every token (fail closed) until a
 * person has checked the actuator and restored or removed the file.
 *
 * A missing file means "no token accepted yet" (first use). Deleting the file
 * therefore resets the guard: do it only when the whole fleet's counters are
 * known to be above any token the actuator ever saw.
 */
#ifndef ELK_FENCE_FILE_H
#define ELK_FENCE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "elk/fence.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest path accepted (the temp file name adds 4 bytes). */
#define ELK_FENCE_FILE_PATH_MAX 4000u

typedef struct elk_fence_file {
    const char *path;   /* caller-owned, alive as long as the storage is used */
    int last_errno;     /* errno of the last failed system call, 0 if none (for messages) */
} elk_fence_file_t;

/* Bind ff to path and fill *storage with callbacks for elk_fence_init. No I/O yet.
 * Returns ELK_OK, or ELK_E_INVALID_ARG (NULL, empty or overlong path). */
int elk_fence_file_init(elk_fence_file_t *ff, const char *path, elk_fence_storage_t *storage);

/* The storage callbacks (also usable directly). load: ELK_OK (0 if the file does not
 * exist), ELK_E_FENCE_CORRUPT, or ELK_E_FENCE_STORAGE (see last_errno). store:
 * ELK_OK once the new value is durable, or ELK_E_FENCE_STORAGE. */
int elk_fence_file_load(void *ff, uint64_t *token);
int elk_fence_file_store(void *ff, uint64_t token);

/* CRC-32 (IEEE 802.3, as zlib computes it) of len bytes; exposed for tests. */
uint32_t elk_fence_file_crc32(const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* ELK_FENCE_FILE_H */
