/* SPDX-License-Identifier: MIT */
/*
 * RESP2/RESP3 encoder and incremental decoder, with no heap and no copies.
 *
 * Encoder: commands are arrays of bulk strings written into a caller buffer. The
 * writer keeps counting the bytes it would need after the buffer is full, so one
 * pass tells the caller the size to provide; it never writes past the buffer.
 *
 * Decoder: the reader owns nothing. The caller gives it a byte buffer (received
 * bytes are appended there, ideally by recv() straight into elk_resp_reader_space)
 * and a node array. A complete reply comes out as a flat preorder array of nodes
 * whose string values are views into the byte buffer. Parsing resumes where it
 * stopped, so a reply fed one byte at a time costs the same as one fed whole.
 */
#ifndef ELK_RESP_H
#define ELK_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elk/err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- encoder */

/* One command argument: bytes (ptr, len) or, when is_int is set, the integer ival
 * formatted in decimal. */
typedef struct elk_resp_arg {
    const uint8_t *ptr;
    size_t len;
    int64_t ival;
    bool is_int;
} elk_resp_arg_t;

/* Helpers to build an argument list without a heap. */
#define ELK_RESP_ARG_STR(s)                                                                        \
    {                                                                                              \
        (const uint8_t *)(s), sizeof(s) - 1u, 0, false                                             \
    }

/* Argument from bytes (not copied). Inline: built in place in the caller's argv, where
 * a call would return a copy (about 20 bytes of flash per argument on Cortex-M). */
static inline elk_resp_arg_t elk_resp_arg_bytes(const uint8_t *p, size_t len)
{
    elk_resp_arg_t a;
    a.ptr = p;
    a.len = len;
    a.ival = 0;
    a.is_int = false;
    return a;
}
/* Argument from a NUL-terminated string (the string is not copied). */
static inline elk_resp_arg_t elk_resp_arg_cstr(const char *s)
{
    return elk_resp_arg_bytes((const uint8_t *)s, s != NULL ? strlen(s) : 0u);
}
/* Argument formatted from an integer. */
static inline elk_resp_arg_t elk_resp_arg_int(int64_t v)
{
    elk_resp_arg_t a;
    a.ptr = NULL;
    a.len = 0;
    a.ival = v;
    a.is_int = true;
    return a;
}

/* Writes one RESP request into a caller-owned buffer (elk_resp_writer_init). */
typedef struct elk_resp_writer {
    uint8_t *buf; /* caller-owned */
    size_t cap;
    size_t len;   /* bytes needed so far; bytes written is min(len, cap) */
    bool invalid; /* a NULL pointer with a non-zero length was written: finish refuses */
} elk_resp_writer_t;

/* Start writing into buf[0..cap). buf may be NULL with cap 0 to only measure. */
void elk_resp_writer_init(elk_resp_writer_t *w, uint8_t *buf, size_t cap);
/* Append "*<n>\r\n". */
void elk_resp_write_array_header(elk_resp_writer_t *w, size_t n);
/* Append one bulk string "$<len>\r\n<bytes>\r\n". */
void elk_resp_write_bulk(elk_resp_writer_t *w, const uint8_t *p, size_t len);
/* Append one bulk string holding the decimal form of v (no snprintf). */
void elk_resp_write_bulk_int(elk_resp_writer_t *w, int64_t v);
/* Finish: returns ELK_OK and the length in *out_len, or ELK_E_BUF_TOO_SMALL with the
 * length that would have been needed in *out_len (buffer contents then undefined), or
 * ELK_E_INVALID_ARG if a bulk was written from a NULL pointer with a non-zero length. */
int elk_resp_writer_finish(const elk_resp_writer_t *w, size_t *out_len);

/* Encode a whole command (array of argc bulk strings) into buf. Same result contract
 * as elk_resp_writer_finish. */
int elk_resp_encode_command(uint8_t *buf, size_t cap, const elk_resp_arg_t *argv, size_t argc,
                            size_t *out_len);

