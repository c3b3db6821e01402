#!/usr/bin/env python3
"""The pages zblock needs for zsmalloc_test's fill (N objects of each size LO..=HI by STEP), from
its block table alone: with stores only, a type opens a block exactly when all its blocks are
full, so each type holds ceil(objects / slots) blocks.

    zblock_fill_pages.py TABLE.csv LO HI STEP N

TABLE.csv is `zsmalloc classes --backend zblock --page-size P --format csv`. Prints the pages
and the refused objects the way zsmalloc_test reports them."""

import csv
import sys


def main() -> int:
    table, lo, hi, step, n = sys.argv[1], *map(int, sys.argv[2:6])
    with open(table, newline="") as f:
        types = [(int(r["slot_size"]), int(r["slots"]), int(r["pages_per_block"])) for r in csv.DictReader(f)]
    counts = [0] * len(types)
    refused = 0
    for size in range(lo, hi + 1, step):
        # The first type whose slot size is strictly greater than the length.
        t = next((i for i, (slot, _, _) in enumerate(types) if slot > size), None)
        if t is None:
            refused += n
        else:
            counts[t] += n
    pages = sum(-(-c // slots) * pages for c, (_, slots, pages) in zip(counts, types))
    print(f"pages {pages} refused {refused}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
