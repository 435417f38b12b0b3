/* SPDX-License-Identifier: MIT */
/* Preflight (elkfw/preflight.h): the same server twice in the fleet, client keys other
 * users can read. The certificate checks are in preflight_tls.c. */
#define _GNU_SOURCE
#include "elkfw/preflight.h"

#include <arpa/inet.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ the same server twice */

#define PF_ADDRS_MAX 16 /* per node; a name with more addresses is compared on these */

/* One address a node's host resolves to, IPv4-mapped IPv6 taken as IPv4. */
typedef struct pf_addr {
    int family;
    uint8_t bytes[16];
    uint16_t port;
} pf_addr_t;

typedef struct pf_node {
    pf_addr_t addr[PF_ADDRS_MAX];
    size_t n; /* 0: the host did not resolve (compared by name) */
} pf_node_t;

static void pf_add(pf_node_t *pn, const struct sockaddr *sa)
{
    pf_addr_t a;
    memset(&a, 0, sizeof a);
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        a.family = AF_INET;
        memcpy(a.bytes, &in->sin_addr, 4);
        a.port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
            a.family = AF_INET;
            memcpy(a.bytes, &in6->sin6_addr.s6_addr[12], 4);
        } else {
            a.family = AF_INET6;
            memcpy(a.bytes, &in6->sin6_addr, 16);
        }
        a.port = ntohs(in6->sin6_port);
    } else {
        return;
    }
    if (pn->n < PF_ADDRS_MAX) {
        pn->addr[pn->n++] = a;
    }
}

/* host:port through getaddrinfo into pn (n = 0 when it does not resolve). */
static void pf_resolve(const elkfw_node_conf_t *n, pf_node_t *pn)
{
    struct addrinfo hints, *res = NULL, *ai;
    char port[8];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(port, sizeof port, "%u", (unsigned)n->port);
    pn->n = 0;
    if (getaddrinfo(n->host, port, &hints, &res) != 0) {
        return;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        pf_add(pn, ai->ai_addr);
    }
    freeaddrinfo(res);
}

static bool pf_addr_equal(const pf_addr_t *a, const pf_addr_t *b)
{
    size_t len = a->family == AF_INET ? 4u : 16u;
    return a->family == b->family && a->port == b->port && memcmp(a->bytes, b->bytes, len) == 0;
}

/* True when a and b reach one server: an address they share (into *common), or, when
 * either did not resolve, the same name and port (*common NULL). */
static bool pf_same(const elkfw_node_conf_t *na, const pf_node_t *a, const elkfw_node_conf_t *nb,
                    const pf_node_t *b, const pf_addr_t **common)
{
    size_t i, k;
    *common = NULL;
    if (a->n == 0 || b->n == 0) {
        return na->port == nb->port && strcasecmp(na->host, nb->host) == 0;
    }
    for (i = 0; i < a->n; i++) {
        for (k = 0; k < b->n; k++) {
            if (pf_addr_equal(&a->addr[i], &b->addr[k])) {
                *common = &a->addr[i];
                return true;
            }
        }
    }
    return false;
}

static void pf_addr_text(const pf_addr_t *a, char *out, size_t cap)
{
    char host[INET6_ADDRSTRLEN];
    if (a == NULL) {
        snprintf(out, cap, "the same name");
        return;
    }
    inet_ntop(a->family, a->bytes, host, sizeof host);
    snprintf(out, cap, a->family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, (unsigned)a->port);
}