/* Format v in decimal into out (at least 20 bytes); returns the number of bytes. */
size_t elk_resp_format_int(int64_t v, uint8_t out[20]);

/* ---------------------------------------------------------------- decoder */

typedef enum elk_resp_type {
    ELK_RESP_SIMPLE = 1, /* +text       str */
    ELK_RESP_ERROR,      /* -text       str */
    ELK_RESP_INTEGER,    /* :n          integer */
    ELK_RESP_BULK,       /* $n bytes    str */
    ELK_RESP_NULL_BULK,  /* $-1 */
    ELK_RESP_ARRAY,      /* *n          count children */
    ELK_RESP_NULL_ARRAY, /* *-1 */
    ELK_RESP_NULL,       /* _  (RESP3) */
    ELK_RESP_DOUBLE,     /* ,text       str (as sent: "1.5", "inf", "-inf", "nan") */
    ELK_RESP_BOOLEAN,    /* #t / #f     integer 1 / 0 */
    ELK_RESP_BLOB_ERROR, /* !n bytes    str */
    ELK_RESP_VERBATIM,   /* =n fmt:data str = data, format = 3-byte format */
    ELK_RESP_BIGNUM,     /* (digits     str */
    ELK_RESP_MAP,        /* %n          count = 2n children: key, value, key, value ... */
    ELK_RESP_SET,        /* ~n          count children */
    ELK_RESP_ATTRIBUTE,  /* |n          count = 2n children; annotates the value after it */
    ELK_RESP_PUSH        /* >n          count children (out-of-band: pub/sub, invalidation) */
} elk_resp_type_t;

/*
 * One value of a reply. Replies are stored in preorder: an aggregate node is
 * followed by its children (and theirs). An ATTRIBUTE node and its 2n children
 * come just before the value they annotate and do not count as an element of the
 * enclosing aggregate.
 */
typedef struct elk_resp_node {
    const uint8_t *str; /* view into the reader's buffer (strings, errors, doubles, bignums) */
    int64_t integer;    /* INTEGER value; BOOLEAN 0/1; aggregates: number of direct children */
    uint32_t len;       /* length of str */
    uint32_t subtree;   /* number of nodes after this one that belong to it (0 for scalars) */
    uint8_t type;       /* elk_resp_type_t */
    char format[3];     /* VERBATIM only: "txt", "mkd", ... */
} elk_resp_node_t;

/* One complete reply: nodes[0] is the top-level value (or an ATTRIBUTE before it). */
typedef struct elk_resp_reply {
    const elk_resp_node_t *nodes;
    size_t count;
} elk_resp_reply_t;

/* An open aggregate during parsing. */
typedef struct elk_resp_frame {
    uint32_t node;      /* index of the aggregate node */
    uint32_t remaining; /* children still to come */
    uint8_t attribute;  /* 1 if this frame is an ATTRIBUTE */
} elk_resp_frame_t;

#ifndef ELK_RESP_READER_MAX_DEPTH
/* Deepest nesting of aggregates the reader follows. */
#define ELK_RESP_READER_MAX_DEPTH 16
#endif

/* Reads RESP replies incrementally from a caller-owned buffer (elk_resp_reader_init). */
typedef struct elk_resp_reader {
    uint8_t *buf; /* caller-owned byte buffer */
    size_t cap;
    size_t len; /* bytes held */
    size_t pos; /* start of the element being parsed */
    /* scan may lag behind pos while a reply is out; release brings it up. */
    size_t scan; /* where the CRLF search resumes (never re-scans) */
    elk_resp_node_t *nodes;
    size_t max_nodes;
    size_t n_nodes;
    size_t max_depth; /* <= ELK_RESP_READER_MAX_DEPTH */
    size_t depth;
    elk_resp_frame_t stack[ELK_RESP_READER_MAX_DEPTH];
    int error;       /* sticky: once malformed, the stream cannot be resynchronised */
    bool in_body;    /* waiting for the body of the last node (bulk, blob error, verbatim) */
    size_t body_end; /* offset where that body's CR LF must be */
    size_t start;    /* offset where the reply being parsed begins */
    /* Apart from the other flags: release writes it as one byte, and next() must read
     * it back as one byte, not as part of a wider load of its neighbours (that would
     * miss the store-to-load forwarding and wait for the store to retire). */
    bool reply_out; /* a reply was returned and not yet released */
} elk_resp_reader_t;

