/* SPDX-License-Identifier: MIT */
/* Shared between the files of port/mbedtls; not a public interface.
 *
 * Public mbedTLS API only, for 2.28 and 3.x alike (MBEDTLS_PRIVATE nowhere): what 2.28
 * left readable in mbedtls_ssl_context and 3.x hides is tracked by the port itself:
 * the BIO callbacks see when the ClientHello is flushed and whether a record is still
 * unflushed, and tls_sniff.c reads the server's plaintext handshake records for a
 * CertificateRequest and the protocol version. */
#ifndef ELK_TLS_INTERNAL_H
#define ELK_TLS_INTERNAL_H

#include <mbedtls/version.h>

#include "elk/port_mbedtls.h"

enum elk_tls_state {
    ELK_TLS_CLOSED = 0,
    ELK_TLS_CONNECTING,
    ELK_TLS_HANDSHAKING,
    ELK_TLS_READY,
    ELK_TLS_FAILED
};

/* Turn a failed mbedtls_ssl_handshake() result into the most specific elk_err_t. */
int elk_tls_map_handshake_error(const elk_tls_conn_t *conn, int mbedtls_ret);

/* TLS 1.3: the handshake failed after we accepted the server's whole flight and sent
 * our last one (certificate, if any, and Finished): only the server's judgement of our
 * certificate, or of its absence, is left to end it there. */
bool elk_tls_server_judged_us(const elk_tls_conn_t *conn);

/* Feed the bytes the server sent (n > 0) to the sniffer; it stops by itself once
 * encrypted records begin. */
void elk_tls_sniff_feed(elk_tls_sniff_t *s, const uint8_t *buf, size_t n);

#if MBEDTLS_VERSION_NUMBER >= 0x03000000
#define ELK_MBEDTLS_3 1
#else
#define ELK_MBEDTLS_3 0
#endif

/* TLS 1.3 tickets are kept (elk_tls_conn_resumed) when the library has a TLS 1.3 client
 * with session tickets and reports a NewSessionTicket to the caller: 3.x built with
 * MBEDTLS_SSL_PROTO_TLS1_3 and MBEDTLS_SSL_SESSION_TICKETS. 3.6.1 and later report it only
 * when asked (mbedtls_ssl_conf_tls13_enable_signal_new_session_tickets, present when
 * MBEDTLS_SSL_TLS1_3_SIGNAL_NEW_SESSION_TICKETS_ENABLED is); 2.28 has none of it. */
#if ELK_MBEDTLS_3 && defined(MBEDTLS_SSL_PROTO_TLS1_3) && defined(MBEDTLS_SSL_SESSION_TICKETS) &&  \
    defined(MBEDTLS_SSL_CLI_C) && defined(MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
#define ELK_TLS13_TICKETS 1
#else
#define ELK_TLS13_TICKETS 0
#endif

#endif /* ELK_TLS_INTERNAL_H */
