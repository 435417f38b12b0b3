/* SPDX-License-Identifier: MIT */
/*
 * port/socket's shim onto lwIP's socket API (the contract is at the top of
 * port/socket/socket_transport.c). Only the lwip_* names are called, so the transport
 * behaves the same whatever LWIP_COMPAT_SOCKETS is, and the errno values are this
 * lwIP's. lwip_fcntl takes exactly three ints and understands only O_NONBLOCK, which is
 * all the transport asks of it.
 */
#ifndef ELK_PORT_LWIP_SOCKET_SHIM_H
#define ELK_PORT_LWIP_SOCKET_SHIM_H

#include "lwip_requirements.h"

#include "lwip/errno.h"
#include "lwip/sockets.h"

#include "elk/platform.h"

#include "lwip_poll1.h"

#define SOCKET_CALL(name) lwip_##name

#define SOCKET_API_STREAM SOCK_STREAM

/* port/lwip never asks for keepalive (lib/'s request deadlines notice a dead server, and
 * the timers need LWIP_TCP_KEEPALIVE), so the option code stays out of its build. */
#define SOCKET_API_KEEPALIVE 0

static int socket_api_writable(int fd)
{
    unsigned ready = 0;
    if (elk_lwip_poll1(fd, ELK_WAIT_WRITE, 0, &ready) < 0) {
        return -1;
    }
    return ready != 0 ? 1 : 0;
}

#endif /* ELK_PORT_LWIP_SOCKET_SHIM_H */
