/* SPDX-License-Identifier: MIT */
/* From mbedTLS's codes and verification flags to the error a person can act on. */
#include <stdio.h>
#include <string.h>

#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509.h>
#include <mbedtls/x509_crt.h>

#include "tls_internal.h"

#if ELK_MBEDTLS_3 && defined(MBEDTLS_SSL_PROTO_TLS1_3)
#define ELK_TLS_OFFER_13 " and 1.3"
#else
#define ELK_TLS_OFFER_13 " (this mbedTLS has no TLS 1.3)"
#endif

/* The server asked for a certificate (CertificateRequest) and then ended the handshake:
 * without one, mutual TLS is required; with one, it refused ours (error_text says so),
 * which is not a transport problem. ELK_OK when the failure was something else. */
static int map_cert_refusal(const elk_tls_conn_t *c, int ret)
{
    bool refused = ret == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE || ret == MBEDTLS_ERR_SSL_CONN_EOF ||
        c->inner_err == ELK_E_CLOSED;
    if (!c->shared->has_cert && (refused || ret == 0)) {
        return ELK_E_TLS_CLIENT_CERT;
    }
    return refused && c->shared->has_cert ? ELK_E_TLS : ELK_OK;
}

bool elk_tls_server_judged_us(const elk_tls_conn_t *c)
{
#if ELK_MBEDTLS_3 && defined(MBEDTLS_SSL_PROTO_TLS1_3)
    return c->final_flight && mbedtls_ssl_get_version_number(&c->ssl) == MBEDTLS_SSL_VERSION_TLS1_3;
#else
    (void)c;
    return false;
#endif
}

int elk_tls_map_handshake_error(const elk_tls_conn_t *c, int ret)
{
    uint32_t flags = c->verify_flags;

    /* First: whatever else went wrong, a peer whose first byte is no TLS record is
     * not a TLS server (a plain port), and that is what the operator must fix. */
    if (c->rx_not_tls) {
        return ELK_E_TLS_NOT_TLS;
    }
    /* No version in common: the ServerHello named TLS 1.1 or older (mbedTLS then refuses
     * it), or the server answered our hello with a protocol_version alert. */
    if (c->sniff.old_version || c->sniff.version_alert) {
        return ELK_E_TLS_VERSION;
    }
    if (ret == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED || flags != 0) {
        /* Most fundamental first: an untrusted chain makes the other checks moot. */
        if (flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED) {
            return ELK_E_TLS_UNKNOWN_CA;
        }
        if (flags & (MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE)) {
            return ELK_E_TLS_EXPIRED;
        }
        if (flags & MBEDTLS_X509_BADCERT_CN_MISMATCH) {
            return ELK_E_TLS_HOSTNAME;
        }
        return ELK_E_TLS;
    }
    if (elk_tls_server_judged_us(c) && ret != MBEDTLS_ERR_SSL_ALLOC_FAILED) {
        return c->shared->has_cert ? ELK_E_TLS : ELK_E_TLS_CLIENT_CERT;
    }
    if (c->sniff.cert_request) {
        int err = map_cert_refusal(c, ret);
        if (err != ELK_OK) {
            return err;
        }
    }
    if (ret == MBEDTLS_ERR_SSL_CONN_EOF || c->inner_err == ELK_E_CLOSED) {
        return ELK_E_TLS_HANDSHAKE_CUT;
    }
    if ((ret == MBEDTLS_ERR_NET_SEND_FAILED || ret == MBEDTLS_ERR_NET_RECV_FAILED) &&
        c->inner_err < 0) {
        return c->inner_err;
    }
    if (ret == MBEDTLS_ERR_SSL_ALLOC_FAILED) {
        return ELK_E_NO_RESOURCES;
    }
    return ELK_E_TLS;
}

int elk_tls_conn_stall_reason(const elk_tls_conn_t *c)
{
    if (c == NULL) {
        return ELK_E_INVALID_ARG;
    }
    if (c->silent_close || (c->state == ELK_TLS_HANDSHAKING && c->hello_out && !c->rx_any) ||
        c->last_err == ELK_E_TLS_NOT_TLS) {
        return ELK_E_TLS_NOT_TLS;
    }
    if (c->done) {
        return ELK_OK;
    }
    return ELK_E_CONNECT_TIMEOUT;
}

char *elk_tls_strerror(int mbedtls_err, char *buf, size_t len)
{
    if (buf == NULL || len == 0) {
        return buf;
    }
    buf[0] = '\0';
    if (mbedtls_err != 0) {
        mbedtls_strerror(mbedtls_err, buf, len);
    }
    return buf;
}

char *elk_tls_conn_error_text(const elk_tls_conn_t *c, char *buf, size_t len)
{
    char mb[160];
    char vinfo[256];
    int n;

    if (buf == NULL || len == 0) {
        return buf;
    }
    if (c == NULL) {
        buf[0] = '\0';
        return buf;
    }
    mb[0] = '\0';
    vinfo[0] = '\0';
    (void)elk_tls_strerror(c->last_mbedtls_err, mb, sizeof mb);
    if (c->verify_flags != 0) {
        if (mbedtls_x509_crt_verify_info(vinfo, sizeof vinfo, "", c->verify_flags) < 0) {
            vinfo[0] = '\0';
        }
        /* verify_info ends each reason with a newline; a log line should not. */
        for (n = 0; vinfo[n] != '\0'; n++) {
            if (vinfo[n] == '\n') {
                vinfo[n] = vinfo[n + 1] != '\0' ? ';' : '\0';
            }
        }
    }
    {
        int err = c->last_err;
        const char *hint = "";
        if (err == ELK_OK && !c->done) {
            err = elk_tls_conn_stall_reason(c);
        }
        if (err == ELK_E_TLS && c->cert_requested && c->shared->has_cert) {
            hint =
                " [the server asked for our client certificate, then ended the handshake: is the "
                "certificate signed by a CA the server trusts, and not expired?]";
        } else if (err == ELK_E_TLS_VERSION && c->sniff.old_version) {
            hint = " [the server chose TLS 1.1 or older: allow TLS 1.2 there (Redis: tls-protocols "
                   "\"TLSv1.2 TLSv1.3\")]";
        } else if (err == ELK_E_TLS_VERSION) {
            hint = " [the server refused every version we offer: TLS 1.2" ELK_TLS_OFFER_13 "]";
        } else if (err == ELK_E_TLS_NOT_TLS && !c->rx_any) {
            hint = " [no byte came back after the ClientHello: a plain (non-TLS) port, or a "
                   "stalled server]";
        }
        n = snprintf(buf, len, "%s (%s)%s%s%s%s%s%s", elk_err_message(err), elk_err_name(err),
                     mb[0] ? ": mbedTLS: " : "", mb, vinfo[0] ? " [certificate: " : "", vinfo,
                     vinfo[0] ? "]" : "", hint);
    }
    if (n < 0) {
        buf[0] = '\0';
    }
    return buf;
}
