/* SPDX-License-Identifier: MIT */
/*
 * The elkd control protocol: one text line per message over a Unix stream socket.
 * Specified in docs/control-protocol.md. Everything here is pure (no I/O) so the
 * parsers can be fuzzed (tests/fuzz/fuzz_control.c).
 */
#ifndef ELKFW_CTL_H
#define ELKFW_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/err.h"
#include "elkfw/conf.h"

/* Longest request line a client may send, newline included. */
#define ELK_CTL_LINE_MAX 512u

/* Longest line elkd writes, newline included: the one-line STATUS JSON answer for the
 * largest configuration this build takes (ELKFW_MAX_RESOURCES; per resource at most ~400
 * bytes, per node ~500 plus its host name): megabytes for thousands of resources, so a
 * client takes a receive buffer of this size from the heap (elk does). elkd's output queue
 * grows to take such an answer whole (docs/control-protocol.md, back-pressure). */
#define ELK_CTL_REPLY_MAX                                                                          \
    (512u + CONFIG_ELK_GATEWAY_ID_MAX_LEN + ELKFW_MAX_RESOURCES * 448u +                           \
     CONFIG_ELK_MAX_NODES * (640u + ELKFW_STR_MAX))

typedef enum elkfw_ctl_cmd {
    ELKFW_CTL_ACQUIRE = 1,    /* ACQUIRE <resource> [<wait>] [keepalive=<interval>] */
    ELKFW_CTL_RELEASE,        /* RELEASE <resource> */
    ELKFW_CTL_STATUS,         /* STATUS */
    ELKFW_CTL_STATUS_JSON,    /* STATUS JSON */
    ELKFW_CTL_PING,           /* PING */
    ELKFW_CTL_HELP,           /* HELP */
    ELKFW_CTL_QUIT,           /* QUIT */
    ELKFW_CTL_SUPERVISE,      /* SUPERVISE <resource> <pgid> */
    ELKFW_CTL_STATUS_METRICS, /* STATUS METRICS: "OK METRICS <n>" then n lines (Prometheus text) */
    ELKFW_CTL_KEEPALIVE       /* KEEPALIVE <resource>: the work holding it is alive */
} elkfw_ctl_cmd_t;

typedef struct elkfw_ctl_req {
    elkfw_ctl_cmd_t cmd;
    char resource[ELKFW_NAME_MAX]; /* NUL-terminated, validated */
    uint32_t wait_ms;              /* ACQUIRE: how long to wait for the lock (0: try once) */
    uint32_t pgid;                 /* SUPERVISE: the process group driving the actuator (> 1) */
    uint32_t keepalive_ms;         /* ACQUIRE keepalive=<interval>: KEEPALIVE needed at least
                                      this often while held; 0: the resource's setting */
} elkfw_ctl_req_t;

/* Parse one request line (len bytes, without the '\n'; a trailing '\r' is ignored).
 * name_max is the longest resource name allowed (elkfw_resource_name_max). Returns
 * ELK_OK, ELK_E_CTL_UNKNOWN, ELK_E_CTL_SYNTAX, ELK_E_CTL_TOO_LONG, ELK_E_NAME_INVALID
 * or ELK_E_NAME_TOO_LONG; *why then points to a static detail for the ERR reply. */
int elkfw_ctl_parse_request(const char *line, size_t len, size_t name_max, elkfw_ctl_req_t *req,
                            const char **why);

typedef enum elkfw_ctl_kind { ELKFW_MSG_OK = 1, ELKFW_MSG_ERR, ELKFW_MSG_EVENT } elkfw_ctl_kind_t;

/* One agent -> client line, parsed by the elk CLI. Views point into the line. */
typedef struct elkfw_ctl_msg {
    elkfw_ctl_kind_t kind;
    char word[16];                 /* OK: ACQUIRED RELEASED SUPERVISED KEEPALIVE PONG STATUS
                                      JSON ...; EVENT: LOST RENEWED RENEW_STOPPED SUSPECT
                                      RECOVERED SHUTDOWN */
    char resource[ELKFW_NAME_MAX]; /* ACQUIRED, RELEASED, SUPERVISED, KEEPALIVE, LOST,
                                      RENEWED, RENEW_STOPPED, SUSPECT, RECOVERED */
    uint64_t token;                /* ACQUIRED, RENEWED, RECOVERED (0: fencing off) */
    uint32_t deadline_ms;          /* ACQUIRED, RENEWED, RECOVERED, SUSPECT: ms of validity
                                      left when sent */
    uint32_t stop_margin_ms;       /* ACQUIRED, RENEWED, RECOVERED (optional 5th field); LOST:
                                      ms left before the lease can have expired anywhere */
    uint64_t deadline_boottime_ms; /* ACQUIRED, RENEWED (optional "deadline_boottime_ms=N"):
                                      the local deadline as an absolute CLOCK_BOOTTIME ms
                                      value, the same clock for every process on the host;
                                      0 if elkd did not send it (older elkd) */
    uint32_t count;                /* OK STATUS <count> */
    char code[48];                 /* ERR <CODE_NAME>, EVENT LOST|RENEW_STOPPED|SUSPECT
                                      <resource> ... <CODE_NAME> */
    const char *text;              /* ERR message, OK JSON body: rest of the line */
    size_t text_len;
} elkfw_ctl_msg_t;

/* Parse one agent line (without '\n'). Returns ELK_OK or ELK_E_CTL_SYNTAX. */
int elkfw_ctl_parse_reply(const char *line, size_t len, elkfw_ctl_msg_t *msg);

/* Map a code name ("ELK_E_LOCK_BUSY") back to its value; ELK_E_INTERNAL if unknown. */
int elkfw_err_from_name(const char *name);

/* Fixed-size line assembler for a byte stream. buf is caller-owned. */
typedef struct elkfw_linebuf {
    char *buf;
    size_t cap, len;
    size_t consumed; /* bytes of the line handed out last, dropped on the next call */
    bool overflow;   /* a line longer than cap is being skipped */
} elkfw_linebuf_t;

void elkfw_linebuf_init(elkfw_linebuf_t *lb, char *buf, size_t cap);
/* Free space to receive into, and commit n received bytes. */
char *elkfw_linebuf_space(elkfw_linebuf_t *lb, size_t *avail);
void elkfw_linebuf_commit(elkfw_linebuf_t *lb, size_t n);
/* Next complete line: returns 1 with *line and *len (without '\n', valid until the next
 * call), 0 if none yet, or ELK_E_CTL_TOO_LONG once for a line that did not fit (it is
 * skipped up to its newline). */
int elkfw_linebuf_next(elkfw_linebuf_t *lb, const char **line, size_t *len);

/* True if a complete line in lb not yet handed out by elkfw_linebuf_next parses (with
 * name_max, as elkfw_ctl_parse_request) as request cmd for resource: what elkd looks for
 * behind an unanswered ACQUIRE (a RELEASE that cancels it). Reads lb only. */
bool elkfw_linebuf_has_request(const elkfw_linebuf_t *lb, elkfw_ctl_cmd_t cmd, const char *resource,
                               size_t name_max);

#endif /* ELKFW_CTL_H */