/* Set up a reader. buf (cap bytes) and nodes (max_nodes entries) are caller-owned and
 * must outlive the reader; max_depth (nesting levels of aggregates, top level = 1) is
 * clamped to ELK_RESP_READER_MAX_DEPTH. Returns ELK_OK or ELK_E_INVALID_ARG (a NULL
 * pointer, or cap, max_nodes or max_depth 0). */
int elk_resp_reader_init(elk_resp_reader_t *r, uint8_t *buf, size_t cap, elk_resp_node_t *nodes,
                         size_t max_nodes, size_t max_depth);

/* Forget all buffered bytes and parse state (e.g. after a reconnect). */
void elk_resp_reader_reset(elk_resp_reader_t *r);

/* Free space at the end of the buffer where the caller may write received bytes
 * (bytes of released replies are reclaimed first); *avail gets its size. Follow
 * with elk_resp_reader_commit. */
uint8_t *elk_resp_reader_space(elk_resp_reader_t *r, size_t *avail);

/* Declare that n bytes were written at elk_resp_reader_space. Returns ELK_OK or
 * ELK_E_INVALID_ARG if n exceeds the space. */
int elk_resp_reader_commit(elk_resp_reader_t *r, size_t n);

/* Copy len bytes in (convenience over space+commit). Returns ELK_OK, or
 * ELK_E_RESP_TOO_LARGE (nothing copied, not sticky) if they do not fit in the free
 * space: release the current reply or feed fewer bytes. */
int elk_resp_reader_feed(elk_resp_reader_t *r, const uint8_t *data, size_t len);

/* Parse what has arrived. Returns 1 and fills *out when a whole reply is ready (its
 * views stay valid until elk_resp_reader_release), 0 when more bytes are needed, or a
 * negative elk_err_t (ELK_E_RESP_PROTOCOL, ELK_E_RESP_LENGTH, ELK_E_RESP_TOO_DEEP,
 * ELK_E_RESP_TOO_MANY_NODES, ELK_E_RESP_TOO_LARGE); errors are sticky until reset.
 * ELK_E_RESP_TOO_LARGE comes as soon as it is certain: a declared length or element
 * count that cannot fit in cap, or a full buffer holding an unfinished reply.
 * Returns ELK_E_STATE if the previous reply was not released. */
int elk_resp_reader_next(elk_resp_reader_t *r, elk_resp_reply_t *out);

/* Drop the reply returned by elk_resp_reader_next. Bytes of later (pipelined)
 * replies stay; they move to the front of the buffer (one memmove for a whole burst)
 * when room is next asked for with elk_resp_reader_space or _feed, or when the
 * buffer is full. */
void elk_resp_reader_release(elk_resp_reader_t *r);

/* True if the node is an error reply (ERROR or BLOB_ERROR). */
bool elk_resp_is_error(const elk_resp_node_t *n);

/* The value a reply carries, past any leading RESP3 attributes: a view into
 * reply->nodes, or NULL (reply NULL or only attributes). Stores its index in *index
 * unless index is NULL. */
const elk_resp_node_t *elk_resp_reply_top(const elk_resp_reply_t *reply, size_t *index);

/* True if the node's string value equals the NUL-terminated text s. */
bool elk_resp_str_eq(const elk_resp_node_t *n, const char *s);

#ifdef __cplusplus
}
#endif

#endif /* ELK_RESP_H */
