/* SPDX-License-Identifier: MIT */
/* What elkd's events say about the lease this process holds (lease_watch_t). */
#include "elk.h"

/* RENEWED: the deadline moves (unless the lease is already gone). */
static void watch_renewed(lease_watch_t *w, const elkfw_ctl_msg_t *m)
{
    if (!w->lost) {
        w->deadline = elk__lease_deadline(m, elk__now_ms());
    }
    if (w->print) {
        printf("renewed %s token=%" PRIu64 " validity_ms=%" PRIu32 "\n", m->resource, m->token,
               m->deadline_ms);
    }
}

/* LOST: the lease is gone, and why. */
static void watch_lost(lease_watch_t *w, const elkfw_ctl_msg_t *m)
{
    int cause;
    if (w->lost) {
        return;
    }
    /* Say what really ended it (deadline without quorum, another holder's value,
     * a cap, the fleet out of reach): the person reading the log acts on it. */
    cause = elkfw_err_from_name(m->code);
    w->lost = true;
    snprintf(w->why_buf, sizeof w->why_buf, "%s [%s]",
             cause == ELK_E_INTERNAL ? "lease lost" : elk_err_message(cause), m->code);
    w->why = w->why_buf;
    w->margin = m->stop_margin_ms;
    if (w->print) {
        printf("lost %s %s\n", m->resource, m->code);
    }
    if (w->stopped_already) {
        /* we stopped on our own copy of the deadline; now say why it came */
        elkfw_say("%s: elkd reports: %s", m->resource, w->why);
    }
}

/* RENEW_STOPPED: no more renewals; the lease runs to its deadline. */
static void watch_renew_stopped(lease_watch_t *w, const elkfw_ctl_msg_t *m)
{
    int cause = elkfw_err_from_name(m->code);
    elkfw_say("%s: %s [%s]; the lease ends at its deadline unless released first", m->resource,
              cause == ELK_E_INTERNAL ? "renewal stopped" : elk_err_message(cause), m->code);
    if (w->print) {
        printf("renew_stopped %s %s\n", m->resource, m->code);
    }
}

/* SHUTDOWN: elkd is going away, and every lease with it. */
static void watch_shutdown(lease_watch_t *w)
{
    if (!w->lost) {
        w->lost = true;
        w->why = "elkd is shutting down";
        w->margin = 0;
        if (w->print) {
            printf("shutdown %s\n", w->resource);
        }
    }
}

/* The resource an event names. SUSPECT and RECOVERED (issue 20) may reach a reply
 * parser that does not know them yet: then their fields are in the free text, the
 * resource first. */
static void event_resource(const elkfw_ctl_msg_t *m, char *out, size_t cap)
{
    size_t n = 0;
    if (m->resource[0] != '\0' || m->text == NULL) {
        snprintf(out, cap, "%s", m->resource);
        return;
    }
    while (n < m->text_len && m->text[n] != ' ') {
        n++;
    }
    snprintf(out, cap, "%.*s", (int)n, m->text);
}

/* SUSPECT: a renewal missed its quorum; the lease holds until its deadline unless a later
 * renewal recovers it. The deadline does not move. */
static void watch_suspect(lease_watch_t *w)
{
    if (w->lost) {
        return;
    }
    w->suspect_new = true;
    if (w->print) {
        printf("suspect %s validity_ms=%" PRIu64 "\n", w->resource,
               w->deadline > elk__now_ms() ? w->deadline - elk__now_ms() : 0);
    }
}

/* RECOVERED: a renewal after SUSPECT; the same fields as RENEWED. */
static void watch_recovered(lease_watch_t *w, const elkfw_ctl_msg_t *m)
{
    elkfw_ctl_msg_t r;
    char line[ELK_CTL_LINE_MAX];
    if (m->resource[0] == '\0' && m->text != NULL) {
        /* free text (see event_resource): read it as the RENEWED it equals */
        int n = snprintf(line, sizeof line, "EVENT RENEWED %.*s", (int)m->text_len, m->text);
        if (n < 0 || (size_t)n >= sizeof line ||
            elkfw_ctl_parse_reply(line, (size_t)n, &r) != ELK_OK) {
            return;
        }
        m = &r;
    }
    if (w->print) {
        printf("recovered %s\n", w->resource);
    }
    watch_renewed(w, m);
}

/* A lease of a set renewed (or recovered): its own deadline moves, and the set's is the
 * earliest of them. */
static void watch_set_renewed(lease_watch_t *w, const elkfw_ctl_msg_t *m, int idx,
                              void (*renewed)(lease_watch_t *, const elkfw_ctl_msg_t *))
{
    size_t k;
    w->deadline = w->set_deadline[idx];
    renewed(w, m);
    w->set_deadline[idx] = w->deadline;
    for (k = 0; k < w->n_set; k++) {
        w->deadline = w->set_deadline[k] < w->deadline ? w->set_deadline[k] : w->deadline;
    }
}

static void watch_renewed_any(lease_watch_t *w, const elkfw_ctl_msg_t *m, int idx,
                              void (*renewed)(lease_watch_t *, const elkfw_ctl_msg_t *))
{
    if (idx >= 0) {
        watch_set_renewed(w, m, idx, renewed);
    } else {
        renewed(w, m);
    }
}

/* One event: RENEWED moves the deadline, LOST / SHUTDOWN end the lease (of a set: the
 * loss of any ends them all). Events that do not concern us are skipped. */
void elk__watch_msg(lease_watch_t *w, const elkfw_ctl_msg_t *m)
{
    char res[ELKFW_NAME_MAX];
    bool ours;
    int idx;
    event_resource(m, res, sizeof res);
    idx = w->n_set != 0 ? elk__set_index(w, res) : -1;
    ours = w->n_set != 0 ? idx >= 0 : strcmp(res, w->resource) == 0;
    if (strcmp(m->word, "RENEWED") == 0 && ours) {
        watch_renewed_any(w, m, idx, watch_renewed);
    } else if (strcmp(m->word, "SUSPECT") == 0 && ours) {
        watch_suspect(w);
    } else if (strcmp(m->word, "RECOVERED") == 0 && ours) {
        watch_renewed_any(w, m, idx, watch_recovered);
    } else if (strcmp(m->word, "LOST") == 0 && ours) {
        watch_lost(w, m);
    } else if (strcmp(m->word, "RENEW_STOPPED") == 0 && ours) {
        watch_renew_stopped(w, m);
    } else if (strcmp(m->word, "SHUTDOWN") == 0) {
        watch_shutdown(w);
    }
}

/* Handle every complete line in the buffer. */
void elk__watch_lines(agent_link_t *ak, lease_watch_t *w)
{
    const char *line;
    size_t len;
    elkfw_ctl_msg_t m;
    int rc;
    while ((rc = elkfw_linebuf_next(&ak->lb, &line, &len)) != 0) {
        if (rc > 0 && elkfw_ctl_parse_reply(line, len, &m) == ELK_OK && m.kind == ELKFW_MSG_EVENT) {
            elk__watch_msg(w, &m);
        } else if (rc > 0 && m.kind == ELKFW_MSG_ERR) {
            /* only KEEPALIVE is sent while a lease is watched */
            elkfw_say("%s: elkd refused a request: %.*s [%s]", w->resource, (int)m.text_len, m.text,
                      m.code);
        }
    }
    if (w->print) {
        fflush(stdout);
    }
}
