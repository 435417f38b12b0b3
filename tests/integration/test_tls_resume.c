/* SPDX-License-Identifier: MIT */
/*
 * TLS session resumption in port/mbedtls against real redis-server --tls-port processes
 * (tls-session-caching is on by default): a reconnect to the same server is an
 * abbreviated handshake (the server sends no certificate), and a kept session never
 * lets a server through that fails verification: a server with a certificate from an
 * unrelated CA, or for another name, at the same endpoint, is refused, and the session
 * is gone afterwards.
 *
 * The servers are pinned to TLS 1.2: this port keeps TLS 1.2 sessions only (a TLS 1.3
 * ticket arrives after the handshake; elk/port_mbedtls.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/port_mbedtls.h"
#include "elk/port_posix.h"
#include "fleet.h"
#include "tls_client.h"

#define TMO 10000u

enum { F_VALID, F_OTHER_CA, F_WRONG_HOST, F_COUNT };
static elk_tf_t fleets[F_COUNT];
static const elk_tf_certs_t *certs;
static const char *const tls12_only[] = {"--tls-protocols", "TLSv1.2", NULL};

static void configure(int i, elk_tf_options_t *o)
{
    o->tls = true;
    o->server_cert = i == F_OTHER_CA ? ELK_TF_CERT_OTHER_CA
        : i == F_WRONG_HOST          ? ELK_TF_CERT_WRONG_HOST
                                     : ELK_TF_CERT_VALID;
    o->extra_args = tls12_only;
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
} redirect_t;

static int rd_open(void *ctx, const elk_endpoint_t *ep)
{
    redirect_t *r = ctx;
    elk_endpoint_t e = *ep;
    if (r->to != 0u) {
        e.port = r->to;
    }
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
    return r->inner->recv(r->inner->ctx, buf, len);
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

/* Connect to F_VALID's endpoint (answered by fleet `answer`), close again; the rc. */
static int connect_as_valid(client_t *c, int answer)
{
    elk_endpoint_t ep = elk_tf_endpoint(&fleets[F_VALID], 0);
    c->rd.to = answer == F_VALID ? 0u : elk_tf_endpoint(&fleets[answer], 0).port;
    int rc = elk_tf_xport_connect(&c->tc.t, &ep, TMO);
    if (rc < 0) {
        char text[512];
        print_message("    -> %s\n", elk_tls_conn_error_text(&c->tc.conn, text, sizeof text));
    } else {
        assert_int_equal(elk_tf_xport_ping(&c->tc.t, TMO), ELK_OK);
        print_message("    %s, %s handshake\n", elk_tls_conn_version(&c->tc.conn),
                      elk_tls_conn_resumed(&c->tc.conn) ? "abbreviated (resumed)" : "full");
    }
    return rc;
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

int main(void)
{
    return ELK_RUN_GROUP("integration.tls_resume", setup, teardown, test_reconnect_resumes,
                         test_unrelated_ca_refused_with_session,
                         test_other_name_refused_with_session, test_session_not_offered_elsewhere);
}
