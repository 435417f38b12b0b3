/* SPDX-License-Identifier: MIT */
/*
 * TLS over an inner elk_transport_t: the inner transport's "0 = would block" becomes
 * mbedTLS's WANT_READ/WANT_WRITE and back, so the handshake and records advance
 * without ever blocking, on whatever byte stream the inner port provides.
 */
#include <string.h>

#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>

#include "tls_internal.h"

/* TLS record content types are 20..24 (change_cipher_spec .. heartbeat). */
static bool is_tls_record_type(uint8_t b)
{
    return b >= 20u && b <= 24u;
}

/* The first flight (the ClientHello) has fully left: the silence check starts now. */
static void note_hello_out(elk_tls_conn_t *c)
{
    const elk_tls_shared_t *s = c->shared;
    c->hello_out = true;
    c->hello_at = s->clock.now_ms != NULL ? s->clock.now_ms(s->clock.ctx) : 0;
}

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
    elk_tls_conn_t *c = (elk_tls_conn_t *)ctx;
    int32_t n;
    if (c->state == ELK_TLS_HANDSHAKING && c->sniff.encrypted) {
        c->final_flight = true;
    }
    n = c->inner.send(c->inner.ctx, buf, len);
    /* mbedTLS hands over everything it has not flushed yet; all of it taken means the
     * record is out (with 2.28 this was ssl.out_left == 0, private in 3.x). */
    c->tx_unflushed = n != (int32_t)len;
    if (n > 0) {
        if (!c->tx_unflushed && c->state == ELK_TLS_HANDSHAKING && !c->hello_out) {
            note_hello_out(c);
        }
        return (int)n;
    }
    if (n == 0) {
        c->want |= ELK_WAIT_WRITE;
        return MBEDTLS_ERR_SSL_WANT_WRITE;
    }
    c->inner_err = (int)n;
    return MBEDTLS_ERR_NET_SEND_FAILED;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
    elk_tls_conn_t *c = (elk_tls_conn_t *)ctx;
    int32_t n = c->inner.recv(c->inner.ctx, buf, len);
    if (n > 0) {
        if (c->state == ELK_TLS_HANDSHAKING && !c->rx_any) {
            /* The first byte a server sends decides "is this TLS at all": a plain Redis
             * answers a ClientHello with "-ERR ...", which no TLS record starts with. */
            c->rx_any = true;
            c->rx_not_tls = !is_tls_record_type(buf[0]);
        }
        if (c->state == ELK_TLS_HANDSHAKING) {
            elk_tls_sniff_feed(&c->sniff, buf, (size_t)n);
        }
        return (int)n;
    }
    if (n == 0) {
        c->want |= ELK_WAIT_READ;
        return MBEDTLS_ERR_SSL_WANT_READ;
    }
    c->inner_err = (int)n;
    /* EOF is 0 to mbedTLS, which then reports CONN_EOF / "closed without close_notify". */
    return n == ELK_E_CLOSED ? 0 : MBEDTLS_ERR_NET_RECV_FAILED;
}

static int conn_fail(elk_tls_conn_t *c, int err, int mbedtls_err)
{
    c->state = ELK_TLS_FAILED;
    c->last_err = err;
    if (mbedtls_err != 0) {
        c->last_mbedtls_err = mbedtls_err;
    }
    return err;
}

static void tls_close(void *ctx)
{
    elk_tls_conn_t *c = (elk_tls_conn_t *)ctx;
    if (c == NULL) {
        return;
    }
    if (c->state == ELK_TLS_READY) {
        /* Best effort: one attempt, never waited for. The server drops the
         * connection either way; the notify only makes its log quieter. */
        (void)mbedtls_ssl_close_notify(&c->ssl);
    }
    if (c->state == ELK_TLS_HANDSHAKING && c->hello_out && !c->rx_any) {
        c->silent_close = true;
    }
    if (c->state != ELK_TLS_CLOSED) {
        c->inner.close(c->inner.ctx);
    }
    /* Drops the handshake and session state (and their allocations) now rather than
     * at the next open; the record buffers stay for reuse. */
    if (c->setup) {
        (void)mbedtls_ssl_session_reset(&c->ssl);
    }
    c->state = ELK_TLS_CLOSED;
    c->want = ELK_WAIT_NONE;
    c->pending_len = 0;
    c->tx_unflushed = false;
}

