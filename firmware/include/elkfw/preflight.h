/* SPDX-License-Identifier: MIT */
/*
 * Preflight: what a parsed configuration may be refused for once the files and names it
 * points at are looked at (elkfw_conf_load runs it, so `elkd --check`, the start and every
 * reload refuse alike, exit 2). Each refusal is one message naming the file, the line and
 * the change to make:
 *   - two [node] sections that reach the same server (host:port after getaddrinfo:
 *     localhost and 127.0.0.1 on one port are one server): counted twice, one failure
 *     would take two votes;
 *   - a TLS client key readable by other users;
 *   - a CA or client certificate outside its validity dates (against the wall clock);
 *   - a client certificate and key that do not belong together.
 * Files that cannot be read or parsed are left to the TLS setup, which names them.
 */
#ifndef ELKFW_PREFLIGHT_H
#define ELKFW_PREFLIGHT_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "elkfw/conf.h"

/* Every check below on c, with the wall clock for the certificates. Returns ELK_OK, or
 * ELK_E_CONFIG with the reason in err (NUL-terminated, errlen >= 1). */
int elkfw_preflight(const elkfw_conf_t *c, char *err, size_t errlen);

/* Two nodes of c that reach the same address and port (either host's getaddrinfo result
 * shares one with the other's; a host that does not resolve is compared by name, case
 * ignored). Same result contract; the message names both sections with file:line. */
int elkfw_preflight_duplicates(const elkfw_conf_t *c, char *err, size_t errlen);

/* The client key of every TLS node: refused when others, or a group other than the one
 * elkd runs as (its effective gid, never gid 0), may read it. Same result contract. */
int elkfw_preflight_key_modes(const elkfw_conf_t *c, char *err, size_t errlen);

/* Why a key file of mode st_mode owned by group file_gid is too open for a process of
 * effective gid my_gid: "every user", "group" or NULL when it is private enough. Pure. */
const char *elkfw_preflight_key_too_open(mode_t st_mode, gid_t file_gid, gid_t my_gid);

/* The certificates of every TLS node at wall-clock time now: a CA file none of whose
 * certificates is valid, a client certificate that is not, a client key that is not the
 * certificate's. ELK_OK when elkd is built without TLS. Same result contract. */
int elkfw_preflight_tls(const elkfw_conf_t *c, time_t now, char *err, size_t errlen);

#endif /* ELKFW_PREFLIGHT_H */
