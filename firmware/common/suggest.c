/* SPDX-License-Identifier: MIT */
/* "Did you mean": optimal string alignment distance over short words. */
#include "elkfw/suggest.h"

#include <stdint.h>
#include <string.h>

#define SUGGEST_MAX 64u

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

size_t elkfw_edit_distance(const char *a, size_t alen, const char *b)
{
    /* three rows of the table: two back (for a swap), one back, this one */
    size_t rows[3][SUGGEST_MAX + 1];
    size_t blen = strlen(b), i, j;
    if (alen >= SUGGEST_MAX || blen >= SUGGEST_MAX) {
        return SIZE_MAX / 2;
    }
    for (j = 0; j <= blen; j++) {
        rows[1][j] = j;
    }
    for (i = 1; i <= alen; i++) {
        size_t *cur = rows[(i + 1) % 3], *prev = rows[i % 3], *prev2 = rows[(i + 2) % 3];
        cur[0] = i;
        for (j = 1; j <= blen; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0u : 1u;
            cur[j] = min3(prev[j] + 1u, cur[j - 1] + 1u, prev[j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1u < cur[j]) {
                cur[j] = prev2[j - 2] + 1u;
            }
        }
    }
    return rows[(alen + 1) % 3][blen];
}

const char *elkfw_suggest(const char *word, size_t len, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t best_d = 3, k;
    for (k = 0; k < n; k++) {
        size_t d;
        if (cands[k] == NULL) {
            continue;
        }
        d = elkfw_edit_distance(word, len, cands[k]);
        if (d < best_d && d < len) {
            best = cands[k];
            best_d = d;
        }
    }
    return best;
}
