/* SPDX-License-Identifier: MIT */
/*
 * Real-fleet test fixture: starts N real redis-server processes on 127.0.0.1 with
 * ephemeral ports, plain or TLS, with certificates generated per run, and always stops
 * them (elk_tf_stop, atexit, SIGINT/SIGTERM/SIGABRT handlers, and PR_SET_PDEATHSIG in
 * each child so no redis-server outlives the test process, even after SIGKILL).
 *
 * Usage from a cmocka test (link with elk_test_fleet, which brings hiredis):
 *
 *     static elk_tf_t fleet;
 *     elk_tf_options_t o; elk_tf_options_defaults(&o);
 *     o.count = 3; o.tls = true;
 *     assert_int_equal(elk_tf_start(&fleet, &o), 0);
 *     elk_endpoint_t ep = elk_tf_endpoint(&fleet, 0);   // 127.0.0.1, port, "localhost"
 *     elk_tls_config_t tc = { .ca_file = elk_tf_certs()->ca_crt };
 *     ...
 *     redisReply *r = elk_tf_cmd(&fleet, 0, "GET %s", key);  // inspect a server directly
 *     freeReplyObject(r);
 *     elk_tf_kill(&fleet, 1); ... elk_tf_restart(&fleet, 1);
 *     elk_tf_stop(&fleet);
 *
 * Each server also listens on a unix socket in the fleet's temp dir; elk_tf_cmd and
 * elk_tf_redis use it (hiredis 0.14 has no TLS), so TLS servers can be inspected too.
 * Functions return 0 on success and -1 on failure, after printing why to stderr
 * (with the tail of the server's log when a server would not start).
 * Not thread-safe; one process may run several fleets (up to ELK_TF_MAX_FLEETS at once).
 * Give elk_tf_t and elk_tf_listener_t static storage (or keep them alive until they are
 * stopped): the exit and signal hooks reach running fleets through them, also after a
 * failed cmocka assertion has jumped out of the test that started them.
 * Set ELK_TF_KEEP=1 in the environment to keep temp dirs (logs, certs) for debugging.
 */
#ifndef ELK_TEST_FLEET_H
#define ELK_TEST_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "elk/platform.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ELK_TF_MAX_SERVERS 9
#define ELK_TF_MAX_FLEETS 8
#define ELK_TF_PATH_MAX 256
#define ELK_TF_DIR_MAX 64

/* The certificates of this run, generated once per process by gen-certs.sh into a
 * temp dir (removed at exit). All keys are EC P-256, PEM, unencrypted. */
typedef struct elk_tf_certs {
    char dir[ELK_TF_DIR_MAX];
    char ca_crt[ELK_TF_PATH_MAX];     /* the CA clients trust */
    char server_crt[ELK_TF_PATH_MAX]; /* CN=localhost, SAN DNS:localhost, IP:127.0.0.1; by ca */
    char server_key[ELK_TF_PATH_MAX];
    char wronghost_crt[ELK_TF_PATH_MAX]; /* CN/SAN wrong.example.invalid; by ca */
    char wronghost_key[ELK_TF_PATH_MAX];
    char expired_crt[ELK_TF_PATH_MAX]; /* localhost, valid 2020-01-01..2020-01-02; by ca */
    char expired_key[ELK_TF_PATH_MAX];
    char other_ca_crt[ELK_TF_PATH_MAX]; /* a second, unrelated CA */
    char othersrv_crt[ELK_TF_PATH_MAX]; /* localhost, signed by other_ca */
    char othersrv_key[ELK_TF_PATH_MAX];
    char client_crt[ELK_TF_PATH_MAX]; /* CN=elk-client, extendedKeyUsage clientAuth; by ca */
    char client_key[ELK_TF_PATH_MAX];
    char other_client_crt[ELK_TF_PATH_MAX]; /* client certificate signed by other_ca */
    char other_client_key[ELK_TF_PATH_MAX];
} elk_tf_certs_t;

/* Generate (first call) and return the run's certificates; NULL (and a message on
 * stderr) if openssl failed. Static storage, valid until exit. */
const elk_tf_certs_t *elk_tf_certs(void);

