#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Circles between the source files of lib/ and port/, read from the object files.

The linker's cross-references: for every object file of a build tree whose source lies
under lib/ or port/, `nm` says which global symbols it defines and which it references.
File A calls file B when A references a symbol B defines. A strongly connected component
of more than one file is a circle: code that calls upward somewhere (CONTRIBUTING.md,
"Layers"). Exit status 1 when a circle is not covered by an --allow prefix (every file
of an allowed circle starts with one of the prefixes), 2 on a usage or tool error.

Usage: check-layers.py --build DIR [--source DIR] [--nm NM] [--allow PREFIX]... [--graph]
"""
import argparse
import collections
import os
import subprocess
import sys

ROOTS = ("lib/", "port/")


def objects(build, source):
    """(target, object path, source path relative to source) of every lib/port object.

    CMake keeps the object of <dir>/<src>.c of a target declared in <dir>/CMakeLists.txt
    at <build>/<dir>/CMakeFiles/<target>.dir/<src>.c.o ("../" spelled "__/")."""
    found = []
    for dirpath, _dirs, files in os.walk(build):
        parts = dirpath.split(os.sep)
        if "CMakeFiles" not in parts:
            continue
        k = len(parts) - 1 - parts[::-1].index("CMakeFiles")
        if k + 1 >= len(parts) or not parts[k + 1].endswith(".dir"):
            continue
        target = parts[k + 1][: -len(".dir")]
        cmake_dir = os.path.relpath(os.sep.join(parts[:k]), build)
        for f in files:
            if not (f.endswith(".c.o") or f.endswith(".c.obj")):
                continue
            inner = parts[k + 2 :] + [f[: f.rindex(".c.")] + ".c"]
            inner = [".." if p == "__" else p for p in inner]
            src = os.path.normpath(os.path.join(cmake_dir, *inner))
            if src.startswith(ROOTS) and os.path.exists(os.path.join(source, src)):
                found.append((target, os.path.join(dirpath, f), src))
    return found


def symbols(nm, path):
    """(defined, referenced) global symbol names of one object file."""
    out = subprocess.run([nm, "-P", path], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        name, kind = f[0], f[1]
        if kind == "U":
            used.add(name)
        elif kind.isupper() and kind not in "N":
            defined.add(name)
    return defined, used


def graph(nm, objs):
    """file -> {file: set of symbols it uses there}. A symbol resolves to the definer in
    the same target first (two ports may define the same interface), else to every
    definer of the lib/port objects."""
    by_target = collections.defaultdict(dict)
    anywhere = collections.defaultdict(set)
    refs = []
    for target, obj, src in objs:
        defined, used = symbols(nm, obj)
        for s in defined:
            by_target[target][s] = src
            anywhere[s].add(src)
        refs.append((target, src, used))
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    for target, src, used in refs:
        edges[src]
        for s in used:
            dests = {by_target[target][s]} if s in by_target[target] else anywhere.get(s, ())
            for d in dests:
                if d != src:
                    edges[src][d].add(s)
    return edges


def circles(edges):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index, low, on, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    return sorted(comps, key=lambda c: (-len(c), c))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="a configured and built build tree")
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--allow", action="append", default=[], metavar="PREFIX",
                    help="a circle whose files all start with PREFIX is reported, not failed")
    ap.add_argument("--graph", action="store_true", help="print every file's calls")
    a = ap.parse_args()
    objs = objects(os.path.abspath(a.build), os.path.abspath(a.source))
    if not objs:
        print("check-layers: no object of lib/ or port/ under %s: build first" % a.build)
        return 2
    try:
        edges = graph(a.nm, objs)
    except (OSError, subprocess.CalledProcessError) as e:
        print("check-layers: %s failed: %s" % (a.nm, e))
        return 2
    if a.graph:
        for f in sorted(edges):
            for d in sorted(edges[f]):
                print("%s -> %s: %s" % (f, d, " ".join(sorted(edges[f][d]))))
    comps = circles(edges)
    bad = 0
    for c in comps:
        allowed = any(all(f.startswith(p) for f in c) for p in a.allow)
        bad += not allowed
        print("%s circle of %d files:" % ("allowed" if allowed else "FAIL:", len(c)))
        for f in c:
            for d in sorted(edges[f]):
                if d in c:
                    print("  %s -> %s (%s)" % (f, d, ", ".join(sorted(edges[f][d]))))
    print("check-layers: %d files, %d circles (%d not allowed)" % (len(edges), len(comps), bad))
    if bad:
        print("Calls go downward only (CONTRIBUTING.md, \"Layers\"): move the helper a lower file "
              "needs down, or pass the lower file what it asks the upper one for.")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
