/* SPDX-License-Identifier: MIT */
/*
 * Reads the server's plaintext handshake as it passes through the BIO, for the two
 * facts a diagnosis needs and mbedTLS 3.x keeps private: did the server ask for a
 * client certificate (TLS 1.2 CertificateRequest), and did it pick a protocol below
 * TLS 1.2 (ServerHello version, or a protocol_version alert); whether it sent its
 * certificate (not in a resumed TLS 1.2 handshake); and, for TLS 1.3, whether
 * encrypted records (the server's flight after ServerHello) have begun and whether the
 * ServerHello carries pre_shared_key (the server took the offered ticket). Records are
 * parsed from their headers only; nothing here decides anything about the connection.
 */
#include "tls_internal.h"

enum {
    REC_CCS = 20,
    REC_ALERT = 21,
    REC_HANDSHAKE = 22,
    REC_APP_DATA = 23,
    HS_SERVER_HELLO = 2,
    HS_CERTIFICATE = 11,
    HS_CERT_REQUEST = 13,
    SH_SESSION_ID_LEN = 34, /* offset in ServerHello: after version (2) and random (32) */
    EXT_PRE_SHARED_KEY = 41,
    ALERT_PROTOCOL_VERSION = 70,
    TLS12_MAJOR = 3,
    TLS12_MINOR = 3
};

/* One byte of a ServerHello's body at offset p, for its extensions: the session id's
 * length fixes where they start (after it come cipher suite 2, compression 1 and the
 * extensions' total length 2); each is type 2, length 2, data. A HelloRetryRequest is a
 * ServerHello too and never has pre_shared_key. */
static void server_hello_ext_byte(elk_tls_sniff_t *s, uint32_t p, uint8_t b)
{
    uint32_t off;
    if (p == SH_SESSION_ID_LEN) {
        s->sh_ext_at = p + 1u + b + 5u;
        return;
    }
    if (p < SH_SESSION_ID_LEN || p < s->sh_ext_at) {
        return;
    }
    off = p - s->sh_ext_at;
    s->sh_word = off == 0u ? b : (s->sh_word << 8) | b;
    if (off == 3u) {
        if ((s->sh_word >> 16) == EXT_PRE_SHARED_KEY) {
            s->psk_accepted = true;
        }
        s->sh_ext_at = p + 1u + (s->sh_word & 0xffffu);
    }
}

/* One byte of a handshake record's body: handshake messages may span records and a
 * record may hold several, so their 4-byte headers are tracked across both. */
static void hs_byte(elk_tls_sniff_t *s, uint8_t b)
{
    if (s->hs_hdr_n < 4u) {
        if (s->hs_hdr_n == 0u) {
            s->hs_type = b;
            s->hs_left = 0;
            if (b == HS_CERT_REQUEST) {
                s->cert_request = true;
            }
            if (b == HS_CERTIFICATE) {
                s->server_cert = true;
            }
        } else {
            s->hs_left = (s->hs_left << 8) | b;
        }
        s->hs_hdr_n++;
        s->hs_pos = 0;
        if (s->hs_hdr_n == 4u && s->hs_left == 0) {
            s->hs_hdr_n = 0;
        }
        return;
    }
    if (s->hs_type == HS_SERVER_HELLO) {
        server_hello_ext_byte(s, s->hs_pos, b);
        if (s->hs_pos == 0) {
            s->hs_ver_hi = b;
        } else if (s->hs_pos == 1u &&
                   (s->hs_ver_hi < TLS12_MAJOR ||
                    (s->hs_ver_hi == TLS12_MAJOR && b < TLS12_MINOR))) {
            s->old_version = true;
        }
    }
    s->hs_pos++;
    if (--s->hs_left == 0) {
        s->hs_hdr_n = 0;
    }
}

static void body_byte(elk_tls_sniff_t *s, uint8_t b)
{
    if (s->hdr[0] == REC_HANDSHAKE) {
        hs_byte(s, b);
    } else if (s->hdr[0] == REC_ALERT && s->rec_pos == 1u && b == ALERT_PROTOCOL_VERSION) {
        s->version_alert = true;
    }
    s->rec_pos++;
    s->rec_left--;
}

void elk_tls_sniff_feed(elk_tls_sniff_t *s, const uint8_t *buf, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (s->rec_left > 0) {
            if (s->off) {
                s->rec_left--; /* encrypted: only the record boundaries still count */
            } else {
                body_byte(s, buf[i]);
            }
            continue;
        }
        s->hdr[s->hdr_n++] = buf[i];
        if (s->hdr_n < sizeof s->hdr) {
            continue;
        }
        s->hdr_n = 0;
        s->rec_pos = 0;
        s->rec_left = (uint16_t)(((unsigned)s->hdr[3] << 8) | s->hdr[4]);
        /* After ChangeCipherSpec (1.2) or with the first record that is neither alert
         * nor handshake (1.3 hides everything in application_data), all is encrypted. */
        if (s->hdr[0] == REC_CCS || (s->hdr[0] != REC_ALERT && s->hdr[0] != REC_HANDSHAKE)) {
            s->off = true;
        }
        if (s->hdr[0] == REC_APP_DATA) {
            s->encrypted = true;
        }
    }
}
