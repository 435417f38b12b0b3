/* SPDX-License-Identifier: MIT */
/* port/mbedtls over port/posix against real redis-server --tls-port processes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"
#include <mbedtls/version.h>

#include "elk/port_mbedtls.h"
#include "elk/port_posix.h"
#include "fleet.h"
#include "tls_client.h"

#define TMO 5000u

enum { F_VALID, F_MTLS, F_OTHER_CA, F_WRONG_HOST, F_EXPIRED, F_PLAIN, F_COUNT };
static elk_tf_t fleets[F_COUNT];
static const elk_tf_certs_t *certs;

static void configure(int i, elk_tf_options_t *o)
{
    o->tls = i != F_PLAIN;
    o->tls_auth_clients = i == F_MTLS;
    o->server_cert = i == F_OTHER_CA ? ELK_TF_CERT_OTHER_CA
        : i == F_WRONG_HOST          ? ELK_TF_CERT_WRONG_HOST
        : i == F_EXPIRED             ? ELK_TF_CERT_EXPIRED
                                     : ELK_TF_CERT_VALID;
}

static int setup(void **state)
{
    (void)state;
    certs = elk_tf_certs();
    return certs == NULL ? -1 : elk_tf_start_each(fleets, F_COUNT, configure);
}

static int teardown(void **state)
{
    (void)state;
    elk_tf_stop_each(fleets, F_COUNT);
    return 0;
}

static int heal(void **state)
{
    (void)state;
    for (int i = 0; i < F_COUNT; i++) {
        if (elk_tf_heal(&fleets[i]) != 0) {
            return -1;
        }
    }
    return 0;
}

typedef elk_tc_t client_t;

static void ping(client_t *c)
{
    assert_int_equal(elk_tf_xport_ping(&c->t, TMO), ELK_OK);
}

/* Connect to fleet f server 0 with server_name; expect rc; print the error text. */
static int connect_to(client_t *c, int f, const char *server_name)
{
    elk_endpoint_t ep = elk_tf_endpoint(&fleets[f], 0);
    ep.server_name = server_name;
    int rc = elk_tf_xport_connect(&c->t, &ep, TMO);
    if (rc < 0) {
        char text[512];
        print_message("    -> %s\n", elk_tls_conn_error_text(&c->conn, text, sizeof text));
    }
    return rc;
}

/* Mutual TLS: under TLS 1.2 the server refuses a client certificate (or its absence)
 * inside the handshake; under TLS 1.3 the client's handshake is over before the server
 * has judged it, and the refusal arrives on the first read. Either way the same error. */
static int connect_and_ping(client_t *c, int f)
{
    char text[512];
    int rc = connect_to(c, f, "localhost");
    if (rc < 0) {
        return rc;
    }
    rc = elk_tf_xport_ping(&c->t, TMO);
    if (rc < 0) {
        print_message("    -> after the handshake: %s\n",
                      elk_tls_conn_error_text(&c->conn, text, sizeof text));
    }
    return rc == ELK_OK ? 1 : rc;
}

static void test_tls_round_trip(void **state)
{
    (void)state;
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_to(&c, F_VALID, "localhost"), 1);
    assert_int_equal(elk_tls_conn_verify_flags(&c.conn), 0);
    ping(&c);

    /* The key really went to that server (checked over its unix socket). */
    static const char set[] = "*3\r\n$3\r\nSET\r\n$6\r\ntlskey\r\n$5\r\nhello\r\n";
    uint8_t buf[64];
    size_t len;
    assert_int_equal(elk_tf_xport_send_all(&c.t, set, sizeof set - 1, TMO), ELK_OK);
    assert_int_equal(elk_tf_xport_recv_until(&c.t, buf, sizeof buf, "\r\n", TMO, &len), ELK_OK);
    assert_string_equal((char *)buf, "+OK\r\n");
    redisReply *r = elk_tf_cmd(&fleets[F_VALID], 0, "GET tlskey");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "hello");
    freeReplyObject(r);

    /* Close and reopen the same connection object: the session state is reset. */
    c.t.close(c.t.ctx);
    unsigned ev;
    assert_int_equal(c.t.wait(c.t.ctx, &ev), -1);
    assert_int_equal(connect_to(&c, F_VALID, "localhost"), 1);
    ping(&c);
    elk_tc_free(&c);
}

