/* SPDX-License-Identifier: MIT */
/*
 * The TCP transport shared by port/posix and port/lwip: non-blocking connect
 * (EINPROGRESS, then writability and SO_ERROR), MSG_DONTWAIT send/recv returning a
 * count, 0 for "would block" or a negative elk_err_t, close, and the errno mapping.
 * There is no timer here: lib/node enforces its connect timeout with its own clock
 * and calls close() when it passes.
 *
 * The socket API comes from the port's socket_shim.h (found on the port's include
 * path, not here), which brings that stack's socket and errno headers and defines:
 *   SOCKET_CALL(name)       the API's name for a BSD call: SOCKET_CALL(send) is send
 *                           or lwip_send (socket, fcntl, setsockopt, getsockopt,
 *                           connect, send, recv, close; BSD arguments and errno)
 *   SOCKET_API_STREAM       the type argument of socket() for a TCP stream
 *   SOCKET_API_KEEPALIVE    1 to build the keepalive options, 0 to leave them out
 *   socket_api_writable(fd) 1 writable (or failed), 0 not yet, -1 with errno
 */
#include <string.h>

#include "socket_shim.h"

#include "socket_transport.h"

/* One int option; 0 or -1 with errno. */
static int socket_set_int(int fd, int level, int name, int value)
{
    return SOCKET_CALL(setsockopt)(fd, level, name, &value, (socklen_t)sizeof value);
}

#ifndef EWOULDBLOCK
#define EWOULDBLOCK EAGAIN
#endif

static int socket_would_block(int e)
{
    return e == EAGAIN || e == EWOULDBLOCK;
}

static int socket_map_connect_errno(int e)
{
    switch (e) {
    case ECONNREFUSED:
    case ECONNRESET: /* lwIP reports the RST answering a SYN as a reset */
        return ELK_E_CONNECT_REFUSED;
    case ETIMEDOUT:
        return ELK_E_CONNECT_TIMEOUT;
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM:
        return ELK_E_NO_RESOURCES;
    default:
        return ELK_E_CONNECT;
    }
}

/* Errors of an established stream: the peer is gone, as opposed to a local fault. */
static int socket_map_io_errno(int e)
{
    switch (e) {
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN:
    case ECONNABORTED:
#ifdef ESHUTDOWN
    case ESHUTDOWN:
#endif
        return ELK_E_CLOSED;
    case ENOBUFS:
    case ENOMEM:
        return ELK_E_NO_RESOURCES;
    default:
        return ELK_E_IO;
    }
}

/* An I/O failure is reported, not made sticky: lib/node closes the transport. */
static int socket_note(elk_socket_t *s, int err, int sys_errno)
{
    s->last_err = err;
    s->last_errno = sys_errno;
    return err;
}

static void socket_drop(elk_socket_t *s)
{
    if (s->fd >= 0) {
        (void)SOCKET_CALL(close)(s->fd);
    }
    s->fd = -1;
    s->want_write = false;
}

int elk_socket__fail(elk_socket_t *s, int err, int sys_errno)
{
    socket_drop(s);
    s->state = ELK_SOCKET_FAILED;
    return socket_note(s, err, sys_errno);
}

static void socket_close(void *ctx)
{
    elk_socket_t *s = (elk_socket_t *)ctx;
    if (s == NULL) {
        return;
    }
    socket_drop(s);
    s->state = ELK_SOCKET_CLOSED;
}

int elk_socket__begin(elk_socket_t *s, const elk_endpoint_t *ep)
{
    if (s == NULL || ep == NULL || ep->host == NULL || ep->host[0] == '\0' || ep->port == 0) {
        return ELK_E_INVALID_ARG;
    }
    socket_close(s);
    s->last_err = ELK_OK;
    s->last_errno = 0;
    return ELK_OK;
}

#if SOCKET_API_KEEPALIVE
/* Keepalive is best effort: a stack without the timers still works, only slower to
 * notice a dead peer on an idle connection (lib/'s request deadlines catch it). */
static void socket_keepalive(int fd, const elk_socket_options_t *opts)
{
    (void)socket_set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
#ifdef TCP_KEEPIDLE
    if (opts->keepalive_idle_s > 0) {
        (void)socket_set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, opts->keepalive_idle_s);
    }
#endif
#ifdef TCP_KEEPINTVL
    if (opts->keepalive_interval_s > 0) {
        (void)socket_set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, opts->keepalive_interval_s);
    }
#endif
#ifdef TCP_KEEPCNT
    if (opts->keepalive_count > 0) {
        (void)socket_set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, opts->keepalive_count);
    }
#endif
}
#endif

/* Non-blocking, then the options. 0, or -1 with errno from the call that failed. */
static int socket_setup(int fd, const elk_socket_options_t *opts)
{
    int flags = SOCKET_CALL(fcntl)(fd, F_GETFL, 0);
    if (flags < 0 || SOCKET_CALL(fcntl)(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        return -1;
    }
    if (opts->nodelay && socket_set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1) < 0) {
        return -1;
    }
#if SOCKET_API_KEEPALIVE
    if (opts->keepalive) {
        socket_keepalive(fd, opts);
    }
#endif
#ifdef SO_NOSIGPIPE
    (void)socket_set_int(fd, SOL_SOCKET, SO_NOSIGPIPE, 1);
#endif
    return 0;
}

