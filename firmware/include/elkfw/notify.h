/* SPDX-License-Identifier: MIT */
/*
 * The service manager's notification protocol (sd_notify(3)) without libsystemd: one
 * datagram of "KEY=VALUE\n" lines to the Unix socket named by $NOTIFY_SOCKET (a path, or
 * "@name" for the abstract namespace). Works wherever a manager sets that variable
 * (systemd, or procd and test harnesses that do); a no-op everywhere else.
 *
 * elkd sends READY=1 once its control socket is bound and the fleet has a quorum (or the
 * wait for it is over and said so in STATUS=), STATUS= when its one-line summary changes,
 * RELOADING=1 + MONOTONIC_USEC= / READY=1 around a reload, STOPPING=1 at shutdown and
 * WATCHDOG=1 from its main loop at half of $WATCHDOG_USEC while the loop turns.
 */
#ifndef ELKFW_NOTIFY_H
#define ELKFW_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

typedef struct elkfw_notify {
    int fd; /* -1: no manager to tell */
    struct sockaddr_un addr;
    socklen_t addr_len;
    uint32_t watchdog_ms; /* ping interval (half of $WATCHDOG_USEC), 0: no watchdog */
    uint64_t next_ping;   /* caller's clock ms of the next WATCHDOG=1 */
} elkfw_notify_t;

/* Read $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID (the watchdog is ours only if it
 * names this process or is unset) and unset them, so nothing elkd starts inherits them.
 * Never fails: a missing or unusable socket leaves n->fd at -1. */
void elkfw_notify_init(elkfw_notify_t *n);

/* Send one datagram (state: "READY=1\nSTATUS=...", no trailing newline needed). Returns
 * true if it was sent or there is no manager; errors are not fatal and not retried. */
bool elkfw_notify_send(elkfw_notify_t *n, const char *state);

/* RELOADING=1 with MONOTONIC_USEC= (CLOCK_MONOTONIC, as systemd wants for it). */
void elkfw_notify_reloading(elkfw_notify_t *n);

/* From the main loop, now on the caller's clock: WATCHDOG=1 if due. Returns the time of
 * the next ping (UINT64_MAX without a watchdog), for the loop's poll timeout. */
uint64_t elkfw_notify_watchdog(elkfw_notify_t *n, uint64_t now);

void elkfw_notify_close(elkfw_notify_t *n);

#endif /* ELKFW_NOTIFY_H */