/* Replies larger than one TLS record (16 KiB) and requests larger than the send
 * buffer: many records, partial reads, would-block sends with mbedTLS holding a record. */
static void test_tls_large_value(void **state)
{
    (void)state;
    enum { VAL = 8 * 1024 * 1024 };
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    char *cmd = malloc(VAL + 128);
    uint8_t *rx = malloc(VAL + 128);
    assert_non_null(cmd);
    assert_non_null(rx);
    int hdr = snprintf(cmd, 128, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n", VAL);
    for (int i = 0; i < VAL; i++) {
        cmd[hdr + i] = (char)('A' + (i * 31) % 26);
    }
    memcpy(cmd + hdr + VAL, "\r\n", 2);

    size_t cmdlen = (size_t)hdr + VAL + 2;
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_to(&c, F_VALID, "localhost"), 1);

    /* Paused server: sooner or later mbedTLS has a record encrypted that the socket will
     * not take. send() says 0, asks for WRITE, and must later report exactly those bytes
     * as taken when called again from the same offset, even with a longer len (as when
     * lib/node appends requests meanwhile); the server's copy checks every byte. */
    assert_int_equal(elk_tf_pause(&fleets[F_VALID], 0), 0);
    size_t sent = 0;
    int32_t n;
    while ((n = c.t.send(c.t.ctx, (const uint8_t *)cmd + sent, 1000)) > 0) {
        sent += (size_t)n;
        assert_true(sent + 1000 < cmdlen);
    }
    assert_int_equal(n, 0);
    unsigned ev = 0;
    assert_true(c.t.wait(c.t.ctx, &ev) >= 0);
    assert_true(ev & ELK_WAIT_WRITE);
    assert_true(c.conn.pending_len > 0);
    /* Still blocked: a retry says 0 again and takes nothing. */
    assert_int_equal(c.t.send(c.t.ctx, (const uint8_t *)cmd + sent, 1000), 0);
    assert_int_equal(elk_tf_resume(&fleets[F_VALID], 0), 0);
    assert_int_equal(elk_tf_xport_send_all(&c.t, cmd + sent, cmdlen - sent, 30000), ELK_OK);
    assert_int_equal(c.conn.pending_len, 0);
    size_t len;
    assert_int_equal(elk_tf_xport_recv_until(&c.t, rx, 64, "\r\n", TMO, &len), ELK_OK);
    assert_string_equal((char *)rx, "+OK\r\n");

    static const char get[] = "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n";
    assert_int_equal(elk_tf_xport_send_all(&c.t, get, sizeof get - 1, TMO), ELK_OK);
    char lenhdr[32];
    int lh = snprintf(lenhdr, sizeof lenhdr, "$%d\r\n", VAL);
    size_t want = (size_t)lh + VAL + 2, got = 0;
    while (got < want) {
        size_t n;
        assert_int_equal(elk_tf_xport_recv_until(&c.t, rx + got, VAL + 128 - got, "\n", TMO, &n),
                         ELK_OK);
        got += n;
    }
    assert_int_equal(got, want);
    assert_memory_equal(rx, lenhdr, (size_t)lh);
    assert_memory_equal(rx + lh, cmd + hdr, VAL);
    elk_tc_free(&c);
    free(cmd);
    free(rx);
}

/* server_name NULL: the host (a numeric address) is what the certificate must match. */
static void test_tls_ip_address_name(void **state)
{
    (void)state;
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    int rc = connect_to(&c, F_VALID, NULL);
#if MBEDTLS_VERSION_NUMBER >= 0x03060000
    /* mbedTLS 3.6 matches the certificate's iPAddress SAN (127.0.0.1). */
    assert_int_equal(rc, 1);
    ping(&c);
#else
    /* mbedTLS 2.28 does not match iPAddress SANs: an IP name never verifies, so it must
     * fail closed with the host name error, not connect unverified. */
    assert_int_equal(rc, ELK_E_TLS_HOSTNAME);
#endif
    elk_tc_free(&c);
}