int elk_socket__connect(elk_socket_t *s, const elk_socket_options_t *opts, const void *addr,
                        uint32_t addr_len)
{
    const struct sockaddr *sa = (const struct sockaddr *)addr;
    int fd = SOCKET_CALL(socket)(sa->sa_family, SOCKET_API_STREAM, 0);

    if (fd < 0) {
        return elk_socket__fail(s, socket_map_connect_errno(errno), errno);
    }
    s->fd = fd;
    if (socket_setup(fd, opts) != 0) {
        return elk_socket__fail(s, ELK_E_IO, errno);
    }
    if (SOCKET_CALL(connect)(fd, sa, (socklen_t)addr_len) == 0) {
        s->state = ELK_SOCKET_CONNECTED;
        return 1;
    }
    if (errno == EINPROGRESS || errno == EALREADY || errno == EINTR) {
        s->state = ELK_SOCKET_CONNECTING;
        return 0;
    }
    return elk_socket__fail(s, socket_map_connect_errno(errno), errno);
}

int elk_socket__progress(void *ctx)
{
    elk_socket_t *s = (elk_socket_t *)ctx;
    int so_error = 0;
    socklen_t so_error_len = (socklen_t)sizeof so_error;
    int ready;

    if (s == NULL) {
        return ELK_E_INVALID_ARG;
    }
    switch (s->state) {
    case ELK_SOCKET_CONNECTED:
        return 1;
    case ELK_SOCKET_FAILED:
        return s->last_err;
    case ELK_SOCKET_CONNECTING:
        break;
    default:
        return ELK_E_STATE;
    }
    /* SO_ERROR reads 0 both before and after a successful connect; writability is
     * what says the attempt has finished. */
    ready = socket_api_writable(s->fd);
    if (ready == 0) {
        return 0;
    }
    if (ready < 0 ||
        SOCKET_CALL(getsockopt)(s->fd, SOL_SOCKET, SO_ERROR, &so_error, &so_error_len) != 0) {
        so_error = errno;
    }
    if (so_error == 0) {
        s->state = ELK_SOCKET_CONNECTED;
        return 1;
    }
    return elk_socket__fail(s, socket_map_connect_errno(so_error), so_error);
}

/* The gate send and recv share: nothing moves while connecting (0), a failed or closed
 * stream is ELK_E_STATE, an empty request moves 0 bytes. Returns 1 when the call may go
 * ahead, with *len clamped to what the int32_t result can report. */
static int32_t socket_io_gate(const elk_socket_t *s, size_t *len)
{
    if (s->state == ELK_SOCKET_CONNECTING) {
        return 0;
    }
    if (s->state != ELK_SOCKET_CONNECTED) {
        return ELK_E_STATE;
    }
    if (*len == 0) {
        return 0;
    }
    if (*len > (size_t)INT32_MAX) {
        *len = (size_t)INT32_MAX;
    }
    return 1;
}

static int32_t socket_send(void *ctx, const uint8_t *buf, size_t len)
{
    elk_socket_t *s = (elk_socket_t *)ctx;
    int32_t gate;

    if (s == NULL || (buf == NULL && len > 0)) {
        return ELK_E_INVALID_ARG;
    }
    gate = socket_io_gate(s, &len);
    if (gate != 1) {
        return gate;
    }
    for (;;) {
        ssize_t n = SOCKET_CALL(send)(s->fd, buf, len, MSG_DONTWAIT);
        if (n >= 0) {
            s->want_write = false;
            return (int32_t)n;
        }
        if (errno == EINTR) {
            continue;
        }
        if (socket_would_block(errno)) {
            s->want_write = true;
            return 0;
        }
        return socket_note(s, socket_map_io_errno(errno), errno);
    }
}

static int32_t socket_recv(void *ctx, uint8_t *buf, size_t len)
{
    elk_socket_t *s = (elk_socket_t *)ctx;
    int32_t gate;

    if (s == NULL || buf == NULL) {
        return ELK_E_INVALID_ARG;
    }
    gate = socket_io_gate(s, &len);
    if (gate != 1) {
        return gate;
    }
    for (;;) {
        ssize_t n = SOCKET_CALL(recv)(s->fd, buf, len, MSG_DONTWAIT);
        if (n > 0) {
            return (int32_t)n;
        }
        if (n == 0) {
            return socket_note(s, ELK_E_CLOSED, 0);
        }
        if (errno == EINTR) {
            continue;
        }
        if (socket_would_block(errno)) {
            return 0;
        }
        return socket_note(s, socket_map_io_errno(errno), errno);
    }
}

static int socket_wait(void *ctx, unsigned *events)
{
    elk_socket_t *s = (elk_socket_t *)ctx;
    unsigned ev = ELK_WAIT_NONE;

    if (s != NULL && s->fd >= 0) {
        if (s->state == ELK_SOCKET_CONNECTING) {
            ev = ELK_WAIT_WRITE;
        } else if (s->state == ELK_SOCKET_CONNECTED) {
            ev = ELK_WAIT_READ | (s->want_write ? (unsigned)ELK_WAIT_WRITE : 0u);
        }
    }
    if (events != NULL) {
        *events = ev;
    }
    return ev != ELK_WAIT_NONE ? s->fd : -1;
}

void elk_socket__bind(void *ctx, int (*open)(void *ctx, const elk_endpoint_t *ep),
                      int (*progress)(void *ctx), elk_transport_t *out)
{
    elk_socket_t *s = (elk_socket_t *)ctx;

    if (s != NULL) {
        memset(s, 0, sizeof *s);
        s->fd = -1;
        s->state = ELK_SOCKET_CLOSED;
    }
    if (out == NULL) {
        return;
    }
    out->ctx = ctx;
    out->open = open;
    out->progress = progress;
    out->send = socket_send;
    out->recv = socket_recv;
    out->close = socket_close;
    out->wait = socket_wait;
}
