/* SPDX-License-Identifier: MIT */
/*
 * elkd configuration: an INI file parsed into fixed arrays, but for the resources: their
 * table is taken from the heap as the file names them (a gateway may serve thousands), up to
 * ELKFW_MAX_RESOURCES; elkfw_conf_free gives it back.
 *
 * Sections: [fleet], [node NAME] (or [node.NAME]), [resource NAME], [semaphore NAME], [agent].
 * A [semaphore NAME] of permits = N is served as N resources "NAME#1".."NAME#N" (the names
 * lib/sem gives its permits): the parser expands it, so everything downstream sees resources.
 * Every key is documented in README.md ("Configuration") and firmware/elkd.conf.sample.
 * An invalid file yields one message naming the file, line and key, e.g.
 *   elkd.conf:12: key 'ttl' in [resource valve-1]: '10x' is not a duration (use e.g. 500ms or 10s)
 * and elkd exits with code 2 without starting anything.
 */
#ifndef ELKFW_CONF_H
#define ELKFW_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/config.h"
#include "elk/err.h"
#include "elk/lock.h"

#define ELKFW_NAME_MAX 64    /* node and resource names, including the NUL */
#define ELKFW_STR_MAX 256    /* host, paths, user, password, server name */
#define ELKFW_SOCKET_MAX 108 /* sun_path size on Linux */
/* The most resources one configuration may hold: CONFIG_ELKD_MAX_RESOURCES, or fewer when
 * the lock client has fewer slots (each resource is one lock, CONFIG_ELK_MAX_LOCKS). Only a
 * limit: the tables are as large as the file needs. */
#define ELKFW_MAX_RESOURCES                                                                        \
    (CONFIG_ELKD_MAX_RESOURCES < CONFIG_ELK_MAX_LOCKS ? CONFIG_ELKD_MAX_RESOURCES                  \
                                                      : CONFIG_ELK_MAX_LOCKS)
/* The largest file elkfw_conf_load reads: room for the most resources the build takes, a
 * few keys each (a larger file is refused as likely the wrong one). */
#define ELKFW_CONF_MAX_BYTES (256 * 1024 + ELKFW_MAX_RESOURCES * 512)
/* The Kconfig symbol that sets ELKFW_MAX_RESOURCES and what to do, for messages. */
#define ELKFW_MAX_RESOURCES_HINT                                                                   \
    (CONFIG_ELKD_MAX_RESOURCES < CONFIG_ELK_MAX_LOCKS                                              \
         ? "CONFIG_ELKD_MAX_RESOURCES; raise it to serve more"                                     \
         : "CONFIG_ELK_MAX_LOCKS, one lock slot a resource; raise it, and "                        \
           "CONFIG_ELKD_MAX_RESOURCES if it is lower, to serve more")
/* The most permits one [semaphore] may have (each permit is one resource, one lock). */
#define ELKFW_MAX_PERMITS 64
#define ELKFW_PREFIX_MAX 64
#define ELKFW_ERR_MAX 2048 /* an error buffer: room for several problems, one a line */

typedef enum { ELKFW_MODE_SINGLE = 0, ELKFW_MODE_REDLOCK = 1 } elkfw_mode_t;
typedef enum { ELKFW_LOG_STDERR = 0, ELKFW_LOG_SYSLOG = 1 } elkfw_log_target_t;
typedef enum {
    ELKFW_SAFETY_WARN = 0,
    ELKFW_SAFETY_REFUSE = 1,
    ELKFW_SAFETY_OFF = 2
} elkfw_safety_t;

/* TLS settings; in [fleet] they are the defaults every node inherits. */
typedef struct elkfw_tls_conf {
    int on; /* 1 on, 0 off, -1 not set (inherit) */
    char ca[ELKFW_STR_MAX];
    char cert[ELKFW_STR_MAX];
    char key[ELKFW_STR_MAX];
} elkfw_tls_conf_t;

typedef struct elkfw_node_conf {
    char name[ELKFW_NAME_MAX];
    char host[ELKFW_STR_MAX];
    uint16_t port; /* default 6379 */
    elkfw_tls_conf_t tls;
    char server_name[ELKFW_STR_MAX]; /* SNI + certificate name; empty: host */
    char user[ELKFW_STR_MAX];
    char password[ELKFW_STR_MAX];
    char password_file[ELKFW_STR_MAX]; /* read by elkfw_conf_load into password */
    uint32_t db;
    uint32_t connect_timeout_ms; /* 0: [fleet] default */
    uint32_t request_timeout_ms;
    int line; /* line of the section header, for messages */
    int password_file_line;
} elkfw_node_conf_t;

