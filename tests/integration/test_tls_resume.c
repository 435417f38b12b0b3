/* SPDX-License-Identifier: MIT */
/*
 * TLS session resumption in port/mbedtls against real redis-server --tls-port processes
 * (tls-session-caching is on by default): a reconnect to the same server is an
 * abbreviated handshake (the server sends no certificate), and a kept session never
 * lets a server through that fails verification: a server with a certificate from an
 * unrelated CA, or for another name, at the same endpoint, is refused, and the session
 * is gone afterwards.
 *
 * The F_* servers are pinned to TLS 1.2; the F13_* servers to TLS 1.3, whose ticket
 * arrives after the handshake (NewSessionTicket) and is resumed by PSK: those cases need
 * mbedTLS 3.x with TLS 1.3 and session tickets, and are skipped with 2.28
 * (elk/port_mbedtls.h, "Session resumption"); they run in the Debian 13 stage. How the
 * port tells a TLS 1.3 resumption (pre_shared_key in the ServerHello) is checked on
 * captured hellos with any mbedTLS (test_sniff_server_hello_psk).
 */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include "test_main.h"

#include <mbedtls/version.h>

#include "elk/port_mbedtls.h"
#include "elk/port_posix.h"
#include "fleet.h"
#include "tls_client.h"
/* the sniffer's feed function (internal to the port, not installed) */
#include "../../port/mbedtls/src/tls_internal.h"

#define TMO 10000u