/* Which certificate the TLS servers present. */
typedef enum elk_tf_cert {
    ELK_TF_CERT_VALID = 0,
    ELK_TF_CERT_WRONG_HOST,
    ELK_TF_CERT_EXPIRED,
    ELK_TF_CERT_OTHER_CA
} elk_tf_cert_t;

typedef struct elk_tf_options {
    size_t count;              /* servers, 1..ELK_TF_MAX_SERVERS (default 1) */
    bool tls;                  /* --tls-port P --port 0 (default false: plain --port P) */
    bool tls_auth_clients;     /* --tls-auth-clients yes: mutual TLS (default no) */
    elk_tf_cert_t server_cert; /* default ELK_TF_CERT_VALID */
    const char *requirepass;   /* --requirepass (default user's password), or NULL */
    const char *acl_user;      /* --user NAME on >acl_password ~* &* +@all, or NULL */
    const char *acl_password;
    const char *const *acl_rules;  /* NULL-terminated rules for acl_user in place of ~* &* +@all
                                      (a least-privilege user); the fixture's own connection
                                      then stays the default user */
    const char *const *extra_args; /* NULL-terminated, appended to every server's argv */
    unsigned start_timeout_ms;     /* wait for PING per server (default 10000) */
} elk_tf_options_t;

typedef struct elk_tf_server {
    pid_t pid;                  /* 0 when not running */
    uint16_t port;              /* the TCP (or TLS) port clients use */
    bool paused;                /* SIGSTOPped */
    char sock[ELK_TF_PATH_MAX]; /* unix socket path (fixture control channel) */
    char log[ELK_TF_PATH_MAX];  /* redis-server's stdout/stderr */
    redisContext *ctl;          /* lazily opened hiredis context on sock */
} elk_tf_server_t;

typedef struct elk_tf {
    elk_tf_options_t opts;
    size_t count;
    char dir[ELK_TF_DIR_MAX]; /* temp dir: logs, sockets, per-server dirs */
    elk_tf_server_t servers[ELK_TF_MAX_SERVERS];
    bool started;
} elk_tf_t;

/* Defaults as documented in elk_tf_options_t. */
void elk_tf_options_defaults(elk_tf_options_t *opts);

/* Start opts->count servers (opts NULL: defaults) and wait until each answers PING.
 * Ports are found by binding 127.0.0.1:0 and releasing; a collision is retried with a
 * new port. On failure everything started is stopped again. Returns 0 or -1. */
int elk_tf_start(elk_tf_t *fleet, const elk_tf_options_t *opts);

/* Stop every server (SIGTERM, then SIGKILL after 3 s), close control contexts, remove
 * the temp dir. Safe to call twice or on a fleet that never started. */
void elk_tf_stop(elk_tf_t *fleet);

/* n fleets side by side (a test's one fleet per kind of server): fleets[i] started with
 * the defaults as configure(i, &opts) changes them. Returns 0, or -1 at the first that
 * fails (elk_tf_stop_each stops those started). */
int elk_tf_start_each(elk_tf_t *fleets, int n, void (*configure)(int i, elk_tf_options_t *opts));
void elk_tf_stop_each(elk_tf_t *fleets, int n);

/* Number of servers, TCP port of server i, and an endpoint for it: host "127.0.0.1",
 * server_name "localhost" when TLS (NULL when plain). Strings are static. */
size_t elk_tf_count(const elk_tf_t *fleet);
uint16_t elk_tf_port(const elk_tf_t *fleet, size_t i);
elk_endpoint_t elk_tf_endpoint(const elk_tf_t *fleet, size_t i);

/* Server i: SIGKILL it now (crash: no shutdown, data lost as --save "" is the default). */
int elk_tf_kill(elk_tf_t *fleet, size_t i);
/* Server i: SIGTERM and wait (orderly shutdown). */
int elk_tf_term(elk_tf_t *fleet, size_t i);
/* Start server i again on the same port and options (kills it first if running) and
 * wait for PING. */
int elk_tf_restart(elk_tf_t *fleet, size_t i);
/* SIGSTOP / SIGCONT server i: a paused process (GC pause, VM freeze) keeps its sockets
 * open but answers nothing. elk_tf_stop resumes paused servers before stopping them. */
