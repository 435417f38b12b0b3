/* SPDX-License-Identifier: MIT */
/*
 * port/posix's TCP transport: port/socket's shared transport (socket_shim.h gives it
 * BSD sockets) plus what only this port does, turning a host name into up to
 * ELK_POSIX_TCP_MAX_ADDRS addresses with getaddrinfo and trying them in order.
 */
#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>

#include "elk/port_posix.h"

#include "socket_transport.h"

/* The opaque address slot must hold any address getaddrinfo can return. */
typedef char elk_posix_addr_fits_
    [(sizeof(((elk_posix_addr_t *)0)->u.bytes) >= sizeof(struct sockaddr_storage)) ? 1 : -1];
/* ctx is handed to port/socket as its elk_socket_t. */
typedef char elk_posix_socket_first_[offsetof(elk_posix_tcp_t, sock) == 0 ? 1 : -1];

/* Connect to the stored addresses from the next untried one on. Returns 1 connected,
 * 0 in progress, or, once every address has failed, the last attempt's elk_err_t
 * (err, why the previous address failed, when none was left to try). */
static int tcp_connect_next(elk_posix_tcp_t *t, int err)
{
    while (t->addr_next < t->addr_count) {
        const elk_posix_addr_t *a = &t->addrs[t->addr_next++];
        err = elk_socket__connect(&t->sock, &t->opts, a->u.bytes, a->len);
        if (err >= 0) {
            break;
        }
    }
    return err;
}

static int tcp_resolve(elk_posix_tcp_t *t, const elk_endpoint_t *ep)
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
    /* Numeric first: that path never touches DNS, so it never blocks. */
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    rc = getaddrinfo(ep->host, service, &hints, &res);
    if (rc == EAI_NONAME) {
        hints.ai_flags = AI_NUMERICSERV;
        rc = getaddrinfo(ep->host, service, &hints, &res);
    }
    if (rc != 0) {
        return elk_socket__fail(&t->sock, rc == EAI_MEMORY ? ELK_E_NO_RESOURCES : ELK_E_RESOLVE,
                                rc == EAI_SYSTEM ? errno : -rc);
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
    return t->addr_count == 0 ? elk_socket__fail(&t->sock, ELK_E_RESOLVE, 0) : ELK_OK;
}

static int tcp_open(void *ctx, const elk_endpoint_t *ep)
{
    elk_posix_tcp_t *t = (elk_posix_tcp_t *)ctx;
    int rc = elk_socket__begin(ctx, ep);

    if (rc != ELK_OK) {
        return rc;
    }
    t->addr_count = 0;
    t->addr_next = 0;
    rc = tcp_resolve(t, ep);
    if (rc == ELK_OK) {
        rc = tcp_connect_next(t, ELK_E_CONNECT);
    }
    return rc < 0 ? rc : ELK_OK;
}

/* A failed connect falls through to the next address resolved. */
static int tcp_progress(void *ctx)
{
    elk_posix_tcp_t *t = (elk_posix_tcp_t *)ctx;
    int rc = elk_socket__progress(ctx);

    if (rc < 0 && t != NULL && t->sock.state == ELK_SOCKET_FAILED) {
        rc = tcp_connect_next(t, rc);
    }
    return rc;
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

int elk_posix_tcp_init(elk_posix_tcp_t *tcp, const elk_posix_tcp_options_t *opts,
                       elk_transport_t *out)
{
    if (tcp == NULL || out == NULL) {
        return ELK_E_INVALID_ARG;
    }
    memset(tcp, 0, sizeof *tcp);
    elk_socket__bind(tcp, tcp_open, tcp_progress, out);
    if (opts != NULL) {
        tcp->opts = *opts;
    } else {
        elk_posix_tcp_options_defaults(&tcp->opts);
    }
    return ELK_OK;
}

int elk_posix_tcp_last_errno(const elk_posix_tcp_t *tcp)
{
    return tcp == NULL ? 0 : tcp->sock.last_errno;
}
