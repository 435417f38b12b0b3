#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the shipped Grafana dashboard and alert rules against elkd's metrics.

Every elk_* family an expression names must be one firmware/elkd/metrics.c writes (a renamed
metric would leave a panel empty or an alert silent without any error), every dashboard
expression must be valid PromQL (promtool parses them as recording rules), and every
family elkd writes must be shown by at least one panel.
Usage: check_monitoring.py SOURCE_DIR   (exit 0 ok, 1 a problem, printed)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HIST_SUFFIX = re.compile(r"_(bucket|sum|count)$")


def families(metrics_c):
    with open(metrics_c, encoding="utf-8") as f:
        text = f.read()
    return set(re.findall(r'"(elk_[a-z_]+)["{ ]', text))


def names_in(expr):
    return {HIST_SUFFIX.sub("", n) for n in re.findall(r"\b(elk_[a-z_]+)", expr)}


def dashboard_exprs(path):
    with open(path, encoding="utf-8") as f:
        dash = json.load(f)
    out = []
    for panel in dash["panels"]:
        for t in panel.get("targets", []):
            out.append((panel["title"], t["expr"]))
    return out


def rule_exprs(path):
    exprs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\s*expr:\s*(.+)$", line)
            if m:
                exprs.append(m.group(1))
    return exprs


def promql_errors(exprs):
    """promtool parses each expression as a recording rule; '$instance' is a Grafana variable."""
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write("groups:\n  - name: dashboard\n    rules:\n")
        for i, e in enumerate(exprs):
            e = e.replace("$instance", ".*")
            f.write("      - record: dashboard:expr_%d\n        expr: %s\n" % (i, json.dumps(e)))
        name = f.name
    try:
        r = subprocess.run(["promtool", "check", "rules", name], capture_output=True, text=True)
        return "" if r.returncode == 0 else (r.stdout + r.stderr)
    finally:
        os.unlink(name)


def main():
    src = sys.argv[1]
    known = families(os.path.join(src, "firmware", "elkd", "metrics.c"))
    if len(known) < 10:
        print("FAIL: found only %d metric families in firmware/elkd/metrics.c" % len(known))
        return 1
    problems = []
    dash = dashboard_exprs(os.path.join(src, "firmware", "monitoring", "grafana-edgelock.json"))
    rules = rule_exprs(os.path.join(src, "firmware", "monitoring", "edgelock-alerts.yml"))
    shown = set()
    for title, expr in dash:
        for n in names_in(expr) - known:
            problems.append("dashboard panel '%s' names %s, which elkd does not write" % (title, n))
        shown |= names_in(expr)
    for expr in rules:
        for n in names_in(expr) - known:
            problems.append("alert rule '%s' names %s, which elkd does not write" % (expr, n))
    for n in sorted(known - shown - {"elk_agent_info"}):
        problems.append("metric %s is on no dashboard panel" % n)
    err = promql_errors([e for _, e in dash])
    if err:
        problems.append("a dashboard expression is not valid PromQL:\n" + err)
    for p in problems:
        print("FAIL: " + p)
    print("monitoring: %d panels' expressions, %d alert expressions, %d metric families: %s"
          % (len(dash), len(rules), len(known), "ok" if not problems else "%d problems" % len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
