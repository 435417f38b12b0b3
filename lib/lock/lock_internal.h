/*
 * Internal interfaces between the files of lib/lock. Not installed, not public.
 */
#ifndef ELK_LOCK_INTERNAL_H
#define ELK_LOCK_INTERNAL_H

#include "elk/lock.h"

/* What a request (ticket) or a foreground round runs. */
enum {
    LK_NONE = 0,
    LK_ACQUIRE,
    LK_COMMIT,
    LK_EXTEND,
    LK_RELEASE
};

/* lock_config.c */
uint64_t elk_lock__drift(const elk_lock_config_t *cfg);
/* ttl - drift - stop_margin of a checked cfg: a round sent at t_send holds until
 * t_send + span. Kept in the lock at init, as it depends on the config only. */
uint32_t elk_lock__span(const elk_lock_config_t *cfg);

/* lock_send.c: send one script to node i of the fleet for lock; returns ELK_OK or the
 * reason the request was not queued (its callback will then never run). */
int elk_lock__send_script(elk_lock_t *lock, size_t node, uint8_t kind, uint32_t seq, bool eval,
                          uint64_t now, uint64_t deadline);
/* Write lock->key then suffix into out (room for CONFIG_ELK_MAX_KEY_LEN + 16);
 * returns the length (no NUL). */
size_t elk_lock__key_with(const elk_lock_t *lock, const char *suffix, char *out);
/* send a client-level command whose reply is ignored (SCRIPT LOAD, SUBSCRIBE ...) */
int elk_lock__send_plain(elk_client_t *client, size_t node, const elk_resp_arg_t *argv, size_t argc,
                         uint64_t now);
/* Reply callback of every ticket. */
void elk_lock__on_reply(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply);

/* lock_engine.c */
uint64_t elk_lock__step(elk_lock_t *lock, uint64_t now);

/* A lock queued requests outside a poll (acquire, release): write them now, so that the
 * caller's next wait is for the replies, not for a poll that would only write them.
 * lock_wake: when that lock needs its next step. Inside a poll, the poll writes them. */
void elk_client__queued(elk_client_t *client, uint64_t now, uint64_t lock_wake);
/* a node (re)connected: SUBSCRIBE again if lock is waiting on the release channel */
void elk_lock__resubscribe(elk_lock_t *lock, size_t node);
/* A release message (channel, payload = the released value) arrived on node's connection. */
void elk_lock__release_message(elk_client_t *client, const uint8_t *channel, size_t len,
                               const uint8_t *payload, size_t plen);

/* lock_client.c: index of node in the client's fleet (SIZE_MAX if not one of them), and a
 * line "node <host>:<port>: <what><val><after>" in the client's log. */
size_t elk_lock__node_of(const elk_client_t *client, const elk_node_t *node);
void elk_lock__node_log(const elk_client_t *client, int level, size_t node, const char *what,
                        const elk_resp_node_t *val, const char *after);

/* lock_safety.c: node i just became READY: check its settings per client->cfg.safety. */
void elk_lock__safety_start(elk_client_t *client, size_t i, uint64_t now);

/* lock_log.c */
void elk_lock__log(const elk_client_t *client, int level, const elk_lock_t *lock, const char *what,
                   int err);

/* For a helper gcc -Os would otherwise copy into each caller (measured on Cortex-M4). */
#if defined(__GNUC__)
#define LK_NOINLINE __attribute__((noinline))
#else
#define LK_NOINLINE
#endif

/* Bit helpers for per-node masks. */
#define LK_BIT(i) (1u << (unsigned)(i))

#endif /* ELK_LOCK_INTERNAL_H */
