/* SPDX-License-Identifier: MIT */
/*
 * Who may use elkd: the control socket's owner, group and mode, and per resource the
 * users and groups allowed to take it (allow_users, allow_groups). Peers are known by
 * the kernel's credentials of the connection (SO_PEERCRED, SO_PEERGROUPS), taken when
 * the peer called connect(): they cannot change afterwards, and a pid that was reused
 * since cannot lend its groups to the connection.
 */
#ifndef ELKFW_ACCESS_H
#define ELKFW_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "elkfw/conf.h"

#define ELKFW_ALLOW_MAX 16   /* users, and groups, one resource may list */
#define ELKFW_PEER_GROUPS 64 /* supplementary groups of a peer that are looked at */

/* One resource's allow lists, resolved to ids. open: no list, every peer may take it. */
typedef struct elkfw_allow {
    bool open;
    uid_t uids[ELKFW_ALLOW_MAX];
    size_t n_uids;
    gid_t gids[ELKFW_ALLOW_MAX];
    size_t n_gids;
} elkfw_allow_t;

/* A connected peer, as the kernel saw it at connect(). */
typedef struct elkfw_peer {
    pid_t pid;
    uid_t uid;
    gid_t gid; /* primary group */
    gid_t groups[ELKFW_PEER_GROUPS];
    size_t n_groups; /* supplementary groups (SO_PEERGROUPS; 0 if unsupported) */
    char exe[128];   /* /proc/<pid>/exe at accept, or "command unknown" (unreadable) */
} elkfw_peer_t;

/* Resolve every resource's allow_users / allow_groups of c (names through the user and
 * group databases, or numeric ids) into out[0..c->n_resources). Returns ELK_OK, or
 * ELK_E_CONFIG with "FILE:LINE: key 'allow_users' in [resource R]: no user 'x'" in err. */
int elkfw_access_resolve(const elkfw_conf_t *c, elkfw_allow_t *out, char *err, size_t errlen);

/* The gid of [agent] socket_group (name or number) into *gid; -1 (no change) if unset.
 * ELK_OK, or ELK_E_CONFIG with a message. */
int elkfw_access_socket_group(const elkfw_conf_t *c, gid_t *gid, char *err, size_t errlen);

/* Fill *peer from a connected Unix socket. Returns ELK_OK, or ELK_E_IO (no credentials:
 * refuse the connection). */
int elkfw_access_peer(int fd, elkfw_peer_t *peer);

/* True if peer may take a resource with allow list a: open, its uid listed, or its
 * primary or one of its supplementary groups listed. root (uid 0) is not special. */
bool elkfw_access_allowed(const elkfw_allow_t *a, const elkfw_peer_t *peer);

/* Bind and listen on a Unix socket at path with mode and group (gid -1: keep), so that
 * nobody can connect before mode and group are in place (created with mode 0 under a
 * umask, changed before listen(); connect() to it fails until then). Returns the
 * listening descriptor, or -1 with a message in err naming what failed. */
int elkfw_access_listen(const char *path, unsigned mode, gid_t gid, char *err, size_t errlen);

#endif /* ELKFW_ACCESS_H */