int elk_tf_pause(elk_tf_t *fleet, size_t i);
int elk_tf_resume(elk_tf_t *fleet, size_t i);
/* Resume every paused server and restart every killed one (same ports), e.g. from a
 * cmocka per-test setup so one failed test does not leave the next with a broken fleet. */
int elk_tf_heal(elk_tf_t *fleet);
/* True if server i is running (not killed; paused counts as running). */
bool elk_tf_running(const elk_tf_t *fleet, size_t i);

/* hiredis context on server i's unix socket, authenticated (requirepass or ACL user).
 * Owned by the fixture (do not free); reopened after a restart. NULL on failure or
 * while the server is paused (it would block). */
redisContext *elk_tf_redis(elk_tf_t *fleet, size_t i);

/* Run one command on server i through elk_tf_redis (hiredis format). Returns the reply
 * (caller frees with freeReplyObject) or NULL. */
redisReply *elk_tf_cmd(elk_tf_t *fleet, size_t i, const char *fmt, ...);

/* Read a whole file into buf (caller-owned, cap bytes); NUL-terminates it and stores
 * the length without the NUL in *len. For "certificates from memory" tests. Returns 0 or -1. */
int elk_tf_read_file(const char *path, uint8_t *buf, size_t cap, size_t *len);

/* A listener on 127.0.0.1 (ephemeral port) that accepts connections in a child process
 * and misbehaves in a chosen way: for "TLS handshake cut off" and similar tests.
 * Stopped by elk_tf_listener_stop and at exit. */
typedef enum elk_tf_listener_mode {
    ELK_TF_LISTEN_CLOSE = 0,  /* accept, then close at once */
    ELK_TF_LISTEN_READ_CLOSE, /* accept, read what the client sends (e.g. ClientHello), close */
    ELK_TF_LISTEN_SILENT,     /* accept and never answer (until stopped) */
    ELK_TF_LISTEN_REPLY_ERR   /* read, answer "-ERR unknown command\r\n" (not TLS), close */
} elk_tf_listener_mode_t;

typedef struct elk_tf_listener {
    pid_t pid;
    uint16_t port;
} elk_tf_listener_t;

int elk_tf_listener_start(elk_tf_listener_t *l, elk_tf_listener_mode_t mode);
void elk_tf_listener_stop(elk_tf_listener_t *l);

/* ------------------------------------------------------------ transport helpers
 * Blocking helpers over any elk_transport_t (posix TCP, mbedTLS over TCP), built on
 * elk_posix_wait, for tests that exercise a transport without lib/node. Each returns
 * ELK_OK (or 1 for connect), a negative elk_err_t from the transport, or
 * ELK_E_CONNECT_TIMEOUT / ELK_E_TIMEOUT when timeout_ms passes. */

/* open() then progress() until ready. The transport is left open on failure (close it). */
int elk_tf_xport_connect(const elk_transport_t *t, const elk_endpoint_t *ep, unsigned timeout_ms);
/* send() all len bytes. */
int elk_tf_xport_send_all(const elk_transport_t *t, const void *buf, size_t len,
                          unsigned timeout_ms);
/* recv() into buf (cap bytes, NUL-terminated when room) until the bytes received so far
 * contain terminator (or, terminator NULL, until the peer closes). *len gets the count. */
int elk_tf_xport_recv_until(const elk_transport_t *t, uint8_t *buf, size_t cap,
                            const char *terminator, unsigned timeout_ms, size_t *len);

/* PING over t and read the answer: ELK_OK when it is +PONG, ELK_E_UNEXPECTED_REPLY for
 * another answer, else the transport's error (or ELK_E_TIMEOUT). */
int elk_tf_xport_ping(const elk_transport_t *t, unsigned timeout_ms);

/* A 127.0.0.1 port that was free a moment ago (bound to 0 and released), e.g. for
 * "connection refused" tests. 0 on failure. */
uint16_t elk_tf_free_port(void);

#ifdef __cplusplus
}
#endif

#endif /* ELK_TEST_FLEET_H */
