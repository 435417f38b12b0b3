/* SPDX-License-Identifier: MIT */
/*
 * Local authorization: socket permissions, peer credentials, per-resource allow lists.
 */
#define _GNU_SOURCE
#include "elkfw/access.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "elk/err.h"

/* A list item that is all digits is an id; anything else a name. */
static bool item_is_number(const char *s, unsigned long *out)
{
    char *end;
    if (*s < '0' || *s > '9') {
        return false;
    }
    errno = 0;
    *out = strtoul(s, &end, 10);
    return errno == 0 && *end == '\0' && *out < (unsigned long)(uid_t)-1;
}

static bool lookup_user(const char *name, uid_t *uid)
{
    unsigned long n;
    struct passwd *pw;
    if (item_is_number(name, &n)) {
        *uid = (uid_t)n;
        return true;
    }
    pw = getpwnam(name);
    if (pw != NULL) {
        *uid = pw->pw_uid;
    }
    return pw != NULL;
}

static bool lookup_group(const char *name, gid_t *gid)
{
    unsigned long n;
    struct group *gr;
    if (item_is_number(name, &n)) {
        *gid = (gid_t)n;
        return true;
    }
    gr = getgrnam(name);
    if (gr != NULL) {
        *gid = gr->gr_gid;
    }
    return gr != NULL;
}

/* Resolve one comma-separated list into ids[]; users when is_user. */
static int resolve_list(const elkfw_conf_t *c, const elkfw_resource_conf_t *r, bool is_user,
                        unsigned *ids, size_t *n, char *err, size_t errlen)
{
    const char *list = is_user ? r->allow_users : r->allow_groups;
    const char *key = is_user ? "allow_users" : "allow_groups";
    int line = is_user ? r->allow_users_line : r->allow_groups_line;
    char item[ELKFW_STR_MAX];
    const char *p = list;
    *n = 0;
    while (*p != '\0') {
        size_t len = strcspn(p, ", ");
        if (len > 0) {
            bool ok;
            if (*n == ELKFW_ALLOW_MAX) {
                snprintf(err, errlen,
                         "%s:%d: key '%s' in [resource %s]: more than %d entries (use a group)",
                         c->path, line, key, r->name, ELKFW_ALLOW_MAX);
                return ELK_E_CONFIG;
            }
            memcpy(item, p, len);
            item[len] = '\0';
            if (is_user) {
                uid_t u = 0;
                ok = lookup_user(item, &u);
                ids[*n] = (unsigned)u;
            } else {
                gid_t g = 0;
                ok = lookup_group(item, &g);
                ids[*n] = (unsigned)g;
            }
            if (!ok) {
                snprintf(
                    err, errlen,
                    "%s:%d: key '%s' in [resource %s]: no %s '%s' on this system (use a name from "
                    "%s or a numeric id)",
                    c->path, line, key, r->name, is_user ? "user" : "group", item,
                    is_user ? "/etc/passwd" : "/etc/group");
                return ELK_E_CONFIG;
            }
            (*n)++;
        }
        p += len;
        p += strspn(p, ", ");
    }
    return ELK_OK;
}

int elkfw_access_resolve(const elkfw_conf_t *c, elkfw_allow_t *out, char *err, size_t errlen)
{
    size_t i, k;
    for (i = 0; i < c->n_resources; i++) {
        const elkfw_resource_conf_t *r = &c->resources[i];
        unsigned ids[ELKFW_ALLOW_MAX];
        elkfw_allow_t *a = &out[i];
        int rc;
        memset(a, 0, sizeof *a);
        a->open = r->allow_users[0] == '\0' && r->allow_groups[0] == '\0';
        rc = resolve_list(c, r, true, ids, &a->n_uids, err, errlen);
        for (k = 0; rc == ELK_OK && k < a->n_uids; k++) {
            a->uids[k] = (uid_t)ids[k];
        }
        if (rc == ELK_OK) {
            rc = resolve_list(c, r, false, ids, &a->n_gids, err, errlen);
        }
        for (k = 0; rc == ELK_OK && k < a->n_gids; k++) {
            a->gids[k] = (gid_t)ids[k];
        }
        if (rc != ELK_OK) {
            return rc;
        }
    }
    return ELK_OK;
}

