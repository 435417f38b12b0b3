/* SPDX-License-Identifier: MIT */
/*
 * Waiting for lwIP sockets. lwIP socket numbers are not OS descriptors, so the
 * caller's loop must wait through lwIP: lwip_poll where LWIP_SOCKET_POLL is on
 * (Debian's liblwip, most RTOS builds), lwip_select otherwise.
 */
#include <string.h>

#include "lwip_requirements.h"

#include "lwip/errno.h"
#include "lwip/sockets.h"
#include "lwip/sys.h"

#include "elk/port_lwip.h"

#include "lwip_poll1.h"

#if LWIP_SOCKET_POLL

/* lwIP takes a signed int of milliseconds. */
static int clamp_timeout(uint32_t timeout_ms)
{
    return timeout_ms > (uint32_t)INT32_MAX ? (int)INT32_MAX : (int)timeout_ms;
}

static short to_poll_events(unsigned events)
{
    short ev = 0;
    if (events & ELK_WAIT_READ) {
        ev |= POLLIN;
    }
    if (events & ELK_WAIT_WRITE) {
        ev |= POLLOUT;
    }
    return ev;
}

static unsigned from_poll_events(short revents)
{
    unsigned ready = 0;
    if (revents & POLLIN) {
        ready |= ELK_WAIT_READ;
    }
    if (revents & POLLOUT) {
        ready |= ELK_WAIT_WRITE;
    }
    /* Let the next recv/progress call report the failure as an elk_err_t. */
    if (revents & (POLLERR | POLLHUP | POLLNVAL)) {
        ready |= ELK_WAIT_READ | ELK_WAIT_WRITE;
    }
    return ready;
}

int elk_lwip_poll1(int sock, unsigned events, uint32_t timeout_ms, unsigned *ready)
{
    struct pollfd pfd;
    int rc;

    *ready = 0;
    memset(&pfd, 0, sizeof(pfd));
    pfd.fd = sock;
    pfd.events = to_poll_events(events);
    rc = lwip_poll(&pfd, 1, clamp_timeout(timeout_ms));
    if (rc < 0) {
        return -1;
    }
    if (rc > 0) {
        *ready = from_poll_events(pfd.revents);
    }
    return 0;
}

int elk_lwip_wait(elk_lwip_waiter_t *waiters, size_t n, uint32_t timeout_ms)
{
    struct pollfd pfd[ELK_LWIP_WAIT_MAX];
    size_t which[ELK_LWIP_WAIT_MAX];
    size_t i;
    size_t m = 0;
    int rc;
    int count = 0;

    if (n > ELK_LWIP_WAIT_MAX || (waiters == NULL && n > 0)) {
        return ELK_E_INVALID_ARG;
    }
    for (i = 0; i < n; i++) {
        waiters[i].ready = 0;
        if (waiters[i].sock >= 0 && waiters[i].events != 0) {
            memset(&pfd[m], 0, sizeof(pfd[m]));
            pfd[m].fd = waiters[i].sock;
            pfd[m].events = to_poll_events(waiters[i].events);
            which[m] = i;
            m++;
        }
    }
    if (m == 0) {
        sys_msleep(timeout_ms);
        return 0;
    }
    rc = lwip_poll(pfd, (nfds_t)m, clamp_timeout(timeout_ms));
    if (rc < 0) {
        return ELK_E_IO;
    }
    for (i = 0; i < m && rc > 0; i++) {
        unsigned ready = from_poll_events(pfd[i].revents);
        waiters[which[i]].ready = ready;
        if (ready != 0) {
            count++;
        }
    }
    return count;
}

#else /* LWIP_SOCKET_SELECT */

static void to_timeval(uint32_t timeout_ms, struct timeval *tv)
{
    tv->tv_sec = (long)(timeout_ms / 1000u);
    tv->tv_usec = (long)((timeout_ms % 1000u) * 1000u);
}

/* Adds sock to the sets; returns the new highest socket. lwIP's FD_SET ignores
 * sockets outside its FD_SETSIZE (MEMP_NUM_NETCONN). */
static int add_fd(int sock, unsigned events, fd_set *r, fd_set *w, fd_set *e, int maxfd)
{
    if (events & ELK_WAIT_READ) {
        FD_SET(sock, r);
    }
    if (events & ELK_WAIT_WRITE) {
        FD_SET(sock, w);
    }
    FD_SET(sock, e);
    return sock > maxfd ? sock : maxfd;
}

static unsigned ready_of(int sock, fd_set *r, fd_set *w, fd_set *e)
{
    unsigned ready = 0;
    if (FD_ISSET(sock, r)) {
        ready |= ELK_WAIT_READ;
    }
    if (FD_ISSET(sock, w)) {
        ready |= ELK_WAIT_WRITE;
    }
    if (FD_ISSET(sock, e)) {
        ready |= ELK_WAIT_READ | ELK_WAIT_WRITE;
    }
    return ready;
}

int elk_lwip_poll1(int sock, unsigned events, uint32_t timeout_ms, unsigned *ready)
{
    fd_set r, w, e;
    struct timeval tv;
    int maxfd;
    int rc;

    *ready = 0;
    FD_ZERO(&r);
    FD_ZERO(&w);
    FD_ZERO(&e);
    maxfd = add_fd(sock, events, &r, &w, &e, -1);
    to_timeval(timeout_ms, &tv);
    rc = lwip_select(maxfd + 1, &r, &w, &e, &tv);
    if (rc < 0) {
        return -1;
    }
    if (rc > 0) {
        *ready = ready_of(sock, &r, &w, &e);
    }
    return 0;
}

int elk_lwip_wait(elk_lwip_waiter_t *waiters, size_t n, uint32_t timeout_ms)
{
    fd_set r, w, e;
    struct timeval tv;
    int maxfd = -1;
    size_t i;
    int rc;
    int count = 0;

    if (n > ELK_LWIP_WAIT_MAX || (waiters == NULL && n > 0)) {
        return ELK_E_INVALID_ARG;
    }
    FD_ZERO(&r);
    FD_ZERO(&w);
    FD_ZERO(&e);
    for (i = 0; i < n; i++) {
        waiters[i].ready = 0;
        if (waiters[i].sock >= 0 && waiters[i].events != 0) {
            maxfd = add_fd(waiters[i].sock, waiters[i].events, &r, &w, &e, maxfd);
        }
    }
    if (maxfd < 0) {
        sys_msleep(timeout_ms);
        return 0;
    }
    to_timeval(timeout_ms, &tv);
    rc = lwip_select(maxfd + 1, &r, &w, &e, &tv);
    if (rc < 0) {
        return ELK_E_IO;
    }
    for (i = 0; i < n && rc > 0; i++) {
        if (waiters[i].sock >= 0 && waiters[i].events != 0) {
            waiters[i].ready = ready_of(waiters[i].sock, &r, &w, &e);
            if (waiters[i].ready != 0) {
                count++;
            }
        }
    }
    return count;
}

#endif /* LWIP_SOCKET_POLL */
