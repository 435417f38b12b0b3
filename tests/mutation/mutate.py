#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mutation runner: applies each mutant of a catalog alone to a scratch copy of the
tree, rebuilds it incrementally, and runs the tests named for it (cheapest first, then a
short simulator sweep). A mutant is caught when a test fails; every catalog mutant must
be caught. See tests/mutation/README.md.

Exit status: 0 all caught; 1 a mutant survived or did not build; 2 the catalog does not
apply (a snippet is missing or occurs more than once) or bad usage.
"""
import argparse
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The simulator sweep run when no named test caught a mutant: short, fixed seeds.
SIM_FALLBACK = ["--seed", "1", "--runs", "60", "--faults", "harsh", "--duration-ms", "6000", "--quiet"]


class CatalogError(Exception):
    pass


def load_catalog(path):
    spec = importlib.util.spec_from_file_location("catalog", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for m in mod.MUTANTS:
        # a list among the tests stands for all of its names (ENG: the lease engine's programs)
        m["tests"] = [t for x in m["tests"] for t in (x if isinstance(x, list) else [x])]
    ids = [m["id"] for m in mod.MUTANTS]
    if len(set(ids)) != len(ids):
        raise CatalogError("duplicate mutant ids in %s" % path)
    return mod.MUTANTS


def find_snippet(text, old):
    """Where a snippet occurs: its exact bytes, or else the same characters with any white
    space between them (so reformatting the tree, e.g. with clang-format, does not orphan
    the catalog). Returns the list of (start, end) spans."""
    spans, at = [], text.find(old)
    while at >= 0:
        spans.append((at, at + len(old)))
        at = text.find(old, at + 1)
    if spans:
        return spans
    chars = [c for c in old if not c.isspace()]
    if not chars:
        return []
    pattern = re.compile(r"\s*".join(re.escape(c) for c in chars))
    return [(mo.start(), mo.end()) for mo in pattern.finditer(text)]


def apply_mutant(text, m):
    """text with the mutant's one snippet replaced."""
    (start, end), = find_snippet(text, m["old"])
    return text[:start] + m["new"] + text[end:]


def check_mutant(root, m):
    """The snippet must occur exactly once in its file, or the mutant means nothing."""
    path = os.path.join(root, m["file"])
    if not os.path.exists(path):
        raise CatalogError("%s: file %s does not exist" % (m["id"], m["file"]))
    with open(path) as f:
        text = f.read()
    n = len(find_snippet(text, m["old"]))
    if n != 1:
        raise CatalogError("%s: snippet found %d times in %s (must be exactly once):\n%s"
                           % (m["id"], n, m["file"], m["old"]))
    if m["old"] == m["new"]:
        raise CatalogError("%s: replacement equals the original" % m["id"])
    return text


