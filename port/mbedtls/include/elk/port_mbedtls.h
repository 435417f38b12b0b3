/* SPDX-License-Identifier: MIT */
/*
 * port/mbedtls: a TLS client transport over ANY other elk_transport_t (posix TCP,
 * lwIP, the simulator), presenting the same elk_transport_t interface, so lib/ never
 * knows whether a node speaks TLS.
 *
 * Two caller-allocated objects:
 *  - elk_tls_shared_t: one per deployment. mbedtls_ssl_config, the CA chain, the
 *    optional client certificate and key, and the CTR-DRBG, seeded from an injected
 *    elk_entropy_t (never /dev/urandom directly). Many connections share it.
 *  - elk_tls_conn_t: one per connection. The mbedtls_ssl_context and the inner transport.
 * Like lib/, this port expects one event loop: connections sharing one elk_tls_shared_t
 * (and so one DRBG) must not be driven from different threads at once.
 *
 * Policy (not switchable): the server certificate MUST chain to the configured CA,
 * its name MUST match endpoint.server_name (or host when that is NULL; the same name is
 * sent as SNI), TLS 1.2 is the minimum (a server offering less, or only
 * what this build lacks, fails with ELK_E_TLS_VERSION), TLS 1.3 is offered when the library has it (mbedTLS 3.x built with
 * MBEDTLS_SSL_PROTO_TLS1_3), and a failed handshake is an error, never a fall-back to
 * plaintext. Mutual TLS: configure a client certificate and key.
 *
 * mbedTLS versions: 2.28 and 3.6 (chosen by MBEDTLS_VERSION_NUMBER), public API only.
 * With 3.x, elk_tls_shared_init calls psa_crypto_init() (TLS 1.3 needs PSA); PSA's own
 * random generator is then seeded by mbedTLS's platform entropy, not by the injected
 * elk_entropy_t, unless mbedTLS is built with MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG.
 * TLS 1.3 finishes the client's handshake before the server has judged its certificate:
 * a mutual-TLS refusal then shows on the first recv() (ELK_E_TLS_CLIENT_CERT without a
 * certificate, ELK_E_TLS with one), not in progress().
 *
 * Memory: this port itself never calls malloc, but mbedTLS allocates through its own
 * allocator (mbedtls_calloc/mbedtls_free): the record buffers in elk_tls_conn_init
 * (about 2 x 16 KiB), parsed certificates in elk_tls_shared_init, transient
 * handshake state during each handshake, and the kept session's ticket and copy of the
 * server's certificate (elk_tls_conn_resumed) after each completed handshake. A benchmark measures it; on a device, point
 * mbedTLS at a static arena with mbedtls_memory_buffer_alloc_init().
 *
 * Time: certificate validity checks use mbedTLS's platform time (time() on Linux,
 * MBEDTLS_HAVE_TIME_DATE). lwIP/Cortex-M builds must provide a wall clock to mbedTLS
 * (mbedtls_platform_set_time / MBEDTLS_PLATFORM_TIME_ALT) or expiry cannot be checked;
 * that wall clock is never used by lib/'s lease arithmetic.
 */
#ifndef ELK_PORT_MBEDTLS_H
#define ELK_PORT_MBEDTLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "elk/err.h"
#include "elk/platform.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Where the CA, client certificate and key come from. For each, give a file path OR a
 * PEM buffer (a device keeps them in flash); the buffer wins when both are set.
 * PEM text must be NUL-terminated (as a C string literal is); len may count the NUL or
 * not, and 0 means strlen. DER (starts with 0x30) is taken with exactly len bytes.
 * All pointers are read only during elk_tls_shared_init.
 */
