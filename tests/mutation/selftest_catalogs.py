# SPDX-License-Identifier: MIT
"""Broken catalogs the runner must refuse (tests/mutation/test_plumbing.sh): picked by
the MUTATION_SELFTEST environment variable."""
import os

_KIND = os.environ.get("MUTATION_SELFTEST", "missing")
_CASES = {
    # the snippet no longer occurs (an unrelated edit changed it)
    "missing": dict(id="selftest.missing", file="lib/lock/lock_client.c",
                    old="this snippet occurs nowhere in the tree", new="x", tests=[]),
    # the snippet occurs more than once: which copy is meant is ambiguous
    "twice": dict(id="selftest.twice", file="lib/lock/lock_engine.c",
                  old="lock->", new="lock ->", tests=[]),
    # the file is gone
    "nofile": dict(id="selftest.nofile", file="lib/lock/no_such_file.c",
                   old="a", new="b", tests=[]),
}
MUTANTS = [_CASES[_KIND]]