typedef struct elkfw_resource_conf {
    char name[ELKFW_NAME_MAX];
    uint32_t ttl_ms;
    uint32_t renew_fraction_ppm; /* renew after this share of the ttl (1e6 = all of it) */
    uint32_t stop_margin_ms;     /* time the actuator needs to reach its safe state */
    uint32_t min_validity_ms;
    uint32_t max_hold_ms;  /* 0: unlimited (default CONFIG_ELK_DEFAULT_MAX_HOLD_MS) */
    uint32_t max_renewals; /* 0: unlimited */
    bool fencing;
    uint32_t wait_min_ms, wait_max_ms; /* random retry delay range while waiting */
    bool release_channel;
    uint32_t lock_delay_ms; /* no grant until this long after an unclean end (default 0) */
    uint32_t keepalive_ms;  /* KEEPALIVE needed this often while held; 0 (default): off */
    /* Fair waiting (docs/design.md "Fair waiting"): this gateway's acquire takes a ticket in
     * a queue on the fleet and asks for the lock only at its head. [resource] only. */
    bool fair;
    int fair_line; /* 0: key not set; for messages */
    /* Who may take it: comma-separated user / group names or numeric ids (resolved by
     * elkfw_access_resolve). Both empty: every peer that can reach the socket. */
    char allow_users[ELKFW_STR_MAX];
    char allow_groups[ELKFW_STR_MAX];
    int allow_users_line, allow_groups_line;
    /* A permit of a [semaphore]: its name is "<semaphore>#<permit>", permit 1..permits.
     * permits 0: a plain [resource]. */
    uint32_t permits, permit;
    bool semaphore;   /* from a [semaphore] section (before expansion: the template) */
    int permits_line; /* 0: key not set */
    int line;
    int ttl_line, stop_margin_line, min_validity_line; /* 0: key not set; for messages */
    int max_hold_line;
} elkfw_resource_conf_t;

typedef struct elkfw_agent_conf {
    char socket_path[ELKFW_SOCKET_MAX];
    uint32_t socket_mode;              /* permission bits of the socket (default 0660) */
    char socket_group[ELKFW_NAME_MAX]; /* group name or gid; empty: elkd's own group */
    uint32_t max_clients_per_uid;      /* 0: half of elkd's client slots */
    int socket_group_line;
    elkfw_log_target_t log_target;
    int log_level; /* ELK_LOG_ERROR..ELK_LOG_DEBUG */
    elkfw_safety_t safety_check;
    uint32_t log_summary_ms;          /* a node still down is summed up at most this often */
    char metrics_file[ELKFW_STR_MAX]; /* Prometheus text file, rewritten atomically; "": none */
    uint32_t metrics_interval_ms;     /* how often metrics_file is rewritten */
    char events_file[ELKFW_STR_MAX];  /* lease event record (a ring, elkfw/evlog.h); "": none */
    uint32_t events_max;              /* records the ring holds */
    uint32_t client_stall_timeout_ms; /* a client whose answers do not move this long is dropped */
    uint32_t client_idle_timeout_ms;  /* a client holding nothing, silent this long, is closed
                                         (0: never) */
} elkfw_agent_conf_t;

typedef struct elkfw_conf {
    char path[ELKFW_STR_MAX]; /* file name used in messages */
    /* [fleet] */
    elkfw_mode_t mode;
    char gateway_id[CONFIG_ELK_GATEWAY_ID_MAX_LEN + 1]; /* empty: elkd uses the host name */
    char key_prefix[ELKFW_PREFIX_MAX];
    elkfw_tls_conf_t tls;
    uint32_t connect_timeout_ms;
    uint32_t request_timeout_ms;
    uint32_t drift_factor_ppm;
    uint32_t drift_fixed_ms;
    bool vote_hygiene;      /* restarted / clock-jumped masters lose their vote (default on) */
    uint32_t quarantine_ms; /* how long they lose it; 0 (default): automatic */
    int vote_hygiene_line;  /* 0: key not set; for messages */
    bool batch_renewals;    /* renew due leases together, one request per node (default on) */
    /* [node ...] */
    elkfw_node_conf_t nodes[CONFIG_ELK_MAX_NODES];
    size_t n_nodes;
    /* [resource ...]: heap, n_resources of cap_resources used (NULL when none) */
    elkfw_resource_conf_t *resources;
    size_t n_resources, cap_resources;
    /* [agent] */
    elkfw_agent_conf_t agent;
} elkfw_conf_t;