static void test_tls_unknown_ca(void **state)
{
    (void)state;
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_to(&c, F_OTHER_CA, "localhost"), ELK_E_TLS_UNKNOWN_CA);
    assert_true(elk_tls_conn_verify_flags(&c.conn) & MBEDTLS_X509_BADCERT_NOT_TRUSTED);
    char text[512];
    elk_tls_conn_error_text(&c.conn, text, sizeof text);
    assert_non_null(strstr(text, "ELK_E_TLS_UNKNOWN_CA"));
    assert_non_null(strstr(text, "not correctly signed"));
    /* After the failure nothing goes through, and no plaintext is ever attempted. */
    uint8_t b[8];
    assert_int_equal(c.t.send(c.t.ctx, b, sizeof b), ELK_E_TLS_UNKNOWN_CA);
    assert_int_equal(c.t.progress(c.t.ctx), ELK_E_TLS_UNKNOWN_CA);
    elk_tc_free(&c);

    /* Trusting that other CA instead makes the same server acceptable: the failure
     * above was about the chain, nothing else. */
    elk_tls_config_t other = elk_tc_ca_only();
    other.ca_file = certs->other_ca_crt;
    assert_int_equal(elk_tc_init(&c, &other, NULL), ELK_OK);
    assert_int_equal(connect_to(&c, F_OTHER_CA, "localhost"), 1);
    ping(&c);
    elk_tc_free(&c);
}

static void test_tls_hostname_mismatch(void **state)
{
    (void)state;
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_to(&c, F_WRONG_HOST, "localhost"), ELK_E_TLS_HOSTNAME);
    assert_true(elk_tls_conn_verify_flags(&c.conn) & MBEDTLS_X509_BADCERT_CN_MISMATCH);
    /* The valid server, asked for under another name, fails the same way. */
    assert_int_equal(connect_to(&c, F_VALID, "gateway.example.invalid"), ELK_E_TLS_HOSTNAME);
    /* And the wrong-host server is fine under its own name. */
    assert_int_equal(connect_to(&c, F_WRONG_HOST, "wrong.example.invalid"), 1);
    ping(&c);
    elk_tc_free(&c);
}

static void test_tls_expired(void **state)
{
    (void)state;
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_to(&c, F_EXPIRED, "localhost"), ELK_E_TLS_EXPIRED);
    assert_true(elk_tls_conn_verify_flags(&c.conn) & MBEDTLS_X509_BADCERT_EXPIRED);
    elk_tc_free(&c);
}

/* A plain redis-server never answers a ClientHello (it waits for a newline, and strchr
 * stops at the hello's first NUL byte), so "not TLS" is a diagnosis of silence. */
static void test_tls_plain_port_is_not_tls(void **state)
{
    (void)state;
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    elk_endpoint_t ep = elk_tf_endpoint(&fleets[F_PLAIN], 0);
    ep.server_name = "localhost";

    /* Without a clock: the caller's timeout ends it, and the port says why. */
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(elk_tf_xport_connect(&c.t, &ep, 300), ELK_E_CONNECT_TIMEOUT);
    assert_int_equal(elk_tls_conn_stall_reason(&c.conn), ELK_E_TLS_NOT_TLS);
    c.t.close(c.t.ctx);
    assert_int_equal(elk_tls_conn_stall_reason(&c.conn), ELK_E_TLS_NOT_TLS);
    char text[512];
    elk_tls_conn_error_text(&c.conn, text, sizeof text);
    print_message("    -> %s\n", text);
    assert_non_null(strstr(text, "ELK_E_TLS_NOT_TLS"));
    elk_tc_free(&c);

    /* With a clock and silent_ms: progress() itself fails with ELK_E_TLS_NOT_TLS. The
     * loop waits in short slices so progress() runs again after silent_ms. */
    elk_clock_t clk;
    elk_posix_clock(&clk);
    cfg.clock = &clk;
    cfg.silent_ms = 200;
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(c.t.open(c.t.ctx, &ep), ELK_OK);
    uint64_t deadline = elk_posix_now_ms() + TMO;
    int rc = 0;
    while (rc == 0 && elk_posix_now_ms() < deadline) {
        rc = c.t.progress(c.t.ctx);
        elk_wait_t w;
        w.fd = c.t.wait(c.t.ctx, &w.events);
        if (rc == 0) {
            assert_true(elk_posix_wait(&w, 1, elk_posix_now_ms() + 50, NULL) >= 0);
        }
    }
    assert_int_equal(rc, ELK_E_TLS_NOT_TLS);
    elk_tc_free(&c);

    /* The same settings against a real TLS server change nothing. */
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_to(&c, F_VALID, "localhost"), 1);
    assert_int_equal(elk_tls_conn_stall_reason(&c.conn), ELK_OK);
    ping(&c);
    elk_tc_free(&c);
}