int elkfw_preflight_duplicates(const elkfw_conf_t *c, char *err, size_t errlen)
{
    pf_node_t pn[CONFIG_ELK_MAX_NODES];
    size_t i, k;
    if (c->n_nodes < 2) {
        return ELK_OK; /* nothing to compare: no name looked up */
    }
    for (i = 0; i < c->n_nodes; i++) {
        pf_resolve(&c->nodes[i], &pn[i]);
    }
    for (k = 1; k < c->n_nodes; k++) {
        for (i = 0; i < k; i++) {
            const elkfw_node_conf_t *a = &c->nodes[i], *b = &c->nodes[k];
            const pf_addr_t *common;
            char at[INET6_ADDRSTRLEN + 16];
            if (!pf_same(a, &pn[i], b, &pn[k], &common)) {
                continue;
            }
            pf_addr_text(common, at, sizeof at);
            snprintf(err, errlen,
                     "%s:%d: [node %s] (%s port %u) is the same server as %s:%d: [node %s] (%s "
                     "port %u), both reach %s: its one vote would count twice and one failure "
                     "would take two; point one of them at another Redis server or remove it",
                     c->path, b->line, b->name, b->host, (unsigned)b->port, c->path, a->line,
                     a->name, a->host, (unsigned)a->port, at);
            return ELK_E_CONFIG;
        }
    }
    return ELK_OK;
}

/* ------------------------------------------------------------ client key modes */

const char *elkfw_preflight_key_too_open(mode_t st_mode, gid_t file_gid, gid_t my_gid)
{
    if ((st_mode & S_IROTH) != 0) {
        return "every user";
    }
    /* root:elkd 0640 is how the package ships secrets (docs/hardening.md): the group elkd
     * runs as is elkd alone. Group root is not: it may hold accounts of their own. */
    if ((st_mode & S_IRGRP) != 0 && (file_gid != my_gid || my_gid == 0)) {
        return "group";
    }
    return NULL;
}

int elkfw_preflight_key_modes(const elkfw_conf_t *c, char *err, size_t errlen)
{
    size_t i;
    for (i = 0; i < c->n_nodes; i++) {
        const elkfw_node_conf_t *n = &c->nodes[i];
        struct stat st;
        const char *who;
        char grp[ELKFW_NAME_MAX];
        if (n->tls.on != 1 || n->tls.key[0] == '\0' || stat(n->tls.key, &st) != 0) {
            continue; /* no key, or one the TLS setup will say it cannot read */
        }
        who = elkfw_preflight_key_too_open(st.st_mode, st.st_gid, getegid());
        if (who == NULL) {
            continue;
        }
        if (strcmp(who, "group") == 0) {
            const struct group *g = getgrgid(st.st_gid);
            snprintf(grp, sizeof grp, "group '%s'", g != NULL ? g->gr_name : "?");
            who = grp;
        }
        snprintf(err, errlen,
                 "%s:%d: [node %s]: the TLS client key '%s' has mode %04o and is readable by %s: "
                 "run chmod 600 '%s' (its owner must be the user elkd runs as)",
                 c->path, n->line, n->name, n->tls.key, (unsigned)(st.st_mode & 07777), who,
                 n->tls.key);
        return ELK_E_CONFIG;
    }
    return ELK_OK;
}

#ifndef ELKFW_TLS
int elkfw_preflight_tls(const elkfw_conf_t *c, time_t now, char *err, size_t errlen)
{
    (void)c;
    (void)now;
    (void)err;
    (void)errlen;
    return ELK_OK; /* built without TLS: the fleet setup refuses tls = on itself */
}
#endif

int elkfw_preflight(const elkfw_conf_t *c, char *err, size_t errlen)
{
    /* every check runs, each problem one more line of err: --check names them all at once */
    char one[ELKFW_ERR_MAX];
    size_t used = 0;
    int k, bad = 0;
    for (k = 0; k < 3; k++) {
        int rc = k == 0 ? elkfw_preflight_key_modes(c, one, sizeof one)
            : k == 1    ? elkfw_preflight_tls(c, time(NULL), one, sizeof one)
                        : elkfw_preflight_duplicates(c, one, sizeof one);
        if (rc != ELK_OK) {
            int w = snprintf(err + used, errlen - used, "%s%s", bad++ ? "\n" : "", one);
            used += w > 0 && (size_t)w < errlen - used ? (size_t)w : 0u;
        }
    }
    return bad != 0 ? ELK_E_CONFIG : ELK_OK;
}