/* What the port needs to keep a TLS 1.3 ticket (the same test as port/mbedtls). */
#if MBEDTLS_VERSION_NUMBER >= 0x03000000 && defined(MBEDTLS_SSL_PROTO_TLS1_3) &&                   \
    defined(MBEDTLS_SSL_SESSION_TICKETS) && defined(MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
#define HAVE_TLS13_TICKETS 1
#else
#define HAVE_TLS13_TICKETS 0
#endif

enum { F_VALID, F_OTHER_CA, F_WRONG_HOST, F13_VALID, F13_OTHER_CA, F_COUNT };
static elk_tf_t fleets[F_COUNT];
static const elk_tf_certs_t *certs;
static const char *const tls12_only[] = {"--tls-protocols", "TLSv1.2", NULL};
static const char *const tls13_only[] = {"--tls-protocols", "TLSv1.3", NULL};

static void configure(int i, elk_tf_options_t *o)
{
    o->tls = true;
    o->server_cert = i == F_OTHER_CA || i == F13_OTHER_CA ? ELK_TF_CERT_OTHER_CA
        : i == F_WRONG_HOST                               ? ELK_TF_CERT_WRONG_HOST
                                                          : ELK_TF_CERT_VALID;
    o->extra_args = i >= F13_VALID ? tls13_only : tls12_only;
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

/* A TCP transport whose open() goes to `to` whatever port the endpoint names: the TLS
 * layer above sees the same endpoint (so it offers its kept session) while another
 * server answers, as a server that took over the address would. */
typedef struct redirect {
    const elk_transport_t *inner; /* the client's TCP transport */
    uint16_t to;                  /* 0: no redirection */
    size_t rx;                    /* bytes received since open() */
} redirect_t;

static int rd_open(void *ctx, const elk_endpoint_t *ep)
{
    redirect_t *r = ctx;
    elk_endpoint_t e = *ep;
    if (r->to != 0u) {
        e.port = r->to;
    }
    r->rx = 0;
    return r->inner->open(r->inner->ctx, &e);
}
static int rd_progress(void *ctx)
{
    redirect_t *r = ctx;
    return r->inner->progress(r->inner->ctx);
}
static int32_t rd_send(void *ctx, const uint8_t *buf, size_t len)
{
    redirect_t *r = ctx;
    return r->inner->send(r->inner->ctx, buf, len);
}
static int32_t rd_recv(void *ctx, uint8_t *buf, size_t len)
{
    redirect_t *r = ctx;
    int32_t n = r->inner->recv(r->inner->ctx, buf, len);
    r->rx += n > 0 ? (size_t)n : 0u;
    return n;
}
static void rd_close(void *ctx)
{
    redirect_t *r = ctx;
    r->inner->close(r->inner->ctx);
}
static int rd_wait(void *ctx, unsigned *events)
{
    redirect_t *r = ctx;
    return r->inner->wait(r->inner->ctx, events);
}

typedef struct client {
    elk_tc_t tc;
    redirect_t rd;
    elk_transport_t rd_t;
    size_t hs_rx; /* bytes the server sent during the last handshake */
} client_t;

static void client_init(client_t *c)
{
    elk_tls_config_t cfg = elk_tc_ca_only();
    memset(c, 0, sizeof *c);
    /* elk_transport_t's members in order: ctx, open, progress, send, recv, close, wait */
    c->rd_t = (elk_transport_t){&c->rd, rd_open, rd_progress, rd_send, rd_recv, rd_close, rd_wait};
    assert_int_equal(elk_tc_init(&c->tc, &cfg, &c->rd_t), ELK_OK);
    c->rd.inner = &c->tc.tcp_t;
}

static void client_free(client_t *c)
{
    elk_tc_free(&c->tc);
}

/* Connect to fleet home's endpoint (answered by fleet `answer`) and PING; the rc. */
static int connect_as(client_t *c, int home, int answer)
{
    elk_endpoint_t ep = elk_tf_endpoint(&fleets[home], 0);
    c->rd.to = answer == home ? 0u : elk_tf_endpoint(&fleets[answer], 0).port;
    int rc = elk_tf_xport_connect(&c->tc.t, &ep, TMO);
    if (rc < 0) {
        char text[512];
        print_message("    -> %s\n", elk_tls_conn_error_text(&c->tc.conn, text, sizeof text));
    } else {
        c->hs_rx = c->rd.rx; /* mbedTLS reads record by record: the handshake alone */
        assert_int_equal(elk_tf_xport_ping(&c->tc.t, TMO), ELK_OK);
        print_message(
            "    %s, %s handshake, %zu bytes from the server\n", elk_tls_conn_version(&c->tc.conn),
            elk_tls_conn_resumed(&c->tc.conn) ? "abbreviated (resumed)" : "full", c->hs_rx);
    }
    return rc;
}

static int connect_as_valid(client_t *c, int answer)
{
    return connect_as(c, F_VALID, answer);
}

static void test_reconnect_resumes(void **state)
{
    (void)state;
    client_t c;
    client_init(&c);
    assert_int_equal(connect_as_valid(&c, F_VALID), 1);
    assert_false(elk_tls_conn_resumed(&c.tc.conn)); /* first contact: the full handshake */
    assert_true(c.tc.conn.sniff.server_cert);
    assert_true(c.tc.conn.has_session);
    for (int k = 0; k < 3; k++) {
        c.tc.t.close(c.tc.t.ctx);
        assert_int_equal(connect_as_valid(&c, F_VALID), 1);
        assert_true(c.tc.conn.offered);
        /* The server sent no certificate: it took the session (abbreviated handshake). */
        assert_false(c.tc.conn.sniff.server_cert);
        assert_true(elk_tls_conn_resumed(&c.tc.conn));
    }
    /* Forgotten: the next handshake is a full one again. */
    c.tc.t.close(c.tc.t.ctx);
    elk_tls_conn_forget_session(&c.tc.conn);
    assert_int_equal(connect_as_valid(&c, F_VALID), 1);
    assert_false(c.tc.conn.offered);
    assert_false(elk_tls_conn_resumed(&c.tc.conn));
    client_free(&c);
}

/* A kept session offered to a server that cannot verify: refused, session dropped. */
static void refused_with_session(int impostor, int want)
{
    client_t c;
    client_init(&c);
    assert_int_equal(connect_as_valid(&c, F_VALID), 1);
    assert_true(c.tc.conn.has_session);
    c.tc.t.close(c.tc.t.ctx);
    assert_int_equal(connect_as_valid(&c, impostor), want);
    assert_true(c.tc.conn.offered); /* the session was offered, and did not help */
    assert_false(elk_tls_conn_resumed(&c.tc.conn));
    assert_false(c.tc.conn.has_session);
    /* The real server again: a full handshake (nothing kept from before). */
    c.tc.t.close(c.tc.t.ctx);
    assert_int_equal(connect_as_valid(&c, F_VALID), 1);
    assert_false(c.tc.conn.offered);
    assert_false(elk_tls_conn_resumed(&c.tc.conn));
    client_free(&c);
}

static void test_unrelated_ca_refused_with_session(void **state)
{
    (void)state;
    refused_with_session(F_OTHER_CA, ELK_E_TLS_UNKNOWN_CA);
}

static void test_other_name_refused_with_session(void **state)
{
    (void)state;
    refused_with_session(F_WRONG_HOST, ELK_E_TLS_HOSTNAME);
}

/* Another endpoint never gets the session offered. */
static void test_session_not_offered_elsewhere(void **state)
{
    (void)state;
    client_t c;
    client_init(&c);
    assert_int_equal(connect_as_valid(&c, F_VALID), 1);
    c.tc.t.close(c.tc.t.ctx);
    elk_endpoint_t ep = elk_tf_endpoint(&fleets[F_WRONG_HOST], 0);
    ep.server_name = "wrong.example.invalid";
    c.rd.to = 0;
    assert_int_equal(elk_tf_xport_connect(&c.tc.t, &ep, TMO), 1);
    assert_false(c.tc.conn.offered);
    assert_false(elk_tls_conn_resumed(&c.tc.conn));
    client_free(&c);
}

/* TLS 1.3: the ticket comes after the handshake, in front of the first reply (the PING
 * in connect_as reads past it); the reconnect offers it and the server takes it as a PSK
 * (no certificate: trust rests on the first, verified handshake). */
static void test_tls13_reconnect_resumes(void **state)
{
    (void)state;
#if !HAVE_TLS13_TICKETS
    print_message("    skipped: mbedTLS %s keeps no TLS 1.3 tickets (needs 3.x with "
                  "MBEDTLS_SSL_PROTO_TLS1_3 and MBEDTLS_SSL_SESSION_TICKETS)\n",
                  MBEDTLS_VERSION_STRING);
    skip();
#else
    client_t c;
    client_init(&c);
    assert_int_equal(connect_as(&c, F13_VALID, F13_VALID), 1);
    assert_string_equal(elk_tls_conn_version(&c.tc.conn), "TLSv1.3");
    assert_false(elk_tls_conn_resumed(&c.tc.conn)); /* first contact: the full handshake */
    assert_true(c.tc.conn.has_session);             /* the ticket, read past by the PING's reply */
    size_t full_rx = c.hs_rx;
    for (int k = 0; k < 3; k++) {
        c.tc.t.close(c.tc.t.ctx);
        assert_int_equal(connect_as(&c, F13_VALID, F13_VALID), 1);
        assert_string_equal(elk_tls_conn_version(&c.tc.conn), "TLSv1.3");
        assert_true(c.tc.conn.offered);
        assert_true(elk_tls_conn_resumed(&c.tc.conn));
        /* Seen from the wire, not from the port's own verdict: no certificate chain and
         * no CertificateVerify came, so well under half the full handshake's bytes. */
        assert_true(c.hs_rx * 2u < full_rx);
        assert_true(c.tc.conn.has_session); /* a fresh ticket for the next reconnect */
    }
    c.tc.t.close(c.tc.t.ctx);
    elk_tls_conn_forget_session(&c.tc.conn);
    assert_int_equal(connect_as(&c, F13_VALID, F13_VALID), 1);
    assert_false(c.tc.conn.offered);
    assert_false(elk_tls_conn_resumed(&c.tc.conn));
    client_free(&c);
#endif
}

/* TLS 1.3: a server with a certificate from another CA at the same endpoint cannot take
 * the ticket (not its own), its certificate fails verification, the ticket is dropped,
 * and the real server is then met with a full, verified handshake. */
static void test_tls13_other_ca_drops_ticket(void **state)
{
    (void)state;
#if !HAVE_TLS13_TICKETS
    print_message("    skipped: mbedTLS %s keeps no TLS 1.3 tickets\n", MBEDTLS_VERSION_STRING);
    skip();
#else
    client_t c;
    client_init(&c);
    assert_int_equal(connect_as(&c, F13_VALID, F13_VALID), 1);
    assert_true(c.tc.conn.has_session);
    c.tc.t.close(c.tc.t.ctx);
    assert_int_equal(connect_as(&c, F13_VALID, F13_OTHER_CA), ELK_E_TLS_UNKNOWN_CA);
    assert_true(c.tc.conn.offered);
    assert_false(elk_tls_conn_resumed(&c.tc.conn));
    assert_false(c.tc.conn.has_session);
    c.tc.t.close(c.tc.t.ctx);
    assert_int_equal(connect_as(&c, F13_VALID, F13_VALID), 1);
    assert_false(c.tc.conn.offered);
    assert_false(elk_tls_conn_resumed(&c.tc.conn));
    client_free(&c);
#endif
}

/* TLS 1.3: the ticket read, the link lost before any reply (no application data ever
 * came, which the port otherwise reads as the server's verdict on a client certificate):
 * the ticket from the verified handshake is kept and the reconnect resumes. */
static void test_tls13_ticket_survives_lost_link(void **state)
{
    (void)state;
#if !HAVE_TLS13_TICKETS
    print_message("    skipped: mbedTLS %s keeps no TLS 1.3 tickets\n", MBEDTLS_VERSION_STRING);
    skip();
#else
    client_t c;
    client_init(&c);
    elk_endpoint_t ep = elk_tf_endpoint(&fleets[F13_VALID], 0);
    c.rd.to = 0;
    assert_int_equal(elk_tf_xport_connect(&c.tc.t, &ep, TMO), 1);
    unsigned ev = 0;
    int fd = c.tc.t.wait(c.tc.t.ctx, &ev);
    assert_true(fd >= 0);
    uint8_t buf[64];
    for (int waited = 0; !c.tc.conn.has_session && waited < 200; waited++) {
        struct pollfd p = {fd, POLLIN, 0};
        (void)poll(&p, 1, 100);                                        /* at most 20 s in all */
        assert_int_equal(c.tc.t.recv(c.tc.t.ctx, buf, sizeof buf), 0); /* no data, no error */
    }
    assert_true(c.tc.conn.has_session);
    assert_int_equal(shutdown(fd, SHUT_RDWR), 0);
    int32_t n = c.tc.t.recv(c.tc.t.ctx, buf, sizeof buf);
    print_message("    recv after the link was cut: %d\n", (int)n);
    /* A plain loss: after a ticket the server had judged us, no client-certificate verdict. */
    assert_int_equal(n, ELK_E_CLOSED);
    assert_true(c.tc.conn.has_session);
    c.tc.t.close(c.tc.t.ctx);
    assert_int_equal(connect_as(&c, F13_VALID, F13_VALID), 1);
    assert_true(c.tc.conn.offered);
    assert_true(elk_tls_conn_resumed(&c.tc.conn));
    client_free(&c);
#endif
}

/* The ServerHello records redis-server 8 (OpenSSL) sent in this file's TLS 1.3 cases,
 * captured once: a full handshake (supported_versions, key_share) and a resumed one
 * (also pre_shared_key: the server took the ticket). Runs with any mbedTLS: the port
 * reads the ServerHello itself, as bytes pass. */
static const char sh13_full[] =
    "160303007a0200007603034294bc2f29a684e615abd56e5e0afb43e9ef4678f747df52d07e56b99678530e20"
    "40a12529a95c4efe57199f52072f4b5df3fd509efa5299251f9163ce19445cb8130300002e002b0002030400"
    "330024001d0020624744fd98802fc3e3dd6ab546d6e96ec77a135e7d6ccf770e575d333eb04d68";
static const char sh13_resumed[] =
    "16030300800200007c0303a89b3a9eb9fa82732aa4f2c7754c87deeac73030d3802148db7112af68b6b19120"
    "40a12529a95c4efe57199f52072f4b5df3fd509efa5299251f9163ce19445cb81303000034002b0002030400"
    "330024001d002094990b87b36edfd97fb98460f4db9176d65c499c73dade1ba6d0026f33e2493e0029000200"
    "00";

static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = strlen(h) / 2u;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(h + 2u * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n;
}

/* psk_accepted after feeding rec, whole or one byte at a time (records and messages
 * arrive split anywhere). */
static bool sniff_psk(const uint8_t *rec, size_t n, bool bytewise)
{
    elk_tls_sniff_t sn;
    memset(&sn, 0, sizeof sn);
    if (bytewise) {
        for (size_t i = 0; i < n; i++) {
            elk_tls_sniff_feed(&sn, rec + i, 1);
        }
    } else {
        elk_tls_sniff_feed(&sn, rec, n);
    }
    assert_false(sn.old_version);
    return sn.psk_accepted;
}

static void test_sniff_server_hello_psk(void **state)
{
    (void)state;
    uint8_t rec[256];
    size_t n = unhex(sh13_full, rec, sizeof rec);
    assert_false(sniff_psk(rec, n, false));
    assert_false(sniff_psk(rec, n, true));
    n = unhex(sh13_resumed, rec, sizeof rec);
    assert_true(sniff_psk(rec, n, false));
    assert_true(sniff_psk(rec, n, true));
    /* The same hello with its last extension renamed (early_data, 42): not taken. */
    rec[n - 5u] = 42;
    assert_false(sniff_psk(rec, n, false));
}

int main(void)
{
    return ELK_RUN_GROUP("integration.tls_resume", setup, teardown, test_reconnect_resumes,
                         test_unrelated_ca_refused_with_session,
                         test_other_name_refused_with_session, test_session_not_offered_elsewhere,
                         test_tls13_reconnect_resumes, test_tls13_other_ca_drops_ticket,
                         test_tls13_ticket_survives_lost_link, test_sniff_server_hello_psk);
}
