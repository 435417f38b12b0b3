/* SPDX-License-Identifier: MIT */
/*
 * port/socket: the state of the one TCP transport that port/posix (BSD sockets) and
 * port/lwip (lwIP's lwip_* calls) share. Each port embeds an elk_socket_t as the first
 * member of its own transport context (elk_posix_tcp_t, elk_lwip_transport_t) and keeps
 * its own public init function; programs use those, never this header directly.
 * The transport code is compiled into each port's library for that port's socket API,
 * so a program links one socket port (elk_port_posix or elk_port_lwip), not both.
 *
 * Nothing here allocates; every state lives in the caller's context.
 */
#ifndef ELK_PORT_SOCKET_H
#define ELK_PORT_SOCKET_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Socket options applied to every connection. */
typedef struct elk_socket_options {
    bool nodelay;                  /* TCP_NODELAY: requests are small and latency matters; a
                                     socket that refuses it fails the connect (ELK_E_IO) */
    bool keepalive;                /* SO_KEEPALIVE, to notice a dead peer on an idle link;
                                     best effort, like the three timers below (port/lwip
                                     leaves it off: lib/'s request deadlines notice a
                                     dead server) */
    uint16_t keepalive_idle_s;     /* TCP_KEEPIDLE, 0: the stack's own */
    uint16_t keepalive_interval_s; /* TCP_KEEPINTVL, 0: the stack's own */
    uint16_t keepalive_count;      /* TCP_KEEPCNT, 0: the stack's own */
} elk_socket_options_t;

/* One TCP connection over a socket API. Fields are internal to port/socket. */
typedef struct elk_socket {
    int fd;          /* OS descriptor (posix) or lwIP socket number; -1 when closed */
    uint8_t state;   /* closed, connecting, connected, failed */
    bool want_write; /* the last send would have blocked: wait for writability too */
    int last_err;    /* last negative elk_err_t (what progress() repeats after a failed
                            connect), ELK_OK if none */
    int last_errno;  /* errno (posix resolution: EAI_* code) behind last_err, for logs */
} elk_socket_t;

#ifdef __cplusplus
}
#endif

#endif /* ELK_PORT_SOCKET_H */
