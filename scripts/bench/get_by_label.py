#!/usr/bin/env python3
"""Microseconds a get() by label takes on a large graph (295 inputs, ~34,000 nodes, one output:
the node counts of the 8B torch.compile decode graph), through the Reference runtime, which does
no device work: what is left is the label lookups.

  PYTHONPATH=build/python python3 scripts/bench/get_by_label.py
"""

import time

import numpy as np

import luminal


def main():
    g = luminal.Graph()
    ins = [g.tensor(f"w{i}", [4]) for i in range(295)]
    x = ins[0]
    for i in range(17000):  # two nodes each: a constant or an input, and the op
        x = x + ins[i % 295] if i % 2 else x * 1.0001
    x.output("out")
    ref = luminal.Reference(g)
    for i in range(295):
        ref.set(f"w{i}", np.ones(4, np.float32))
    ref.execute()
    reps = 200
    t = time.perf_counter()
    for _ in range(reps):
        ref.get("out")
    print(f"get by label: {(time.perf_counter() - t) / reps * 1e6:.1f} us a call")


if __name__ == "__main__":
    main()
