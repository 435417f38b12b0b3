/* SPDX-License-Identifier: MIT */
/*
 * port/lwip's transport: port/socket's shared transport (socket_shim.h gives it the
 * lwip_* calls) plus what only this port does, turning the endpoint into one address:
 * numeric IPv4 or IPv6 with lwip_inet_pton, a name only with LWIP_DNS.
 */
#include <string.h>

#include "lwip_requirements.h"

#include "lwip/def.h"
#include "lwip/sockets.h"
#if LWIP_DNS
#include "lwip/netdb.h"
#endif

#include "elk/port_lwip.h"

#include "socket_transport.h"

/* ctx is handed to port/socket as its elk_socket_t. */
typedef char elk_lwip_socket_first_[offsetof(elk_lwip_transport_t, sock) == 0 ? 1 : -1];

/* Requests are small and latency-bound: no Nagle. lib/'s request deadlines notice a
 * dead server, so lwIP needs no LWIP_TCP_KEEPALIVE. */
static const elk_socket_options_t lwip_transport_options = {.nodelay = true, .keepalive = false};

/* Address of ep as a socket address; names need LWIP_DNS (blocking lookup). */
static int lwip_transport_address(const elk_endpoint_t *ep, struct sockaddr_storage *ss,
                                  socklen_t *len)
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

static int lwip_transport_open(void *ctx, const elk_endpoint_t *ep)
{
    elk_lwip_transport_t *t = (elk_lwip_transport_t *)ctx;
    struct sockaddr_storage ss;
    socklen_t len = 0;
    int rc = elk_socket__begin(ctx, ep);

    if (rc != ELK_OK) {
        return rc;
    }
    rc = lwip_transport_address(ep, &ss, &len);
    if (rc != ELK_OK) {
        return elk_socket__fail(&t->sock, rc, 0);
    }
    rc = elk_socket__connect(&t->sock, &lwip_transport_options, &ss, (uint32_t)len);
    return rc < 0 ? rc : ELK_OK;
}

void elk_lwip_transport_init(elk_lwip_transport_t *ctx, elk_transport_t *out)
{
    elk_socket__bind(ctx, lwip_transport_open, elk_socket__progress, out);
}

int elk_lwip_transport_errno(const elk_lwip_transport_t *ctx)
{
    return ctx != NULL ? ctx->sock.last_errno : 0;
}