int elkfw_access_socket_group(const elkfw_conf_t *c, gid_t *gid, char *err, size_t errlen)
{
    *gid = (gid_t)-1;
    if (c->agent.socket_group[0] == '\0') {
        return ELK_OK;
    }
    if (!lookup_group(c->agent.socket_group, gid)) {
        snprintf(err, errlen, "%s:%d: key 'socket_group' in [agent]: no group '%s' on this system",
                 c->path, c->agent.socket_group_line, c->agent.socket_group);
        return ELK_E_CONFIG;
    }
    return ELK_OK;
}

int elkfw_access_peer(int fd, elkfw_peer_t *peer)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    char link[64];
    ssize_t n;
    memset(peer, 0, sizeof *peer);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        return ELK_E_IO;
    }
    peer->pid = cred.pid;
    peer->uid = cred.uid;
    peer->gid = cred.gid;
#ifdef SO_PEERGROUPS
    /* The peer's supplementary groups as of its connect() (Linux 4.13). Not the group
     * database (getgrouplist): a process that dropped a group must not get it back, and
     * /proc/<pid>/status could belong to another process by the time it is read. */
    len = sizeof peer->groups;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, peer->groups, &len) == 0) {
        peer->n_groups = len / sizeof peer->groups[0];
    }
#endif
    /* For the log only: the executable is a hint, never a credential. */
    snprintf(link, sizeof link, "/proc/%d/exe", (int)cred.pid);
    n = readlink(link, peer->exe, sizeof peer->exe - 1);
    if (n <= 0) {
        strcpy(peer->exe, "command unknown"); /* gone, or /proc hidden from elkd */
    } else {
        peer->exe[n] = '\0';
    }
    return ELK_OK;
}

bool elkfw_access_allowed(const elkfw_allow_t *a, const elkfw_peer_t *peer)
{
    size_t i, k;
    if (a->open) {
        return true;
    }
    for (i = 0; i < a->n_uids; i++) {
        if (a->uids[i] == peer->uid) {
            return true;
        }
    }
    for (i = 0; i < a->n_gids; i++) {
        if (a->gids[i] == peer->gid) {
            return true;
        }
        for (k = 0; k < peer->n_groups; k++) {
            if (a->gids[i] == peer->groups[k]) {
                return true;
            }
        }
    }
    return false;
}

int elkfw_access_listen(const char *path, unsigned mode, gid_t gid, char *err, size_t errlen)
{
    struct sockaddr_un sa;
    int fd, probe;
    mode_t old_mask;
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "control socket path '%s' is too long (at most %zu bytes)", path,
                 sizeof sa.sun_path - 1);
        return -1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, path);
    /* A socket file left by a crashed elkd is removed; a live one is not stolen. */
    probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0) {
        if (connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
            close(probe);
            snprintf(err, errlen, "another elkd is already listening on %s", path);
            return -1;
        }
        if (errno == ECONNREFUSED) {
            unlink(path);
        }
        close(probe);
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    /* Created with no permission at all, so it is never reachable with more than it
     * will have; and nobody can connect before listen() anyway. */
    old_mask = umask(0777);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        umask(old_mask);
        snprintf(
            err, errlen, "cannot bind the control socket %s: %s%s", path, strerror(e),
            e == ENOENT
                ? " (its directory is missing: create it, or RuntimeDirectory=elkd in the unit)"
                : "");
        close(fd);
        return -1;
    }
    umask(old_mask);
    if (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) != 0) {
        snprintf(err, errlen, "%s: cannot give the control socket %s group %u (socket_group): %s",
                 elk_err_name(ELK_E_SOCKET_SETUP), path, (unsigned)gid, strerror(errno));
    } else if (chmod(path, (mode_t)mode) != 0) {
        snprintf(err, errlen, "%s: cannot give the control socket %s mode %04o (socket_mode): %s",
                 elk_err_name(ELK_E_SOCKET_SETUP), path, mode, strerror(errno));
    } else if (listen(fd, 16) != 0) {
        snprintf(err, errlen, "listen on %s: %s", path, strerror(errno));
    } else {
        return fd;
    }
    close(fd);
    unlink(path);
    return -1;
}
