/* SPDX-License-Identifier: MIT */
/* libFuzzer: the lease-file parser (elkfw/lease.h) never reads past its input, and
 * accepts only the canonical line: whatever it accepts formats back to the same bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elkfw/lease.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char line[ELKFW_LEASE_LINE_MAX];
    uint64_t t = 0, d = 0, jt, jd;
    bool ok = elkfw_lease_parse((const char *)data, size, &t, &d);
    elkfw_lease_verdict_t v = elkfw_lease_judge((const char *)data, size, t, d, &jt, &jd);
    if (!ok) {
        CHECK(v == ELKFW_LEASE_MALFORMED && jt == 0 && jd == 0);
        return 0;
    }
    CHECK(jt == t && jd == d);
    /* judged at now == deadline with its own token: ended (0) or expired, never OK */
    CHECK(v == (d == 0 ? ELKFW_LEASE_ENDED : ELKFW_LEASE_EXPIRED));
    CHECK(elkfw_lease_format(line, sizeof line, t, d) == size);
    CHECK(memcmp(line, data, size) == 0);
    return 0;
}
