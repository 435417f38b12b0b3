/* SPDX-License-Identifier: MIT */
/* Loading trust material and building the one client config many connections share. */
#include <string.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/error.h>
#include <mbedtls/ssl.h>

#include "tls_internal.h"

#if ELK_MBEDTLS_3 && defined(MBEDTLS_PSA_CRYPTO_C)
#include <psa/crypto.h>
#endif

/* 3.x key parsing and pair checks take an RNG (blinding); 2.28's do not. */
#if ELK_MBEDTLS_3
#define ELK_PK_RNG(s) , mbedtls_ctr_drbg_random, &(s)->drbg
#else
#define ELK_PK_RNG(s)
#endif

/* Personalisation string: separates this DRBG's output from any other seeded from the
 * same source, as NIST SP 800-90A recommends. */
static const unsigned char elk_tls_pers[] = "edgelock-tls-client";

static int entropy_cb(void *p, unsigned char *out, size_t len)
{
    const elk_entropy_t *e = (const elk_entropy_t *)p;
    return e->fill(e->ctx, out, len) == ELK_OK ? 0 : MBEDTLS_ERR_CTR_DRBG_ENTROPY_SOURCE_FAILED;
}

/* mbedTLS wants PEM with its terminating NUL counted, DER with its exact length. DER
 * starts with a SEQUENCE tag (0x30); anything else is taken as PEM, which the header
 * requires to be NUL-terminated, so counting the NUL at data[len] is within the object. */
static size_t parse_len(const uint8_t *data, size_t len)
{
    if (len == 0) {
        return strlen((const char *)data) + 1u;
    }
    if (data[0] == 0x30 || data[len - 1] == '\0') {
        return len;
    }
    return len + 1u;
}

static int load_crt(mbedtls_x509_crt *crt, const char *file, const uint8_t *pem, size_t pem_len)
{
    if (pem != NULL) {
        return mbedtls_x509_crt_parse(crt, pem, parse_len(pem, pem_len));
    }
    return mbedtls_x509_crt_parse_file(crt, file);
}

static int load_key(elk_tls_shared_t *s, const elk_tls_config_t *cfg)
{
    if (cfg->key_pem != NULL) {
        const unsigned char *pwd = (const unsigned char *)cfg->key_password;
        size_t pwd_len = pwd != NULL ? strlen(cfg->key_password) : 0;
        return mbedtls_pk_parse_key(&s->key, cfg->key_pem,
                                    parse_len(cfg->key_pem, cfg->key_pem_len), pwd,
                                    pwd_len ELK_PK_RNG(s));
    }
    return mbedtls_pk_parse_keyfile(&s->key, cfg->key_file, cfg->key_password ELK_PK_RNG(s));
}

/* TLS 1.3 in mbedTLS 3.x runs on PSA crypto, which must be initialised first (it is
 * idempotent; mbedTLS keeps that state, not this port). */
static int crypto_init(void)
{
#if ELK_MBEDTLS_3 && defined(MBEDTLS_PSA_CRYPTO_C)
    return psa_crypto_init() == PSA_SUCCESS ? 0 : MBEDTLS_ERR_ERROR_GENERIC_ERROR;
#else
    return 0;
#endif
}

/* TLS 1.2 is the floor; the ceiling is the newest the library has (1.3 on 3.x built
 * with it; 2.28's TLS 1.3 is an unfinished prototype and stays off). */
