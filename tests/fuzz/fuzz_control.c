/* SPDX-License-Identifier: MIT */
/* libFuzzer: the control protocol parsers (requests from any local client, replies
 * read by the CLI) and the line assembler, fed in random fragments. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elkfw/ctl.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    elkfw_ctl_req_t req;
    elkfw_ctl_msg_t msg;
    const char *why = NULL;
    char store[64];
    elkfw_linebuf_t lb;
    size_t pos = 0;
    int rc;

    rc = elkfw_ctl_parse_request((const char *)data, size, 40, &req, &why);
    CHECK(why != NULL);
    if (rc == ELK_OK &&
        (req.cmd == ELKFW_CTL_ACQUIRE || req.cmd == ELKFW_CTL_RELEASE ||
         req.cmd == ELKFW_CTL_KEEPALIVE)) {
        CHECK(elkfw_lease_name_valid(req.resource, strlen(req.resource), 40));
    }
    rc = elkfw_ctl_parse_reply((const char *)data, size, &msg);
    if (rc == ELK_OK && msg.text != NULL) {
        CHECK(msg.text >= (const char *)data &&
              msg.text + msg.text_len <= (const char *)data + size);
    }

    /* Feed the bytes through the line assembler in fragments whose sizes come from
     * the data itself, then parse each line as a request. Several requests in one input
     * are a pipelining client: while an ACQUIRE of valve-1 "waits for its answer", lines
     * stay in the buffer (as in elkd) and only the look-ahead for a cancelling RELEASE
     * reads them; what it finds must be what extracting the lines then yields. */
    bool waiting = false;
    elkfw_linebuf_init(&lb, store, sizeof store);
    while (pos < size) {
        size_t avail, chunk = (size_t)(data[pos] % 17u) + 1u;
        char *sp = elkfw_linebuf_space(&lb, &avail);
        const char *line;
        size_t len;
        if (chunk > size - pos) {
            chunk = size - pos;
        }
        if (chunk > avail) {
            chunk = avail;
        }
        memcpy(sp, data + pos, chunk);
        elkfw_linebuf_commit(&lb, chunk);
        pos += chunk;
        if (waiting && avail > chunk) {
            /* still room: keep the lines buffered unless a RELEASE cancels the wait */
            if (!elkfw_linebuf_has_request(&lb, ELKFW_CTL_RELEASE, "valve-1", 40)) {
                continue;
            }
            waiting = false;
            bool found = false;
            while ((rc = elkfw_linebuf_next(&lb, &line, &len)) == 1 || rc == ELK_E_CTL_TOO_LONG) {
                found |= rc == 1 && elkfw_ctl_parse_request(line, len, 40, &req, &why) == ELK_OK &&
                    req.cmd == ELKFW_CTL_RELEASE && strcmp(req.resource, "valve-1") == 0;
                if (found) {
                    break;
                }
            }
            CHECK(found); /* the look-ahead saw only what is really there */
        }
        waiting = false;
        while ((rc = elkfw_linebuf_next(&lb, &line, &len)) != 0) {
            if (rc == 1) {
                CHECK(len < sizeof store);
                CHECK(memchr(line, '\n', len) == NULL);
                if (elkfw_ctl_parse_request(line, len, 40, &req, &why) == ELK_OK &&
                    req.cmd == ELKFW_CTL_ACQUIRE && strcmp(req.resource, "valve-1") == 0) {
                    waiting = true; /* the rest waits behind it */
                    break;
                }
            }
        }
    }
    return 0;
}