typedef struct elk_tls_config {
    const char *ca_file; /* required (file or buffer): CA(s) the server must chain to */
    const uint8_t *ca_pem;
    size_t ca_pem_len;
    const char *cert_file; /* optional client certificate (mutual TLS) */
    const uint8_t *cert_pem;
    size_t cert_pem_len;
    const char *key_file; /* its private key; required when a certificate is set */
    const uint8_t *key_pem;
    size_t key_pem_len;
    const char *key_password; /* for an encrypted key, else NULL */
    /* Optional diagnosis of a plain-TCP server on the TLS port. A plain Redis does not
     * answer a ClientHello at all (it waits for a newline that never comes), so without
     * a clock that case looks like a slow server and ends in the caller's connect
     * timeout. With clock set and silent_ms > 0, a handshake whose ClientHello has gone
     * out and that has received not one byte for silent_ms fails with ELK_E_TLS_NOT_TLS.
     * A stalled TLS server reads the same; pick silent_ms well above the worst RTT and
     * below the connect timeout. The check runs inside progress(), so the caller's loop
     * must call progress() again by then (wait no longer than silent_ms at a time while
     * connecting). clock is copied; its ctx must outlive the shared state. */
    const elk_clock_t *clock;
    uint32_t silent_ms;
} elk_tls_config_t;

/* State shared by many connections. Caller-allocated; fields internal to the port.
 * mbedTLS keeps pointers into it: do not move or copy it after elk_tls_shared_init. */
typedef struct elk_tls_shared {
    mbedtls_ssl_config conf;
    mbedtls_x509_crt ca;
    mbedtls_x509_crt cert;
    mbedtls_pk_context key;
    mbedtls_ctr_drbg_context drbg;
    elk_entropy_t entropy; /* copy of the injected source (its ctx stays the caller's) */
    elk_clock_t clock;     /* copy of cfg->clock, or now_ms NULL */
    uint32_t silent_ms;
    bool has_cert;
    bool ready;
    int last_mbedtls_err; /* of the last failed call in elk_tls_shared_init */
} elk_tls_shared_t;

/* What the port reads from the server's plaintext handshake records as they pass
 * through (mbedTLS 3.x has no public accessor for it): a CertificateRequest, a
 * ServerHello below TLS 1.2, a protocol_version alert. Internal to the port. */
typedef struct elk_tls_sniff {
    uint8_t hdr[5]; /* record header being collected */
    uint8_t hdr_n;
    uint8_t hs_hdr_n; /* handshake message header bytes seen (0..4) */
    uint8_t hs_type;
    uint8_t hs_ver_hi; /* first body byte of a ServerHello */
    uint16_t rec_left; /* body bytes left in the current record */
    uint16_t rec_pos;  /* body bytes seen of the current record */
    uint32_t hs_left;  /* body bytes left in the current handshake message */
    uint32_t hs_pos;
    uint32_t sh_ext_at; /* ServerHello: offset of the next extension header */
    uint32_t sh_word;   /* ServerHello: that header's bytes so far */
    bool off;           /* encrypted records started: nothing more to read */
    bool encrypted;     /* an application_data record came (TLS 1.3 flight) */
    bool cert_request;  /* the server sent a CertificateRequest (TLS 1.2) */
    bool old_version;   /* the server chose a protocol below TLS 1.2 */
    bool version_alert; /* the server sent a protocol_version alert */
    bool server_cert;   /* the server sent its Certificate in the clear (TLS 1.2 full) */
    bool psk_accepted;  /* the ServerHello has pre_shared_key (TLS 1.3: ticket taken) */
} elk_tls_sniff_t;

