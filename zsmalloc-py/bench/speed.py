"""Python against C speed harness: the Python API's cost per object next to the C ABI's.

Each Python operation is timed against the same operation in C, on the same objects, through the
C ABI of the extension module Python has loaded (``zsmalloc.library_path()``: the same allocator
instance and build). The C side (``speed_c.c``, beside this file) is compiled with ``cc`` at
start-up and given the entry points found with ctypes, so no ctypes call is timed:

    python zsmalloc-py/bench/speed.py                  # 100k objects, 11 rounds
    python zsmalloc-py/bench/speed.py -n 20000 -r 3 --json

Objects: sizes from normal(694, 474) rounded and clipped to 1..4096 (seeded), random bytes.
Each round uses fresh default pools (4K pages, chain 8, classic) on both sides.

| Python                          | C through the C ABI (same objects)                 |
|---------------------------------|----------------------------------------------------|
| ``pool.store(b)`` in a loop     | ``zs_store`` in a loop, from one buffer            |
| ``pool.store_many(items)``      | ``zs_store`` in a loop, from separate buffers      |
| ``pool.read(h)`` in a loop      | read begin + copy + end into a new buffer each     |
| ``pool.read_many(hs)``          | read begin + copy + end into a new buffer each     |
| ``pool.read_many(hs, out=buf)`` | read begin + copy + end, back to back into one     |

The bulk paths' target is at most 1.2x the C cost. Both sides are timed on the calling thread's
CPU clock (user + system time, page faults included; waiting for a core excluded), best of N
interleaved rounds, so a loaded machine shifts both alike; compare ratios, not absolute numbers,
across machines.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zsmalloc

HERE = Path(__file__).resolve().parent
INCLUDE = HERE.parents[1] / "include"
C_OPS = ("store", "store_vecs", "read", "read_into", "free")


class _Api(ctypes.Structure):
    """``struct speed_api`` of speed_c.c: the C ABI entry points it calls."""

    _fields_ = [
        (name, ctypes.c_void_p)
        for name in ("create_pool", "destroy_pool", "store", "read_begin", "read_end", "free")
    ]


class CSide:
    """speed_c.c compiled and bound to the C ABI of the loaded extension module."""

    def __init__(self) -> None:
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            raise RuntimeError("the C side of the harness needs a C compiler (cc)")
        self._dir = tempfile.TemporaryDirectory(prefix="zsmalloc-speed-")
        so = os.path.join(self._dir.name, "speed_c.so")
        subprocess.run(
            [cc, "-O2", "-std=gnu11", "-Wall", "-Wextra", "-shared", "-fPIC", f"-I{INCLUDE}",
             str(HERE / "speed_c.c"), "-o", so],
            check=True,
        )
        self._lib = ctypes.CDLL(so)
        self._fn = self._lib.speed_c
        self._fn.restype = ctypes.c_int
        self._fn.argtypes = [
            ctypes.POINTER(_Api), ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
            ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double),
        ]
        abi = ctypes.CDLL(zsmalloc.library_path())
        self._api = _Api(*(
            ctypes.cast(getattr(abi, f"zs_{name}"), ctypes.c_void_p).value
            for name in ("create_pool", "destroy_pool", "store", "obj_read_begin",
                         "obj_read_end", "free")
        ))

    def measure(self, data: bytes, lengths: list[int], op: str) -> float:
        """Thread-CPU ns per object of one timed run of ``op`` on a fresh pool."""
        lens = (ctypes.c_size_t * len(lengths))(*lengths)
        ns = ctypes.c_double()
        rc = self._fn(ctypes.byref(self._api), data, lens, len(lengths), op.encode(),
                      ctypes.byref(ns))
        if rc != 0:
            raise OSError(-rc, f"C side of {op!r} failed: {os.strerror(-rc)}")
        return ns.value


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
    """ns per object for each Python operation and its C counterpart, and the ratios."""
    # The C side's pools come from zs_create_pool, which reads ZSMALLOC_*; the Python side's are
    # default pools whatever the environment.
    # ZSMALLOC_VENV (the test script's venv) and ZSMALLOC_BIN (where the zsmalloc command is) are
    # not read by the library.
    not_settings = ("ZSMALLOC_VENV", "ZSMALLOC_BIN")
    configured = sorted(v for v in os.environ if v.startswith("ZSMALLOC_") and v not in not_settings)
    if configured:
        raise ValueError(f"unset {', '.join(configured)}: both sides must use default pools")
    c_side = CSide()
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
    # Interleaved: each Python operation is timed right next to its C counterpart, round after
    # round, so both see the same machine load. Reported: the best round of each side, and the
    # median of the per-round ratios (robust to a round that was slow for both).
    rounds_py: dict[str, list[float]] = {op: [] for op in py_ops}
    rounds_c: dict[str, list[float]] = {op: [] for op in py_ops}
    all_c: dict[str, list[float]] = {op: [] for op in C_OPS}
    for _ in range(repeats):
        for op, (setup, fn) in py_ops.items():
            rounds_py[op].append(timed(setup, fn, 1))
            rounds_c[op].append(c_side.measure(data, lengths, baseline[op]))
        for op in C_OPS:
            all_c[op].append(c_side.measure(data, lengths, op))
    py = {op: min(v) for op, v in rounds_py.items()}
    c = {k: min(v) for k, v in all_c.items()}

    # Sanity: what was read is what was stored.
    check = stored()
    assert check["pool"].read_many(check["hs"]) == items
    check["pool"].read_many(check["hs"], out=out_buf)
    assert out_buf == data
    del check

    rows = []
    for op, ns in py.items():
        c_ns = min(rounds_c[op])
        rows.append(
            {
                "operation": op,
                "python_ns": round(ns, 1),
                "c_op": baseline[op],
                "c_ns": round(c_ns, 1),
                "ratio": round(ns / c_ns, 2),
                "median_round_ratio": round(
                    statistics.median(p / r for p, r in zip(rounds_py[op], rounds_c[op])), 2
                ),
            }
        )
    return {
        "objects": n,
        "repeats": repeats,
        "mean_len": round(sum(lengths) / n, 1),
        "rows": rows,
        "c": {k: round(v, 1) for k, v in sorted(c.items())},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--objects", type=int, default=100_000)
    ap.add_argument("-r", "--repeats", type=int, default=11)
    ap.add_argument("--seed", type=int, default=694)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    for var in [v for v in os.environ if v.startswith("ZSMALLOC_")]:
        del os.environ[var]  # default pools on both sides (see measure)
    res = measure(args.objects, args.repeats, args.seed)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(
        f"{res['objects']} objects of normal(694, 474) clipped to 1..4096 "
        f"(mean {res['mean_len']} B), best of {res['repeats']}, ns per object\n"
    )
    print(f"{'operation':<22}{'python':>10}  {'C ABI':<20}{'ratio':>7}{'median':>9}")
    for r in res["rows"]:
        print(
            f"{r['operation']:<22}{r['python_ns']:>10.1f}  "
            f"{r['c_op'] + ' ' + format(r['c_ns'], '.1f'):<20}{r['ratio']:>6.2f}x"
            f"{r['median_round_ratio']:>8.2f}x"
        )
    print("\nratio: best Python round / best C round; median: median of per-round ratios")
    print("\nC ABI, all:", ", ".join(f"{k} {v}" for k, v in res["c"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
