#!/usr/bin/env python3
"""Mutated-preset campaign: dtsim on hundreds of broken copies of its own presets.

Each mutant is a shipped model, cluster, GPU or calibration file with one mutation: random byte
flips, a deleted key, a value of the wrong type (string, negative, zero, huge, null, array,
object, NaN-like text), a duplicated or truncated document. dtsim `show` and `simulate` run on it;
the only acceptable outcomes are exit 0 (the mutation was harmless) or exit 2 with exactly one
line on stderr. A crash, an internal error (exit 1), a hang (over --timeout seconds) or a second
stderr line is reported with the mutant kept for replay.

Usage: tools/mutate_presets.py DTSIM [--count 300] [--seed 1] [--timeout 20] [--keep DIR]
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WRONG = ["x", "", -1, 0, -1e308, 1e308, 2 ** 63, 1.5, None, True, [], {}, [1, 2], {"a": 1}, "NaN", "1e400",
         "\u00e9\u00ff", "../../etc/passwd", "9" * 400]


def presets(root):
    out = []
    for sub, kind in (("models", "model"), ("topologies", "cluster"), ("topologies/gpus", "gpu"), ("calibration", "calibration")):
        d = os.path.join(root, sub)
        out += [(kind, os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".json")]
    return out


def paths(doc, prefix=()):
    """Every (container, key) pair in the document, depth first."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield prefix, doc, k
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield prefix, doc, i
            yield from paths(v, prefix + (i,))


def mutate(text, rng):
    """One mutation of a JSON text; returns (description, bytes)."""
    kind = rng.choice(["flip", "delete", "wrong", "wrong", "truncate", "duplicate", "overflow"])
    if kind == "flip":
        data = bytearray(text.encode())
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] = rng.randrange(256)
        return "byte flips", bytes(data)
    if kind == "truncate":
        cut = rng.randrange(1, len(text))
        return f"truncated at {cut}", text[:cut].encode()
    if kind == "duplicate":
        return "two documents", (text + text).encode()
    if kind == "overflow":  # a number no double holds, as literal JSON text
        digits = [i for i, c in enumerate(text) if c.isdigit()]
        i = rng.choice(digits) if digits else 0
        return f"1e999 at byte {i}", (text[:i] + "1e999" + text[i + 1:]).encode()
    doc = json.loads(text)
    where = list(paths(doc))
    prefix, container, key = rng.choice(where)
    if kind == "delete":
        del container[key]
        desc = f"deleted {'/'.join(map(str, prefix + (key,)))}"
    else:
        value = rng.choice(WRONG)
        container[key] = value
        desc = f"{'/'.join(map(str, prefix + (key,)))} = {json.dumps(value)[:40]}"
    return desc, json.dumps(doc).encode()


def commands(kind, path, dtsim):
    job = ["--gpus", "16", "--gbs", "32", "--seq", "2048"]
    if kind == "model":
        return [[dtsim, "show", "model", path], [dtsim, "simulate", "--model", path, "--cluster", "dgx-h100", *job]]
    if kind == "cluster":
        return [[dtsim, "show", "cluster", path], [dtsim, "simulate", "--model", "llama3-8b", "--cluster", path, *job]]
    if kind == "gpu":
        return [[dtsim, "show", "gpu", path]]
    return [[dtsim, "simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--calibration", path, *job]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dtsim")
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--keep", default=None, help="directory for failing mutants (default: a temporary one)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    # A private copy of the data tree: mutants sit beside their originals (relative references
    # such as a cluster's "gpu" resolve) without showing up in the checkout's preset lists.
    work = tempfile.mkdtemp(prefix="dtsim_mutants_")
    data = os.path.join(work, "data")
    for sub in ("models", "topologies", "calibration"):
        shutil.copytree(os.path.join(ROOT, sub), os.path.join(data, sub))
    files = presets(data)
    keep = a.keep or os.path.join(work, "failures")
    os.makedirs(keep, exist_ok=True)
    env = dict(os.environ, DTSIM_DATA_DIR=data)
    failures, runs, outcomes = 0, 0, {0: 0, 2: 0}
    try:
        for n in range(a.count):
            kind, src = rng.choice(files)
            with open(src, encoding="utf-8") as f:
                text = f.read()
            desc, mutant = mutate(text, rng)
            # Mutants sit beside their original so relative references ("gpu", "calibration") resolve.
            path = os.path.join(os.path.dirname(src), f".mutant-{os.getpid()}-{n}.json")
            with open(path, "wb") as f:
                f.write(mutant)
            try:
                for cmd in commands(kind, path, a.dtsim):
                    runs += 1
                    try:
                        r = subprocess.run(cmd, capture_output=True, timeout=a.timeout, env=env)
                        code, err = r.returncode, r.stderr
                    except subprocess.TimeoutExpired:
                        code, err = "timeout", b""
                    lines = err.count(b"\n")
                    ok = code == 0 or (code == 2 and lines == 1)
                    if code in outcomes:
                        outcomes[code] += 1
                    if not ok:
                        failures += 1
                        kept = os.path.join(keep, f"mutant-{n}-{os.path.basename(src)}")
                        shutil.copy(path, kept)
                        print(f"FAIL #{n} {os.path.relpath(src, data)} ({desc}): {' '.join(cmd[1:3])} -> exit {code}, "
                              f"{lines} stderr lines: {err.decode(errors='replace')[:300]!r}; mutant kept in {kept}")
            finally:
                os.remove(path)
    finally:
        if not a.keep and failures == 0:
            shutil.rmtree(work, ignore_errors=True)
    print(f"mutate_presets: {a.count} mutants, {runs} runs (exit 0: {outcomes[0]}, exit 2: {outcomes[2]}), "
          f"{failures} failures (seed {a.seed})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
