/* SPDX-License-Identifier: MIT */
/*
 * `elk events` and `elk timeline`: the lease event record (elkfw/evlog.h) read back and
 * drawn. Both work on files, so they serve after the fact too (elkd stopped, records copied
 * from several gateways to a laptop).
 */
#ifndef ELKFW_HISTORY_H
#define ELKFW_HISTORY_H

#include <stdio.h>

/* Exit codes as elk's (README "Exit codes"): 0 ok, 1 unreadable input, 64 usage. */

/* elk events [--file F] [--since WHEN] [--resource R] [--json]: argv[0] is "events". Reads
 * the ring file F (default default_file), prints the records that pass the filters, oldest
 * first, as text lines or (--json) one JSON object a line, the format `elk timeline` reads. */
int elkfw_history_events(int argc, char **argv, const char *default_file);

/* elk timeline [-o OUT] [--title T] INPUT...: argv[0] is "timeline". Merges the records
 * of every INPUT (a ring file, `elk events --json` output, or - for stdin) and writes the
 * HTML page to OUT (default timeline.html). */
int elkfw_history_timeline(int argc, char **argv);

/* Usage texts, for --help and for mistakes. */
void elkfw_history_usage_events(FILE *f);
void elkfw_history_usage_timeline(FILE *f);

#endif /* ELKFW_HISTORY_H */
