/* SPDX-License-Identifier: MIT */
/* Which TLS version port/mbedtls negotiates, and that it refuses what is below its floor:
 * redis-server limited with --tls-protocols, and `openssl s_server -tls1_1` for a server
 * that offers only TLS 1.1 (Redis cannot be made to). With mbedTLS 3.x built with
 * TLS 1.3 the default session is TLS 1.3; with 2.28 it is TLS 1.2. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "test_main.h"
#include <mbedtls/version.h>

#include "elk/port_mbedtls.h"
#include "elk/port_posix.h"
#include "fleet.h"
#include "tls_client.h"

#define TMO 5000u

#if MBEDTLS_VERSION_NUMBER >= 0x03000000 && defined(MBEDTLS_SSL_PROTO_TLS1_3)
#define HAVE_TLS13 1
#else
#define HAVE_TLS13 0
#endif

static const elk_tf_certs_t *certs;

typedef elk_tc_t client_t;

static int setup(void **state)
{
    (void)state;
    certs = elk_tf_certs();
    return certs == NULL ? -1 : 0;
}

static void client_init(client_t *c)
{
    elk_tls_config_t cfg = elk_tc_ca_only();
    assert_int_equal(elk_tc_init(c, &cfg, NULL), ELK_OK);
}

static int connect_port(client_t *c, uint16_t port)
{
    elk_endpoint_t ep = {"127.0.0.1", port, "localhost"};
    int rc = elk_tf_xport_connect(&c->t, &ep, TMO);
    char text[512];
    if (rc == ELK_E_CONNECT_REFUSED) {
        return rc; /* s_server not listening yet */
    }
    print_message("    -> %s %s\n", rc == 1 ? "connected," : "refused:",
                  rc == 1 ? elk_tls_conn_version(&c->conn)
                          : elk_tls_conn_error_text(&c->conn, text, sizeof text));
    return rc;
}

static void ping(client_t *c)
{
    assert_int_equal(elk_tf_xport_ping(&c->t, TMO), ELK_OK);
}

/* A redis-server whose TLS port allows only `protocols` (NULL: its default). */
static void start_redis(elk_tf_t *f, const char *protocols)
{
    static const char *args[3];
    elk_tf_options_t o;
    elk_tf_options_defaults(&o);
    o.tls = true;
    if (protocols != NULL) {
        args[0] = "--tls-protocols";
        args[1] = protocols;
        args[2] = NULL;
        o.extra_args = args;
    }
    assert_int_equal(elk_tf_start(f, &o), 0);
}

/* A server offering protocols (NULL: redis' default) gives a session of version want,
 * and a PING goes through it. */
static void check_session(const char *protocols, const char *want)
{
    elk_tf_t f;
    client_t c;
    start_redis(&f, protocols);
    client_init(&c);
    assert_int_equal(connect_port(&c, elk_tf_port(&f, 0)), 1);
    assert_string_equal(elk_tls_conn_version(&c.conn), want);
    ping(&c);
    elk_tc_free(&c);
    elk_tf_stop(&f);
}

static void test_default_session_is_newest(void **state)
{
    (void)state;
    check_session(NULL, HAVE_TLS13 ? "TLSv1.3" : "TLSv1.2");
}

static void test_tls12_only_server(void **state)
{
    (void)state;
    check_session("TLSv1.2", "TLSv1.2");
}

/* A TLS 1.3-only server: a session with 3.x, a named refusal with 2.28. */
static void test_tls13_only_server(void **state)
{
    (void)state;
    elk_tf_t f;
    client_t c;
    start_redis(&f, "TLSv1.3");
    client_init(&c);
    if (HAVE_TLS13) {
        assert_int_equal(connect_port(&c, elk_tf_port(&f, 0)), 1);
        assert_string_equal(elk_tls_conn_version(&c.conn), "TLSv1.3");
        ping(&c);
    } else {
        assert_int_equal(connect_port(&c, elk_tf_port(&f, 0)), ELK_E_TLS_VERSION);
    }
    elk_tc_free(&c);
    elk_tf_stop(&f);
}

/* openssl s_server offering TLS 1.1 only, on 127.0.0.1:port; stopped by the caller. */
static pid_t start_tls11_server(uint16_t port)
{
    char accept[32];
    snprintf(accept, sizeof accept, "127.0.0.1:%u", (unsigned)port);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
        /* SECLEVEL=0: OpenSSL 3 otherwise refuses TLS 1.1's SHA-1 signatures itself. */
        execlp("openssl", "openssl", "s_server", "-quiet", "-tls1_1", "-cipher",
               "DEFAULT:@SECLEVEL=0", "-accept", accept, "-cert", certs->server_crt, "-key",
               certs->server_key, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void stop_server(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

static void test_tls11_only_server_is_refused(void **state)
{
    (void)state;
    uint16_t port = elk_tf_free_port();
    assert_true(port != 0);
    pid_t pid = start_tls11_server(port);
    assert_true(pid > 0);
    client_t c;
    client_init(&c);
    /* Until s_server listens, connect is refused; then the answer must be the refusal
     * by version (bounded generously: 200 tries of up to TMO each). */
    int rc = ELK_E_CONNECT_REFUSED;
    for (int i = 0; i < 200 && rc == ELK_E_CONNECT_REFUSED; i++) {
        rc = connect_port(&c, port);
        if (rc == ELK_E_CONNECT_REFUSED) {
            c.t.close(c.t.ctx);
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    assert_int_equal(rc, ELK_E_TLS_VERSION);
    char text[512];
    /* 2.28 offers only TLS 1.2 (no supported_versions): s_server picks 1.1 and mbedTLS
     * refuses its ServerHello. 3.6 offers 1.3 and 1.2 in supported_versions: s_server
     * finds nothing it allows there and refuses with a protocol_version alert. */
    assert_non_null(strstr(elk_tls_conn_error_text(&c.conn, text, sizeof text),
                           HAVE_TLS13 ? "refused every version" : "TLS 1.1 or older"));
    assert_string_equal(elk_tls_conn_version(&c.conn), "");
    elk_tc_free(&c);
    stop_server(pid);
}

int main(void)
{
    return ELK_RUN_GROUP("integration.tls_versions", setup, NULL, test_default_session_is_newest,
                         test_tls12_only_server, test_tls13_only_server,
                         test_tls11_only_server_is_refused);
}
