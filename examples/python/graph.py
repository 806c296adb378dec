"""A graph with a dynamic dim, compiled on the CPU and checked against NumPy.

    PYTHONPATH=build/python python3 examples/python/graph.py
"""

import numpy as np

import luminal

g = luminal.Graph()
g.declare_dim("s", 1, 512)  # buffers are sized for the largest s
x = g.tensor("x", ["s", 4])  # f32 input, s rows
w = g.tensor("w", [4, 3]).persist()  # a weight: set once, resident
y = (x @ w).softmax(-1).output("y")

opts = luminal.CompileOptions(
    search_graph_limit=20, verbose=False, dim_buckets={"s": [(1, 1), (2, 512, 16)]}
)
session = luminal.Session(g, luminal.cpu(), opts)
session.set("w", np.full((4, 3), 0.5, np.float32))  # same dtype: used in place, no copy
session.compile()  # one search per bucket

for s in (3, 100):  # both in the [2, 512] bucket: one program
    xs = np.random.default_rng(s).standard_normal((s, 4)).astype(np.float32)
    session.set("x", xs)
    session.execute(s=s)
    out = session.get("y")  # a NumPy array of shape (s, 3)
    z = xs @ np.full((4, 3), 0.5, np.float32)
    want = np.exp(z - z.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    print(f"s={s}: shape {out.shape}, max |luminal - numpy| = {np.abs(out - want).max():.2e}")

print(session.report())
