/* Shared between the files of lib/node (not a public header). */
#ifndef ELK_NODE_INTERNAL_H
#define ELK_NODE_INTERNAL_H

#include "elk/node.h"

#include "elk/fmt.h"

/* For a helper gcc -Os would otherwise copy into each caller (measured on Cortex-M4). */
#if defined(__GNUC__)
#define ELK_NODE_NOINLINE __attribute__((noinline))
#else
#define ELK_NODE_NOINLINE
#endif

/* Room for one log line; longer lines are cut. */
#define ELK_NODE_LOG_LINE 160u

/* Logging: elk_node_log_on says whether a line of this level would be written at all
 * (so nothing is formatted otherwise); elk_node_log_begin starts a line with
 * "<host>:<port> " in buf, the caller appends with elk_fmt_*, elk_node_log_end writes it. */
bool elk_node_log_on(const elk_node_t *node, int level);
/* Callers pass a constant level: this lets the compiler drop every line above
 * CONFIG_ELK_LOG_LEVEL, formatting included (all of them at level 0). */
#define elk_node_log_on(node, level) \
    ((level) <= CONFIG_ELK_LOG_LEVEL && (elk_node_log_on)((node), (level)))
void elk_node_log_begin(const elk_node_t *node, elk_fmt_t *f, char *buf, size_t cap);
void elk_node_log_end(const elk_node_t *node, int level, elk_fmt_t *f);
/* Append ": <NAME> (<message>)" for an elk_err_t (": <NAME>" without CONFIG_ELK_ERR_MESSAGES). */
void elk_node_log_err(elk_fmt_t *f, int err);

/* Tear the connection down, notify, fail every in-flight request, go to BACKOFF.
 * head_status: what the oldest request gets (its own error), others get
 * ELK_E_DISCONNECTED, expired ones ELK_E_TIMEOUT. */
void elk_node_conn_fail(elk_node_t *node, uint64_t now, int err, int head_status);

/* Move to state (no-op if unchanged) and tell on_state. */
void elk_node_conn_set_state(elk_node_t *node, elk_node_state_t state, uint64_t now, int err);

/* Encode argv at the end of the tx block (compacting sent bytes away first if needed).
 * Returns ELK_OK, ELK_E_BUF_TOO_SMALL (never fits) or ELK_E_QUEUE_FULL (full now). */
int elk_node_io_encode(elk_node_t *node, const elk_resp_arg_t *argv, size_t argc);

/* Send what the transport takes now. Returns ELK_OK or the transport's error. */
int elk_node_io_flush(elk_node_t *node);

/* Receive and dispatch every complete reply. Returns ELK_OK, or a negative code after
 * which the node has already been failed/closed (the caller must stop). */
int elk_node_io_pump(elk_node_t *node, uint64_t now);

/* First handshake step after the transport is ready (AUTH, HELLO, SELECT or READY). */
void elk_node_hs_start(elk_node_t *node, uint64_t now);

/* Handle the reply to the pending handshake command. */
void elk_node_hs_reply(elk_node_t *node, uint64_t now, const elk_resp_reply_t *reply);

#endif /* ELK_NODE_INTERNAL_H */
