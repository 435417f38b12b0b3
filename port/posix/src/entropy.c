/* SPDX-License-Identifier: MIT */
/* getrandom() blocks only until the kernel pool is first initialised at boot, which is
 * what a lock value needs: never predictable, even on a board with no RTC or disk. */
#include <errno.h>
#include <sys/random.h>

#include "elk/port_posix.h"

int elk_posix_entropy_fill(void *ctx, uint8_t *buf, size_t len)
{
    size_t done = 0;
    (void)ctx;
    if (buf == NULL && len > 0) {
        return ELK_E_INVALID_ARG;
    }
    while (done < len) {
        ssize_t n = getrandom(buf + done, len - done, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return ELK_E_ENTROPY;
        }
        if (n == 0) {
            return ELK_E_ENTROPY;
        }
        done += (size_t)n;
    }
    return ELK_OK;
}

void elk_posix_entropy(elk_entropy_t *out)
{
    if (out == NULL) {
        return;
    }
    out->ctx = NULL;
    out->fill = elk_posix_entropy_fill;
}
