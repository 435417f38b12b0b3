/* SPDX-License-Identifier: MIT */
/*
 * port/posix: the platform services lib/ needs, on Linux (and other POSIX systems).
 *
 *  - a TCP transport (elk_transport_t) over non-blocking BSD sockets,
 *  - a monotonic millisecond clock (elk_clock_t) from CLOCK_BOOTTIME,
 *  - an entropy source (elk_entropy_t) from getrandom(),
 *  - elk_posix_wait(): one poll() over the descriptors a fleet (or anything else)
 *    reports, bounded by the next deadline, so programs need only one event loop.
 *
 * The TCP transport is port/socket's, shared with port/lwip: it uses only socket calls
 * lwIP also offers (socket, connect, send, recv with MSG_DONTWAIT, close,
 * set/getsockopt, fcntl F_GETFL/F_SETFL O_NONBLOCK, poll). getaddrinfo is this port's
 * own: lwIP has it only with LWIP_DNS (off by default), so devices should configure
 * numeric addresses.
 *
 * SIGPIPE: lwIP has no MSG_NOSIGNAL, so neither does this port. A process that uses
 * it must ignore SIGPIPE (signal(SIGPIPE, SIG_IGN); elkd does) or a peer reset during
 * send() kills it. Where SO_NOSIGPIPE exists (BSD, macOS) the port sets it.
 *
 * Nothing here allocates or keeps static state: every context is caller-allocated.
 */
#ifndef ELK_PORT_POSIX_H
#define ELK_PORT_POSIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/err.h"
#include "elk/node.h"
#include "elk/platform.h"
#include "elk/port_socket.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Addresses kept from one name resolution; connect tries them in order. */
#define ELK_POSIX_TCP_MAX_ADDRS 4

/* Most descriptors one elk_posix_wait call accepts. */
#define ELK_POSIX_WAIT_MAX 64

/* Socket options applied to every connection (nodelay, keepalive and its three timers;
 * see port/socket's elk_socket_options_t). elk_posix_tcp_options_defaults: TCP_NODELAY
 * on, SO_KEEPALIVE on, TCP_KEEPIDLE 30 s, TCP_KEEPINTVL 10 s, TCP_KEEPCNT 3. */
typedef elk_socket_options_t elk_posix_tcp_options_t;

/* Stored address (a struct sockaddr_storage's worth of bytes, kept opaque so this
 * header does not drag in <sys/socket.h>). */
typedef struct elk_posix_addr {
    uint32_t len;
    union {
        uint8_t bytes[128];
        uint64_t align_;
    } u;
} elk_posix_addr_t;

/* One TCP connection. Caller-allocated; fields are internal to the port. */
typedef struct elk_posix_tcp {
    elk_socket_t sock; /* port/socket's transport state; first, as ctx is it */
    uint8_t addr_count, addr_next;
    elk_posix_addr_t addrs[ELK_POSIX_TCP_MAX_ADDRS];
    elk_posix_tcp_options_t opts;
} elk_posix_tcp_t;

/* Fill opts with the defaults documented in elk_posix_tcp_options_t. */
void elk_posix_tcp_options_defaults(elk_posix_tcp_options_t *opts);

/*
 * Prepare tcp (closed) and fill *out with an elk_transport_t whose ctx is tcp.
 * opts may be NULL for the defaults; it is copied. tcp must outlive every use of *out.
 *
 * Transport behaviour:
 *  open()     resolves ep->host (numeric addresses never block; names go through
 *             getaddrinfo, which may block, so configure numeric addresses where that
 *             matters) and starts a non-blocking connect. ELK_OK, ELK_E_INVALID_ARG,
 *             ELK_E_RESOLVE, ELK_E_NO_RESOURCES, ELK_E_CONNECT_REFUSED, ELK_E_CONNECT,
 *             ELK_E_IO (the socket refused O_NONBLOCK or TCP_NODELAY).
 *  progress() 1 once connected, 0 while connecting (wait for WRITE), or an error:
 *             ELK_E_CONNECT_REFUSED, ELK_E_CONNECT_TIMEOUT (the kernel gave up),
 *             ELK_E_CONNECT. Failing addresses fall through to the next one resolved.
 *             There is no timer here: the caller (lib/node) enforces its own connect
 *             timeout with its clock and calls close() when it passes.
 *  send/recv  never block (MSG_DONTWAIT + O_NONBLOCK): >0 bytes, 0 would block (or
 *             still connecting, or len 0), ELK_E_CLOSED (EOF, reset, broken pipe),
 *             ELK_E_NO_RESOURCES, ELK_E_STATE (not open, or the connect failed),
 *             ELK_E_IO otherwise.
 *  wait()     the descriptor, with WRITE while connecting or after a blocked send,
 *             READ once connected; -1 when closed or failed.
 * Returns ELK_OK or ELK_E_INVALID_ARG.
 */
int elk_posix_tcp_init(elk_posix_tcp_t *tcp, const elk_posix_tcp_options_t *opts,
                       elk_transport_t *out);

/* errno (or getaddrinfo EAI_* code, negative) behind the last error, for logs; 0 if none. */
int elk_posix_tcp_last_errno(const elk_posix_tcp_t *tcp);

/* The same clock elk_posix_clock() hands out: CLOCK_BOOTTIME in ms (counts through suspend). */
uint64_t elk_posix_now_ms(void);

/* Fill *out with the CLOCK_BOOTTIME clock (ctx unused, NULL). */
void elk_posix_clock(elk_clock_t *out);

/* Fill *out with getrandom()-backed entropy (ctx unused, NULL). fill() loops over
 * EINTR and short reads and returns ELK_OK or ELK_E_ENTROPY. */
void elk_posix_entropy(elk_entropy_t *out);

/* Read len bytes of entropy into buf directly (what the elk_entropy_t calls). */
int elk_posix_entropy_fill(void *ctx, uint8_t *buf, size_t len);

/*
 * Wait until one of waits[0..count) is ready or the clock (elk_posix_now_ms) reaches
 * deadline, whichever comes first. Entries with fd < 0 or no events are skipped.
 * deadline UINT64_MAX waits without limit; a deadline already past only checks.
 * revents, if not NULL, receives per entry the ELK_WAIT_* bits that are ready (an error
 * or hang-up on a descriptor reports READ|WRITE so the owner's next call sees it).
 * Returns the number of ready entries (0: deadline reached or a signal interrupted the
 * wait, so a loop can check its stop flag), ELK_E_INVALID_ARG (count above
 * ELK_POSIX_WAIT_MAX, or NULL waits with count > 0), or ELK_E_IO.
 */
int elk_posix_wait(const elk_wait_t *waits, size_t count, uint64_t deadline, unsigned *revents);

#ifdef __cplusplus
}
#endif

#endif /* ELK_PORT_POSIX_H */
