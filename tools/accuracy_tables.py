#!/usr/bin/env python3
"""Rewrites the README's accuracy blocks from `dtsim validate` output.

Usage: python3 tools/accuracy_tables.py [--dtsim build/dtsim] [--cases ../shared/validation/measured_runs.json]
                                        [--readme README.md]
Each block sits between `<!-- accuracy:NAME -->` and `<!-- /accuracy:NAME -->` in the README:
`summary` (the text summary `dtsim validate` prints) and one table per tier (`dense16`,
`fp8-or-moe`, `blackwell`, `finetune`). Nothing is computed here: every number is dtsim's own output.
"""
import argparse
import json
import re
import subprocess
import sys


def run(dtsim, cases, *extra):
    return subprocess.run([dtsim, "validate", cases, *extra], check=True, capture_output=True, text=True).stdout


def tier_table(cases, tier):
    rows = ["| case | stack | measured s | predicted s | error |", "|---|---|---|---|---|"]
    for c in cases:
        if c["tier"] != tier:
            continue
        pred = "%.2f" % c["predicted_s"] if c.get("predicted_s") is not None else "-"
        err = "%+.1f%%" % c["error_pct"] if c.get("error_pct") is not None else "not predicted"
        rows.append("| %s | %s | %.2f | %s | %s |" % (c["id"], c["stack"], c["measured_s"], pred, err))
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtsim", default="build/dtsim")
    ap.add_argument("--cases", default="../shared/validation/measured_runs.json")
    ap.add_argument("--readme", default="README.md")
    a = ap.parse_args()
    text = run(a.dtsim, a.cases)
    summary = text[text.index("summary\n"):].rstrip("\n")
    cases = json.loads(run(a.dtsim, a.cases, "--json"))["cases"]
    blocks = {"summary": "```\n" + summary + "\n```"}
    for tier in ("dense16", "fp8-or-moe", "blackwell", "finetune"):
        blocks[tier] = tier_table(cases, tier)
    readme = open(a.readme).read()
    for name, body in blocks.items():
        pattern = re.compile(r"(<!-- accuracy:%s -->\n).*?(\n<!-- /accuracy:%s -->)" % (re.escape(name), re.escape(name)),
                             re.S)
        if not pattern.search(readme):
            sys.exit("%s: no <!-- accuracy:%s --> block" % (a.readme, name))
        readme = pattern.sub(lambda m: m.group(1) + body + m.group(2), readme)
    open(a.readme, "w").write(readme)


if __name__ == "__main__":
    main()
