/*
 * TCP transport over non-blocking sockets, restricted to the calls lwIP's socket API
 * also has (see port_posix.h), so port/lwip can stay a mirror image of this file.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "elk/port_posix.h"

/* The opaque address slot must hold any address getaddrinfo can return. */
typedef char elk_posix_addr_fits_[(sizeof(((elk_posix_addr_t *)0)->u.bytes) >= sizeof(struct sockaddr_storage)) ? 1 : -1];

enum tcp_state { TCP_CLOSED = 0, TCP_CONNECTING, TCP_CONNECTED, TCP_FAILED };

static int fail(elk_posix_tcp_t *t, int err, int sys_errno)
{
    t->last_err = err;
    t->last_errno = sys_errno;
    return err;
}

static int map_connect_errno(int e)
{
    switch (e) {
    case ECONNREFUSED:
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

static int map_io_errno(int e)
{
    switch (e) {
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN:
    case ESHUTDOWN:
    case ECONNABORTED:
        return ELK_E_CLOSED;
    case ENOBUFS:
    case ENOMEM:
        return ELK_E_NO_RESOURCES;
    default:
        return ELK_E_IO;
    }
}

static void drop_fd(elk_posix_tcp_t *t)
{
    if (t->fd >= 0) {
        (void)close(t->fd);
    }
    t->fd = -1;
}

/* Options are best effort: a stack without keepalive tuning still works, only slower
 * to notice a dead peer on an idle connection. */
static void apply_options(elk_posix_tcp_t *t, int fd)
{
    int one = 1;
    if (t->opts.nodelay) {
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (t->opts.keepalive) {
        (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
#ifdef TCP_KEEPIDLE
        if (t->opts.keepalive_idle_s > 0) {
            int v = t->opts.keepalive_idle_s;
            (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof v);
        }
#endif
#ifdef TCP_KEEPINTVL
        if (t->opts.keepalive_interval_s > 0) {
            int v = t->opts.keepalive_interval_s;
            (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &v, sizeof v);
        }
#endif
#ifdef TCP_KEEPCNT
        if (t->opts.keepalive_count > 0) {
            int v = t->opts.keepalive_count;
            (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &v, sizeof v);
        }
#endif
    }
#ifdef SO_NOSIGPIPE
    (void)setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
}

/* Start connecting to the next stored address. Returns 1 connected, 0 in progress,
 * or a negative elk_err_t once every address has failed: the last attempt's, or err and
 * sys_errno (why the previous address failed) when none was left to try. */
static int connect_next(elk_posix_tcp_t *t, int err, int sys_errno)
{
    while (t->addr_next < t->addr_count) {
        const elk_posix_addr_t *a = &t->addrs[t->addr_next++];
        const struct sockaddr *sa = (const struct sockaddr *)(const void *)a->u.bytes;
        int type = SOCK_STREAM;
        int fd;
        int flags;

#ifdef SOCK_CLOEXEC
        /* Not an extra call, only a flag: elkd's actuator children must not inherit it. */
        type |= SOCK_CLOEXEC;
#endif
        fd = socket(sa->sa_family, type, 0);
        if (fd < 0) {
            sys_errno = errno;
            err = map_connect_errno(errno);
            continue;
        }
        flags = fcntl(fd, F_GETFL, 0);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
            sys_errno = errno;
            err = ELK_E_CONNECT;
            (void)close(fd);
            continue;
        }
        apply_options(t, fd);
        if (connect(fd, sa, (socklen_t)a->len) == 0) {
            t->fd = fd;
            t->state = TCP_CONNECTED;
            return 1;
        }
        if (errno == EINPROGRESS || errno == EINTR) {
            t->fd = fd;
            t->state = TCP_CONNECTING;
            return 0;
        }
        sys_errno = errno;
        err = map_connect_errno(errno);
        (void)close(fd);
    }
    t->state = TCP_FAILED;
    return fail(t, err, sys_errno);
}

static int resolve(elk_posix_tcp_t *t, const elk_endpoint_t *ep)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    struct addrinfo *ai;
    char service[6];
    unsigned p = ep->port;
    int i;
    int rc;

    /* Five digits, no stdio needed. */
    for (i = 4; i >= 0; i--) {
        service[i] = (char)('0' + p % 10u);
        p /= 10u;
    }
    service[5] = '\0';

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    /* Numeric first: that path never touches DNS, so it never blocks. getaddrinfo is
     * the one call here lwIP offers only with LWIP_DNS. */
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    rc = getaddrinfo(ep->host, service, &hints, &res);
    if (rc == EAI_NONAME) {
        hints.ai_flags = AI_NUMERICSERV;
        rc = getaddrinfo(ep->host, service, &hints, &res);
    }
    if (rc != 0) {
        return fail(t, rc == EAI_MEMORY ? ELK_E_NO_RESOURCES : ELK_E_RESOLVE, rc == EAI_SYSTEM ? errno : -rc);
    }
    t->addr_count = 0;
    for (ai = res; ai != NULL && t->addr_count < ELK_POSIX_TCP_MAX_ADDRS; ai = ai->ai_next) {
        elk_posix_addr_t *a = &t->addrs[t->addr_count];
        if (ai->ai_addrlen > sizeof a->u.bytes) {
            continue;
        }
        memcpy(a->u.bytes, ai->ai_addr, ai->ai_addrlen);
        a->len = (uint32_t)ai->ai_addrlen;
        t->addr_count++;
    }
    freeaddrinfo(res);
    if (t->addr_count == 0) {
        return fail(t, ELK_E_RESOLVE, 0);
    }
    return ELK_OK;
}

static void tcp_close(void *ctx)
{
    elk_posix_tcp_t *t = (elk_posix_tcp_t *)ctx;
    if (t == NULL) {
        return;
    }
    drop_fd(t);
    t->state = TCP_CLOSED;
    t->want_write = false;
}

static int tcp_open(void *ctx, const elk_endpoint_t *ep)
{
    elk_posix_tcp_t *t = (elk_posix_tcp_t *)ctx;
    int rc;

    if (t == NULL || ep == NULL || ep->host == NULL || ep->host[0] == '\0' || ep->port == 0) {
        return ELK_E_INVALID_ARG;
    }
    tcp_close(t);
    t->last_err = ELK_OK;
    t->last_errno = 0;
    t->addr_next = 0;
    rc = resolve(t, ep);
    if (rc != ELK_OK) {
        t->state = TCP_FAILED;
        return rc;
    }
    rc = connect_next(t, ELK_E_CONNECT, 0);
    return rc < 0 ? rc : ELK_OK;
}

static int tcp_progress(void *ctx)
{
    elk_posix_tcp_t *t = (elk_posix_tcp_t *)ctx;
    struct pollfd pfd;
    int so_error = 0;
    socklen_t len = sizeof so_error;
    int rc;

    if (t == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (t->state == TCP_CONNECTED) {
        return 1;
    }
    if (t->state != TCP_CONNECTING) {
        return t->last_err != ELK_OK ? t->last_err : ELK_E_STATE;
    }
    /* SO_ERROR reads 0 both before and after a successful connect; writability is
     * what says the attempt has finished. */
    pfd.fd = t->fd;
    pfd.events = POLLOUT;
    pfd.revents = 0;
    rc = poll(&pfd, 1, 0);
    if (rc == 0 || (rc < 0 && errno == EINTR)) {
        return 0;
    }
    if (rc < 0) {
        so_error = errno;
    } else if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) {
        so_error = errno;
    }
    if (so_error == 0) {
        t->state = TCP_CONNECTED;
        return 1;
    }
    drop_fd(t);
    return connect_next(t, map_connect_errno(so_error), so_error);
}

/* The gate send and recv share: nothing moves while connecting (0), a failed or closed
 * stream is ELK_E_STATE, an empty request moves 0 bytes. Returns 1 when the call may go
 * ahead, with *len clamped to what the int32_t result can report. */
static int32_t tcp_io_gate(const elk_posix_tcp_t *t, size_t *len)
{
    if (t->state == TCP_CONNECTING) {
        return 0;
    }
    if (t->state != TCP_CONNECTED) {
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

static int32_t tcp_send(void *ctx, const uint8_t *buf, size_t len)
{
    elk_posix_tcp_t *t = (elk_posix_tcp_t *)ctx;
    int32_t gate;
    ssize_t n;

    if (t == NULL || (buf == NULL && len > 0)) {
        return ELK_E_INVALID_ARG;
    }
    gate = tcp_io_gate(t, &len);
    if (gate != 1) {
        return gate;
    }
    for (;;) {
        n = send(t->fd, buf, len, MSG_DONTWAIT);
        if (n >= 0) {
            t->want_write = false;
            return (int32_t)n;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            t->want_write = true;
            return 0;
        }
        return fail(t, map_io_errno(errno), errno);
    }
}

static int32_t tcp_recv(void *ctx, uint8_t *buf, size_t len)
{
    elk_posix_tcp_t *t = (elk_posix_tcp_t *)ctx;
    int32_t gate;
    ssize_t n;

    if (t == NULL || buf == NULL) {
        return ELK_E_INVALID_ARG;
    }
    gate = tcp_io_gate(t, &len);
    if (gate != 1) {
        return gate;
    }
    for (;;) {
        n = recv(t->fd, buf, len, MSG_DONTWAIT);
        if (n > 0) {
            return (int32_t)n;
        }
        if (n == 0) {
            return fail(t, ELK_E_CLOSED, 0);
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return 0;
        }
        return fail(t, map_io_errno(errno), errno);
    }
}

static int tcp_wait(void *ctx, unsigned *events)
{
    elk_posix_tcp_t *t = (elk_posix_tcp_t *)ctx;
    unsigned ev = ELK_WAIT_NONE;

    if (t == NULL || t->fd < 0) {
        if (events != NULL) {
            *events = ELK_WAIT_NONE;
        }
        return -1;
    }
    if (t->state == TCP_CONNECTING) {
        ev = ELK_WAIT_WRITE;
    } else {
        ev = ELK_WAIT_READ;
        if (t->want_write) {
            ev |= ELK_WAIT_WRITE;
        }
    }
    if (events != NULL) {
        *events = ev;
    }
    return t->fd;
}

void elk_posix_tcp_options_defaults(elk_posix_tcp_options_t *opts)
{
    if (opts == NULL) {
        return;
    }
    opts->nodelay = true;
    opts->keepalive = true;
    opts->keepalive_idle_s = 30;
    opts->keepalive_interval_s = 10;
    opts->keepalive_count = 3;
}

int elk_posix_tcp_init(elk_posix_tcp_t *tcp, const elk_posix_tcp_options_t *opts, elk_transport_t *out)
{
    if (tcp == NULL || out == NULL) {
        return ELK_E_INVALID_ARG;
    }
    memset(tcp, 0, sizeof *tcp);
    tcp->fd = -1;
    tcp->state = TCP_CLOSED;
    if (opts != NULL) {
        tcp->opts = *opts;
    } else {
        elk_posix_tcp_options_defaults(&tcp->opts);
    }
    out->ctx = tcp;
    out->open = tcp_open;
    out->progress = tcp_progress;
    out->send = tcp_send;
    out->recv = tcp_recv;
    out->close = tcp_close;
    out->wait = tcp_wait;
    return ELK_OK;
}

int elk_posix_tcp_last_errno(const elk_posix_tcp_t *tcp)
{
    return tcp == NULL ? 0 : tcp->last_errno;
}
