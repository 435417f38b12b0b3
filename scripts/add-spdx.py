#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Adds 'SPDX-License-Identifier: MIT' to every project source file that lacks it.
Usage: scripts/add-spdx.py [--check] [ROOT]. --check lists the files without it and exits 1
(scripts/check-spdx.sh is the test: release.spdx)."""
import os
import subprocess
import sys

TAG = "SPDX-License-Identifier: MIT"
C_LIKE = (".c", ".h", ".ld")
HASH_LIKE = (".sh", ".py", ".cmake", ".txt", ".conf", ".in", ".init")
HASH_NAMES = ("CMakeLists.txt", "Kconfig", "Makefile", "run", "elkd-uci2ini", "elkd.init",
              "elkd.config", "pin-source.sh")
SKIP_DIRS = ("tests/fuzz/corpus/", "debian/", "build", "firmware/openwrt/config/")


def wanted(path):
    if any(path.startswith(d) for d in SKIP_DIRS) or "/node_modules/" in path:
        return None
    base = os.path.basename(path)
    if base.endswith(C_LIKE):
        return "c"
    if base in HASH_NAMES or base.endswith(HASH_LIKE) or base.endswith("_defconfig"):
        if base.endswith(".txt") and base != "CMakeLists.txt":
            return None
        return "hash"
    return None


def has_tag(text):
    return TAG in "\n".join(text.splitlines()[:5])


def add(path, kind, text):
    lines = text.splitlines(keepends=True)
    if kind == "c":
        return "/* " + TAG + " */\n" + text
    at = 1 if lines and lines[0].startswith("#!") else 0
    lines.insert(at, "# " + TAG + "\n")
    return "".join(lines)


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    root = args[0] if args else "."
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root, check=True,
                           stdout=subprocess.PIPE, text=True).stdout.split()
    missing = []
    for rel in files:
        kind = wanted(rel)
        if kind is None:
            continue
        p = os.path.join(root, rel)
        if not os.path.isfile(p):
            continue
        with open(p, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        if has_tag(text):
            continue
        missing.append(rel)
        if not check:
            mode = os.stat(p).st_mode
            with open(p, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(add(p, kind, text))
            os.chmod(p, mode)
    if check:
        for m in missing:
            print("no SPDX-License-Identifier: %s" % m)
        print("%d files without the SPDX line" % len(missing))
        return 1 if missing else 0
    print("added the SPDX line to %d files" % len(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
