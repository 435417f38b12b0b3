/*
 * elk_transport_t on lwIP sockets: non-blocking connect (EINPROGRESS, then
 * readiness and SO_ERROR), MSG_DONTWAIT send/recv, TCP_NODELAY. Only the lwip_*
 * names are called, so the file behaves the same whatever LWIP_COMPAT_SOCKETS is.
 */
#include <string.h>

#include "lwip_requirements.h"

#include "lwip/def.h"
#include "lwip/errno.h"
#include "lwip/sockets.h"
#if LWIP_DNS
#include "lwip/netdb.h"
#endif

#include "elk/port_lwip.h"

#include "lwip_poll1.h"

enum {
    ELK_LWIP_IDLE = 0,
    ELK_LWIP_CONNECTING,
    ELK_LWIP_CONNECTED,
    ELK_LWIP_FAILED
};

#ifndef EWOULDBLOCK
#define EWOULDBLOCK EAGAIN
#endif

static int is_would_block(int e)
{
    return e == EAGAIN || e == EWOULDBLOCK;
}

/* Errors of an established stream: the peer is gone, as opposed to a local fault. */
static int is_peer_gone(int e)
{
    return e == ECONNRESET || e == ENOTCONN || e == ECONNABORTED || e == EPIPE;
}

static int map_connect_errno(int e)
{
    switch (e) {
    case ECONNREFUSED:
    case ECONNRESET: /* lwIP reports an RST answering the SYN as a reset */
        return ELK_E_CONNECT_REFUSED;
    case ETIMEDOUT:
        return ELK_E_CONNECT_TIMEOUT;
    case ENOMEM:
    case ENOBUFS:
    case ENFILE:
    case EMFILE:
        return ELK_E_NO_RESOURCES;
    default:
        return ELK_E_CONNECT;
    }
}

static void drop_socket(elk_lwip_transport_t *t)
{
    if (t->sock >= 0) {
        (void)lwip_close(t->sock);
    }
    t->sock = -1;
    t->want_write = false;
}

static int fail(elk_lwip_transport_t *t, int e, int code)
{
    t->last_errno = e;
    t->failure = code;
    t->state = ELK_LWIP_FAILED;
    drop_socket(t);
    return code;
}

/* Address of ep as a socket address; names need LWIP_DNS (blocking lookup). */
static int make_address(const elk_endpoint_t *ep, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
#if LWIP_IPV4
    {
        struct sockaddr_in *sin = (struct sockaddr_in *)(void *)ss;
        if (lwip_inet_pton(AF_INET, ep->host, &sin->sin_addr) == 1) {
            sin->sin_family = AF_INET;
            sin->sin_port = lwip_htons(ep->port);
            *len = (socklen_t)sizeof(*sin);
            return ELK_OK;
        }
    }
#endif
#if LWIP_IPV6
    {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)(void *)ss;
        if (lwip_inet_pton(AF_INET6, ep->host, &sin6->sin6_addr) == 1) {
            sin6->sin6_family = AF_INET6;
            sin6->sin6_port = lwip_htons(ep->port);
            *len = (socklen_t)sizeof(*sin6);
            return ELK_OK;
        }
    }
#endif
#if LWIP_DNS
    {
        struct addrinfo hints;
        struct addrinfo *res = NULL;
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        if (lwip_getaddrinfo(ep->host, NULL, &hints, &res) != 0 || res == NULL) {
            return ELK_E_RESOLVE;
        }
        if (res->ai_addrlen > sizeof(*ss)) {
            lwip_freeaddrinfo(res);
            return ELK_E_RESOLVE;
        }
        memcpy(ss, res->ai_addr, res->ai_addrlen);
        *len = (socklen_t)res->ai_addrlen;
        lwip_freeaddrinfo(res);
        if (ss->ss_family == AF_INET) {
            ((struct sockaddr_in *)(void *)ss)->sin_port = lwip_htons(ep->port);
        }
#if LWIP_IPV6
        else if (ss->ss_family == AF_INET6) {
            ((struct sockaddr_in6 *)(void *)ss)->sin6_port = lwip_htons(ep->port);
        }
#endif
        return ELK_OK;
    }
#else
    return ELK_E_RESOLVE; /* not numeric, and this lwIP has no DNS: give an address */
#endif
}

static int t_open(void *ctx, const elk_endpoint_t *ep)
{
    elk_lwip_transport_t *t = (elk_lwip_transport_t *)ctx;
    struct sockaddr_storage ss;
    socklen_t len = 0;
    int flags;
    int one = 1;
    int rc;

    if (t == NULL || ep == NULL || ep->host == NULL || ep->port == 0) {
        return ELK_E_INVALID_ARG;
    }
    drop_socket(t);
    t->state = ELK_LWIP_IDLE;
    t->failure = ELK_OK;

    rc = make_address(ep, &ss, &len);
    if (rc != ELK_OK) {
        t->state = ELK_LWIP_FAILED;
        t->failure = rc;
        return rc;
    }
    t->sock = lwip_socket(ss.ss_family, SOCK_STREAM, 0);
    if (t->sock < 0) {
        t->sock = -1;
        return fail(t, errno, map_connect_errno(errno));
    }
    /* lwip_fcntl takes exactly three ints and understands only O_NONBLOCK. */
    flags = lwip_fcntl(t->sock, F_GETFL, 0);
    if (flags < 0 || lwip_fcntl(t->sock, F_SETFL, flags | O_NONBLOCK) < 0) {
        return fail(t, errno, ELK_E_IO);
    }
    /* Requests are small and latency-bound: do not let Nagle hold them back. */
    if (lwip_setsockopt(t->sock, IPPROTO_TCP, TCP_NODELAY, &one, (socklen_t)sizeof(one)) < 0) {
        return fail(t, errno, ELK_E_IO);
    }
    if (lwip_connect(t->sock, (const struct sockaddr *)(const void *)&ss, len) == 0) {
        t->state = ELK_LWIP_CONNECTED;
        return ELK_OK;
    }
    if (errno == EINPROGRESS || errno == EALREADY) {
        t->state = ELK_LWIP_CONNECTING;
        return ELK_OK;
    }
    return fail(t, errno, map_connect_errno(errno));
}

