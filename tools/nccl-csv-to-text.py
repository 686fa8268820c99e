#!/usr/bin/env python3
"""Writes a published table of nccl-tests results, kept as CSV, as nccl-tests text (the format
`dtsim calibrate --nccl-tests` and `dtsim collective --nccl-tests` read): one file per node count.

    python3 tools/nccl-csv-to-text.py TABLE.csv OUT_PREFIX --collective all_to_all \
        --gpu "H100 80GB HBM3" --source "repo path @ commit"

The CSV has the columns of crazyguitar/aws-gpu-communication-benchmark's data/*.csv:
Nodes,GPUs,size(MB),iterations,blocking,out algbw(GB/s),out busbw(GB/s),in algbw(GB/s),in busbw(GB/s)
with sizes in MiB (nccl-tests -b 32M = 33554432 bytes) and bandwidths in GB/s (1e9 bytes/s).
Lines starting with '#' are copied into every output's header (say there where the numbers come
from). An empty algbw cell is derived from busbw (nccl-tests doc/PERFORMANCE.md: busbw = algbw x
2(n-1)/n for all_reduce, x (n-1)/n for all_gather, reduce_scatter and all_to_all); an empty
in-place pair leaves one column set. time = size / algbw, in microseconds.

Output: OUT_PREFIX-<nodes>x<gpus per node>-<collective>.txt. With --check nothing is written:
the exit status is 1 if an existing file differs from what the table makes (ctest runs this on
calibration/nccl/tables/*.csv).
"""
import sys
import argparse
import csv
import io


def bus_factor(collective, n):
    return 2.0 * (n - 1) / n if collective == "all_reduce" else (n - 1) / n


def cells(size, algbw, busbw):
    t = size / (algbw * 1e3)  # bytes / (GB/s * 1e9) in us
    return f" {t:10.2f} {algbw:7.2f} {busbw:7.2f}      0"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("table")
    p.add_argument("out_prefix")
    p.add_argument("--collective", required=True, choices=["all_reduce", "all_gather", "reduce_scatter", "all_to_all"])
    p.add_argument("--gpu", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--check", action="store_true", help="compare with the existing files instead of writing")
    a = p.parse_args()
    stale = []
    text = open(a.table).read()
    notes = [l for l in text.splitlines() if l.startswith("#")]
    rows = list(csv.DictReader(io.StringIO("\n".join(l for l in text.splitlines() if l and not l.startswith("#")))))
    by_nodes = {}
    for r in rows:
        by_nodes.setdefault(int(r["Nodes"]), []).append(r)
    op = {"all_reduce": ("float", "sum"), "all_gather": ("float", "none"),
          "reduce_scatter": ("float", "sum"), "all_to_all": ("float", "none")}[a.collective]
    for nodes, rs in sorted(by_nodes.items()):
        ranks = int(rs[0]["GPUs"])
        per_node = ranks // nodes
        f = bus_factor(a.collective, ranks)
        both = all(r["in busbw(GB/s)"].strip() for r in rs)
        binary = a.collective.replace("all_to_all", "alltoall") + "_perf"
        lines = [f"# {binary}: {ranks} GPUs on {nodes} nodes ({per_node} per node), nccl-tests results as published",
                 f"# source: {a.source}"] + notes + ["# written by tools/nccl-csv-to-text.py"]
        lines += ["#  Rank %3d Group  0 Pid      0 on node%d device %2d [0x00] %s" % (i, i // per_node, i % per_node, a.gpu)
                  for i in range(ranks)]
        lines.append("#       size         count      type   redop    root       time   algbw   busbw #wrong" +
                     ("       time   algbw   busbw #wrong" if both else ""))
        for r in sorted(rs, key=lambda r: float(r["size(MB)"])):
            size = int(round(float(r["size(MB)"]) * (1 << 20)))
            # nccl-tests prints all_reduce's whole count, the others' per rank (src/*.cu)
            count = size // 4 if a.collective == "all_reduce" else size // (4 * ranks)
            line = f"{size:12d} {count:12d} {op[0]:>9} {op[1]:>7}      -1"
            for side in ("out", "in") if both else ("out",):
                bus = float(r[f"{side} busbw(GB/s)"])
                alg = r[f"{side} algbw(GB/s)"].strip()
                line += cells(size, float(alg) if alg else bus / f, bus)
            lines.append(line)
        name = f"{a.out_prefix}-{nodes}x{per_node}-{a.collective.replace('_', '')}.txt"
        text = "\n".join(lines) + "\n"
        if a.check:
            try:
                same = open(name).read() == text
            except OSError:
                same = False
            if not same:
                stale.append(name)
            continue
        open(name, "w").write(text)
        print(name)
    if stale:
        sys.exit("stale (rerun without --check): " + " ".join(stale))


if __name__ == "__main__":
    main()
