/* SPDX-License-Identifier: MIT */
/*
 * edgelock error codes.
 *
 * Every failure in lib/ and port/ is one of these negative codes; ELK_OK is 0.
 * Functions that move bytes return a count (>0), 0 for "would block", or one of
 * these codes. The table is one X-macro list so the enum, the names and the
 * human messages can never drift apart.
 */
#ifndef ELK_ERR_H
#define ELK_ERR_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, message a person can act on) */
#define ELK_ERR_LIST(X)                                                                            \
    X(ELK_OK, 0, "success")                                                                        \
    /* generic */                                                                                  \
    X(ELK_E_INVALID_ARG, -1, "invalid argument (a null pointer or an out-of-range value)")         \
    X(ELK_E_BUF_TOO_SMALL, -2, "buffer too small; the size needed was reported")                   \
    X(ELK_E_STATE, -3, "operation not allowed in the object's current state")                      \
    X(ELK_E_NOT_SUPPORTED, -4, "not supported by this build or platform")                          \
    X(ELK_E_INTERNAL, -5, "internal error; please report it with the log")                         \
    X(ELK_E_NAME_TOO_LONG, -6, "name longer than CONFIG_ELK_MAX_KEY_LEN allows")                   \
    X(ELK_E_NAME_INVALID, -7, "name is empty or contains a byte not allowed in a name")            \
    X(ELK_E_WOULD_BLOCK, -8, "operation would block; call again when ready")                       \
    /* RESP codec */                                                                               \
    X(ELK_E_RESP_PROTOCOL, -20, "malformed RESP from the server (bad type byte or syntax)")        \
    X(ELK_E_RESP_LENGTH, -21, "RESP length or integer is invalid or overflows")                    \
    X(ELK_E_RESP_TOO_DEEP, -22, "RESP reply nests deeper than CONFIG_ELK_RESP_MAX_DEPTH")          \
    X(ELK_E_RESP_TOO_MANY_NODES, -23,                                                              \
      "RESP reply has more elements than CONFIG_ELK_RESP_MAX_NODES")                               \
    X(ELK_E_RESP_TOO_LARGE, -24, "RESP reply does not fit the reply buffer (pool block size)")     \
    /* buffer pool */                                                                              \
    X(ELK_E_POOL_EMPTY, -30, "buffer pool exhausted; raise CONFIG_ELK_POOL_BLOCK_COUNT")           \
    X(ELK_E_POOL_FOREIGN, -31, "pointer does not belong to this buffer pool")                      \
    X(ELK_E_POOL_DOUBLE_FREE, -32, "buffer returned to the pool twice")                            \
    /* transport */                                                                                \
    X(ELK_E_RESOLVE, -40, "could not resolve the host name")                                       \
    X(ELK_E_CONNECT_REFUSED, -41, "connection refused: is the server running on that port?")       \
    X(ELK_E_CONNECT_TIMEOUT, -42, "connection attempt timed out")                                  \
    X(ELK_E_CONNECT, -43, "could not connect (network unreachable or other socket error)")         \
    X(ELK_E_CLOSED, -44, "connection closed by the peer")                                          \
    X(ELK_E_IO, -45, "socket I/O error")                                                           \
    X(ELK_E_NO_RESOURCES, -46, "out of sockets or memory in the network stack")                    \
    /* TLS */                                                                                      \
    X(ELK_E_TLS_UNKNOWN_CA, -50, "TLS: server certificate not signed by the configured CA")        \
    X(ELK_E_TLS_HOSTNAME, -51, "TLS: server certificate does not match the host name (SNI)")       \
    X(ELK_E_TLS_EXPIRED, -52, "TLS: server certificate expired or not yet valid")                  \
    X(ELK_E_TLS_NOT_TLS, -53, "TLS: the server did not answer with TLS (plain port?)")             \
    X(ELK_E_TLS_HANDSHAKE_CUT, -54, "TLS: handshake cut off by the peer")                          \
    X(ELK_E_TLS_CONFIG, -55, "TLS: bad CA, certificate or key (unreadable or not PEM)")            \
    X(ELK_E_TLS_CLIENT_CERT, -56, "TLS: server requires a client certificate (mutual TLS)")        \
    X(ELK_E_TLS, -57, "TLS: handshake or record error")                                            \
    X(ELK_E_TLS_VERSION, -58,                                                                      \
      "TLS: no protocol version in common with the server (TLS 1.2 is the minimum)")               \
    /* node connection */                                                                          \
    X(ELK_E_AUTH, -60, "AUTH refused: wrong user or password")                                     \
    X(ELK_E_TIMEOUT, -61, "request timed out; the connection was reset")                           \
    X(ELK_E_NOT_CONNECTED, -62, "node not connected; request not sent")                            \
    X(ELK_E_QUEUE_FULL, -63, "too many requests in flight (CONFIG_ELK_NODE_MAX_INFLIGHT)")         \
    X(ELK_E_SERVER_ERROR, -64, "server replied with an error")                                     \
    X(ELK_E_NOSCRIPT, -65, "server does not have the script cached (NOSCRIPT)")                    \
    X(ELK_E_UNEXPECTED_REPLY, -66, "server reply had an unexpected type")                          \
    X(ELK_E_SELECT, -67, "SELECT of the configured database failed")                               \
    X(ELK_E_DISCONNECTED, -68, "connection lost before the reply arrived")                         \
    /* lock engine */                                                                              \
    X(ELK_E_LOCK_BUSY, -80, "lock held by another holder (a quorum said so)")                      \
    X(ELK_E_FLEET_UNAVAILABLE, -81, "too few nodes answered to reach a quorum")                    \
    X(ELK_E_LOCK_TIMEOUT, -82, "wait deadline passed before the lock was acquired")                \
    X(ELK_E_LOCK_LOST, -83, "lease lost: the deadline passed before a quorum confirmed a renewal") \
    X(ELK_E_NOT_HELD, -84, "lock is not held by this holder")                                      \
    X(ELK_E_TOO_MANY_LOCKS, -85, "no free lock slot (CONFIG_ELK_MAX_LOCKS)")                       \
    X(ELK_E_VALIDITY, -86, "validity left after the round is below min_validity")                  \
    X(ELK_E_MAX_HOLD, -87, "max_hold reached: the lease was not renewed and ran out")              \
    X(ELK_E_UNSAFE_SERVER, -88, "server settings make locks unsafe (see the log)")                 \
    X(ELK_E_ENTROPY, -89, "entropy source failed")                                                 \
    X(ELK_E_LOCK_TAKEN, -90,                                                                       \
      "lease lost: a quorum of nodes no longer holds this holder's value (expired there, or "      \
      "another holder has it)")                                                                    \
    X(ELK_E_MAX_RENEWALS, -91, "max_renewals reached: the lease was not renewed and ran out")      \
    X(ELK_E_FLEET_LOST, -92,                                                                       \
      "lease lost: too few nodes were reachable to renew it before the deadline")                  \
    X(ELK_E_LOCK_ABANDONED, -93,                                                                   \
      "lease given up: renewal was stopped because its holder could not be confirmed stopped")     \
    X(ELK_E_LOCK_DELAY, -94,                                                                       \
      "lock-delay: the last lease ended without a release; no grant until lock_delay after it "    \
      "could last have been valid")                                                                \
    X(ELK_E_NODE_QUARANTINED, -95,                                                                 \
      "node quarantined: it restarted (or its restart cannot be ruled out) or its clock jumped; "  \
      "no vote until the longest lease could have expired (see STATUS)")                           \
    X(ELK_E_CLOCK_JUMP, -96,                                                                       \
      "node's clock jumped (ahead or back) beyond the drift bound: its vote is not counted and "   \
      "it is quarantined; check NTP on that server")                                               \
    X(ELK_E_KEEPALIVE_MISSED, -97,                                                                 \
      "the work holding the lease missed its keepalive: renewal stopped (hung command?)")          \
    X(ELK_E_CLOCK_UNVERIFIED, -98,                                                                 \
      "node's clock could not be checked closely enough (its last TIME reading was older than "    \
      "the lock's TTL): that reply's vote is not counted; the next one compares with it")          \
    X(ELK_E_NODE_AMNESIA, -99,                                                                     \
      "node lost its data while it stayed up (its fleet marker is gone or younger than the "       \
      "longest lease): no vote until that lease could have expired; check eviction, FLUSHALL, "    \
      "failover")                                                                                  \
    /* fencing */                                                                                  \
    X(ELK_E_FENCE_STALE, -100, "fencing token lower than one already accepted: refused")           \
    X(ELK_E_FENCE_STORAGE, -101, "fencing state storage failed (read, write or sync)")             \
    X(ELK_E_FENCE_CORRUPT, -102,                                                                   \
      "fencing state file is corrupt (bad format or checksum); check the actuator, then restore "  \
      "or remove the file")                                                                        \
    X(ELK_E_FENCE_TOKEN, -103, "fencing token is missing, zero or not a decimal number")           \
    X(ELK_E_FENCE_BUSY, -104,                                                                      \
      "fencing guard busy: another step holds it and the wait ran out; retry, or wait longer (a "  \
      "step that never ends keeps it: check the actuator's command)")                              \
    /* configuration (agent) */                                                                    \
    X(ELK_E_CONFIG, -110, "invalid configuration")                                                 \
    /* control socket (agent) */                                                                   \
    X(ELK_E_CTL_SYNTAX, -111, "malformed control request (see docs/control-protocol.md)")          \
    X(ELK_E_CTL_UNKNOWN, -112, "unknown control command (try HELP)")                               \
    X(ELK_E_CTL_TOO_LONG, -113, "control line too long (limit ELK_CTL_LINE_MAX bytes)")            \
    X(ELK_E_RESOURCE_UNKNOWN, -114,                                                                \
      "resource not configured: add a [resource NAME] section to elkd.conf")                       \
    X(ELK_E_ALREADY_HELD, -115, "this connection already holds or is waiting for that resource")   \
    X(ELK_E_SHUTTING_DOWN, -116, "agent is shutting down; no new locks are granted")               \
    X(ELK_E_AGENT_UNREACHABLE, -117,                                                               \
      "cannot reach elkd on its control socket: is it running? (see --socket)")                    \
    X(ELK_E_AGENT_FULL, -118, "agent has no free client slot; retry later")                        \
    /* simulator (port/sim) */                                                                     \
    X(ELK_E_SIM_QUEUE_FULL, -140,                                                                  \
      "simulator event queue full; raise its capacity or shorten the run")                         \
    /* local authorization and safety check (issue 18) */                                          \
    X(ELK_E_FORBIDDEN, -150,                                                                       \
      "not allowed to take this resource: add the user to allow_users or a group to allow_groups " \
      "in its [resource] section of elkd.conf")                                                    \
    X(ELK_E_CANCELLED, -151, "request cancelled by a RELEASE sent before it was answered")         \
    X(ELK_E_SERVER_UNCHECKED, -152,                                                                \
      "server not checked yet (its vote-hygiene probe, or the safety check under safety_check = "  \
      "refuse, is pending) or not checkable: no vote; see the log and docs/redis-acl.md")          \
    X(ELK_E_SOCKET_SETUP, -153,                                                                    \
      "cannot give the control socket its mode or group (socket_mode, socket_group in [agent])")   \
    /* issue 26 */                                                                                 \
    X(ELK_E_SUPERVISE_DENIED, -154,                                                                \
      "SUPERVISE refused: every process of the group must run as the requesting user (a process "  \
      "of another user is in it, or the group is gone)")                                           \
    X(ELK_E_LOCAL_CLOCK, -155,                                                                     \
      "every node's clock seems to jump at the same rate: this gateway's own clock is the likely " \
      "cause; check its oscillator, NTP and CLOCK_BOOTTIME (docs/design.md)")                      \
    X(ELK_E_CTL_STALLED, -156,                                                                     \
      "control client stopped reading its answers for too long: disconnected (its command is "     \
      "stopped first; a lease nobody supervises runs out, it is not released early)")              \
    X(ELK_E_PERMITS_TAKEN, -170,                                                                   \
      "every permit of the semaphore is held by others (a quorum said so for each): wait for one " \
      "(a wait deadline), or raise permits if the shared budget allows")

/* Every error code of edgelock (ELK_OK is 0, errors are negative); elk_err_name and
 * elk_err_message give the name and the text. */
typedef enum elk_err {
#define ELK_ERR_ENUM_(name, value, msg) name = (value),
    ELK_ERR_LIST(ELK_ERR_ENUM_)
#undef ELK_ERR_ENUM_
        ELK_ERR_END_ = -1000
} elk_err_t;

/* Symbolic name of an error code ("ELK_E_TIMEOUT"); "ELK_E_UNKNOWN" for codes not in the list. */
const char *elk_err_name(int code);

/* One-line message a person can act on; static storage, never NULL. */
const char *elk_err_message(int code);

#ifdef __cplusplus
}
#endif

#endif /* ELK_ERR_H */