/* One TLS connection. Caller-allocated; fields internal to the port. */
typedef struct elk_tls_conn {
    mbedtls_ssl_context ssl;
    elk_tls_shared_t *shared;
    elk_transport_t inner; /* copy; its ctx stays owned by the caller */
    uint8_t state;         /* closed, connecting, handshaking, ready, failed */
    bool setup;            /* ssl set up (record buffers allocated) */
    bool rx_any;           /* any byte received during this handshake */
    bool rx_not_tls;       /* the first byte received was no TLS record type */
    bool hello_out;        /* ClientHello fully handed to the inner transport */
    bool silent_close;     /* closed while the server had said nothing */
    bool done;             /* the last handshake completed */
    bool cert_requested;   /* the server sent a CertificateRequest (mutual TLS) */
    bool tx_unflushed;     /* a record is only partly handed to the inner transport */
    bool rx_app;           /* application data received since the handshake */
    bool final_flight;     /* we sent after the server's encrypted flight (TLS 1.3) */
    elk_tls_sniff_t sniff;
    uint64_t hello_at; /* when hello_out became true (shared clock) */
    unsigned want;     /* ELK_WAIT_* the last mbedTLS call is waiting for */
    int inner_err;     /* negative elk_err_t from the inner transport, else 0 */
    int last_mbedtls_err;
    int last_err;          /* last negative elk_err_t, ELK_OK if none */
    size_t pending_len;    /* bytes mbedTLS holds encrypted from a blocked send */
    uint32_t verify_flags; /* mbedtls_ssl_get_verify_result() of the last handshake */
    /* Session resumption (see elk_tls_conn_resumed): the session of the last verified
     * handshake with this connection's server, kept here, in the caller's memory, across
     * reconnects (mbedTLS allocates the ticket and peer certificate inside it). */
    mbedtls_ssl_session session;
    uint32_t session_peer; /* which endpoint it belongs to (hash of names and port) */
    bool has_session;
    bool offered; /* the last handshake offered the kept session */
    bool resumed; /* the last handshake was abbreviated (the server took the session) */
} elk_tls_conn_t;

/*
 * Load CA / certificate / key (files or buffers), seed the DRBG from entropy (copied;
 * entropy->ctx must outlive shared), and build the client config: verification
 * required, TLS >= 1.2. Returns ELK_OK, ELK_E_INVALID_ARG, ELK_E_TLS_CONFIG (no CA,
 * unreadable or bad PEM, key not matching the certificate, certificate without key),
 * ELK_E_ENTROPY (DRBG seeding failed). On failure nothing needs freeing, but calling
 * elk_tls_shared_free is harmless.
 */
int elk_tls_shared_init(elk_tls_shared_t *shared, const elk_tls_config_t *cfg,
                        const elk_entropy_t *entropy);

/* Release everything elk_tls_shared_init loaded (call only after that init, whatever it
 * returned). Free every connection that uses it first. */
void elk_tls_shared_free(elk_tls_shared_t *shared);

/*
 * Prepare conn to run TLS over inner (copied; inner->ctx stays the caller's) and fill
 * *out with an elk_transport_t whose ctx is conn:
 *  open()     inner open(); the endpoint's server_name (or host) is used for SNI and
 *             the certificate name check.
 *  progress() drives inner progress() then the handshake, without blocking: 1 when
 *             ready, 0 in progress (see wait()), or ELK_E_TLS_UNKNOWN_CA, _HOSTNAME,
 *             _EXPIRED, _NOT_TLS, _HANDSHAKE_CUT, _CLIENT_CERT, _VERSION, ELK_E_TLS, or the inner
 *             transport's error. As with TCP, the caller enforces the timeout.
 *  send/recv  application data: >0, 0 would block, ELK_E_CLOSED (close_notify or EOF),
 *             ELK_E_TLS, or the inner error. Two rules from mbedTLS's record layer:
 *             - after send() returned 0, the next send() must start with the same bytes
 *               (at least as many): mbedTLS may hold them already encrypted. An append-
 *               only transmit buffer (lib/node's) satisfies this; send() then reports
 *               them taken once flushed.
 *             - call recv() until it returns 0 before waiting on the descriptor: a whole
 *               record is decrypted at once, and bytes left inside mbedTLS do not make
 *               the socket readable.
 *  close()    best-effort close_notify, then inner close().
 * Allocates mbedTLS record buffers (see top): call elk_tls_conn_free before initialising
 * the same conn again. Returns ELK_OK, ELK_E_INVALID_ARG, ELK_E_NO_RESOURCES (mbedTLS
 * could not allocate).
 */