/* Which endpoint a kept session belongs to: FNV-1a over server name, host and port, so a
 * session is never offered to another server (the names are the caller's and may
 * change between opens). */
static uint32_t hash_str(uint32_t h, const char *p)
{
    for (; p != NULL && *p != '\0'; p++) {
        h = (h ^ (uint8_t)*p) * 16777619u;
    }
    return (h ^ 0xffu) * 16777619u; /* a separator: ("ab","c") is not ("a","bc") */
}

static uint32_t session_peer_of(const elk_endpoint_t *ep)
{
    uint32_t h = hash_str(2166136261u, ep->server_name);
    h = hash_str(h, ep->host);
    h = (h ^ (uint32_t)(ep->port & 0xffu)) * 16777619u;
    return (h ^ (uint32_t)(ep->port >> 8)) * 16777619u;
}

static void session_drop(elk_tls_conn_t *c)
{
    if (c->has_session) {
        mbedtls_ssl_session_free(&c->session);
        mbedtls_ssl_session_init(&c->session);
        c->has_session = false;
    }
}

/* Offer the kept session to this endpoint's server, if it is this endpoint's. */
static void session_offer(elk_tls_conn_t *c, const elk_endpoint_t *ep)
{
    uint32_t peer = session_peer_of(ep);
    c->offered = false;
    if (c->has_session && c->session_peer != peer) {
        session_drop(c);
    }
    c->session_peer = peer;
    if (c->has_session) {
        c->offered = mbedtls_ssl_set_session(&c->ssl, &c->session) == 0;
        if (!c->offered) {
            session_drop(c);
        }
    }
}

/* Keep the session mbedTLS holds now (TLS 1.2: after the handshake; TLS 1.3: the ticket
 * just received) in place of the kept one. */
static void session_take(elk_tls_conn_t *c)
{
    session_drop(c);
    if (mbedtls_ssl_get_session(&c->ssl, &c->session) == 0) {
        c->has_session = true;
    } else {
        mbedtls_ssl_session_free(&c->session);
        mbedtls_ssl_session_init(&c->session);
    }
}

/* After a completed handshake, verified by mbedTLS (VERIFY_REQUIRED): TLS 1.2 keeps its
 * session for the next open(). TLS 1.3 spends the offered ticket (RFC 8446 asks a client
 * not to use one twice) and keeps the NewSessionTicket the server sends after the
 * handshake, which tls_read takes when it arrives. */
static void session_keep(elk_tls_conn_t *c)
{
#if ELK_MBEDTLS_3
    if (mbedtls_ssl_get_version_number(&c->ssl) != MBEDTLS_SSL_VERSION_TLS1_2) {
        /* The certificate is encrypted in TLS 1.3; the server's pre_shared_key in its
         * ServerHello is what says it took the ticket. */
        c->resumed = c->offered && c->sniff.psk_accepted;
        session_drop(c);
        return;
    }
#endif
    c->resumed = c->offered && !c->sniff.server_cert;
    session_take(c);
}

static int tls_open(void *ctx, const elk_endpoint_t *ep)
{
    elk_tls_conn_t *c = (elk_tls_conn_t *)ctx;
    const char *name;
    int ret;

    if (c == NULL || ep == NULL) {
        return ELK_E_INVALID_ARG;
    }
    tls_close(c);
    c->rx_any = false;
    c->rx_not_tls = false;
    c->hello_out = false;
    c->silent_close = false;
    c->done = false;
    c->cert_requested = false;
    c->rx_app = false;
    c->final_flight = false;
    memset(&c->sniff, 0, sizeof c->sniff);
    c->hello_at = 0;
    c->inner_err = 0;
    c->last_err = ELK_OK;
    c->last_mbedtls_err = 0;
    c->verify_flags = 0;
    c->resumed = false;
    name = ep->server_name != NULL ? ep->server_name : ep->host;
    if (name == NULL || name[0] == '\0') {
        return ELK_E_INVALID_ARG;
    }
    /* Sets SNI and the name the certificate must carry; there is no "skip" path. */
    ret = mbedtls_ssl_set_hostname(&c->ssl, name);
    if (ret != 0) {
        return conn_fail(
            c, ret == MBEDTLS_ERR_SSL_ALLOC_FAILED ? ELK_E_NO_RESOURCES : ELK_E_INVALID_ARG, ret);
    }
    mbedtls_ssl_set_bio(&c->ssl, c, bio_send, bio_recv, NULL);
    session_offer(c, ep);
    ret = c->inner.open(c->inner.ctx, ep);
    if (ret < 0) {
        c->inner_err = ret;
        c->inner.close(c->inner.ctx);
        return conn_fail(c, ret, 0);
    }
    c->state = ELK_TLS_CONNECTING;
    return ELK_OK;
}