/* A peer that answers the ClientHello with a Redis error line is "not TLS" at once. */
static void test_tls_plain_answer_is_not_tls(void **state)
{
    (void)state;
    static elk_tf_listener_t l;
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    assert_int_equal(elk_tf_listener_start(&l, ELK_TF_LISTEN_REPLY_ERR), 0);
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    elk_endpoint_t ep = {"127.0.0.1", l.port, "localhost"};
    assert_int_equal(elk_tf_xport_connect(&c.t, &ep, TMO), ELK_E_TLS_NOT_TLS);
    elk_tc_free(&c);
    elk_tf_listener_stop(&l);
}

static void test_tls_handshake_cut(void **state)
{
    (void)state;
    elk_tf_listener_mode_t modes[] = {ELK_TF_LISTEN_CLOSE, ELK_TF_LISTEN_READ_CLOSE};
    for (size_t m = 0; m < 2; m++) {
        static elk_tf_listener_t l;
        client_t c;
        elk_tls_config_t cfg = elk_tc_ca_only();
        assert_int_equal(elk_tf_listener_start(&l, modes[m]), 0);
        assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
        elk_endpoint_t ep = {"127.0.0.1", l.port, "localhost"};
        int rc = elk_tf_xport_connect(&c.t, &ep, TMO);
        print_message("    mode %zu -> %s\n", m, elk_err_name(rc));
        assert_int_equal(rc, ELK_E_TLS_HANDSHAKE_CUT);
        elk_tc_free(&c);
        elk_tf_listener_stop(&l);
    }
}

/* A listener that never answers: the handshake stays "in progress" (0) without
 * blocking, and the caller's own timeout ends it. */
static void test_tls_silent_server_times_out(void **state)
{
    (void)state;
    static elk_tf_listener_t l;
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    assert_int_equal(elk_tf_listener_start(&l, ELK_TF_LISTEN_SILENT), 0);
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    elk_endpoint_t ep = {"127.0.0.1", l.port, "localhost"};
    assert_int_equal(elk_tf_xport_connect(&c.t, &ep, 300), ELK_E_CONNECT_TIMEOUT);
    unsigned ev = 0;
    assert_true(c.t.wait(c.t.ctx, &ev) >= 0);
    assert_int_equal(ev, ELK_WAIT_READ); /* waiting for the ServerHello */
    assert_int_equal(c.t.progress(c.t.ctx), 0);
    elk_tc_free(&c);
    elk_tf_listener_stop(&l);
}

static void test_mtls_without_client_cert(void **state)
{
    (void)state;
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_and_ping(&c, F_MTLS), ELK_E_TLS_CLIENT_CERT);
    elk_tc_free(&c);
}

