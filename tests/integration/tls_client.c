/* SPDX-License-Identifier: MIT */
#include "tls_client.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "fleet.h"

int elk_tc_init(elk_tc_t *c, const elk_tls_config_t *cfg, const elk_transport_t *inner)
{
    memset(c, 0, sizeof *c);
    elk_posix_entropy(&c->entropy);
    int rc = elk_tls_shared_init(&c->shared, cfg, &c->entropy);
    if (rc != ELK_OK) {
        return rc;
    }
    assert_int_equal(elk_posix_tcp_init(&c->tcp, NULL, &c->tcp_t), ELK_OK);
    return elk_tls_conn_init(&c->conn, &c->shared, inner != NULL ? inner : &c->tcp_t, &c->t);
}

void elk_tc_free(elk_tc_t *c)
{
    elk_tls_conn_free(&c->conn);
    elk_tls_shared_free(&c->shared);
}

elk_tls_config_t elk_tc_ca_only(void)
{
    elk_tls_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.ca_file = elk_tf_certs()->ca_crt;
    return cfg;
}
