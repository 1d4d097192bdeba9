"""Random message field values for the fuzz tests: huge integers, NaN, bytes, nested
lists and dicts, huge lists and strings."""

from __future__ import annotations

import random


def fuzz_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(12)
    if kind == 0:
        return rng.randrange(-2**63, 2**64)
    if kind == 1:
        return rng.choice([float("nan"), float("inf"), -1.5, 1e308, 0.0])
    if kind == 2:
        return "".join(rng.choice("ab\u00e9\x00") for _ in range(rng.randrange(8)))
    if kind == 3:
        return rng.randbytes(rng.randrange(16))
    if kind == 4:
        return None
    if kind == 5:
        return rng.choice([True, False])
    if kind == 6 and depth < 3:
        return [fuzz_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7 and depth < 3:
        return {rng.choice(["key", "op", 1, "GPU", b"k"]): fuzz_value(rng, depth + 1) for _ in range(rng.randrange(3))}
    if kind == 8:
        return [rng.randrange(2**31)] * rng.choice([10, 70_000])  # a huge list
    if kind == 9:
        return ["fz-" + str(rng.randrange(10))] * rng.choice([1, 65, 70_000])
    if kind == 10:
        return "x" * rng.choice([1, 2**16 + 1])
    return {"GPU": fuzz_value(rng, depth + 1)} if depth < 3 else 0
