/* SPDX-License-Identifier: MIT */
/* A configuration read from its file, with the password files it names. */
#include "conf_internal.h"

const elkfw_resource_conf_t *elkfw_conf_resource(const elkfw_conf_t *c, const char *name,
                                                 size_t len)
{
    size_t i;
    for (i = 0; i < c->n_resources; i++) {
        if (strlen(c->resources[i].name) == len && memcmp(c->resources[i].name, name, len) == 0) {
            return &c->resources[i];
        }
    }
    return NULL;
}

bool elkfw_host_is_ip(const char *host)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* Read a whole small file into buf; returns bytes read or -1 with errno set. */
static long read_file(const char *path, char *buf, size_t cap, bool *too_big, bool *others_read)
{
    FILE *f = fopen(path, "rb");
    size_t n;
    struct stat st;
    *too_big = false;
    if (f == NULL) {
        return -1;
    }
    *others_read = fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH) != 0;
    n = fread(buf, 1, cap, f);
    if (ferror(f)) {
        int e = errno;
        fclose(f);
        errno = e;
        return -1;
    }
    if (n == cap && fgetc(f) != EOF) {
        *too_big = true;
    }
    fclose(f);
    return (long)n;
}

/* A node's password_file into nd->password: one non-empty line, not readable by others. */
static int load_password_file(elkfw_node_conf_t *nd, const char *path, char *err, size_t errlen)
{
    char pw[ELKFW_STR_MAX + 1];
    bool too_big, others_read;
    long m = read_file(nd->password_file, pw, sizeof pw, &too_big, &others_read);
    if (m < 0) {
        snprintf(err, errlen, "%s:%d: key 'password_file' in [node %s]: cannot read '%s': %s", path,
                 nd->password_file_line, nd->name, nd->password_file, strerror(errno));
        return ELK_E_CONFIG;
    }
    while (m > 0 && (pw[m - 1] == '\n' || pw[m - 1] == '\r')) {
        m--;
    }
    if (too_big || m >= (long)sizeof nd->password) {
        snprintf(err, errlen,
                 "%s:%d: key 'password_file' in [node %s]: '%s' holds more than %zu bytes", path,
                 nd->password_file_line, nd->name, nd->password_file, sizeof nd->password - 1);
        return ELK_E_CONFIG;
    }
    if (m == 0 || memchr(pw, '\0', (size_t)m) != NULL || memchr(pw, '\n', (size_t)m) != NULL) {
        snprintf(err, errlen,
                 "%s:%d: key 'password_file' in [node %s]: '%s' must hold one non-empty line", path,
                 nd->password_file_line, nd->name, nd->password_file);
        return ELK_E_CONFIG;
    }
    memcpy(nd->password, pw, (size_t)m);
    nd->password[m] = '\0';
    explicit_bzero(pw, sizeof pw);
    if (others_read) {
        /* A secret every local account can read is no secret. */
        snprintf(err, errlen,
                 "%s:%d: key 'password_file' in [node %s]: '%s' is readable by every user: "
                 "run chmod o-r '%s'",
                 path, nd->password_file_line, nd->name, nd->password_file, nd->password_file);
        return ELK_E_CONFIG;
    }
    return ELK_OK;
}

/* The file's passwords: those in password files read in, none inline in a file others read. */
static int load_passwords(elkfw_conf_t *c, const char *path, bool conf_others_read, char *err,
                          size_t errlen)
{
    size_t i;
    for (i = 0; i < c->n_nodes; i++) {
        if (c->nodes[i].password_file[0] != '\0' &&
            load_password_file(&c->nodes[i], path, err, errlen) != ELK_OK) {
            return ELK_E_CONFIG;
        }
    }
    for (i = 0; i < c->n_nodes && conf_others_read; i++) {
        if (c->nodes[i].password[0] != '\0' && c->nodes[i].password_file[0] == '\0') {
            snprintf(err, errlen,
                     "%s:%d: [node %s] has an inline 'password' and the file is readable by every "
                     "user: run chmod o-r '%s', or move it to a 'password_file' only elkd can read",
                     path, c->nodes[i].line, c->nodes[i].name, path);
            return ELK_E_CONFIG;
        }
    }
    return ELK_OK;
}

int elkfw_conf_load(elkfw_conf_t *c, const char *path, char *err, size_t errlen)
{
    enum { MAX_CONF = ELKFW_CONF_MAX_BYTES };
    char *text;
    long n;
    bool too_big, conf_others_read;
    int rc;

    if (c == NULL || path == NULL || err == NULL || errlen == 0) {
        return ELK_E_INVALID_ARG;
    }
    text = malloc(MAX_CONF);
    if (text == NULL) {
        snprintf(err, errlen, "%s: out of memory reading the configuration", path);
        return ELK_E_CONFIG;
    }
    n = read_file(path, text, MAX_CONF, &too_big, &conf_others_read);
    if (n < 0) {
        snprintf(err, errlen, "%s: cannot read the configuration: %s", path, strerror(errno));
        free(text);
        return ELK_E_CONFIG;
    }
    if (too_big) {
        snprintf(err, errlen, "%s: file is larger than %d bytes; is this the right file?", path,
                 MAX_CONF);
        free(text);
        return ELK_E_CONFIG;
    }
    rc = elkfw_conf_parse(c, path, text, (size_t)n, err, errlen);
    free(text);
    if (rc != ELK_OK) {
        return rc;
    }
    rc = load_passwords(c, path, conf_others_read, err, errlen);
    return rc != ELK_OK ? rc : elkfw_preflight(c, err, errlen);
}
