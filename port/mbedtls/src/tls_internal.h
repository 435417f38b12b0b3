/* Shared between the files of port/mbedtls; not a public interface.
 *
 * The port reads three mbedtls_ssl_context fields that mbedTLS 2.28 leaves public but
 * has no accessor for: state (has the ClientHello gone out), out_left (is a record
 * still unflushed) and client_auth (did the server send a CertificateRequest). mbedTLS
 * 3.x hides them behind MBEDTLS_PRIVATE(); a port to 3.x must revisit those lines. */
#ifndef ELK_TLS_INTERNAL_H
#define ELK_TLS_INTERNAL_H

#include "elk/port_mbedtls.h"

enum elk_tls_state { ELK_TLS_CLOSED = 0, ELK_TLS_CONNECTING, ELK_TLS_HANDSHAKING, ELK_TLS_READY, ELK_TLS_FAILED };

/* Turn a failed mbedtls_ssl_handshake() result into the most specific elk_err_t. */
int elk_tls_map_handshake_error(const elk_tls_conn_t *conn, int mbedtls_ret);

#endif /* ELK_TLS_INTERNAL_H */