/* Called while the handshake waits: fails a server that stays silent past the
 * configured limit after the ClientHello left (see elk_tls_config_t.silent_ms). */
static int check_silence(elk_tls_conn_t *c)
{
    const elk_tls_shared_t *s = c->shared;
    if (c->rx_any || !c->hello_out) {
        return 0;
    }
    if (s->clock.now_ms != NULL && s->clock.now_ms(s->clock.ctx) - c->hello_at >= s->silent_ms) {
        return conn_fail(c, ELK_E_TLS_NOT_TLS, 0);
    }
    return 0;
}

static int tls_progress(void *ctx)
{
    elk_tls_conn_t *c = (elk_tls_conn_t *)ctx;
    int ret;

    if (c == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (c->state == ELK_TLS_CONNECTING) {
        ret = c->inner.progress(c->inner.ctx);
        if (ret < 0) {
            c->inner_err = ret;
            return conn_fail(c, ret, 0);
        }
        if (ret == 0) {
            return 0;
        }
        c->state = ELK_TLS_HANDSHAKING;
    }
    if (c->state == ELK_TLS_HANDSHAKING) {
        c->want = ELK_WAIT_NONE;
        ret = mbedtls_ssl_handshake(&c->ssl);
        if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) {
            if (c->want == ELK_WAIT_NONE) {
                c->want = ret == MBEDTLS_ERR_SSL_WANT_READ ? ELK_WAIT_READ : ELK_WAIT_WRITE;
            }
            return check_silence(c);
        }
        c->verify_flags = mbedtls_ssl_get_verify_result(&c->ssl);
        if (c->verify_flags == (uint32_t)-1) {
            c->verify_flags = 0; /* no certificate was ever seen */
        }
        if (ret != 0) {
            /* Whatever failed (the certificate, the name, the server's Finished over a
             * resumed session), the kept session is not offered again. */
            session_drop(c);
            c->cert_requested = c->sniff.cert_request || elk_tls_server_judged_us(c);
            return conn_fail(c, elk_tls_map_handshake_error(c, ret), ret);
        }
        c->want = ELK_WAIT_NONE;
        c->state = ELK_TLS_READY;
        c->done = true;
        session_keep(c);
        return 1;
    }
    if (c->state == ELK_TLS_READY) {
        return 1;
    }
    return c->last_err != ELK_OK ? c->last_err : ELK_E_STATE;
}

/* TLS 1.3 ends the client's handshake before the server has checked the client's
 * certificate: a fatal alert or a close before any application data is the server's
 * verdict on it, reported as the handshake would have under TLS 1.2. The close counts
 * too because the alert is lost when our first send meets the closed socket first. */
static bool tls13_cert_verdict(const elk_tls_conn_t *c, int ret)
{
#if ELK_MBEDTLS_3 && defined(MBEDTLS_SSL_PROTO_TLS1_3)
    bool closed = ret == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE || ret == MBEDTLS_ERR_SSL_CONN_EOF ||
        ret == 0 ||
        ((ret == MBEDTLS_ERR_NET_SEND_FAILED || ret == MBEDTLS_ERR_NET_RECV_FAILED) &&
         c->inner_err == ELK_E_CLOSED);
    /* A ticket kept from this connection (has_session: a TLS 1.3 handshake drops the one
     * it was offered) came after the server had our Finished, so after its verdict. */
    return closed && !c->rx_app && !c->has_session &&
        mbedtls_ssl_get_version_number(&c->ssl) == MBEDTLS_SSL_VERSION_TLS1_3;
#else
    (void)c;
    (void)ret;
    return false;
#endif
}

static int map_record_error(elk_tls_conn_t *c, int ret)
{
    if (tls13_cert_verdict(c, ret)) {
        c->cert_requested = true;
        return conn_fail(c, c->shared->has_cert ? ELK_E_TLS : ELK_E_TLS_CLIENT_CERT, ret);
    }
    if (ret == 0 || ret == MBEDTLS_ERR_SSL_CONN_EOF || ret == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) {
        return conn_fail(c, ELK_E_CLOSED, ret);
    }
    if ((ret == MBEDTLS_ERR_NET_SEND_FAILED || ret == MBEDTLS_ERR_NET_RECV_FAILED) &&
        c->inner_err < 0) {
        return conn_fail(c, c->inner_err, ret);
    }
    if (ret == MBEDTLS_ERR_SSL_ALLOC_FAILED) {
        return conn_fail(c, ELK_E_NO_RESOURCES, ret);
    }
    return conn_fail(c, ELK_E_TLS, ret);
}

