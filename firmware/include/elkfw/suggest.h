/* SPDX-License-Identifier: MIT */
/*
 * "Did you mean": the known word closest to a mistyped one (a config key, an option, a
 * command), by edit distance, so a message can name what was probably meant.
 */
#ifndef ELKFW_SUGGEST_H
#define ELKFW_SUGGEST_H

#include <stddef.h>

/* Edit distance (insert, delete, substitute, swap of neighbours) between a (alen bytes)
 * and b (NUL-terminated); words longer than 63 bytes count as far from everything. */
size_t elkfw_edit_distance(const char *a, size_t alen, const char *b);

/* Of the n candidates (NULL entries skipped), the closest to word (len bytes) if it is
 * close enough to be a slip (at most 2 edits, fewer than the word's length); NULL if none.
 * The result points into cands. */
const char *elkfw_suggest(const char *word, size_t len, const char *const *cands, size_t n);

#endif /* ELKFW_SUGGEST_H */
