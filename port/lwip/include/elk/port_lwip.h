/* SPDX-License-Identifier: MIT */
/*
 * port/lwip: the transport, clock and entropy that lib/ needs, on lwIP's socket
 * API (lwip_socket, lwip_connect, lwip_send, lwip_recv, lwip_poll/lwip_select,
 * lwip_fcntl, lwip_close, lwip_setsockopt). The transport is port/socket's, the one
 * port/posix uses too, so it behaves the same and TLS works the same way: wrap the
 * transport below in port/mbedtls.
 *
 * This header does not include lwIP's headers, so application code can use it
 * without lwIP's include paths. The lwipopts.h this port needs (checked with
 * #error at build time) are listed in docs/lwip.md.
 *
 * Threading: lwIP runs with NO_SYS=0 (a tcpip thread); every function here is
 * meant to be called from one application thread, the one that runs lib/.
 * Nothing here allocates; every state lives in a caller-owned context.
 */
#ifndef ELK_PORT_LWIP_H
#define ELK_PORT_LWIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/err.h"
#include "elk/platform.h"
#include "elk/port_socket.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- transport */

/* Connection state of one lwIP transport: port/socket's, shared with port/posix.
 * Fields are internal. */
typedef struct elk_lwip_transport {
    elk_socket_t sock; /* sock.fd is the lwIP socket number (not an OS descriptor) */
} elk_lwip_transport_t;

/* Prepare ctx (caller-owned, alive as long as the transport is used) and fill *out
 * with the function table whose ctx is ctx. No lwIP call is made here.
 * open() takes a numeric IPv4 (or, with LWIP_IPV6, IPv6) address; names are
 * resolved only when lwIP has LWIP_DNS, through lwip_getaddrinfo, which blocks
 * until the DNS answer (first address only). Sockets are non-blocking with
 * TCP_NODELAY. wait() returns an lwIP socket number: wait on it with
 * elk_lwip_wait (lwip_poll), never with the OS's poll(). */
void elk_lwip_transport_init(elk_lwip_transport_t *ctx, elk_transport_t *out);

/* errno of the last failed lwIP call on this transport (0 if none), for logs. */
int elk_lwip_transport_errno(const elk_lwip_transport_t *ctx);

/* One lwIP socket to wait on (from an elk_transport_t's wait()). */
typedef struct elk_lwip_waiter {
    int sock;        /* lwIP socket number; entries with sock < 0 are ignored */
    unsigned events; /* ELK_WAIT_* wanted */
    unsigned ready;  /* out: ELK_WAIT_* that are ready (errors and hang-ups count as both) */
} elk_lwip_waiter_t;

/* Most sockets one elk_lwip_wait call takes (lwIP's own default netconn count is 4;
 * a fleet plus a spare is enough). */
#define ELK_LWIP_WAIT_MAX 16u

/* Block the calling thread until one of the n waiters is ready or timeout_ms has
 * passed, using lwip_poll (or lwip_select where only that is enabled). n may be 0
 * (then it only sleeps). Fills each waiter's ready bits. Returns the number of ready
 * waiters (0 on timeout), ELK_E_INVALID_ARG (n above ELK_LWIP_WAIT_MAX or a NULL
 * array with n > 0), or ELK_E_IO if lwIP's poll failed. */
int elk_lwip_wait(elk_lwip_waiter_t *waiters, size_t n, uint32_t timeout_ms);

/* ----------------------------------------------------------------- clock */

/* lwIP's sys_now() is a 32-bit millisecond count that wraps every 49.7 days; this
 * context extends it to 64 bits. It must be read at least once per wrap period
 * (any lib/ poll loop does so many times a second). Fields are internal. */
typedef struct elk_lwip_clock {
    uint32_t last;  /* last raw tick seen */
    uint32_t wraps; /* times the raw tick wrapped */
    bool started;
} elk_lwip_clock_t;

/* Prepare ctx (caller-owned) and fill *out with a clock reading sys_now(). */
void elk_lwip_clock_init(elk_lwip_clock_t *ctx, elk_clock_t *out);

/* Fold one raw 32-bit tick into ctx and return the 64-bit time. A tick lower than
 * the previous one counts as one wrap. Exposed so any 32-bit ms tick (an RTOS tick
 * counter, a test's scripted value) can be extended the same way. A NULL ctx returns
 * tick unextended. */
uint64_t elk_lwip_clock_extend(elk_lwip_clock_t *ctx, uint32_t tick);

/* --------------------------------------------------------------- entropy */

/* Board hardware RNG: store one 32-bit word from the true random generator in *word.
 * Return 0 on success, non-zero when the generator reports a fault (seed or clock
 * error, not ready in time). user is the pointer given to elk_lwip_entropy_init.
 * The port cannot know the board's RNG (STM32 RNG_DR, nRF RNG, ESP32 esp_random,
 * ...), so the application supplies this. */
typedef int (*elk_lwip_rng_fn)(void *user, uint32_t *word);

/* Entropy state. Fields are internal. */
typedef struct elk_lwip_entropy {
    elk_lwip_rng_fn rng;
    void *user;
    uint32_t last; /* previous word, for the continuous (stuck-output) test */
    bool primed;
} elk_lwip_entropy_t;

/* Prepare ctx (caller-owned) around rng and fill *out. fill() draws words from rng
 * and fails with ELK_E_ENTROPY (zeroing the buffer) when rng reports a fault or
 * returns the same word twice in a row (a stuck generator: FIPS 140-2 continuous
 * test; the first word after init is drawn only as the comparison baseline).
 * Returns ELK_OK or ELK_E_INVALID_ARG (NULL ctx, rng or out). */
int elk_lwip_entropy_init(elk_lwip_entropy_t *ctx, elk_lwip_rng_fn rng, void *user,
                          elk_entropy_t *out);

#ifdef __cplusplus
}
#endif

#endif /* ELK_PORT_LWIP_H */
