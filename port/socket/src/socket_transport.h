/* SPDX-License-Identifier: MIT */
/*
 * Internal to the socket ports: the one TCP transport that port/posix and port/lwip
 * share. socket_transport.c is compiled into each port's library against that port's
 * socket_shim.h (the BSD or the lwip_* calls, and that stack's errno values), so a
 * program links one socket port, never both.
 *
 * A port's transport context starts with an elk_socket_t, so the ctx pointer of its
 * elk_transport_t serves the functions below unchanged. The port keeps what differs:
 * turning a host name into addresses (open) and, on posix, trying the next address
 * when one fails (progress).
 */
#ifndef ELK_PORT_SOCKET_TRANSPORT_H
#define ELK_PORT_SOCKET_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "elk/err.h"
#include "elk/platform.h"
#include "elk/port_socket.h"

enum elk_socket_state {
    ELK_SOCKET_CLOSED = 0,
    ELK_SOCKET_CONNECTING,
    ELK_SOCKET_CONNECTED,
    ELK_SOCKET_FAILED
};

/* Fill *out with the shared send/recv/close/wait around the port's own open and
 * progress; ctx (may be NULL: every call then says ELK_E_INVALID_ARG) starts with an
 * elk_socket_t, which is reset to closed when not NULL. A NULL out only resets ctx. */
void elk_socket__bind(void *ctx, int (*open)(void *ctx, const elk_endpoint_t *ep),
                      int (*progress)(void *ctx), elk_transport_t *out);

/* The start of every open(): checks ctx and ep (host set and not empty, port not 0),
 * closes what s held and forgets earlier errors. ELK_OK or ELK_E_INVALID_ARG. */
int elk_socket__begin(elk_socket_t *s, const elk_endpoint_t *ep);

/* Record err (and the errno behind it), close the socket, and make the failure stick:
 * progress() repeats it, send/recv say ELK_E_STATE until the next open. Returns err. */
int elk_socket__fail(elk_socket_t *s, int err, int sys_errno);

/* Start a non-blocking connect to addr (a struct sockaddr of addr_len bytes of the
 * port's socket API) with opts. Returns 1 connected, 0 in progress (progress() says
 * when it is done), or a negative elk_err_t with the failure recorded as by
 * elk_socket__fail. */
int elk_socket__connect(elk_socket_t *s, const elk_socket_options_t *opts, const void *addr,
                        uint32_t addr_len);

/* elk_transport_t.progress: 1 connected, 0 connecting, or the connect's elk_err_t
 * (ELK_E_STATE when nothing was opened). Never blocks. */
int elk_socket__progress(void *ctx);

#endif /* ELK_PORT_SOCKET_TRANSPORT_H */