def sync_tree(src, dst):
    """Copy the tracked and untracked (not ignored) files of src into dst, rewriting only
    files whose content differs, so the build there stays incremental."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=src,
                         check=True, stdout=subprocess.PIPE).stdout
    wanted = set(r for r in out.decode().split("\0") if r and not r.startswith("build"))
    # A file deleted from the tree must go from the copy too (globbed sources would build).
    for dirpath, _, files in os.walk(dst):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), dst)
            if rel not in wanted:
                os.remove(os.path.join(dirpath, name))
    for rel in sorted(wanted):
        s = os.path.join(src, rel)
        d = os.path.join(dst, rel)
        if not os.path.isfile(s):
            continue
        with open(s, "rb") as f:
            data = f.read()
        if os.path.exists(d):
            with open(d, "rb") as f:
                if f.read() == data:
                    continue
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copy2(s, d)


def targets_for(tests):
    """Build targets the named ctest tests need (unit.X / integration.X -> X)."""
    t = set(["elk-sim"])
    for name in tests:
        kind, _, rest = name.partition(".")
        if name.startswith("sim:"):
            continue
        if kind in ("unit", "integration"):
            t.add(rest)
        elif kind == "sim":
            t.update(["elk-sim", "test_sim_checker", "test_sim_port"])
        elif kind in ("agent", "scenarios"):
            t.update(["elkd", "elk_cli"])
        elif kind == "fuzz_replay":
            t.add("fuzz_" + rest)
        elif kind == "mutation":
            pass
        else:
            return None  # unknown: build everything
    return sorted(t)


def run(cmd, cwd, timeout, log):
    with open(log, "ab") as f:
        f.write(("$ " + " ".join(cmd) + "\n").encode())
        f.flush()
        try:
            return subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                                  timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            f.write(b"(timed out)\n")
            return 124


def build(bdir, targets, jobs, log):
    cmd = ["nice", "-n", "10", "cmake", "--build", bdir, "-j%d" % jobs]
    if targets:
        cmd += ["--target"] + targets
    return run(cmd, ROOT, 1800, log)


def configure(scratch, bdir, log):
    if os.path.exists(os.path.join(bdir, "CMakeCache.txt")):
        return 0
    return run(["cmake", "-S", scratch, "-B", bdir, "-DCMAKE_BUILD_TYPE=Debug"], ROOT, 600, log)


def test_cmd(t, sim):
    """A catalog test: a ctest name, or "sim:<elk-sim arguments>"."""
    if t.startswith("sim:"):
        return [sim] + t[4:].split()
    return ["ctest", "-R", "^%s$" % t.replace(".", r"\."), "--timeout", "300", "--output-on-failure"]


def try_mutant(m, scratch, bdir, jobs, log):
    """Returns (verdict, detail): caught/survived/nobuild."""
    path = os.path.join(scratch, m["file"])
    with open(path) as f:
        orig = f.read()
    with open(log, "a") as f:
        f.write("### mutant %s (%s)\n" % (m["id"], m["file"]))
    try:
        with open(path, "w") as f:
            f.write(apply_mutant(orig, m))
        if build(bdir, targets_for(m["tests"]), jobs, log) != 0:
            return "nobuild", "the mutant does not compile (see %s)" % log
        sim = os.path.join(bdir, "tests", "sim", "elk-sim")
        for t in m["tests"]:
            if run(test_cmd(t, sim), bdir, 900, log) != 0:
                return "caught", t
        if os.path.exists(sim) and run([sim] + SIM_FALLBACK, bdir, 900, log) != 0:
            return "caught", "elk-sim " + " ".join(SIM_FALLBACK)
        return "survived", "no test failed"
    finally:
        # Restore the original bytes on every path (exceptions, Ctrl-C included).
        with open(path, "w") as f:
            f.write(orig)


def compile_check(mutants, bdir):
    """Every C mutant still compiles: its file, mutated, through the compiler command the
    build used for it (compile_commands.json), syntax only. A refactor that renames what a
    mutant writes leaves one that can never be caught; this finds it in seconds instead of
    in a CI sample. Returns the ids that do not compile (and prints why)."""
    import json
    import shlex
    import tempfile
    db_path = os.path.join(bdir, "compile_commands.json")
    with open(db_path) as f:
        db = json.load(f)
    by_file = {}
    for e in db:
        by_file.setdefault(os.path.realpath(os.path.join(e["directory"], e["file"])), e)
    bad, checked, skipped = [], 0, 0
    for m in mutants:
        src = os.path.realpath(os.path.join(ROOT, m["file"]))
        e = by_file.get(src)
        if not m["file"].endswith(".c") or e is None:
            skipped += 1  # headers, scripts, files this build does not compile
            continue
        with open(src) as f:
            text = apply_mutant(f.read(), m)
        args = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
        keep, skip = [], False
        for x in args:
            if skip:
                skip = False
                continue
            if x == "-o":
                skip = True
                continue
            if x in ("-c", e["file"], src) or os.path.realpath(os.path.join(e["directory"], x)) == src:
                continue
            keep.append(x)
        with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as t:
            t.write(text)
        cmd = keep + ["-fsyntax-only", "-iquote", os.path.dirname(src), t.name]
        r = subprocess.run(cmd, cwd=e["directory"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        os.unlink(t.name)
        checked += 1
        if r.returncode != 0:
            bad.append(m["id"])
            print("mutation: %s does not compile (%s):\n%s" % (m["id"], m["file"],
                                                                r.stdout.strip()[-2000:]))
    print("mutation: %d C mutants compile-checked, %d not C or not in this build, %d do not "
          "compile" % (checked, skipped, len(bad)))
    return bad


def pick_sample(mutants, n, seed):
    key = lambda m: hashlib.sha256((seed + ":" + m["id"]).encode()).hexdigest()
    return sorted(sorted(mutants, key=key)[:n], key=lambda m: mutants.index(m))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--catalog", default=os.path.join(ROOT, "tests", "mutation", "catalog.py"))
    ap.add_argument("--all", action="store_true", help="run the whole catalog")
    ap.add_argument("--sample", type=int, help="run N mutants chosen from --seed")
    ap.add_argument("--seed", default="", help="sample seed (a commit hash)")
    ap.add_argument("--only", nargs="*", default=[], help="run these mutant ids")
    ap.add_argument("--check", action="store_true",
                    help="only check that every snippet occurs exactly once (no build)")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the chosen mutants and stop (no build)")
    ap.add_argument("--work", default=os.path.join(ROOT, "build-mutation"),
                    help="scratch tree and build directory (kept between runs)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--compile-check", metavar="BUILD_DIR",
                    help="only compile every C mutant against BUILD_DIR's compile_commands.json")
    a = ap.parse_args()

    try:
        mutants = load_catalog(a.catalog)
        for m in mutants:
            check_mutant(ROOT, m)
    except CatalogError as e:
        print("mutation: CATALOG DOES NOT APPLY: %s" % e, file=sys.stderr)
        return 2
    if a.check:
        print("mutation: %d mutants, every snippet found exactly once" % len(mutants))
        return 0
    if a.compile_check:
        return 1 if compile_check(mutants, a.compile_check) else 0
    if a.only:
        chosen = [m for m in mutants if m["id"] in a.only]
        if len(chosen) != len(set(a.only)):
            print("mutation: unknown id in --only", file=sys.stderr)
            return 2
    elif a.sample:
        if not a.seed:
            print("mutation: --sample needs --seed", file=sys.stderr)
            return 2
        chosen = pick_sample(mutants, a.sample, a.seed)
        print("mutation: sample of %d from %d, seed %s: %s" %
              (len(chosen), len(mutants), a.seed, " ".join(m["id"] for m in chosen)))
        print("mutation: reproduce with: tests/mutation/run.sh --sample %d --seed %s"
              % (a.sample, a.seed))
    elif a.all:
        chosen = mutants
    else:
        ap.print_help()
        return 2

    if a.dry_run:
        for m in chosen:
            print("mutation: would run %s (%s)" % (m["id"], m["file"]))
        return 0
    scratch = os.path.join(a.work, "src")
    bdir = os.path.join(a.work, "build")
    log = os.path.join(a.work, "mutation.log")
    os.makedirs(scratch, exist_ok=True)
    open(log, "w").close()
    t0 = time.time()
    sync_tree(ROOT, scratch)
    for m in chosen:
        check_mutant(scratch, m)
    if configure(scratch, bdir, log) != 0:
        print("mutation: configure failed (see %s)" % log, file=sys.stderr)
        return 1
    # The unmutated tree must build and pass the named tests, or "caught" means nothing.
    need = sorted(set(t for m in chosen for t in m["tests"]))
    tg = set()
    for m in chosen:
        got = targets_for(m["tests"])
        tg = None if got is None or tg is None else tg | set(got)
    if build(bdir, sorted(tg) if tg is not None else None, a.jobs, log) != 0:
        print("mutation: the unmutated tree does not build (see %s)" % log, file=sys.stderr)
        return 1
    sim = os.path.join(bdir, "tests", "sim", "elk-sim")
    for t in need:
        if run(test_cmd(t, sim), bdir, 900, log) != 0:
            print("mutation: test %s fails without any mutant (see %s)" % (t, log), file=sys.stderr)
            return 1
    print("mutation: baseline builds and passes %d tests (%.0f s)" % (len(need), time.time() - t0))

    caught = 0
    bad = []
    for m in chosen:
        t1 = time.time()
        verdict, detail = try_mutant(m, scratch, bdir, a.jobs, log)
        print("mutation: %-28s %-8s %-44s %4.0f s  (%s)"
              % (m["id"], verdict, detail, time.time() - t1, m["file"]), flush=True)
        if verdict == "caught":
            caught += 1
        else:
            bad.append(m["id"])
    # Leave the scratch build as the unmutated tree (the last restore rebuilds next run).
    print("mutation: score %d/%d caught in %.0f s%s" %
          (caught, len(chosen), time.time() - t0,
           "" if not bad else "; NOT CAUGHT: " + " ".join(bad)))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