static void test_mtls_with_client_cert(void **state)
{
    (void)state;
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    cfg.cert_file = certs->client_crt;
    cfg.key_file = certs->client_key;
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_to(&c, F_MTLS, "localhost"), 1);
    ping(&c);
    elk_tc_free(&c);

    /* A client certificate from a CA the server does not trust is refused by the
     * server; that is a TLS error, not "certificate required". */
    cfg.cert_file = certs->other_client_crt;
    cfg.key_file = certs->other_client_key;
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_and_ping(&c, F_MTLS), ELK_E_TLS);
    char text[512];
    assert_non_null(
        strstr(elk_tls_conn_error_text(&c.conn, text, sizeof text), "client certificate"));
    elk_tc_free(&c);
}

static void test_certs_from_memory(void **state)
{
    (void)state;
    static uint8_t ca[8192], crt[8192], key[8192];
    size_t ca_len, crt_len, key_len;
    assert_int_equal(elk_tf_read_file(certs->ca_crt, ca, sizeof ca, &ca_len), 0);
    assert_int_equal(elk_tf_read_file(certs->client_crt, crt, sizeof crt, &crt_len), 0);
    assert_int_equal(elk_tf_read_file(certs->client_key, key, sizeof key, &key_len), 0);

    /* Lengths without the NUL (as a flash image would give them) ... */
    client_t c;
    elk_tls_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.ca_pem = ca;
    cfg.ca_pem_len = ca_len;
    cfg.cert_pem = crt;
    cfg.cert_pem_len = crt_len;
    cfg.key_pem = key;
    cfg.key_pem_len = key_len;
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_to(&c, F_MTLS, "localhost"), 1);
    ping(&c);
    elk_tc_free(&c);

    /* ... with the NUL counted, and with 0 meaning strlen. A buffer also wins over a
     * file path that does not exist. */
    cfg.ca_pem_len = ca_len + 1;
    cfg.cert_pem_len = 0;
    cfg.key_pem_len = key_len + 1;
    cfg.ca_file = "/nonexistent/ca.crt";
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_to(&c, F_MTLS, "localhost"), 1);
    ping(&c);
    elk_tc_free(&c);
}

static int fail_entropy(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    (void)buf;
    (void)len;
    return ELK_E_ENTROPY;
}

static void test_bad_config(void **state)
{
    (void)state;
    elk_tls_shared_t sh;
    elk_entropy_t ent;
    elk_posix_entropy(&ent);
    elk_tls_config_t cfg;

    /* No CA at all. */
    memset(&cfg, 0, sizeof cfg);
    assert_int_equal(elk_tls_shared_init(&sh, &cfg, &ent), ELK_E_TLS_CONFIG);
    elk_tls_shared_free(&sh);
    /* Missing file. */
    cfg.ca_file = "/nonexistent/ca.crt";
    assert_int_equal(elk_tls_shared_init(&sh, &cfg, &ent), ELK_E_TLS_CONFIG);
    /* Garbage PEM. */
    static const char junk[] =
        "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n";
    memset(&cfg, 0, sizeof cfg);
    cfg.ca_pem = (const uint8_t *)junk;
    cfg.ca_pem_len = sizeof junk;
    assert_int_equal(elk_tls_shared_init(&sh, &cfg, &ent), ELK_E_TLS_CONFIG);
    assert_int_not_equal(sh.last_mbedtls_err, 0);
    char text[200];
    assert_true(strlen(elk_tls_strerror(sh.last_mbedtls_err, text, sizeof text)) > 0);
    /* Certificate without key, key without certificate, key not matching. */
    cfg = elk_tc_ca_only();
    cfg.cert_file = certs->client_crt;
    assert_int_equal(elk_tls_shared_init(&sh, &cfg, &ent), ELK_E_TLS_CONFIG);
    cfg.cert_file = NULL;
    cfg.key_file = certs->client_key;
    assert_int_equal(elk_tls_shared_init(&sh, &cfg, &ent), ELK_E_TLS_CONFIG);
    cfg.cert_file = certs->client_crt;
    cfg.key_file = certs->server_key;
    assert_int_equal(elk_tls_shared_init(&sh, &cfg, &ent), ELK_E_TLS_CONFIG);
    /* A key that is not a key. */
    cfg.key_file = certs->ca_crt;
    assert_int_equal(elk_tls_shared_init(&sh, &cfg, &ent), ELK_E_TLS_CONFIG);
    /* Entropy source failure. */
    cfg = elk_tc_ca_only();
    elk_entropy_t bad = {NULL, fail_entropy};
    assert_int_equal(elk_tls_shared_init(&sh, &cfg, &bad), ELK_E_ENTROPY);
    /* Argument checks. */
    assert_int_equal(elk_tls_shared_init(NULL, &cfg, &ent), ELK_E_INVALID_ARG);
    assert_int_equal(elk_tls_shared_init(&sh, NULL, &ent), ELK_E_INVALID_ARG);
    assert_int_equal(elk_tls_shared_init(&sh, &cfg, NULL), ELK_E_INVALID_ARG);
    /* A connection needs a ready shared config and a complete inner transport. */
    assert_int_equal(elk_tls_shared_init(&sh, &cfg, &ent), ELK_OK);
    elk_tls_conn_t conn;
    elk_transport_t out, inner;
    memset(&inner, 0, sizeof inner);
    assert_int_equal(elk_tls_conn_init(&conn, &sh, &inner, &out), ELK_E_INVALID_ARG);
    elk_tls_shared_free(&sh);
}