/* The gate send and recv share: nothing moves before the handshake is done (0), a failed
 * connection reports why it failed, an empty request moves 0 bytes. Returns 1 when the
 * call may go ahead. */
static int32_t tls_io_gate(const elk_tls_conn_t *c, size_t len)
{
    if (c->state == ELK_TLS_CONNECTING || c->state == ELK_TLS_HANDSHAKING) {
        return 0;
    }
    if (c->state != ELK_TLS_READY) {
        return c->last_err != ELK_OK ? c->last_err : ELK_E_STATE;
    }
    return len == 0 ? 0 : 1;
}

/* A TLS 1.3 NewSessionTicket may come at any time after the handshake, between the
 * replies the caller waits for. mbedTLS reports it instead of data (when signalling is
 * on); the ticket is kept for the next open() and the call made again, so the caller
 * never sees it. True: call again. */
static bool ticket_signal(elk_tls_conn_t *c, int ret)
{
#ifdef MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET
    if (ret == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET) {
#if ELK_TLS13_TICKETS
        session_take(c);
#else
        (void)c;
#endif
        return true;
    }
#else
    (void)c;
    (void)ret;
#endif
    return false;
}

static int32_t tls_send(void *ctx, const uint8_t *buf, size_t len)
{
    elk_tls_conn_t *c = (elk_tls_conn_t *)ctx;
    int32_t gate;
    size_t max;
    int ret;

    if (c == NULL || (buf == NULL && len > 0)) {
        return ELK_E_INVALID_ARG;
    }
    gate = tls_io_gate(c, len);
    if (gate != 1) {
        return gate;
    }
    if (c->pending_len > 0) {
        /* mbedTLS already encrypted the first pending_len bytes of the previous call into
         * a record it could not flush; it must be called again with those same bytes. */
        if (len < c->pending_len) {
            return conn_fail(c, ELK_E_STATE, 0);
        }
        len = c->pending_len;
    } else {
        ret = mbedtls_ssl_get_max_out_record_payload(&c->ssl);
        max = ret > 0 ? (size_t)ret : 1024u;
        if (len > max) {
            len = max;
        }
    }
    c->want &= ~(unsigned)ELK_WAIT_WRITE;
    ret = mbedtls_ssl_write(&c->ssl, buf, len);
    while (ticket_signal(c, ret)) { /* 3.6 documents it for write too */
        ret = mbedtls_ssl_write(&c->ssl, buf, len);
    }
    if (ret > 0) {
        c->pending_len = 0;
        return (int32_t)ret;
    }
    if (ret == MBEDTLS_ERR_SSL_WANT_WRITE || ret == MBEDTLS_ERR_SSL_WANT_READ) {
        if (c->tx_unflushed) {
            c->pending_len = len;
        }
        c->want |= ret == MBEDTLS_ERR_SSL_WANT_WRITE ? ELK_WAIT_WRITE : ELK_WAIT_READ;
        return 0;
    }
    return (int32_t)map_record_error(c, ret);
}

/* mbedtls_ssl_read, minus what is no application data: a TLS 1.3 NewSessionTicket is
 * kept and read past. */
static int tls_read(elk_tls_conn_t *c, uint8_t *buf, size_t len)
{
    int ret = mbedtls_ssl_read(&c->ssl, buf, len);
    while (ticket_signal(c, ret)) {
        ret = mbedtls_ssl_read(&c->ssl, buf, len);
    }
    return ret;
}

