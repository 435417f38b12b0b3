/* SPDX-License-Identifier: MIT */
/*
 * Durable storage for the fencing guard (elk/fence.h) on POSIX: one small file.
 *
 * Format (one line of text, so a person can read it with cat):
 *     elkfence 1 <token> <crc32 of "elkfence 1 <token>" as 8 hex digits>\n
 * A store writes a temp file with a name no other writer uses,
 * "<path>.tmp.<pid>.<n>" (created with O_EXCL), fsyncs it, renames it over <path> and
 * fsyncs the directory, so after a crash at any point the file holds either the old
 * or the new value, never a torn or a lower one. A file that does not match the format
 * or checksum is reported as ELK_E_FENCE_CORRUPT and the guard refuses every token
 * (fail closed) until a person has checked the actuator and restored or removed it.
 *
 * Serialisation across processes: "<path>.lock" (created 0600 when missing, never
 * deleted, never written) is locked with flock(2) around every decision (the lock and
 * unlock callbacks). A flock belongs to the open file, not to the process: a child
 * that inherits the descriptor keeps the lock alive after the parent dies, which is
 * what `elk guard ... -- CMD` relies on. Writers write only while they hold the lock,
 * so any "<path>.tmp*" file seen under the lock was left by a crash: it is removed
 * then and can never make a later call fail.
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

/* Longest path accepted (the lock and temp file names add up to 36 bytes). */
#define ELK_FENCE_FILE_PATH_MAX 4000u
/* elk_fence_file_set_wait: wait for the lock as long as it takes. */
#define ELK_FENCE_FILE_WAIT_FOREVER UINT32_MAX

/* The fencing state file behind an elk_fence_t: caller-allocated, bound by
 * elk_fence_file_init; the fields are for messages and tests. */
typedef struct elk_fence_file {
    const char *path; /* caller-owned, alive as long as the storage is used */
    int last_errno;   /* errno of the last failed system call, 0 if none (for messages) */
    int lock_fd;      /* descriptor of "<path>.lock" while locked, else -1 */
    uint32_t wait_ms; /* how long lock waits (default: forever) */
    uint32_t tmp_seq; /* the <n> of the next temp name (unique within this process) */
    int inherited_fd; /* a descriptor of "<path>.lock" a parent may hold locked, or -1 */
} elk_fence_file_t;

/* Bind ff to path and fill *storage with callbacks for elk_fence_init (load, store,
 * lock, unlock). No I/O yet. Returns ELK_OK, or ELK_E_INVALID_ARG (NULL, empty or
 * overlong path). */
int elk_fence_file_init(elk_fence_file_t *ff, const char *path, elk_fence_storage_t *storage);

/* Bound the lock wait to wait_ms (0: try once; ELK_FENCE_FILE_WAIT_FOREVER: no bound).
 * The bound is counted in sleeps between tries (no clock is read), so on a loaded
 * machine the wait can last somewhat longer, never shorter. */
void elk_fence_file_set_wait(elk_fence_file_t *ff, uint32_t wait_ms);

/* Use fd, a descriptor inherited from a parent that holds the guard on this same state
 * (`elk guard ... -- CMD` passes it to CMD), so a guard inside that step decides under
 * the parent's hold instead of waiting for its own parent. lock checks that fd is
 * "<path>.lock" and that its open file holds (or can take at once) the lock; otherwise
 * it locks as usual. Closing our copy never ends the parent's hold. */
void elk_fence_file_set_inherited(elk_fence_file_t *ff, int fd);

/* The storage callbacks (also usable directly; ctx is the elk_fence_file_t).
 * load: ELK_OK (0 if the file does not exist), ELK_E_FENCE_CORRUPT, or
 *   ELK_E_FENCE_STORAGE (see last_errno).
 * store: ELK_OK once the new value is durable, or ELK_E_FENCE_STORAGE. Removes stale
 *   temp files first when called under the lock.
 * lock: open (create 0600) "<path>.lock" and flock it exclusively, waiting up to
 *   wait_ms. ELK_OK (held: lock_fd is its descriptor, close-on-exec),
 *   ELK_E_FENCE_BUSY (held elsewhere for the whole wait), ELK_E_FENCE_STORAGE (cannot
 *   open or lock, see last_errno), ELK_E_STATE (already held by ff).
 * unlock: close lock_fd. The lock ends when the last descriptor of that open file is
 *   closed, so a child that inherited it keeps it (see above). */
int elk_fence_file_load(void *ff, uint64_t *token);
int elk_fence_file_store(void *ff, uint64_t token);
int elk_fence_file_lock(void *ff);
void elk_fence_file_unlock(void *ff);

/* CRC-32 (IEEE 802.3, as zlib computes it) of len bytes; exposed for tests. */
uint32_t elk_fence_file_crc32(const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* ELK_FENCE_FILE_H */
