/* SPDX-License-Identifier: MIT */
/**
 * @file agent_client.h
 * @brief A lease from the local elkd, for programs that leave the fleet to the agent.
 *
 * elkd holds the connections to the Redis fleet, renews the lease and tells its client
 * when it is lost; a program only speaks the line protocol of the control socket
 * (docs/control-protocol.md). This helper is that conversation in C: connect, acquire
 * with a wait, read the token and the deadline, poll for loss, release. One lease per
 * connection; no heap, no threads, no global state: everything is in the caller's
 * elk_agent_t. The lease belongs to the connection, so elk_agent_close() (or the process
 * ending) releases it too.
 *
 * Drive the actuator only while elk_agent_poll() returns ELK_OK, and pass the token with
 * every command so the actuator can refuse an older holder (docs/guard.md).
 */
#ifndef ELK_AGENT_CLIENT_H
#define ELK_AGENT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Where elkd listens unless its configuration says otherwise (`[agent] socket`). */
#define ELK_AGENT_DEFAULT_SOCKET "/run/elkd/elkd.sock"
/** Longest resource name elkd accepts (without the terminating NUL). */
#define ELK_AGENT_NAME_MAX 63
/** Size of the receive buffer: every line this helper reads fits; longer ones are skipped. */
#define ELK_AGENT_BUF_SIZE 1024
/** Size of elk_agent_t::message, elkd's text of its last ERR answer. */
#define ELK_AGENT_MSG_SIZE 160

/**
 * One connection to elkd and the lease taken on it. Read the fields, never write them;
 * use the functions. elk_agent_connect() sets every field.
 */
typedef struct elk_agent {
    int fd;                                /**< the socket (-1: none), for your own poll() */
    bool held;                             /**< granted, and no loss seen yet */
    bool suspect;                          /**< EVENT SUSPECT seen, no RECOVERED since */
    int lost_cause;                        /**< why it is no longer held (ELK_OK: it is) */
    uint64_t token;                        /**< fencing token of the grant (0: fencing off) */
    uint64_t deadline_ms;                  /**< CLOCK_BOOTTIME ms until which it may drive */
    uint32_t stop_margin_ms;               /**< time left on the servers after the deadline */
    char resource[ELK_AGENT_NAME_MAX + 1]; /**< the resource taken */
    char message[ELK_AGENT_MSG_SIZE];      /**< elkd's text of its last ERR, for people */
    char buf[ELK_AGENT_BUF_SIZE];          /**< bytes received, not yet a whole line */
    size_t len;                            /**< bytes in buf */
    bool skipping;                         /**< discarding the rest of an overlong line */
} elk_agent_t;

/**
 * Connect to elkd's control socket.
 * @param a     the connection; overwritten (no lease)
 * @param path  socket path, NULL for ELK_AGENT_DEFAULT_SOCKET (programs usually pass
 *              getenv("ELK_SOCKET") when set, as `elk` does); copied, not kept
 * @return ELK_OK, ELK_E_INVALID_ARG (path too long for a Unix socket), or
 *         ELK_E_AGENT_UNREACHABLE (no elkd there, or no permission: a.message says which)
 */
int elk_agent_connect(elk_agent_t *a, const char *path);

/**
 * ACQUIRE a lease on resource, waiting up to wait_ms for it (0: one attempt).
 * @param a          a connected elk_agent_t without a lease
 * @param resource   a resource configured in elkd.conf (copied)
 * @param wait_ms    how long elkd may wait for the resource (0: one attempt)
 * @param timeout_ms how long past wait_ms to wait for elkd's answer (it always answers;
 *        a silent elkd closes the connection and gives ELK_E_TIMEOUT)
 * @return ELK_OK once granted (token, deadline_ms, stop_margin_ms set), or elkd's code:
 *         ELK_E_LOCK_BUSY, ELK_E_LOCK_TIMEOUT, ELK_E_FLEET_UNAVAILABLE,
 *         ELK_E_RESOURCE_UNKNOWN, ELK_E_FORBIDDEN, ... (a.message has elkd's text);
 *         ELK_E_ALREADY_HELD when this connection holds a lease already,
 *         ELK_E_NAME_INVALID / ELK_E_NAME_TOO_LONG for a bad name (not sent),
 *         ELK_E_CLOSED when elkd closed the connection, ELK_E_IO on a socket error.
 */
int elk_agent_acquire(elk_agent_t *a, const char *resource, uint32_t wait_ms, uint32_t timeout_ms);

/**
 * Read what elkd sent (renewals, loss) for up to timeout_ms, returning early on a loss.
 * @return ELK_OK while the lease is held and before its deadline; else why not: the
 *         cause of EVENT LOST (ELK_E_LOCK_LOST, ELK_E_FLEET_LOST, ELK_E_LOCK_TAKEN,
 *         ELK_E_MAX_HOLD, ...), ELK_E_SHUTTING_DOWN (EVENT SHUTDOWN), ELK_E_CLOSED (elkd
 *         went away), ELK_E_LOCK_LOST (the deadline passed with no renewal read), or
 *         ELK_E_NOT_HELD when nothing was acquired.
 */
int elk_agent_poll(elk_agent_t *a, uint32_t timeout_ms);

/**
 * Milliseconds left before the deadline (CLOCK_BOOTTIME), 0 once passed or not held.
 * Reads nothing: call elk_agent_poll() to apply what elkd sent.
 */
uint64_t elk_agent_remaining_ms(const elk_agent_t *a);

/**
 * RELEASE the lease and wait up to timeout_ms for elkd's answer.
 * @return ELK_OK (released; not held from the call on, whatever the answer),
 *         ELK_E_NOT_HELD (nothing held: never acquired or already lost), ELK_E_TIMEOUT,
 *         ELK_E_CLOSED or ELK_E_IO (closing the connection releases it anyway).
 */
int elk_agent_release(elk_agent_t *a, uint32_t timeout_ms);

/** Close the connection (elkd releases what it held). Safe to call twice. */
void elk_agent_close(elk_agent_t *a);

#ifdef __cplusplus
}
#endif

#endif /* ELK_AGENT_CLIENT_H */
