/*
 * port/socket's shim onto BSD sockets (see port/socket/socket_transport.c for the
 * contract). Only calls lwIP's socket API also has, so port/lwip's shim stays a list of
 * renames; SOCK_CLOEXEC and EINTR are the POSIX-only additions.
 */
#ifndef ELK_PORT_POSIX_SOCKET_SHIM_H
#define ELK_PORT_POSIX_SOCKET_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#define SOCKET_API_KEEPALIVE 1

static int socket_api_socket(int family)
{
    int type = SOCK_STREAM;
#ifdef SOCK_CLOEXEC
    /* Not an extra call, only a flag: elkd's actuator children must not inherit it. */
    type |= SOCK_CLOEXEC;
#endif
    return socket(family, type, 0);
}

static int socket_api_fcntl(int fd, int cmd, int val)
{
    return fcntl(fd, cmd, val);
}

static int socket_api_setsockopt(int fd, int level, int name, int value)
{
    return setsockopt(fd, level, name, &value, (socklen_t)sizeof value);
}

static int socket_api_so_error(int fd, int *so_error)
{
    socklen_t len = (socklen_t)sizeof *so_error;
    return getsockopt(fd, SOL_SOCKET, SO_ERROR, so_error, &len);
}

static int socket_api_connect(int fd, const struct sockaddr *sa, uint32_t len)
{
    return connect(fd, sa, (socklen_t)len);
}

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

static ssize_t socket_api_send(int fd, const uint8_t *buf, size_t len, int flags)
{
    return send(fd, buf, len, flags);
}

static ssize_t socket_api_recv(int fd, uint8_t *buf, size_t len, int flags)
{
    return recv(fd, buf, len, flags);
}

static void socket_api_close(int fd)
{
    (void)close(fd);
}

#endif /* ELK_PORT_POSIX_SOCKET_SHIM_H */
