/* SPDX-License-Identifier: MIT */
/*
 * The lock module's log lines, of two kinds: a lock line for events and a node line
 * for the server settings check. One level check and one write for both.
 */
#include "../util/fmt.h"
#include "lock_internal.h"

/* At CONFIG_ELK_LOG_LEVEL 0 this is always false, so the formatting is compiled out. */
static bool lk_log_on(const elk_client_t *client, int level)
{
    const elk_log_t *log = client->log;
    return CONFIG_ELK_LOG_LEVEL != 0 && level <= CONFIG_ELK_LOG_LEVEL && log != NULL &&
        log->write != NULL && level <= log->level;
}

/* One formatter for both kinds (each kind its own function was 200 bytes more flash). */
void elk_lock__log(const elk_client_t *client, int level, const elk_lock_t *lock, size_t node,
                   const char *head, const char *what, const elk_resp_node_t *val,
                   const char *after, int err)
{
    char buf[CONFIG_ELK_MAX_KEY_LEN + 200u];
    elk_fmt_t f;
    if (!lk_log_on(client, level)) {
        return;
    }
    elk_fmt_init(&f, buf, sizeof(buf));
    if (lock != NULL) {
        elk_fmt_str(&f, lock->key);
    } else {
        const elk_endpoint_t *ep = &client->fleet->nodes[node].cfg.endpoint;
        elk_fmt_str(&f, "node ");
        elk_fmt_str(&f, ep->host); /* never NULL: elk_node_init refuses it */
        elk_fmt_str(&f, ":");
        elk_fmt_uint(&f, ep->port);
    }
    elk_fmt_str(&f, ": ");
    elk_fmt_str(&f, head);
    elk_fmt_str(&f, what);
    if (val != NULL) {
        elk_fmt_bytes(&f, val->str, val->len);
    }
    elk_fmt_str(&f, after);
    if (lock != NULL && (lock->state == ELK_LOCK_HELD || lock->state == ELK_LOCK_RENEWING)) {
        elk_fmt_str(&f, " token ");
        elk_fmt_uint(&f, lock->token);
    }
    if (err != ELK_OK) {
        elk_fmt_str(&f, ": ");
#if CONFIG_ELK_ERR_MESSAGES
        elk_fmt_str(&f, elk_err_message(err));
        elk_fmt_str(&f, " (");
        elk_fmt_str(&f, elk_err_name(err));
        elk_fmt_str(&f, ")");
#else
        elk_fmt_str(&f, elk_err_name(err)); /* the message would only repeat it */
#endif
    }
    client->log->write(client->log->ctx, level, "lock", f.buf, f.len);
}
