#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The shared core exports exactly its public API.

The public API is every function the headers under lib/include/elk/ declare and do not
define inline, as the compiler reads them (gcc's -aux-info lists each declaration with
the header it came from). lib/libelk.map, the linker version script of libelk.so, must
name exactly those. With --so, the library's dynamic symbol table (nm -D) must hold
exactly those too: no module internal (elk_lock__*, elk_node__*, the formatting helpers)
is exported, so no program can come to depend on one.

Usage: check-exports.py --source DIR --include DIR... [--cc CC] [--so LIB [--nm NM]]
Exit status 0 when they agree, 1 when they differ (each difference printed), 2 on a usage
or tool error.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

DECL = re.compile(r"^/\* (?P<file>[^:]+):\d+:\S+ \*/ (?P<decl>.*)$")
NAME = re.compile(r"\b(elk_[a-z0-9_]+) \(")


def declared(source, includes, cc):
    """Names of the non-inline functions the public headers declare."""
    hdr_dir = os.path.join(source, "lib", "include", "elk")
    headers = sorted(h for h in os.listdir(hdr_dir) if h.endswith(".h"))
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "all_headers.c")
        aux = os.path.join(tmp, "aux.txt")
        with open(src, "w", encoding="ascii") as f:
            for h in headers:
                f.write("#include <elk/%s>\n" % h)
        cmd = [cc, "-std=c99", "-aux-info", aux, "-c", src, "-o", os.path.join(tmp, "x.o")]
        cmd += ["-I" + d for d in includes]
        run = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            sys.stderr.write("check-exports: %s failed:\n%s" % (" ".join(cmd), run.stderr))
            sys.exit(2)
        names = set()
        with open(aux, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = DECL.match(line.strip())
                if not m or "lib/include/elk/" not in m.group("file"):
                    continue
                if re.search(r"\bstatic\b", m.group("decl")):
                    continue  # inline in the header: nothing to export
                n = NAME.search(m.group("decl"))
                if n:
                    names.add(n.group(1))
        return names


def mapped(path):
    """Names in the version script's global section."""
    text = open(path, encoding="ascii").read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    m = re.search(r"global:(.*?)local:", text, flags=re.S)
    if not m:
        sys.stderr.write("check-exports: %s has no global:/local: sections\n" % path)
        sys.exit(2)
    return {s.strip() for s in m.group(1).split(";") if s.strip()}


def exported(so, nm):
    """Names of the functions and data a shared library defines in its dynamic table."""
    run = subprocess.run([nm, "-D", "--defined-only", so], capture_output=True, text=True,
                         check=False)
    if run.returncode != 0:
        sys.stderr.write("check-exports: nm -D %s failed:\n%s" % (so, run.stderr))
        sys.exit(2)
    names = set()
    for line in run.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDRBW" and parts[2].startswith("elk_"):
            names.add(parts[2].split("@")[0])
    return names


def report(what, a_name, a, b_name, b):
    bad = 0
    for n in sorted(a - b):
        print("%s: %s is in %s but not in %s" % (what, n, a_name, b_name))
        bad += 1
    for n in sorted(b - a):
        print("%s: %s is in %s but not in %s" % (what, n, b_name, a_name))
        bad += 1
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--so")
    ap.add_argument("--nm", default="nm")
    args = ap.parse_args()
    api = declared(args.source, args.include, args.cc)
    mp = mapped(os.path.join(args.source, "lib", "libelk.map"))
    bad = report("lib/libelk.map", "the public headers", api, "lib/libelk.map", mp)
    if args.so:
        bad += report(args.so, "lib/libelk.map", mp, os.path.basename(args.so),
                      exported(args.so, args.nm))
    if bad:
        print("check-exports: %d difference(s); the public API is what lib/include/elk/ "
              "declares: add or remove the name in lib/libelk.map (and debian/libelk0.symbols)"
              % bad)
        return 1
    print("check-exports: %d public functions, lib/libelk.map agrees%s"
          % (len(api), " and so does " + os.path.basename(args.so) if args.so else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
