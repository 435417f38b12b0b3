/* SPDX-License-Identifier: MIT */
/* Preflight of the TLS files (elkfw/preflight.h): certificate dates against the wall
 * clock, the client certificate against its key. Parsed with mbedTLS as elkd's TLS
 * setup parses them (port/mbedtls), which still names files it cannot read or parse. */
#define _GNU_SOURCE
#include "elkfw/preflight.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <mbedtls/pk.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>

#if MBEDTLS_VERSION_NUMBER >= 0x03000000
#define PF_MBEDTLS_3 1
#if defined(MBEDTLS_PSA_CRYPTO_C)
#include <psa/crypto.h>
#endif
#else
#define PF_MBEDTLS_3 0
#endif

#if PF_MBEDTLS_3
/* 3.x key parsing and pair checks take an RNG (blinding): the kernel's. */
static int pf_rng(void *ctx, unsigned char *out, size_t len)
{
    (void)ctx;
    while (len > 0) {
        ssize_t n = getrandom(out, len, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        out += n;
        len -= (size_t)n;
    }
    return 0;
}

#define PF_RNG , pf_rng, NULL
#else
#define PF_RNG
#endif

static void pf_time_text(const mbedtls_x509_time *t, char *out, size_t cap)
{
    snprintf(out, cap, "%04d-%02d-%02d %02d:%02d:%02d UTC", t->year, t->mon, t->day, t->hour,
             t->min, t->sec);
}

/* a before (<0), at (0) or after (>0) b, field by field. */
static int pf_time_cmp(const mbedtls_x509_time *a, const mbedtls_x509_time *b)
{
    const int fa[6] = {a->year, a->mon, a->day, a->hour, a->min, a->sec};
    const int fb[6] = {b->year, b->mon, b->day, b->hour, b->min, b->sec};
    int i;
    for (i = 0; i < 6; i++) {
        if (fa[i] != fb[i]) {
            return fa[i] < fb[i] ? -1 : 1;
        }
    }
    return 0;
}

/* crt at now: 0 valid, 1 expired, -1 not yet valid. */
static int pf_validity(const mbedtls_x509_crt *crt, const mbedtls_x509_time *now)
{
    if (pf_time_cmp(now, &crt->valid_to) > 0) {
        return 1;
    }
    return pf_time_cmp(now, &crt->valid_from) < 0 ? -1 : 0;
}

/* "<file>:<line>: [node N]: the <what> '<file>' (<subject>) expired on ... / is not valid
 * before ...", with the dates and the fix. */
static int pf_dates_fail(const elkfw_conf_t *c, const elkfw_node_conf_t *n, const char *what,
                         const char *file, const mbedtls_x509_crt *crt,
                         const mbedtls_x509_time *now, char *err, size_t errlen)
{
    char from[32], to[32], at[32], subject[160];
    bool expired = pf_validity(crt, now) > 0;
    pf_time_text(&crt->valid_from, from, sizeof from);
    pf_time_text(&crt->valid_to, to, sizeof to);
    pf_time_text(now, at, sizeof at);
    if (mbedtls_x509_dn_gets(subject, sizeof subject, &crt->subject) < 0) {
        strcpy(subject, "?");
    }
    snprintf(err, errlen,
             "%s:%d: [node %s]: the %s '%s' (%s) %s %s (valid from %s to %s; the clock says %s): "
             "%s; if the clock is wrong, set it first (the TLS handshake checks the same dates)",
             c->path, n->line, n->name, what, file, subject,
             expired ? "expired on" : "is not valid before", expired ? to : from, from, to, at,
             expired ? "renew it" : "use a certificate that is valid now");
    return ELK_E_CONFIG;
}

/* The CA file: refused when none of its certificates is valid now (a bundle may carry an
 * old one beside the one in use). */
static int pf_check_ca(const elkfw_conf_t *c, const elkfw_node_conf_t *n,
                       const mbedtls_x509_time *now, char *err, size_t errlen)
{
    mbedtls_x509_crt ca;
    const mbedtls_x509_crt *p;
    int rc = ELK_OK;
    mbedtls_x509_crt_init(&ca);
    if (mbedtls_x509_crt_parse_file(&ca, n->tls.ca) >= 0 && ca.raw.len > 0) {
        bool any_valid = false;
        for (p = &ca; p != NULL && p->raw.len > 0; p = p->next) {
            any_valid = any_valid || pf_validity(p, now) == 0;
        }
        if (!any_valid) {
            rc = pf_dates_fail(c, n, "CA certificate", n->tls.ca, &ca, now, err, errlen);
        }
    }
    mbedtls_x509_crt_free(&ca);
    return rc;
}

/* The client certificate (the first in its file: the one presented) and its key. */
static int pf_check_client(const elkfw_conf_t *c, const elkfw_node_conf_t *n,
                           const mbedtls_x509_time *now, char *err, size_t errlen)
{
    mbedtls_x509_crt crt;
    mbedtls_pk_context key;
    int rc = ELK_OK;
    mbedtls_x509_crt_init(&crt);
    mbedtls_pk_init(&key);
    if (mbedtls_x509_crt_parse_file(&crt, n->tls.cert) >= 0 && crt.raw.len > 0) {
        if (pf_validity(&crt, now) != 0) {
            rc = pf_dates_fail(c, n, "client certificate", n->tls.cert, &crt, now, err, errlen);
        } else if (mbedtls_pk_parse_keyfile(&key, n->tls.key, NULL PF_RNG) == 0 &&
                   mbedtls_pk_check_pair(&crt.pk, &key PF_RNG) != 0) {
            snprintf(err, errlen,
                     "%s:%d: [node %s]: client certificate and key do not match: %s / %s (set "
                     "'key' to the private key the certificate was issued for)",
                     c->path, n->line, n->name, n->tls.cert, n->tls.key);
            rc = ELK_E_CONFIG;
        }
    }
    mbedtls_pk_free(&key);
    mbedtls_x509_crt_free(&crt);
    return rc;
}

int elkfw_preflight_tls(const elkfw_conf_t *c, time_t now, char *err, size_t errlen)
{
    struct tm tm;
    mbedtls_x509_time t;
    size_t i;
    if (gmtime_r(&now, &tm) == NULL) {
        return ELK_OK;
    }
#if PF_MBEDTLS_3 && defined(MBEDTLS_PSA_CRYPTO_C)
    (void)psa_crypto_init(); /* idempotent; 3.x key operations may run on PSA */
#endif
    t.year = tm.tm_year + 1900;
    t.mon = tm.tm_mon + 1;
    t.day = tm.tm_mday;
    t.hour = tm.tm_hour;
    t.min = tm.tm_min;
    t.sec = tm.tm_sec;
    for (i = 0; i < c->n_nodes; i++) {
        const elkfw_node_conf_t *n = &c->nodes[i];
        if (n->tls.on != 1) {
            continue;
        }
        if (n->tls.ca[0] != '\0' && pf_check_ca(c, n, &t, err, errlen) != ELK_OK) {
            return ELK_E_CONFIG;
        }
        if (n->tls.cert[0] != '\0' && n->tls.key[0] != '\0' &&
            pf_check_client(c, n, &t, err, errlen) != ELK_OK) {
            return ELK_E_CONFIG;
        }
    }
    return ELK_OK;
}
