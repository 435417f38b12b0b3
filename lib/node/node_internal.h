/* SPDX-License-Identifier: MIT */
/* Shared between the files of lib/node (not a public header).
 *
 * Calls run one way: node_conn.c (the state machine) -> node_handshake.c -> node_io.c
 * -> node_log.c. Only node_conn.c changes the state or fails a connection: the
 * handshake and the I/O code say what happened in their return value (a verdict) and
 * node_conn.c acts on it. */
#ifndef ELK_NODE_INTERNAL_H
#define ELK_NODE_INTERNAL_H

#include "elk/node.h"

#include "../util/fmt.h"

/* For a helper gcc -Os would otherwise copy into each caller (measured on Cortex-M4). */
#if defined(__GNUC__)
#define ELK_NODE_NOINLINE __attribute__((noinline))
#else
#define ELK_NODE_NOINLINE
#endif

/* ------------------------------------------------------------------ node_log.c */

/* Room for one log line; longer lines are cut. */
#define ELK_NODE_LOG_LINE 160u

/* elk_node__log_on says whether a line of this level would be written at all (so
 * nothing is formatted otherwise); elk_node__log_begin starts a line with
 * "<host>:<port> " in buf, the caller appends with elk_fmt_*, elk_node__log_end writes it. */
bool elk_node__log_on(const elk_node_t *node, int level);
/* Callers pass a constant level: this lets the compiler drop every line above
 * CONFIG_ELK_LOG_LEVEL, formatting included (all of them at level 0). */
#define elk_node__log_on(node, level)                                                              \
    ((level) <= CONFIG_ELK_LOG_LEVEL && (elk_node__log_on)((node), (level)))
void elk_node__log_begin(const elk_node_t *node, elk_fmt_t *f, char *buf, size_t cap);
void elk_node__log_end(const elk_node_t *node, int level, elk_fmt_t *f);
/* Append ": <NAME> (<message>)" for an elk_err_t (": <NAME>" without CONFIG_ELK_ERR_MESSAGES). */
void elk_node__log_err(elk_fmt_t *f, int err);
/* A whole line "<host>:<port> <a><b>", then ": <NAME> (<message>)" unless err is ELK_OK,
 * if a line of this level is written at all (compiled out above CONFIG_ELK_LOG_LEVEL). */
void elk_node__log_line(const elk_node_t *node, int level, const char *a, const char *b, int err);
#define elk_node__log_line(node, level, a, b, err)                                                 \
    do {                                                                                           \
        if ((level) <= CONFIG_ELK_LOG_LEVEL) {                                                     \
            (elk_node__log_line)((node), (level), (a), (b), (err));                                \
        }                                                                                          \
    } while (0)

/* ------------------------------------------------------------------ node_io.c */

/* Encode argv at the end of the tx block (compacting sent bytes away first if needed).
 * Returns ELK_OK, ELK_E_BUF_TOO_SMALL (never fits) or ELK_E_QUEUE_FULL (full now). */
int elk_node__io_encode(elk_node_t *node, const elk_resp_arg_t *argv, size_t argc);

/* Send what the transport takes now. Returns ELK_OK or the transport's error. */
int elk_node__io_flush(elk_node_t *node);

/* What elk_node__io_pump stopped on, when it returns no negative elk_err_t. */
enum {
    ELK_NODE__RX_IDLE = 0,      /* nothing more to read now */
    ELK_NODE__RX_MORE = 1,      /* the recv budget ran out: bytes may still wait */
    ELK_NODE__RX_HANDSHAKE = 2, /* rx->reply answers the handshake command */
    ELK_NODE__RX_CLOSED = 3     /* a callback closed the node: touch nothing more */
};

/* One receive pass, kept by the caller while it judges a handshake reply. */
typedef struct elk_node__rx {
    elk_resp_reply_t reply; /* with ELK_NODE__RX_HANDSHAKE: still held by the reader */
    int head_status;        /* with a negative verdict: what the oldest request gets
                             * (ELK_E_DISCONNECTED unless its own reply was bad) */
    int recvs;              /* recv calls so far */
    bool drained;           /* a short read took everything the transport had */
} elk_node__rx_t;

/* Start a receive pass. */
static inline void elk_node__io_rx_init(elk_node__rx_t *rx)
{
    rx->head_status = ELK_E_DISCONNECTED;
    rx->recvs = 0;
    rx->drained = false;
}

/* Receive, route pushes to on_push and replies to their requests (their callbacks run
 * here). Returns an ELK_NODE__RX_* verdict, or a negative elk_err_t after which the
 * connection must fail (nothing was failed here). After ELK_NODE__RX_HANDSHAKE the
 * caller judges rx->reply, releases it (elk_resp_reader_release) and calls again with
 * the same rx. */
int elk_node__io_pump(elk_node_t *node, uint64_t now, elk_node__rx_t *rx);

/* ------------------------------------------------------------------ node_handshake.c */

/* The handshake's verdicts: the state to enter next (ELK_NODE_AUTH, _HELLO or _SELECT
 * with its command queued, or ELK_NODE_READY), or a negative elk_err_t the connection
 * fails with. */

/* First step once the transport is ready. */
int elk_node__hs_start(elk_node_t *node);

/* Judge the reply to the pending handshake command and queue the next one. */
int elk_node__hs_reply(elk_node_t *node, const elk_resp_reply_t *reply);

#endif /* ELK_NODE_INTERNAL_H */
