/* SPDX-License-Identifier: MIT */
/* elk run a,b: several leases as one, all or nothing. Taken one after the other in the
 * canonical order of their names (byte-wise), over one connection, each with what is left
 * of the wait: two gateways asking for overlapping sets in any order never wait for each
 * other in a circle (docs/design.md "All or nothing"). If one cannot be had, the ones
 * already taken are given back before elk exits (nothing ran under them). */
#include "elk.h"

static int name_cmp(const void *x, const void *y)
{
    return strcmp((const char *)x, (const char *)y);
}

/* "a,b,c" into names (sorted, canonical order). Returns EXIT_OK, or EXIT_USAGE with the
 * reason said (an empty or invalid name, a duplicate, more than ELK_SET_MAX). */
int elk__set_parse(const char *arg, char names[][ELKFW_NAME_MAX], size_t *n)
{
    const char *p = arg;
    size_t k, j;
    *n = 0;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (*n == ELK_SET_MAX) {
            elkfw_say("'%s': at most %d resources in one elk run", arg, ELK_SET_MAX);
            return EXIT_USAGE;
        }
        if (len == 0 || len >= ELKFW_NAME_MAX) {
            elkfw_say("'%s': an empty or too long name in the list of resources", arg);
            return EXIT_USAGE;
        }
        memcpy(names[*n], p, len);
        names[*n][len] = '\0';
        if (!elk__resource_ok(names[*n])) {
            return EXIT_USAGE;
        }
        (*n)++;
        if (comma == NULL) {
            break;
        }
        p = comma + 1;
    }
    for (k = 0; k < *n; k++) {
        for (j = k + 1u; j < *n; j++) {
            if (strcmp(names[k], names[j]) == 0) {
                elkfw_say("'%s': %s is named twice (each resource once: all of them are held "
                          "together)",
                          arg, names[k]);
                return EXIT_USAGE;
            }
        }
    }
    qsort(names, *n, ELKFW_NAME_MAX, name_cmp);
    return EXIT_OK;
}

/* The index of lease name in w's set, or -1. */
int elk__set_index(const lease_watch_t *w, const char *name)
{
    size_t k;
    for (k = 0; k < w->n_set; k++) {
        if (strcmp(w->set[k], name) == 0) {
            return (int)k;
        }
    }
    return -1;
}

/* "RELEASE a", "SUPERVISE a 812", "KEEPALIVE a", for each lease of w (tail: what follows
 * the name, "" for none). Returns 0, or -1 when the connection failed. */
int elk__lease_send_each(agent_link_t *ak, const lease_watch_t *w, const char *verb,
                         const char *tail)
{
    size_t k;
    if (w->n_set == 0) {
        return elk__agent_send(ak, "%s %s%s\n", verb, w->resource, tail);
    }
    for (k = 0; k < w->n_set; k++) {
        if (elk__agent_send(ak, "%s %s%s\n", verb, w->set[k], tail) != 0) {
            return -1;
        }
    }
    return 0;
}

/* Give back every lease of w (its set's in reverse order), each confirmed. */
void elk__lease_release(agent_link_t *ak, const lease_watch_t *w)
{
    size_t k;
    if (w->n_set == 0) {
        elk__release_and_wait(ak, w->resource);
        return;
    }
    for (k = w->n_set; k > 0; k--) {
        elk__release_and_wait(ak, w->set[k - 1u]);
    }
}

/* Take every lease of asked (canonical order), each with the wait left; into w's set.
 * Returns EXIT_OK, or the first refusal's exit code after giving back what was taken. */
int elk__set_acquire(agent_link_t *ak, lease_watch_t *w, char asked[][ELKFW_NAME_MAX], size_t n,
                     uint32_t wait_ms, uint32_t keepalive_ms, int sfd)
{
    uint64_t until = elk__now_ms() + wait_ms;
    size_t k;
    w->n_set = 0;
    for (k = 0; k < n; k++) {
        elkfw_ctl_msg_t m;
        uint64_t now = elk__now_ms();
        uint32_t left = wait_ms == 0 || now >= until ? 0 : (uint32_t)(until - now);
        int rc = elk__acquire_lease(ak, asked[k], left, keepalive_ms, sfd, &m);
        if (rc != EXIT_OK) {
            if (w->n_set != 0) {
                elkfw_say("%s not acquired: giving back the %zu taken before it", asked[k],
                          w->n_set);
            }
            if (w->n_set != 0) {
                elk__lease_release(ak, w);
            }
            w->n_set = 0;
            return rc;
        }
        snprintf(w->set[k], sizeof w->set[k], "%s", m.resource);
        w->set_deadline[k] = elk__lease_deadline(&m, elk__now_ms());
        w->set_token[k] = m.token;
        w->set_stop_margin =
            m.stop_margin_ms > w->set_stop_margin ? (uint32_t)m.stop_margin_ms : w->set_stop_margin;
        w->n_set = k + 1u;
    }
    return EXIT_OK;
}
