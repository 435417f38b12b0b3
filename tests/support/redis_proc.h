/* SPDX-License-Identifier: MIT */
/*
 * The one redis-server launcher of the C tests, tools and benchmarks (the integration
 * fixture tests/integration/fleet.c, tests/tools/common/elk_tooltest.c and
 * tests/bench/support/bench_redis.c are built on it): a free 127.0.0.1 port, a server
 * started on it (plain or TLS, no persistence, bound to 127.0.0.1 only, killed with the
 * process that started it), and stopping it. Readiness is the caller's: the fixture asks
 * over the unix socket (hiredis), the tools over TCP (elk_rp_wait_tcp).
 * Test code (C11, POSIX): it forks and sleeps; lib/ rules do not apply.
 */
#ifndef ELK_TEST_REDIS_PROC_H
#define ELK_TEST_REDIS_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How to start one server. Zero it, then set what applies; NULL strings are left out. */
typedef struct elk_rp_opts {
    uint16_t port; /* the TCP port, or the TLS port when tls (then --port 0) */
    bool tls;
    const char *tls_cert; /* --tls-cert-file, --tls-key-file, --tls-ca-cert-file */
    const char *tls_key;
    const char *tls_ca;
    bool tls_auth_clients;   /* --tls-auth-clients yes (default no) */
    const char *unixsocket;  /* --unixsocket (mode 700) */
    const char *dir;         /* --dir: its working directory */
    const char *log_path;    /* stdout and stderr appended there; NULL: /dev/null */
    const char *loglevel;    /* --loglevel (default notice) */
    const char *requirepass; /* --requirepass */
    const char *acl_user;    /* --user NAME on >acl_password, then acl_rules */
    const char *acl_password;
    const char *const *acl_rules;  /* NULL-terminated ACL rules (default ~* &* +@all) */
    const char *const *extra_args; /* NULL-terminated, appended to the argv */
} elk_rp_opts_t;

/* A 127.0.0.1 port that was free a moment ago (bound to 0 and released); 0 on failure. */
uint16_t elk_rp_free_port(void);

/* Fork and exec redis-server with o (stdin /dev/null). The child gets SIGKILL when its
 * parent dies, so no server outlives a killed test. Returns the pid, or -1 when fork
 * failed (a message on stderr); an exec failure shows as the child's exit status 127. */
pid_t elk_rp_spawn(const elk_rp_opts_t *o);

/* Wait up to timeout_ms until the plain server at 127.0.0.1:port answers PING with
 * +PONG. Returns 0 ready, -2 when pid exited meanwhile (e.g. the port was taken: try
 * another), -1 on timeout. */
int elk_rp_wait_tcp(pid_t pid, uint16_t port, unsigned timeout_ms);

/* SIGCONT (a paused server cannot die of SIGTERM), SIGTERM, up to grace_ms for it to
 * exit, then SIGKILL; always reaps. Returns the wait status, or -1 (also for pid <= 0). */
int elk_rp_stop(pid_t pid, unsigned grace_ms);

/* Monotonic milliseconds, and a sleep that resumes after signals. */
uint64_t elk_rp_now_ms(void);
void elk_rp_sleep_ms(unsigned ms);

#ifdef __cplusplus
}
#endif

#endif /* ELK_TEST_REDIS_PROC_H */
