/* libFuzzer: the control protocol parsers (requests from any local client, replies
 * read by the CLI) and the line assembler, fed in random fragments. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elkfw/ctl.h"

/* Checked in every build type (assert vanishes under NDEBUG, which fuzz builds use). */
#define CHECK(c) do { if (!(c)) abort(); } while (0)

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
    if (rc == ELK_OK && (req.cmd == ELKFW_CTL_ACQUIRE || req.cmd == ELKFW_CTL_RELEASE)) {
        CHECK(elkfw_name_valid(req.resource, strlen(req.resource), 40));
    }
    rc = elkfw_ctl_parse_reply((const char *)data, size, &msg);
    if (rc == ELK_OK && msg.text != NULL) {
        CHECK(msg.text >= (const char *)data && msg.text + msg.text_len <= (const char *)data + size);
    }

    /* Feed the bytes through the line assembler in fragments whose sizes come from
     * the data itself, then parse each line as a request. */
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
        while ((rc = elkfw_linebuf_next(&lb, &line, &len)) != 0) {
            if (rc == 1) {
                CHECK(len < sizeof store);
                CHECK(memchr(line, '\n', len) == NULL);
                (void)elkfw_ctl_parse_request(line, len, 40, &req, &why);
            }
        }
    }
    return 0;
}
