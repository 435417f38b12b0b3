/* SPDX-License-Identifier: MIT */
/*
 * Scripted transport for unit tests: an elk_transport_t whose open/progress/send/recv
 * results are decided by the test, and which records every byte lib/ sends so a test
 * can assert the exact RESP on the wire.
 *
 * Typical use (one per fake Redis node):
 *
 *     fake_transport_t ft;
 *     fake_transport_init(&ft);
 *     elk_transport_t t = fake_transport_iface(&ft);     // hand t to elk_node_init
 *     ...poll until the node sent something...
 *     assert_true(fake_transport_sent_eq(&ft, "*1\r\n$4\r\nPING\r\n"));
 *     fake_transport_clear_sent(&ft);
 *     fake_transport_push_rx_str(&ft, "+PONG\r\n");       // next recv() returns it
 *
 * Defaults when nothing is scripted: open() -> ELK_OK, progress() -> 1 (ready at once),
 * send() takes every byte offered, recv() -> 0 (would block). Scripted results are
 * queues consumed one call at a time; once a queue is empty the default applies again.
 *
 * For lease-engine tests an on_send hook sees each chunk the moment it is accepted,
 * and fake_transport_pop_command() decodes the recorded bytes back into whole
 * commands (argv views), so a test can answer "SET k v NX PX 100" with "+OK\r\n"
 * without hand-matching bytes.
 *
 * No heap: all state is inside the struct (about 140 KB; make it static or global in
 * a test, not a local on a small stack). Not thread-safe; tests are single-threaded.
 */
#ifndef FAKE_TRANSPORT_H
#define FAKE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/platform.h"

#define FAKE_TRANSPORT_RX_CAP 65536u /* bytes queued for recv() and not yet read */
#define FAKE_TRANSPORT_TX_CAP 65536u /* recorded sent bytes not yet cleared/popped */
#define FAKE_TRANSPORT_STEPS 512u    /* entries in each scripted queue */
#define FAKE_CMD_MAX_ARGS 160u       /* arguments decoded by fake_transport_pop_command */

typedef struct fake_transport fake_transport_t;

/* Called after send() accepted len bytes (data points into the recording; valid during
 * the call). The hook may push replies with fake_transport_push_rx*. */
typedef void (*fake_transport_send_hook)(void *user, fake_transport_t *ft, const uint8_t *data,
                                         size_t len);

/* One entry of the recv() script: bytes [off, off+len) of rx, or a bare result. */
typedef struct fake_rx_step {
    size_t off, len;
    int32_t result; /* used when len == 0: 0 (would block) or a negative elk_err_t */
} fake_rx_step_t;

struct fake_transport {
    /* scripted queues (use the functions below) */
    int open_q[FAKE_TRANSPORT_STEPS];
    size_t open_head, open_n;
    int progress_q[FAKE_TRANSPORT_STEPS];
    size_t progress_head, progress_n;
    int32_t send_q[FAKE_TRANSPORT_STEPS];
    size_t send_head, send_n;
    fake_rx_step_t rx_q[FAKE_TRANSPORT_STEPS];
    size_t rx_head, rx_n;
    uint8_t rx[FAKE_TRANSPORT_RX_CAP];
    size_t rx_used;

    /* recording */
    uint8_t tx[FAKE_TRANSPORT_TX_CAP];
    size_t tx_len;    /* bytes held in tx (not yet cleared or popped) */
    size_t tx_total;  /* bytes ever accepted by send() */
    bool tx_overflow; /* more was sent than tx can hold: recording incomplete */

    /* observable state, read freely by tests */
    bool is_open;                 /* between a successful open() and close() */
    bool ready;                   /* progress() returned 1 since the last open() */
    elk_endpoint_t last_endpoint; /* copy of what open() got (strings not copied) */
    unsigned open_calls, progress_calls, send_calls, recv_calls, close_calls, wait_calls;
    int fd;               /* what wait() reports; default 42 */
    unsigned wait_events; /* ELK_WAIT_* reported by wait() when open; default READ */

    fake_transport_send_hook on_send;
    void *on_send_user;
};

/* Reset to defaults (empty scripts, nothing recorded, closed). */
void fake_transport_init(fake_transport_t *ft);

/* The elk_transport_t to hand to lib/ (ctx = ft). */
elk_transport_t fake_transport_iface(fake_transport_t *ft);

/* Queue the result of the next open() call: ELK_OK or a negative elk_err_t. */
void fake_transport_script_open(fake_transport_t *ft, int result);

/* Queue the result of the next progress() call: 1 ready, 0 in progress, <0 error.
 * Call several times to make the connect take several polls. */
void fake_transport_script_progress(fake_transport_t *ft, int result);

/* Queue the result of the next send() call: n > 0 accepts at most n bytes (a short
 * write), 0 makes it "would block", a negative elk_err_t fails it. */
void fake_transport_script_send(fake_transport_t *ft, int32_t result);

/* Queue bytes for recv(). Like a socket, one recv() returns every byte pushed so far
 * (up to the caller's length; the rest stays for the next call), so a short read means
 * nothing more is there (platform.h). Pushing a reply in pieces between polls tests
 * reassembly. Fails the test (abort) if rx is full. */
void fake_transport_push_rx(fake_transport_t *ft, const void *data, size_t len);
void fake_transport_push_rx_str(fake_transport_t *ft, const char *s);
/* Same bytes split into chunks of at most chunk bytes each (chunk 1: byte by byte); a
 * recv() still returns them together, as a socket would once they have all arrived. */
void fake_transport_push_rx_split(fake_transport_t *ft, const char *s, size_t chunk);
/* Queue a bare recv() result: 0 ("would block" once) or a negative elk_err_t such as
 * ELK_E_CLOSED (peer closed) or ELK_E_IO. */
void fake_transport_push_rx_result(fake_transport_t *ft, int32_t result);
/* Forget every queued recv() chunk and result. */
void fake_transport_clear_rx(fake_transport_t *ft);
/* Number of recv() entries not yet consumed. */
size_t fake_transport_rx_pending(const fake_transport_t *ft);

/* Recorded bytes (everything accepted since the last clear/pop); *len gets the size. */
const uint8_t *fake_transport_sent(const fake_transport_t *ft, size_t *len);
/* True if the recorded bytes are exactly the NUL-terminated text s. */
bool fake_transport_sent_eq(const fake_transport_t *ft, const char *s);
/* Forget the recorded bytes. */
void fake_transport_clear_sent(fake_transport_t *ft);

/* A command decoded from the recording: argv views into ft->tx (valid until the next
 * send, clear or pop). */
typedef struct fake_cmd {
    size_t argc;
    const uint8_t *argv[FAKE_CMD_MAX_ARGS];
    size_t len[FAKE_CMD_MAX_ARGS];
} fake_cmd_t;

/* Decode the first whole command (RESP array of bulk strings) in the recording into
 * *cmd and remove it from the recording. Returns 1 when a command was decoded, 0 when
 * no whole command is recorded yet, -1 when the recorded bytes are not a command
 * (a test failure: lib/ sent malformed RESP). The views stay valid until the next
 * pop, clear or send. */
int fake_transport_pop_command(fake_transport_t *ft, fake_cmd_t *cmd);
/* True if argument i of cmd equals the text s (case-sensitive). */
bool fake_cmd_arg_eq(const fake_cmd_t *cmd, size_t i, const char *s);
/* True if cmd's name (argv[0]) equals s ignoring ASCII case ("set" == "SET"). */
bool fake_cmd_is(const fake_cmd_t *cmd, const char *s);

#endif /* FAKE_TRANSPORT_H */
