/* SPDX-License-Identifier: MIT */
/* How a node speaks in logs: state names, and the "<host>:<port> ..." line helpers the
 * other files of lib/node write their lines with. */
#include "node_internal.h"

const char *elk_node_state_name(elk_node_state_t state)
{
    switch (state) {
    case ELK_NODE_DISCONNECTED:
        return "disconnected";
    case ELK_NODE_CONNECTING:
        return "connecting";
    case ELK_NODE_AUTH:
        return "auth";
    case ELK_NODE_HELLO:
        return "hello";
    case ELK_NODE_SELECT:
        return "select";
    case ELK_NODE_READY:
        return "ready";
    case ELK_NODE_BACKOFF:
        return "backoff";
    default:
        return "unknown";
    }
}

/* At CONFIG_ELK_LOG_LEVEL 0 the elk_node__log_on macro is constant false, so nothing
 * calls these: they are left out of the library too. */
#if CONFIG_ELK_LOG_LEVEL > 0
/* The functions behind the macros of the same names. */
#undef elk_node__log_on
#undef elk_node__log_line

bool elk_node__log_on(const elk_node_t *node, int level)
{
    return node->log != NULL && node->log->write != NULL && level <= node->log->level &&
        level <= CONFIG_ELK_LOG_LEVEL;
}

void elk_node__log_begin(const elk_node_t *node, elk_fmt_t *f, char *buf, size_t cap)
{
    elk_fmt_init(f, buf, cap);
    elk_fmt_str(f, node->cfg.endpoint.host);
    elk_fmt_str(f, ":");
    elk_fmt_uint(f, node->cfg.endpoint.port);
    elk_fmt_str(f, " ");
}

void elk_node__log_end(const elk_node_t *node, int level, elk_fmt_t *f)
{
    node->log->write(node->log->ctx, level, "node", f->buf, f->len);
}

void elk_node__log_err(elk_fmt_t *f, int err)
{
    elk_fmt_str(f, ": ");
    elk_fmt_str(f, elk_err_name(err));
#if CONFIG_ELK_ERR_MESSAGES
    elk_fmt_str(f, " (");
    elk_fmt_str(f, elk_err_message(err));
    elk_fmt_str(f, ")");
#endif
}

void elk_node__log_line(const elk_node_t *node, int level, const char *a, const char *b, int err)
{
    char buf[ELK_NODE_LOG_LINE];
    elk_fmt_t f;
    if (!elk_node__log_on(node, level)) {
        return;
    }
    elk_node__log_begin(node, &f, buf, sizeof buf);
    elk_fmt_str(&f, a);
    elk_fmt_str(&f, b);
    if (err != ELK_OK) {
        elk_node__log_err(&f, err);
    }
    elk_node__log_end(node, level, &f);
}
#endif /* CONFIG_ELK_LOG_LEVEL > 0 */