static int t_progress(void *ctx)
{
    elk_lwip_transport_t *t = (elk_lwip_transport_t *)ctx;
    int so_error = 0;
    socklen_t optlen = (socklen_t)sizeof(so_error);
    unsigned ready = 0;
    int rc;

    if (t == NULL) {
        return ELK_E_INVALID_ARG;
    }
    switch (t->state) {
    case ELK_LWIP_CONNECTED:
        return 1;
    case ELK_LWIP_FAILED:
        return t->failure;
    case ELK_LWIP_CONNECTING:
        break;
    default:
        return ELK_E_STATE;
    }
    rc = elk_lwip_poll1(t->sock, ELK_WAIT_WRITE, 0, &ready);
    if (rc < 0) {
        return fail(t, errno, ELK_E_CONNECT);
    }
    if (ready == 0) {
        return 0;
    }
    if (lwip_getsockopt(t->sock, SOL_SOCKET, SO_ERROR, &so_error, &optlen) < 0) {
        return fail(t, errno, ELK_E_CONNECT);
    }
    if (so_error != 0) {
        return fail(t, so_error, map_connect_errno(so_error));
    }
    t->state = ELK_LWIP_CONNECTED;
    return 1;
}

static int32_t t_send(void *ctx, const uint8_t *buf, size_t len)
{
    elk_lwip_transport_t *t = (elk_lwip_transport_t *)ctx;
    ssize_t n;

    if (t == NULL || (buf == NULL && len > 0)) {
        return ELK_E_INVALID_ARG;
    }
    if (t->state != ELK_LWIP_CONNECTED) {
        return ELK_E_NOT_CONNECTED;
    }
    if (len == 0) {
        return 0;
    }
    if (len > (size_t)INT32_MAX) {
        len = (size_t)INT32_MAX;
    }
    n = lwip_send(t->sock, buf, len, MSG_DONTWAIT);
    if (n > 0) {
        t->want_write = false;
        return (int32_t)n;
    }
    if (n == 0) {
        return 0;
    }
    t->last_errno = errno;
    if (is_would_block(errno)) {
        t->want_write = true;
        return 0;
    }
    if (errno == ENOMEM || errno == ENOBUFS) {
        return ELK_E_NO_RESOURCES;
    }
    return is_peer_gone(errno) ? ELK_E_CLOSED : ELK_E_IO;
}

static int32_t t_recv(void *ctx, uint8_t *buf, size_t len)
{
    elk_lwip_transport_t *t = (elk_lwip_transport_t *)ctx;
    ssize_t n;

    if (t == NULL || buf == NULL || len == 0) {
        return ELK_E_INVALID_ARG;
    }
    if (t->state != ELK_LWIP_CONNECTED) {
        return ELK_E_NOT_CONNECTED;
    }
    if (len > (size_t)INT32_MAX) {
        len = (size_t)INT32_MAX;
    }
    n = lwip_recv(t->sock, buf, len, MSG_DONTWAIT);
    if (n > 0) {
        return (int32_t)n;
    }
    if (n == 0) {
        return ELK_E_CLOSED;
    }
    t->last_errno = errno;
    if (is_would_block(errno)) {
        return 0;
    }
    return is_peer_gone(errno) ? ELK_E_CLOSED : ELK_E_IO;
}

static void t_close(void *ctx)
{
    elk_lwip_transport_t *t = (elk_lwip_transport_t *)ctx;

    if (t == NULL) {
        return;
    }
    drop_socket(t);
    t->state = ELK_LWIP_IDLE;
    t->failure = ELK_OK;
}

static int t_wait(void *ctx, unsigned *events)
{
    elk_lwip_transport_t *t = (elk_lwip_transport_t *)ctx;
    unsigned ev = ELK_WAIT_NONE;

    if (t != NULL && t->sock >= 0) {
        if (t->state == ELK_LWIP_CONNECTING) {
            ev = ELK_WAIT_WRITE;
        } else if (t->state == ELK_LWIP_CONNECTED) {
            ev = ELK_WAIT_READ | (t->want_write ? (unsigned)ELK_WAIT_WRITE : 0u);
        }
    }
    if (events != NULL) {
        *events = ev;
    }
    return (t != NULL && ev != ELK_WAIT_NONE) ? t->sock : -1;
}

void elk_lwip_transport_init(elk_lwip_transport_t *ctx, elk_transport_t *out)
{
    if (ctx != NULL) {
        memset(ctx, 0, sizeof(*ctx));
        ctx->sock = -1;
        ctx->state = ELK_LWIP_IDLE;
    }
    if (out != NULL) {
        out->ctx = ctx;
        out->open = t_open;
        out->progress = t_progress;
        out->send = t_send;
        out->recv = t_recv;
        out->close = t_close;
        out->wait = t_wait;
    }
}

int elk_lwip_transport_errno(const elk_lwip_transport_t *ctx)
{
    return ctx != NULL ? ctx->last_errno : 0;
}
