/* SPDX-License-Identifier: MIT */
/* What elkd sends a client: the queue behind each connection, and its flushing. */
#include "agent.h"

/* A client that stopped reading: its queue did not move for the stall bound (or, as a
 * safety net, grew beyond ELKD_OUT_HARD, or no memory was left for it). Dropped as
 * unresponsive: it may still live and drive, so its leases are not simply released
 * (lease_after_client). */
void elkd__client_stalled(agent_t *a, client_t *c, uint64_t stuck_ms, const char *why)
{
    elkd__log(a, ELK_LOG_WARN,
              "client %" PRIu64 " (uid %u, pid %d, %s): %s: %zu bytes of answers and events "
              "unread, none taken for %" PRIu64 " ms (%s); disconnecting it",
              c->id, (unsigned)c->peer.uid, (int)c->pid, c->peer.exe,
              elk_err_name(ELK_E_CTL_STALLED), c->out_len, stuck_ms, why);
    c->drop = true;
    c->unresponsive = true;
}

/* Room for more bytes in c's queue: grown to fit (answers are never cut or thrown away). */
static bool client_reserve(agent_t *a, client_t *c, size_t more)
{
    size_t cap = c->out_cap != 0 ? c->out_cap : 4096u;
    char *p;
    if (more <= c->out_cap - c->out_len) {
        return true;
    }
    if (more > ELKD_OUT_HARD - c->out_len) {
        elkd__client_stalled(a, c, 0, "the queue passed its hard limit");
        return false;
    }
    while (cap - c->out_len < more) {
        cap *= 2u;
    }
    p = realloc(c->out, cap);
    if (p == NULL) {
        elkd__client_stalled(a, c, 0, "no memory for its queue");
        return false;
    }
    c->out = p;
    c->out_cap = cap;
    return true;
}

/* Queue len bytes for the client in slot (a closed or dropped one takes nothing). */
void elkd__client_write(agent_t *a, int slot, const char *buf, size_t len)
{
    client_t *c;
    if (slot < 0 || slot >= ELKD_MAX_CLIENTS) {
        return;
    }
    c = &a->clients[slot];
    if (c->fd < 0 || c->drop || !client_reserve(a, c, len)) {
        return;
    }
    memcpy(c->out + c->out_len, buf, len);
    c->out_len += len;
}

__attribute__((format(printf, 3, 4))) void elkd__client_send(agent_t *a, int slot, const char *fmt,
                                                             ...)
{
    char line[1024];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    if ((size_t)n < sizeof line) {
        elkd__client_write(a, slot, line, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1u); /* a STATUS JSON line of a large configuration */
        if (big == NULL) {
            if (slot >= 0 && slot < ELKD_MAX_CLIENTS && a->clients[slot].fd >= 0) {
                elkd__client_stalled(a, &a->clients[slot], 0, "no memory for its answer");
            }
            return;
        }
        va_start(ap, fmt);
        (void)vsnprintf(big, (size_t)n + 1u, fmt, ap);
        va_end(ap);
        elkd__client_write(a, slot, big, (size_t)n);
        free(big);
    }
}

void elkd__client_err(agent_t *a, int slot, int code, const char *detail)
{
    if (detail != NULL && detail[0] != '\0') {
        elkd__client_send(a, slot, "ERR %s %s: %s\n", elk_err_name(code), elk_err_message(code),
                          detail);
    } else {
        elkd__client_send(a, slot, "ERR %s %s\n", elk_err_name(code), elk_err_message(code));
    }
}

/* Send what the socket takes of buf[*sent..len). Returns true once all of it is sent. */
static bool client_send_some(client_t *c, const char *buf, size_t len, size_t *sent)
{
    while (*sent < len && !c->drop) {
        size_t n = len - *sent < ELKD_SEND_CHUNK ? len - *sent : ELKD_SEND_CHUNK;
        ssize_t w = send(c->fd, buf + *sent, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                c->drop = true;
            }
            return false;
        }
        *sent += (size_t)w;
    }
    return *sent == len;
}

/* Send what the socket takes; note since when the queue has not moved (the stall bound
 * counts only time in which the client took nothing, however slowly it reads). */
void elkd__client_flush(agent_t *a, int slot, uint64_t now)
{
    client_t *c = &a->clients[slot];
    size_t sent = 0;
    (void)a;
    (void)client_send_some(c, c->out, c->out_len, &sent);
    if (sent > 0) {
        memmove(c->out, c->out + sent, c->out_len - sent);
        c->out_len -= sent;
        c->active_at = now; /* the idle bound counts from the last answer taken, too */
    }
    if (c->out_len > 0) {
        c->out_stuck_since = sent > 0 || c->out_stuck_since == 0 ? now : c->out_stuck_since;
        return;
    }
    c->out_stuck_since = 0;
    if (c->out_cap > ELKD_OUT_KEEP) {
        free(c->out);
        c->out = NULL;
        c->out_cap = 0;
    }
}
