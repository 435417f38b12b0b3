/* SPDX-License-Identifier: MIT */
/*
 * port/socket's shim onto BSD sockets (the contract is at the top of
 * port/socket/socket_transport.c). The calls keep their own names; a socket is created
 * close-on-exec, and a poll() interrupted by a signal means "look again".
 */
#ifndef ELK_PORT_POSIX_SOCKET_SHIM_H
#define ELK_PORT_POSIX_SOCKET_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#define SOCKET_CALL(name) name

#ifdef SOCK_CLOEXEC
/* Not an extra call, only a flag: elkd's actuator children must not inherit it. */
#define SOCKET_API_STREAM (SOCK_STREAM | SOCK_CLOEXEC)
#else
#define SOCKET_API_STREAM SOCK_STREAM
#endif

#define SOCKET_API_KEEPALIVE 1

static int socket_api_writable(int fd)
{
    struct pollfd pfd;
    int rc;

    pfd.fd = fd;
    pfd.events = POLLOUT;
    pfd.revents = 0;
    rc = poll(&pfd, 1, 0);
    if (rc < 0 && errno == EINTR) {
        return 0; /* a signal, not an answer: look again on the next call */
    }
    return rc < 0 ? -1 : rc;
}

#endif /* ELK_PORT_POSIX_SOCKET_SHIM_H */
