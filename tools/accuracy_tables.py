#!/usr/bin/env python3
"""Rewrites the README's accuracy blocks from `dtsim validate` output.

Usage: python3 tools/accuracy_tables.py [--dtsim build/dtsim] [--cases ../shared/validation/measured_runs.json]
                                        [--readme README.md]
Each block sits between `<!-- accuracy:NAME -->` and `<!-- /accuracy:NAME -->` in the README:
`summary` (the text summary `dtsim validate` prints) and one table per tier (`dense16`,
`fp8-or-moe`, `blackwell`, `finetune`), and `overview`: one row per tier of the shared runs and of
each holdout in calibration/holdout/ (run with its recipes file), with the issue's target for it.
Nothing is estimated here: every error is dtsim's own output; the overview only counts and sorts them.
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


# The targets the open issues set, per (file, tier): (median, max) |error| in percent.
TARGETS = {
    ("shared", "dense16"): (4, 12, "#14"),
    ("shared", "fp8-or-moe"): (8, 25, "#15"),
    ("shared", "blackwell"): (8, 25, "#15"),
    ("mbridge-26.02", "all"): (10, 30, "#15"),
    ("mbridge-26.04", "all"): (10, 30, "#15"),
    ("aws-efa-moe", "blackwell"): (10, 30, "#15"),
    ("dgxc-dense", "all"): (5, 15, "#14"),
    ("megatron-deepspeed", "dense16"): (5, 15, "#14"),
    ("nemotron4-15b", "dense16"): (5, 15, "#14"),
    ("sc21-zero3", "dense16"): (5, 15, "#14"),
    ("megatron-lm-2020", "dense16"): (5, 15, "#14"),
    ("megascale", "dense16"): (5, 15, "#14"),
    ("torchtitan", "dense16"): (5, 15, "#14"),
    ("llm-foundry", "dense16"): (5, 15, "#14"),
}
HOLDOUTS = ("mbridge-26.02", "mbridge-26.04", "aws-efa-moe", "dgxc-dense", "megatron-deepspeed", "nemotron4-15b", "sc21-zero3", "megatron-lm-2020", "megascale", "torchtitan", "llm-foundry")


def percentile_row(name, tier, errors, unpredicted):
    errs = sorted(abs(e) for e in errors)
    n = len(errs)
    median = (errs[(n - 1) // 2] + errs[n // 2]) / 2 if n else float("nan")
    worst = errs[-1] if n else float("nan")
    within = sum(e <= 10 for e in errs)
    target = TARGETS.get((name, tier))
    if target:
        met = "yes" if median <= target[0] and worst <= target[1] and not unpredicted else "no"
        goal = "<= %d%% / <= %d%% (%s): %s" % (target[0], target[1], target[2], met)
    else:
        goal = "-"
    return "| %s | %s | %d%s | %.2f%% | %.2f%% | %d | %s |" % (
        name, tier, n, " (+%d not predicted)" % unpredicted if unpredicted else "", median, worst, within, goal)


def overview(groups):
    """groups: [(file name, cases of its --json output)]; one row per tier, and 'all' for holdouts of several."""
    rows = ["| runs | tier | predicted | median \\|error\\| | max \\|error\\| | within 10% | target (median / max) |",
            "|---|---|---|---|---|---|---|"]
    for name, cases in groups:
        tiers = sorted({c["tier"] for c in cases})
        for tier in tiers + (["all"] if name != "shared" and len(tiers) > 1 else []):
            sel = [c for c in cases if tier == "all" or c["tier"] == tier]
            errors = [c["error_pct"] for c in sel if c.get("error_pct") is not None]
            rows.append(percentile_row(name, tier, errors, len(sel) - len(errors)))
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
    groups = [("shared", cases)]
    for h in HOLDOUTS:
        path = "calibration/holdout/%s.json" % h
        groups.append((h, json.loads(run(a.dtsim, path, "--recipes", "calibration/holdout/%s-recipes.json" % h,
                                         "--json"))["cases"]))
    blocks["overview"] = overview(groups)
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