static void conf_versions(mbedtls_ssl_config *conf)
{
#if ELK_MBEDTLS_3
    mbedtls_ssl_conf_min_tls_version(conf, MBEDTLS_SSL_VERSION_TLS1_2);
#if defined(MBEDTLS_SSL_PROTO_TLS1_3)
    mbedtls_ssl_conf_max_tls_version(conf, MBEDTLS_SSL_VERSION_TLS1_3);
#else
    mbedtls_ssl_conf_max_tls_version(conf, MBEDTLS_SSL_VERSION_TLS1_2);
#endif
#else
    mbedtls_ssl_conf_min_version(conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
    mbedtls_ssl_conf_max_version(conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
#endif
}

static int shared_fail(elk_tls_shared_t *s, int err, int mbedtls_err)
{
    s->last_mbedtls_err = mbedtls_err;
    mbedtls_ssl_config_free(&s->conf);
    mbedtls_x509_crt_free(&s->ca);
    mbedtls_x509_crt_free(&s->cert);
    mbedtls_pk_free(&s->key);
    mbedtls_ctr_drbg_free(&s->drbg);
    s->ready = false;
    return err;
}

/* The client certificate and key, when configured (mutual TLS); needs the seeded DRBG. */
static int load_own_cert(elk_tls_shared_t *s, const elk_tls_config_t *cfg)
{
    bool want_cert = cfg->cert_pem != NULL || cfg->cert_file != NULL;
    bool want_key = cfg->key_pem != NULL || cfg->key_file != NULL;
    int ret;

    if (want_cert != want_key) {
        return shared_fail(s, ELK_E_TLS_CONFIG, 0);
    }
    if (!want_cert) {
        return ELK_OK;
    }
    ret = load_crt(&s->cert, cfg->cert_file, cfg->cert_pem, cfg->cert_pem_len);
    if (ret != 0) {
        return shared_fail(s, ELK_E_TLS_CONFIG, ret < 0 ? ret : MBEDTLS_ERR_X509_INVALID_FORMAT);
    }
    ret = load_key(s, cfg);
    if (ret == 0) {
        ret = mbedtls_pk_check_pair(&s->cert.pk, &s->key ELK_PK_RNG(s));
    }
    if (ret != 0) {
        return shared_fail(s, ELK_E_TLS_CONFIG, ret);
    }
    s->has_cert = true;
    return ELK_OK;
}

static int build_conf(elk_tls_shared_t *s)
{
    int ret = mbedtls_ssl_config_defaults(&s->conf, MBEDTLS_SSL_IS_CLIENT,
                                          MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT);
    if (ret != 0) {
        return shared_fail(s, ELK_E_TLS_CONFIG, ret);
    }
    /* REQUIRED, not OPTIONAL: verification must stop the handshake, never leave a
     * "please check the flags" duty to a caller who might forget. */
    mbedtls_ssl_conf_authmode(&s->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
    mbedtls_ssl_conf_ca_chain(&s->conf, &s->ca, NULL);
    conf_versions(&s->conf);
    mbedtls_ssl_conf_rng(&s->conf, mbedtls_ctr_drbg_random, &s->drbg);
#if defined(MBEDTLS_SSL_SESSION_TICKETS)
    /* Ask for tickets (the default, said here): a reconnect then resumes without the
     * server keeping per-client state (elk_tls_conn_resumed). */
    mbedtls_ssl_conf_session_tickets(&s->conf, MBEDTLS_SSL_SESSION_TICKETS_ENABLED);
#endif
#if ELK_TLS13_TICKETS && defined(MBEDTLS_SSL_TLS1_3_SIGNAL_NEW_SESSION_TICKETS_ENABLED)
    /* A TLS 1.3 ticket comes after the handshake; 3.6.1+ ignore it unless told to report
     * it, and the read loop keeps it (tls_conn.c, tls_read). */
    mbedtls_ssl_conf_tls13_enable_signal_new_session_tickets(
        &s->conf, MBEDTLS_SSL_TLS1_3_SIGNAL_NEW_SESSION_TICKETS_ENABLED);
#endif
    if (s->has_cert) {
        ret = mbedtls_ssl_conf_own_cert(&s->conf, &s->cert, &s->key);
        if (ret != 0) {
            return shared_fail(s, ELK_E_TLS_CONFIG, ret);
        }
    }
    return ELK_OK;
}

int elk_tls_shared_init(elk_tls_shared_t *s, const elk_tls_config_t *cfg,
                        const elk_entropy_t *entropy)
{
    int ret;

    if (s == NULL || cfg == NULL || entropy == NULL || entropy->fill == NULL) {
        return ELK_E_INVALID_ARG;
    }
    memset(s, 0, sizeof *s);
    mbedtls_ssl_config_init(&s->conf);
    mbedtls_x509_crt_init(&s->ca);
    mbedtls_x509_crt_init(&s->cert);
    mbedtls_pk_init(&s->key);
    mbedtls_ctr_drbg_init(&s->drbg);
    s->entropy = *entropy;
    if (cfg->clock != NULL && cfg->clock->now_ms != NULL && cfg->silent_ms > 0) {
        s->clock = *cfg->clock;
        s->silent_ms = cfg->silent_ms;
    }

    /* No CA would mean trusting nobody or, worse, everybody: refuse to build a config. */
    if (cfg->ca_pem == NULL && cfg->ca_file == NULL) {
        return shared_fail(s, ELK_E_TLS_CONFIG, 0);
    }
    ret = load_crt(&s->ca, cfg->ca_file, cfg->ca_pem, cfg->ca_pem_len);
    if (ret != 0) {
        /* A positive result counts certificates that failed in a bundle: still bad input. */
        return shared_fail(s, ELK_E_TLS_CONFIG, ret < 0 ? ret : MBEDTLS_ERR_X509_INVALID_FORMAT);
    }
    ret = crypto_init();
    if (ret != 0) {
        return shared_fail(s, ELK_E_ENTROPY, ret);
    }
    ret = mbedtls_ctr_drbg_seed(&s->drbg, entropy_cb, &s->entropy, elk_tls_pers,
                                sizeof elk_tls_pers - 1u);
    if (ret != 0) {
        return shared_fail(s, ELK_E_ENTROPY, ret);
    }
    ret = load_own_cert(s, cfg);
    if (ret == ELK_OK) {
        ret = build_conf(s);
    }
    if (ret != ELK_OK) {
        return ret;
    }
    s->ready = true;
    return ELK_OK;
}

void elk_tls_shared_free(elk_tls_shared_t *s)
{
    if (s == NULL) {
        return;
    }
    (void)shared_fail(s, ELK_OK, s->last_mbedtls_err);
}