/* One shared config, several connections at once (the fleet case). */
static void test_shared_config_many_connections(void **state)
{
    (void)state;
    elk_tls_shared_t sh;
    elk_entropy_t ent;
    elk_posix_entropy(&ent);
    elk_tls_config_t cfg = elk_tc_ca_only();
    cfg.cert_file = certs->client_crt;
    cfg.key_file = certs->client_key;
    assert_int_equal(elk_tls_shared_init(&sh, &cfg, &ent), ELK_OK);
    enum { N = 3 };
    elk_tls_conn_t conn[N];
    elk_posix_tcp_t tcp[N];
    elk_transport_t tcp_t[N], t[N];
    int targets[N] = {F_VALID, F_MTLS, F_WRONG_HOST};
    const char *names[N] = {"localhost", "localhost", "wrong.example.invalid"};
    for (int i = 0; i < N; i++) {
        assert_int_equal(elk_posix_tcp_init(&tcp[i], NULL, &tcp_t[i]), ELK_OK);
        assert_int_equal(elk_tls_conn_init(&conn[i], &sh, &tcp_t[i], &t[i]), ELK_OK);
        elk_endpoint_t ep = elk_tf_endpoint(&fleets[targets[i]], 0);
        ep.server_name = names[i];
        assert_int_equal(t[i].open(t[i].ctx, &ep), ELK_OK);
    }
    /* Drive all handshakes from one wait loop, as elkd does. */
    uint64_t deadline = elk_posix_now_ms() + TMO;
    int done = 0;
    int ready[N] = {0};
    while (done < N && elk_posix_now_ms() < deadline) {
        elk_wait_t w[N];
        for (int i = 0; i < N; i++) {
            if (!ready[i]) {
                int rc = t[i].progress(t[i].ctx);
                assert_true(rc >= 0);
                if (rc == 1) {
                    ready[i] = 1;
                    done++;
                }
            }
            w[i].events = ELK_WAIT_NONE;
            w[i].fd = ready[i] ? -1 : t[i].wait(t[i].ctx, &w[i].events);
        }
        if (done < N) {
            assert_true(elk_posix_wait(w, N, deadline, NULL) >= 0);
        }
    }
    assert_int_equal(done, N);
    for (int i = 0; i < N; i++) {
        uint8_t buf[32];
        size_t len;
        assert_int_equal(elk_tf_xport_send_all(&t[i], "PING\r\n", 6, TMO), ELK_OK);
        assert_int_equal(elk_tf_xport_recv_until(&t[i], buf, sizeof buf, "\r\n", TMO, &len),
                         ELK_OK);
        assert_string_equal((char *)buf, "+PONG\r\n");
        elk_tls_conn_free(&conn[i]);
    }
    elk_tls_shared_free(&sh);
}

/* An inner transport that moves a few bytes at a time and often says "would block":
 * TLS must work over any transport with the coreMQTT-style contract, not only one that
 * hands over whole records. */
