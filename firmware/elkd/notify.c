/* SPDX-License-Identifier: MIT */
/* sd_notify over $NOTIFY_SOCKET in a few lines (elkfw/notify.h). */
#define _GNU_SOURCE
#include "elkfw/notify.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void elkfw_notify_init(elkfw_notify_t *n)
{
    const char *path = getenv("NOTIFY_SOCKET");
    const char *usec = getenv("WATCHDOG_USEC");
    const char *wpid = getenv("WATCHDOG_PID");
    size_t len;
    memset(n, 0, sizeof *n);
    n->fd = -1;
    if (usec != NULL && (wpid == NULL || strtol(wpid, NULL, 10) == (long)getpid())) {
        unsigned long long us = strtoull(usec, NULL, 10);
        /* half the timeout, as sd_watchdog_enabled(3) advises; at least every ms */
        n->watchdog_ms = us >= 2000u
            ? (us / 2000u > UINT32_MAX ? UINT32_MAX : (uint32_t)(us / 2000u))
            : (us ? 1u : 0u);
    }
    if (path != NULL && (path[0] == '/' || path[0] == '@') &&
        (len = strlen(path)) < sizeof n->addr.sun_path) {
        n->addr.sun_family = AF_UNIX;
        memcpy(n->addr.sun_path, path, len);
        if (path[0] == '@') {
            n->addr.sun_path[0] = '\0'; /* abstract namespace */
        }
        n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
        n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    }
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
}

bool elkfw_notify_send(elkfw_notify_t *n, const char *state)
{
    ssize_t w;
    if (n->fd < 0) {
        return true;
    }
    do {
        w = sendto(n->fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *)&n->addr,
                   n->addr_len);
    } while (w < 0 && errno == EINTR);
    return w >= 0;
}

void elkfw_notify_reloading(elkfw_notify_t *n)
{
    struct timespec ts;
    char msg[64];
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the protocol's clock, not a lease's */
    snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
             (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
    (void)elkfw_notify_send(n, msg);
}

uint64_t elkfw_notify_watchdog(elkfw_notify_t *n, uint64_t now)
{
    if (n->watchdog_ms == 0 || n->fd < 0) {
        return UINT64_MAX;
    }
    if (now >= n->next_ping) {
        (void)elkfw_notify_send(n, "WATCHDOG=1");
        n->next_ping = now + n->watchdog_ms;
    }
    return n->next_ping;
}

void elkfw_notify_close(elkfw_notify_t *n)
{
    if (n->fd >= 0) {
        close(n->fd);
        n->fd = -1;
    }
}