/* Fill c with defaults (no nodes, no resources). c's memory is all overwritten: a resource
 * table it had is not given back (elkfw_conf_free first). */
void elkfw_conf_defaults(elkfw_conf_t *c);

/* Give back c's resource table (c keeps no resources). c is zeroed, from
 * elkfw_conf_defaults or from elkfw_conf_parse; safe to call twice. */
void elkfw_conf_free(elkfw_conf_t *c);

/* Parse len bytes of INI text (need not be NUL-terminated) named filename (for
 * messages) into c, then check it as a whole (node count for the mode, margins that
 * leave validity, ...). No I/O: password_file is recorded, not read. c must be zeroed or
 * hold an earlier result (whose resource table is given back first); the new table is c's
 * (elkfw_conf_free), also after a failure. Returns ELK_OK, ELK_E_NO_RESOURCES (no memory
 * for the table) or ELK_E_CONFIG with the reason in err (always NUL-terminated, errlen >= 1). */
int elkfw_conf_parse(elkfw_conf_t *c, const char *filename, const char *text, size_t len, char *err,
                     size_t errlen);

/* Read path, parse it, read every password_file, then run the preflight on the files and
 * names it points at (elkfw/preflight.h). Same result contract. */
int elkfw_conf_load(elkfw_conf_t *c, const char *path, char *err, size_t errlen);

/* Parse a duration: "500ms", "10s", "2m", "1h" or plain milliseconds. Returns true
 * and *ms on success (at most UINT32_MAX ms). */
bool elkfw_parse_duration(const char *s, size_t len, uint32_t *ms);

/* True if name (len bytes) is a valid resource/node name: 1..max bytes of
 * [A-Za-z0-9._:/@-]. Used by the config and the control protocol alike. */
bool elkfw_name_valid(const char *name, size_t len, size_t max);

/* True if name (len bytes) is a lease name a client may use: a resource name as
 * elkfw_name_valid says (at most max bytes in all), or a semaphore's permit "NAME#k" (k a
 * decimal 1..ELKFW_MAX_PERMITS without leading zeros). */
bool elkfw_lease_name_valid(const char *name, size_t len, size_t max);

/* The length of the semaphore part of a permit's name ("pumps#2": 5), or 0 when name
 * (NUL-terminated) is not a permit's. */
size_t elkfw_permit_sem_len(const char *name);

/* Longest resource name the key layout allows with this prefix:
 * "<prefix>{<name>}:released" must fit CONFIG_ELK_MAX_KEY_LEN. */
size_t elkfw_resource_name_max(const elkfw_conf_t *c);

/* The lease engine's settings for resource r of c (the conversion elkd uses, and that the
 * file's check runs elk_lock_config_explain on, so both apply one safety rule). */
void elkfw_resource_lock_config(const elkfw_conf_t *c, const elkfw_resource_conf_t *r,
                                elk_lock_config_t *out);

/* The warnings about a parsed c (a valid file that is still risky, e.g. max_hold = 0):
 * the first one at or after *pos into out (cap bytes, NUL-terminated, prefixed like the
 * errors with "file:line: "), advancing *pos past it; false when there is none left. */
bool elkfw_conf_warning(const elkfw_conf_t *c, size_t *pos, char *out, size_t cap);

/* True if host (NUL-terminated) is a numeric IPv4 or IPv6 address. */
bool elkfw_host_is_ip(const char *host);

/* Find a resource by name (len bytes); NULL if not configured. */
const elkfw_resource_conf_t *elkfw_conf_resource(const elkfw_conf_t *c, const char *name,
                                                 size_t len);

/* Names for enums, for status and messages. */
const char *elkfw_mode_name(elkfw_mode_t m);

#endif /* ELKFW_CONF_H */