typedef struct trickle {
    elk_transport_t inner;
    unsigned calls;
} trickle_t;

static int tr_open(void *ctx, const elk_endpoint_t *ep)
{
    trickle_t *t = ctx;
    return t->inner.open(t->inner.ctx, ep);
}
static int tr_progress(void *ctx)
{
    trickle_t *t = ctx;
    return t->inner.progress(t->inner.ctx);
}
static int32_t tr_send(void *ctx, const uint8_t *buf, size_t len)
{
    trickle_t *t = ctx;
    if (++t->calls % 3 == 0) {
        return 0;
    }
    size_t n = 1 + t->calls % 7;
    return t->inner.send(t->inner.ctx, buf, len < n ? len : n);
}
static int32_t tr_recv(void *ctx, uint8_t *buf, size_t len)
{
    trickle_t *t = ctx;
    if (++t->calls % 3 == 0) {
        return 0;
    }
    size_t n = 1 + t->calls % 5;
    return t->inner.recv(t->inner.ctx, buf, len < n ? len : n);
}
static void tr_close(void *ctx)
{
    trickle_t *t = ctx;
    t->inner.close(t->inner.ctx);
}
static int tr_wait(void *ctx, unsigned *events)
{
    trickle_t *t = ctx;
    return t->inner.wait(t->inner.ctx, events);
}

static void test_tls_over_trickling_transport(void **state)
{
    (void)state;
    client_t c;
    trickle_t tr;
    elk_tls_config_t cfg = elk_tc_ca_only();
    cfg.cert_file = certs->client_crt;
    cfg.key_file = certs->client_key;
    memset(&c, 0, sizeof c);
    elk_posix_entropy(&c.entropy);
    assert_int_equal(elk_tls_shared_init(&c.shared, &cfg, &c.entropy), ELK_OK);
    assert_int_equal(elk_posix_tcp_init(&c.tcp, NULL, &tr.inner), ELK_OK);
    tr.calls = 0;
    elk_transport_t outer = {&tr, tr_open, tr_progress, tr_send, tr_recv, tr_close, tr_wait};
    assert_int_equal(elk_tls_conn_init(&c.conn, &c.shared, &outer, &c.t), ELK_OK);
    assert_int_equal(connect_to(&c, F_MTLS, "localhost"), 1);
    for (int i = 0; i < 20; i++) {
        ping(&c);
    }
    assert_true(tr.calls > 200); /* it really went a few bytes at a time */
    elk_tc_free(&c);
}

static void test_tls_server_killed(void **state)
{
    (void)state;
    client_t c;
    elk_tls_config_t cfg = elk_tc_ca_only();
    assert_int_equal(elk_tc_init(&c, &cfg, NULL), ELK_OK);
    assert_int_equal(connect_to(&c, F_VALID, "localhost"), 1);
    ping(&c);
    assert_int_equal(elk_tf_kill(&fleets[F_VALID], 0), 0);
    uint8_t buf[32];
    size_t len;
    assert_int_equal(elk_tf_xport_recv_until(&c.t, buf, sizeof buf, "\r\n", TMO, &len),
                     ELK_E_CLOSED);
    assert_int_equal(elk_tf_restart(&fleets[F_VALID], 0), 0);
    assert_int_equal(connect_to(&c, F_VALID, "localhost"), 1);
    ping(&c);
    elk_tc_free(&c);
}

int main(void)
{
    return ELK_RUN_FIXTURES(
        "integration.transport_tls", setup, teardown, heal, NULL, test_tls_round_trip,
        test_tls_large_value, test_tls_ip_address_name, test_tls_unknown_ca,
        test_tls_hostname_mismatch, test_tls_expired, test_tls_plain_port_is_not_tls,
        test_tls_plain_answer_is_not_tls, test_tls_handshake_cut, test_tls_silent_server_times_out,
        test_mtls_without_client_cert, test_mtls_with_client_cert, test_certs_from_memory,
        test_bad_config, test_shared_config_many_connections, test_tls_over_trickling_transport,
        test_tls_server_killed);
}
