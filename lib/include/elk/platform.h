/* SPDX-License-Identifier: MIT */
/*
 * What lib/ needs from a platform: a byte transport, a monotonic clock, an entropy
 * source and a log sink. All are injected by the caller; lib/ never touches sockets,
 * clocks, random sources or stdio itself.
 *
 * The transport follows coreMQTT's convention: every call is non-blocking and
 * returns bytes moved (>0), 0 for "would block, try again when the wait set says
 * so", or a negative elk_err_t. Ports: port/posix, port/lwip, port/mbedtls (TLS
 * over any other transport), port/sim (deterministic simulation).
 */
#ifndef ELK_PLATFORM_H
#define ELK_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Readiness a transport waits for before its next call can make progress. */
enum elk_wait_events { ELK_WAIT_NONE = 0, ELK_WAIT_READ = 1u << 0, ELK_WAIT_WRITE = 1u << 1 };

/* Where to connect. Strings are owned by the caller and must outlive the connection. */
typedef struct elk_endpoint {
    const char *host; /* numeric address or (where the port resolves names) a name */
    uint16_t port;
    const char *server_name; /* TLS SNI and certificate name check; NULL means use host */
} elk_endpoint_t;

/*
 * A byte stream to one server. ctx is the port's own state (caller-allocated).
 * A port fills in the function pointers; lib/ calls only these.
 */
typedef struct elk_transport {
    void *ctx;
    /* Start connecting to ep. Returns ELK_OK when the call started (or finished) the
     * connect; progress() then says when it is usable. Negative elk_err_t on failure. */
    int (*open)(void *ctx, const elk_endpoint_t *ep);
    /* Advance a connect or handshake. Returns 1 when the stream is ready for send/recv,
     * 0 while still in progress (see wait()), negative elk_err_t on failure. */
    int (*progress)(void *ctx);
    /* Send up to len bytes. Returns bytes taken (>0), 0 if it would block, or negative elk_err_t. */
    int32_t (*send)(void *ctx, const uint8_t *buf, size_t len);
    /* Receive up to len bytes into buf. Returns bytes read (>0), 0 if none are available
     * yet, ELK_E_CLOSED on an orderly close by the peer, or another negative elk_err_t.
     * Fewer than len bytes means the transport holds nothing more right now (more data
     * makes wait()'s descriptor ready): the node then does not ask again in this poll. */
    int32_t (*recv)(void *ctx, uint8_t *buf, size_t len);
    /* Close and forget the connection; safe to call on a closed transport. */
    void (*close)(void *ctx);
    /* What the caller's event loop should wait on: a descriptor (or -1 where the platform
     * has none, e.g. an RTOS that polls) and ELK_WAIT_* bits. Returns the descriptor. */
    int (*wait)(void *ctx, unsigned *events);
} elk_transport_t;

/* Monotonic milliseconds since an arbitrary origin. Never a wall clock. Ports with a
 * 32-bit tick extend it to 64 bits (wrap-around handled in the port's ctx). */
typedef struct elk_clock {
    void *ctx;
    uint64_t (*now_ms)(void *ctx);
} elk_clock_t;

/* Fills buf with len bytes from a cryptographically strong source.
 * Returns ELK_OK or a negative elk_err_t (ELK_E_ENTROPY). */
typedef struct elk_entropy {
    void *ctx;
    int (*fill)(void *ctx, uint8_t *buf, size_t len);
} elk_entropy_t;

/* Log levels, matching syslog's order of severity. */
enum elk_log_level { ELK_LOG_ERROR = 1, ELK_LOG_WARN = 2, ELK_LOG_INFO = 3, ELK_LOG_DEBUG = 4 };

/* A log sink. text is not NUL-terminated and is valid only during the call;
 * module names the lib/ module ("node", "lock", ...). write may be NULL (no logging). */
typedef struct elk_log {
    void *ctx;
    void (*write)(void *ctx, int level, const char *module, const char *text, size_t len);
    int level; /* messages above this level are not formatted at all */
} elk_log_t;

#ifdef __cplusplus
}
#endif

#endif /* ELK_PLATFORM_H */
