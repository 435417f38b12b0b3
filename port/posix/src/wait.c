/* SPDX-License-Identifier: MIT */
/* One poll() for every descriptor a program owns, so elkd and the blocking convenience
 * API share a single loop shape: poll the fleet, wait here, poll again. */
#include <errno.h>
#include <limits.h>
#include <poll.h>

#include "elk/port_posix.h"

static int timeout_until(uint64_t deadline)
{
    uint64_t now;
    if (deadline == UINT64_MAX) {
        return -1;
    }
    now = elk_posix_now_ms();
    if (deadline <= now) {
        return 0;
    }
    if (deadline - now > (uint64_t)INT_MAX) {
        return INT_MAX;
    }
    return (int)(deadline - now);
}

int elk_posix_wait(const elk_wait_t *waits, size_t count, uint64_t deadline, unsigned *revents)
{
    struct pollfd pfd[ELK_POSIX_WAIT_MAX];
    size_t i;
    int rc;
    int ready = 0;

    if (count > ELK_POSIX_WAIT_MAX || (waits == NULL && count > 0)) {
        return ELK_E_INVALID_ARG;
    }
    for (i = 0; i < count; i++) {
        /* poll() skips negative descriptors, which keeps indexes aligned with waits[]. */
        pfd[i].fd = (waits[i].events & (ELK_WAIT_READ | ELK_WAIT_WRITE)) ? waits[i].fd : -1;
        pfd[i].events = 0;
        if (waits[i].events & ELK_WAIT_READ) {
            pfd[i].events |= POLLIN;
        }
        if (waits[i].events & ELK_WAIT_WRITE) {
            pfd[i].events |= POLLOUT;
        }
        pfd[i].revents = 0;
        if (revents != NULL) {
            revents[i] = ELK_WAIT_NONE;
        }
    }
    rc = poll(pfd, (nfds_t)count, timeout_until(deadline));
    if (rc < 0) {
        /* A signal (SIGTERM to elkd) must return control so the loop sees its flag. */
        return (errno == EINTR) ? 0 : ELK_E_IO;
    }
    if (revents == NULL) {
        /* poll() counts exactly the entries the loop below would (skipped negative
         * descriptors report no events): no need to walk them for the blocking API. */
        return rc;
    }
    for (i = 0; i < count && rc > 0; i++) {
        unsigned ev = ELK_WAIT_NONE;
        if (pfd[i].fd < 0 || pfd[i].revents == 0) {
            continue;
        }
        if (pfd[i].revents & POLLIN) {
            ev |= ELK_WAIT_READ;
        }
        if (pfd[i].revents & POLLOUT) {
            ev |= ELK_WAIT_WRITE;
        }
        if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL)) {
            /* Let the owner's next send or recv report the failure itself. */
            ev |= ELK_WAIT_READ | ELK_WAIT_WRITE;
        }
        if (revents != NULL) {
            revents[i] = ev;
        }
        ready++;
    }
    return ready;
}
