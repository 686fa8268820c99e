#!/usr/bin/env python3
"""Writes the single-node all_reduce tables of ../shared/validation/nccl_bandwidth_cases.json as
nccl-tests text (the format `dtsim calibrate --nccl-tests` reads), one file per table, into
calibration/nccl/. Rerun it when that file changes:

    python3 tools/nccl-cases-to-text.py ../shared/validation/nccl_bandwidth_cases.json calibration/nccl

A table with time_us per row (NVIDIA's DGX Cloud sample) keeps its out-of-place and in-place
times. A table that publishes only in-place busbw (Azure) gets one column set: time =
size x 2(n-1)/n / busbw and algbw = size / time (nccl-tests doc/PERFORMANCE.md), so its
small-size times carry the rounding of a 2-decimal busbw.
"""
import collections
import json
import sys

TABLES = {  # id prefix -> (output file, description)
    "dgxc-h100-1node-allreduce": ("dgxc-h100-1x8-allreduce.txt", "NVIDIA DGX Cloud H100"),
    "azure-H100-1node": ("azure-h100-1x8-allreduce.txt", "Azure ND H100 v5"),
    "azure-H200-1node": ("azure-h200-1x8-allreduce.txt", "Azure ND H200 v5"),
    "azure-A100-SXM4-80GB-1node": ("azure-a100-1x8-allreduce.txt", "Azure ND A100 v4"),
}


def table_of(case_id):
    for prefix in TABLES:
        if case_id.startswith(prefix + "-"):
            return prefix
    return None


def row(size, t, ranks, ip=None):
    count = size // 4
    algbw = size / t / 1e3
    busbw = algbw * 2 * (ranks - 1) / ranks
    cells = f"{size:12d} {count:12d}     float     sum      -1 {t:8.2f} {algbw:7.2f} {busbw:7.2f}      0"
    if ip is not None:
        a = size / ip / 1e3
        cells += f" {ip:8.2f} {a:7.2f} {a * 2 * (ranks - 1) / ranks:7.2f}      0"
    return cells


def main(src, out_dir):
    cases = json.load(open(src))
    groups = collections.defaultdict(list)
    for c in cases:
        t = table_of(c["id"])
        if t:
            groups[t].append(c)
    for prefix, rows in groups.items():
        name, what = TABLES[prefix]
        ranks = rows[0]["gpus_per_node"] * rows[0]["nodes"]
        s = rows[0]["source"]
        by_size = collections.defaultdict(dict)
        for c in rows:
            by_size[c["message_bytes"]]["ip" if c["in_place"] else "oop"] = c
        lines = [f"# {what}: all_reduce_perf, {ranks} GPUs on one node, NCCL {rows[0].get('nccl_version') or 'version not stated'}",
                 f"# source: {s['repo']} {s['path']} @ {s['commit']}, via ../shared/validation/nccl_bandwidth_cases.json",
                 "# written by tools/nccl-cases-to-text.py"]
        timed = all(c.get("time_us") for c in rows)
        if not timed:
            lines.append("# columns: the published in-place busbw; time and algbw derived from it")
        lines += ["#  Rank %2d Group  0 Pid      0 on node0 device %2d [0x00] %s" % (r, r, rows[0]["gpu"]) for r in range(ranks)]
        lines.append("#       size         count      type   redop    root     time   algbw   busbw #wrong" + ("     time   algbw   busbw #wrong" if timed else ""))
        for size in sorted(by_size):
            d = by_size[size]
            if timed:
                lines.append(row(size, d["oop"]["time_us"], ranks, d["ip"]["time_us"]))
            else:
                c = d.get("ip") or d["oop"]
                lines.append(row(size, size * 2 * (ranks - 1) / ranks / (c["busbw_GBps"] * 1e3), ranks))
        open(f"{out_dir}/{name}", "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
