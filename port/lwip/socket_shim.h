/*
 * port/socket's shim onto lwIP's socket API (see port/socket/socket_transport.c for
 * the contract). Only the lwip_* names are called, so the transport behaves the same
 * whatever LWIP_COMPAT_SOCKETS is, and the errno values are this lwIP's.
 */
#ifndef ELK_PORT_LWIP_SOCKET_SHIM_H
#define ELK_PORT_LWIP_SOCKET_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "lwip_requirements.h"

#include "lwip/errno.h"
#include "lwip/sockets.h"

#include "elk/platform.h"

#include "lwip_poll1.h"

/* port/lwip never asks for keepalive (lib/'s request deadlines notice a dead server, and
 * the timers need LWIP_TCP_KEEPALIVE), so the option code stays out of its build. */
#define SOCKET_API_KEEPALIVE 0

static int socket_api_socket(int family)
{
    return lwip_socket(family, SOCK_STREAM, 0);
}

/* lwip_fcntl takes exactly three ints and understands only O_NONBLOCK. */
static int socket_api_fcntl(int fd, int cmd, int val)
{
    return lwip_fcntl(fd, cmd, val);
}

static int socket_api_setsockopt(int fd, int level, int name, int value)
{
    return lwip_setsockopt(fd, level, name, &value, (socklen_t)sizeof value);
}

static int socket_api_so_error(int fd, int *so_error)
{
    socklen_t len = (socklen_t)sizeof *so_error;
    return lwip_getsockopt(fd, SOL_SOCKET, SO_ERROR, so_error, &len);
}

static int socket_api_connect(int fd, const struct sockaddr *sa, uint32_t len)
{
    return lwip_connect(fd, sa, (socklen_t)len);
}

static int socket_api_writable(int fd)
{
    unsigned ready = 0;
    if (elk_lwip_poll1(fd, ELK_WAIT_WRITE, 0, &ready) < 0) {
        return -1;
    }
    return ready != 0 ? 1 : 0;
}

static ssize_t socket_api_send(int fd, const uint8_t *buf, size_t len, int flags)
{
    return lwip_send(fd, buf, len, flags);
}

static ssize_t socket_api_recv(int fd, uint8_t *buf, size_t len, int flags)
{
    return lwip_recv(fd, buf, len, flags);
}

static void socket_api_close(int fd)
{
    (void)lwip_close(fd);
}

#endif /* ELK_PORT_LWIP_SOCKET_SHIM_H */