int elk_tls_conn_init(elk_tls_conn_t *conn, elk_tls_shared_t *shared, const elk_transport_t *inner,
                      elk_transport_t *out);

/* Close (if open) and release the ssl context's memory. */
void elk_tls_conn_free(elk_tls_conn_t *conn);

/* Why the last handshake got nowhere, for a caller whose own connect timeout ended it
 * (lib/node reports ELK_E_CONNECT_TIMEOUT): ELK_E_TLS_NOT_TLS when the ClientHello went
 * out and not one byte came back (a plain port, or a stalled server), ELK_E_CONNECT_TIMEOUT
 * when TCP or the handshake were merely slow, ELK_OK when the last handshake finished.
 * Valid after close() until the next open(). */
int elk_tls_conn_stall_reason(const elk_tls_conn_t *conn);

/* Session resumption. After every completed (and so verified) TLS 1.2 handshake the
 * connection keeps the session (the server's ticket, or its session id when it caches
 * sessions instead) and offers it at the next open() to the same endpoint (server_name,
 * host and port unchanged), so a reconnect costs an abbreviated handshake: no
 * certificate chain, no key exchange. The server decides: a server without the session
 * (restarted, expired, another server on that address) answers with a full handshake,
 * whose certificate is verified as always. The kept session is dropped on any failed
 * handshake (a verification failure among them), on another endpoint, and by
 * elk_tls_conn_free.
 * TLS 1.3 (mbedTLS 3.x built with MBEDTLS_SSL_PROTO_TLS1_3 and MBEDTLS_SSL_SESSION_TICKETS;
 * never with 2.28): the server's ticket arrives after the handshake, as a NewSessionTicket
 * between replies; recv() keeps it (the newest one) and reads on, so the caller never
 * sees it. A reconnect offers it as a pre-shared key and the server that issued it
 * resumes: it sends no certificate, so the certificate is not checked again and trust
 * rests on the first, verified handshake that led to the ticket. A ticket is offered
 * once (the handshake spends it; the server sends a fresh one). It is dropped like a TLS 1.2
 * session (a server refusing our client certificate does so before it sends any ticket);
 * a changed CA means a new elk_tls_shared_t and so new connections, with no ticket. A
 * link lost before the server's ticket was read leaves none: the next connect is full.
 * elk_tls_conn_resumed: true when the last completed handshake was abbreviated (the
 * kept session was offered and taken: TLS 1.2, the server sent no certificate; TLS 1.3,
 * its ServerHello accepted the pre-shared key). */
bool elk_tls_conn_resumed(const elk_tls_conn_t *conn);

/* Drop the kept session (the next handshake is a full one). */
void elk_tls_conn_forget_session(elk_tls_conn_t *conn);

/* The negotiated protocol after a completed handshake ("TLSv1.2", "TLSv1.3"; from
 * mbedtls_ssl_get_version), or "" before. The string is static. */
const char *elk_tls_conn_version(const elk_tls_conn_t *conn);

/* The mbedTLS code behind the last TLS error (0 if none), and verification flags of
 * the last handshake (MBEDTLS_X509_BADCERT_*), for logs and tests. */
int elk_tls_conn_last_mbedtls_error(const elk_tls_conn_t *conn);
uint32_t elk_tls_conn_verify_flags(const elk_tls_conn_t *conn);

/* mbedtls_strerror of an mbedTLS code into buf (caller-owned, len bytes, always
 * NUL-terminated when len > 0). Returns buf. */
char *elk_tls_strerror(int mbedtls_err, char *buf, size_t len);

/* Human text for conn's last error: the elk message, the mbedTLS text and, for a
 * failed verification, mbedtls_x509_crt_verify_info. Written into buf (caller-owned).
 * Returns buf. */
char *elk_tls_conn_error_text(const elk_tls_conn_t *conn, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* ELK_PORT_MBEDTLS_H */
