"""Python-vs-Rust speed harness (issue: Python package, "Speed").

Per-object cost of the Python API against the pure-Rust cost of the same operations, measured
in the same process and build (``zsmalloc._zsmalloc.rust_bench``):

    python zsmalloc-py/bench/speed.py                  # 100k objects, 11 rounds
    python zsmalloc-py/bench/speed.py -n 20000 -r 3 --json

Objects: sizes from normal(694, 474) rounded and clipped to 1..4096 (seeded), random bytes.
Each repeat uses fresh default pools (4K pages, chain 8, classic), like the Rust side.

| Python                          | pure Rust (same objects)                    |
|---------------------------------|---------------------------------------------|
| ``pool.store(b)`` in a loop     | ``Pool::store`` in a loop (safe handles)    |
| ``pool.store_many(items)``      | ``Pool::store`` in a loop (safe handles)    |
| ``pool.read(h)`` in a loop      | ``Pool::read_to_vec`` in a loop             |
| ``pool.read_many(hs)``          | ``Pool::read_to_vec`` in a loop             |
| ``pool.read_many(hs, out=buf)`` | ``Pool::read_into`` back to back            |

The bulk paths' target is at most 1.2x the pure-Rust cost. Both sides are timed on the calling
thread's CPU clock (user + system time, page faults included; waiting for a core excluded), best
of N interleaved rounds, so a loaded machine shifts both alike; compare ratios, not absolute
numbers, across machines.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time

import zsmalloc
from zsmalloc import _zsmalloc


def make_objects(n: int, seed: int = 694, mean: float = 694, sd: float = 474, page: int = 4096):
    """The sizes (normal(mean, sd) clipped to 1..page) and one buffer holding all objects."""
    rng = random.Random(seed)
    lengths = [min(page, max(1, round(rng.gauss(mean, sd)))) for _ in range(n)]
    data = rng.randbytes(sum(lengths))
    return lengths, data


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        best = min(best, fn())
    return best


def measure(n: int = 100_000, repeats: int = 5, seed: int = 694) -> dict:
    """ns per object for each Python operation and its pure-Rust counterpart, and the ratios."""
    lengths, data = make_objects(n, seed)
    items = []
    off = 0
    for length in lengths:
        items.append(data[off : off + length])
        off += length

    def timed(setup, op, rounds):
        def run():
            state = setup()
            gc.disable()
            try:
                t = time.thread_time_ns()
                op(state)
                return (time.thread_time_ns() - t) / n
            finally:
                gc.enable()
                del state

        return _best(run, rounds)

    def fresh():
        return {"pool": zsmalloc.Pool("speed")}

    def stored():
        pool = zsmalloc.Pool("speed")
        return {"pool": pool, "hs": pool.store_many(items), "hl": None}

    def stored_each():
        pool = zsmalloc.Pool("speed")
        return {"pool": pool, "hl": [pool.store(b) for b in items]}

    def loop_store(s):
        store = s["pool"].store
        s["keep"] = [store(b) for b in items]

    def bulk_store(s):
        s["keep"] = s["pool"].store_many(items)

    def bulk_store_packed(s):
        s["keep"] = s["pool"].store_many(data, lengths)

    def loop_read(s):
        read = s["pool"].read
        s["out"] = [read(h) for h in s["hl"]]

    def bulk_read(s):
        s["out"] = s["pool"].read_many(s["hs"])

    out_buf = bytearray(len(data))

    def bulk_read_into(s):
        s["pool"].read_many(s["hs"], out=out_buf)

    py_ops = {
        "store (loop)": (fresh, loop_store),
        "store_many": (fresh, bulk_store),
        "store_many (packed)": (fresh, bulk_store_packed),
        "read (loop)": (stored_each, loop_read),
        "read_many": (stored, bulk_read),
        "read_many (out=)": (stored, bulk_read_into),
    }
    baseline = {
        "store (loop)": "store",
        "store_many": "store_vecs",
        "store_many (packed)": "store",
        "read (loop)": "read",
        "read_many": "read",
        "read_many (out=)": "read_into",
    }
    # Interleaved: each Python operation is timed right next to its Rust counterpart, round
    # after round, so both see the same machine load. Reported: the best round of each side, and
    # the median of the per-round ratios (robust to a round that was slow for both).
    rounds_py = {op: [] for op in py_ops}
    rounds_rust = {op: [] for op in py_ops}
    all_rust: dict = {}
    for _ in range(repeats):
        for op, (setup, fn) in py_ops.items():
            rounds_py[op].append(timed(setup, fn, 1))
            rounds_rust[op].append(
                _zsmalloc.rust_bench(data, lengths, 1, [baseline[op]])[baseline[op]]
            )
        for k, v in _zsmalloc.rust_bench(data, lengths, 1).items():
            all_rust.setdefault(k, []).append(v)
    py = {op: min(v) for op, v in rounds_py.items()}
    rust = {k: min(v) for k, v in all_rust.items()}

    # Sanity: what was read is what was stored.
    check = stored()
    assert check["pool"].read_many(check["hs"]) == items
    check["pool"].read_many(check["hs"], out=out_buf)
    assert out_buf == data
    del check

    rows = []
    for op, ns in py.items():
        base = baseline[op]
        rust_ns = min(rounds_rust[op])
        rows.append(
            {
                "operation": op,
                "python_ns": round(ns, 1),
                "rust_op": base,
                "rust_ns": round(rust_ns, 1),
                "ratio": round(ns / rust_ns, 2),
                "median_round_ratio": round(
                    statistics.median(p / r for p, r in zip(rounds_py[op], rounds_rust[op])),
                    2,
                ),
            }
        )
    return {
        "objects": n,
        "repeats": repeats,
        "mean_len": round(sum(lengths) / n, 1),
        "rows": rows,
        "rust": {k: round(v, 1) for k, v in sorted(rust.items())},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--objects", type=int, default=100_000)
    ap.add_argument("-r", "--repeats", type=int, default=11)
    ap.add_argument("--seed", type=int, default=694)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    res = measure(args.objects, args.repeats, args.seed)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(
        f"{res['objects']} objects of normal(694, 474) clipped to 1..4096 "
        f"(mean {res['mean_len']} B), best of {res['repeats']}, ns per object\n"
    )
    print(f"{'operation':<22}{'python':>10}  {'pure Rust':<20}{'ratio':>7}{'median':>9}")
    for r in res["rows"]:
        print(
            f"{r['operation']:<22}{r['python_ns']:>10.1f}  "
            f"{r['rust_op'] + ' ' + format(r['rust_ns'], '.1f'):<20}{r['ratio']:>6.2f}x"
            f"{r['median_round_ratio']:>8.2f}x"
        )
    print("\nratio: best Python round / best Rust round; median: median of per-round ratios")
    print("\npure Rust, all:", ", ".join(f"{k} {v}" for k, v in res["rust"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