static int32_t tls_recv(void *ctx, uint8_t *buf, size_t len)
{
    elk_tls_conn_t *c = (elk_tls_conn_t *)ctx;
    int32_t gate;
    int ret;

    if (c == NULL || buf == NULL) {
        return ELK_E_INVALID_ARG;
    }
    gate = tls_io_gate(c, len);
    if (gate != 1) {
        return gate;
    }
    if (len > (size_t)INT32_MAX) {
        len = (size_t)INT32_MAX;
    }
    c->want &= ~(unsigned)ELK_WAIT_READ;
    ret = tls_read(c, buf, len);
    if (ret > 0) {
        c->rx_app = true;
        /* A short read must leave nothing inside mbedTLS (the transport contract in
         * platform.h): the caller will not ask again until the socket is readable,
         * and bytes mbedTLS already took off the socket would not make it so.
         * check_pending covers unread application data too (mbedtls/ssl.h). */
        size_t got = (size_t)ret;
        while (got < len && mbedtls_ssl_check_pending(&c->ssl) != 0) {
            ret = tls_read(c, buf + got, len - got);
            if (ret <= 0) {
                break; /* an error shows on the next call, with nothing lost */
            }
            got += (size_t)ret;
        }
        return (int32_t)got;
    }
    if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) {
        return 0;
    }
    return (int32_t)map_record_error(c, ret);
}

static int tls_wait(void *ctx, unsigned *events)
{
    elk_tls_conn_t *c = (elk_tls_conn_t *)ctx;
    unsigned inner_ev = ELK_WAIT_NONE;
    unsigned ev;
    int fd;

    if (c == NULL || c->state == ELK_TLS_CLOSED) {
        if (events != NULL) {
            *events = ELK_WAIT_NONE;
        }
        return -1;
    }
    fd = c->inner.wait(c->inner.ctx, &inner_ev);
    if (c->state == ELK_TLS_CONNECTING || c->state == ELK_TLS_FAILED) {
        ev = inner_ev;
    } else if (c->state == ELK_TLS_HANDSHAKING) {
        ev = c->want != ELK_WAIT_NONE ? c->want : ELK_WAIT_READ;
    } else {
        ev = ELK_WAIT_READ;
        if (c->pending_len > 0 || c->tx_unflushed || (c->want & ELK_WAIT_WRITE)) {
            ev |= ELK_WAIT_WRITE;
        }
    }
    if (events != NULL) {
        *events = ev;
    }
    return fd;
}

int elk_tls_conn_init(elk_tls_conn_t *c, elk_tls_shared_t *shared, const elk_transport_t *inner,
                      elk_transport_t *out)
{
    int ret;

    if (c == NULL || shared == NULL || !shared->ready || inner == NULL || out == NULL ||
        inner->open == NULL || inner->progress == NULL || inner->send == NULL ||
        inner->recv == NULL || inner->close == NULL || inner->wait == NULL) {
        return ELK_E_INVALID_ARG;
    }
    memset(c, 0, sizeof *c);
    c->shared = shared;
    c->inner = *inner;
    c->state = ELK_TLS_CLOSED;
    mbedtls_ssl_session_init(&c->session);
    mbedtls_ssl_init(&c->ssl);
    ret = mbedtls_ssl_setup(&c->ssl, &shared->conf);
    if (ret != 0) {
        mbedtls_ssl_free(&c->ssl);
        c->last_mbedtls_err = ret;
        return ret == MBEDTLS_ERR_SSL_ALLOC_FAILED ? ELK_E_NO_RESOURCES : ELK_E_TLS_CONFIG;
    }
    c->setup = true;
    out->ctx = c;
    out->open = tls_open;
    out->progress = tls_progress;
    out->send = tls_send;
    out->recv = tls_recv;
    out->close = tls_close;
    out->wait = tls_wait;
    return ELK_OK;
}

void elk_tls_conn_free(elk_tls_conn_t *c)
{
    if (c == NULL) {
        return;
    }
    tls_close(c);
    session_drop(c);
    if (c->setup) {
        mbedtls_ssl_free(&c->ssl);
        c->setup = false;
    }
}

bool elk_tls_conn_resumed(const elk_tls_conn_t *c)
{
    return c != NULL && c->state == ELK_TLS_READY && c->resumed;
}

void elk_tls_conn_forget_session(elk_tls_conn_t *c)
{
    if (c != NULL) {
        session_drop(c);
    }
}

int elk_tls_conn_last_mbedtls_error(const elk_tls_conn_t *c)
{
    return c == NULL ? 0 : c->last_mbedtls_err;
}

uint32_t elk_tls_conn_verify_flags(const elk_tls_conn_t *c)
{
    return c == NULL ? 0u : c->verify_flags;
}

const char *elk_tls_conn_version(const elk_tls_conn_t *c)
{
    return c != NULL && c->state == ELK_TLS_READY ? mbedtls_ssl_get_version(&c->ssl) : "";
}
