/* SPDX-License-Identifier: MIT */
/* One TLS client for the integration tests over TLS (linked into the test_*tls* programs):
 * a shared configuration and one connection over a fresh port/posix TCP transport, or over
 * a transport the test puts between them. */
#ifndef ELK_TEST_TLS_CLIENT_H
#define ELK_TEST_TLS_CLIENT_H

#include "elk/port_mbedtls.h"
#include "elk/port_posix.h"

typedef struct elk_tc {
    elk_tls_shared_t shared;
    elk_tls_conn_t conn;
    elk_posix_tcp_t tcp;
    elk_transport_t tcp_t; /* the TCP transport */
    elk_transport_t t;     /* the TLS transport over it (or over the test's inner one) */
    elk_entropy_t entropy;
} elk_tc_t;

/* Set c up with cfg over inner (NULL: c->tcp_t); inner must outlive c. Returns
 * elk_tls_shared_init's or elk_tls_conn_init's result (ELK_OK). */
int elk_tc_init(elk_tc_t *c, const elk_tls_config_t *cfg, const elk_transport_t *inner);
void elk_tc_free(elk_tc_t *c);
/* A configuration that trusts the fixture's CA (elk_tf_certs()) and nothing else. */
elk_tls_config_t elk_tc_ca_only(void);

#endif /* ELK_TEST_TLS_CLIENT_H */
