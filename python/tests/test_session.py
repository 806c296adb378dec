"""Graphs, sessions and arrays: compiled programs against NumPy, dims by name, dtypes, errors."""

import numpy as np
import pytest

import luminal


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_mlp_matches_numpy(cpu, quick):
    g = luminal.Graph()
    x = g.tensor("x", [8, 16])
    w1 = g.tensor("w1", [16, 32]).persist()
    b1 = g.tensor("b1", [32]).persist()
    w2 = g.tensor("w2", [32, 4]).persist()
    h = (x @ w1 + b1).relu()
    y = (h @ w2).sigmoid().output("y")
    assert y.shape == (8, 4) and y.dtype == "f32"
    rng = np.random.default_rng(0)
    vals = {
        "x": rng.standard_normal((8, 16), np.float32),
        "w1": rng.standard_normal((16, 32), np.float32) * 0.25,
        "b1": rng.standard_normal(32, np.float32),
        "w2": rng.standard_normal((32, 4), np.float32) * 0.25,
    }
    s = luminal.Session(g, cpu, quick)
    for k, v in vals.items():
        s.set(k, v)
    s.execute()
    got = s.get(y)
    ref = 1 / (1 + np.exp(-(np.maximum(vals["x"] @ vals["w1"] + vals["b1"], 0) @ vals["w2"])))
    assert got.shape == (8, 4) and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    assert s.compiled and "search report" in s.report()
    # Ordering with another library's stream: nothing to order on the CPU (its calls finish
    # before they return), so both are no-ops and the value stays.
    s.wait_stream(0)
    s.signal_stream(0)
    np.testing.assert_allclose(s.get(y), ref, rtol=1e-5, atol=1e-6)


def scattered(a, flat_indexes, src):
    out = a.copy().reshape(-1)
    out[flat_indexes] = src
    return out.reshape(a.shape)


def test_operators_and_methods(cpu, quick):
    g = luminal.Graph()
    a = g.tensor("a", [3, 5])
    b = g.tensor("b", [3, 5])
    outs = {
        "sum": (a + b * 2 - 1).sum(1).output("sum"),
        "div": (a / (b.abs() + 1)).output("div"),
        "neg": (-a).exp().output("neg"),
        "rsub": (1 - a).sqrt().output("rsub"),
        "max": a.max(0, keepdim=True).output("max"),
        "mean": a.mean([0, 1]).output("mean"),
        "silu": a.silu().sin().output("silu"),
        "t": a.transpose(0, 1).reshape(5, 3).output("t"),
        "perm": b.permute(1, 0).output("perm"),
        "gt": (a > b).cast("f32").output("gt"),
        "gather": a.gather_flat(g.arange(5, "i32") * 3).output("gather"),
        "scatter": a.scatter_flat(g.arange(5, "i32") * 3, b.sum(0)).output("scatter"),
        "scatter_el": a.scatter_elements(1, g.full([3, 1], 4.0, "i32"), b.sum(1, keepdim=True))
        .output("scatter_el"),
    }
    rng = np.random.default_rng(1)
    av = rng.uniform(0, 0.9, (3, 5)).astype(np.float32)
    bv = rng.standard_normal((3, 5)).astype(np.float32)
    s = luminal.compile(g, cpu, quick)
    s.set("a", av)
    s.set("b", bv)
    s.execute()
    sil = av / (1 + np.exp(-av))
    expect = {
        "sum": (av + bv * 2 - 1).sum(1),
        "div": av / (np.abs(bv) + 1),
        "neg": np.exp(-av),
        "rsub": np.sqrt(1 - av),
        "max": av.max(0, keepdims=True),
        "mean": np.array(av.mean()),
        "silu": np.sin(sil),
        "t": av.T.reshape(5, 3),
        "perm": bv.T,
        "gt": (av > bv).astype(np.float32),
        "gather": av.reshape(-1)[np.arange(5) * 3],
        "scatter": scattered(av, np.arange(5) * 3, bv.sum(0)),
        "scatter_el": np.concatenate([av[:, :4], bv.sum(1, keepdims=True)], 1),
    }
    for k, want in expect.items():
        np.testing.assert_allclose(s.get(outs[k]), want, rtol=1e-5, atol=1e-6, err_msg=k)


def test_softmax_with_dims_by_name_in_one_bucket(cpu):
    g = luminal.Graph()
    g.declare_dim("s", 1, 64)
    x = g.tensor("x", ["s", 4])
    w = g.tensor("w", [4, 6]).persist()
    y = (x @ w).softmax(-1).output("y")
    assert y.shape == ("s", 6)
    opts = luminal.CompileOptions(
        search_graph_limit=4, verbose=False, dim_buckets={"s": [(1, 1), (2, 64, 16)]}
    )
    assert [str(b) for b in opts.dim_buckets["s"]] == [
        "DimBucket[1, 1] (rep 1)",
        "DimBucket[2, 64] (rep 16)",
    ]
    s = luminal.Session(g, cpu, opts)
    rng = np.random.default_rng(2)
    wv = rng.standard_normal((4, 6)).astype(np.float32)
    s.set("w", wv)
    for n in (3, 40):  # two values in the [2, 64] bucket: one program
        xv = rng.standard_normal((n, 4)).astype(np.float32)
        s.set("x", xv)
        s.execute({"s": n})
        got = s.get("y")
        assert got.shape == (n, 6)
        np.testing.assert_allclose(got, softmax(xv @ wv), rtol=1e-5, atol=1e-6)
        assert tuple(s.shape("y")) == (n, 6)
    g.set_dim("s", 1)
    s.set("x", np.ones((1, 4), np.float32))
    s.execute()  # the graph's set_dim value
    np.testing.assert_allclose(s.get("y"), softmax(np.ones((1, 4), np.float32) @ wv), rtol=1e-5)
    assert s.dim_names == ["s"]
    assert len([r for r in s.report().split("\n") if r.startswith("search report")]) == 2


@pytest.mark.parametrize(
    "dtype,np_dtype",
    [
        ("f32", np.float32),
        ("f64", np.float64),
        ("f16", np.float16),
        ("i32", np.int32),
        ("i64", np.int64),
        ("u8", np.uint8),
        ("i16", np.int16),
        ("bool", np.bool_),
    ],
)
def test_round_trip_and_zero_copy(cpu, quick, dtype, np_dtype):
    g = luminal.Graph()
    x = g.tensor("x", [2, 3], dtype)
    assert x.dtype == dtype
    # Where-select keeps every dtype exact (an identity op that still runs a kernel).
    y = g.tensor("m", [2, 3], "bool").where(x, x).output("y")
    s = luminal.compile(g, cpu, quick)
    v = (np.arange(6).reshape(2, 3) % 2 == 1) if np_dtype is np.bool_ else np.arange(6).reshape(2, 3)
    v = np.ascontiguousarray(v.astype(np_dtype))
    s.set("m", np.ones((2, 3), np.bool_))
    before = s.stats()["bytes_wrapped"]
    s.set(x, v)
    assert s.stats()["bytes_wrapped"] == before + v.nbytes  # used in place, not copied
    s.execute()
    out = s.get(y)
    assert out.dtype == np_dtype and out.shape == (2, 3)
    np.testing.assert_array_equal(out, v)


def test_conversions_bf16_and_lists(cpu, quick):
    g = luminal.Graph()
    x = g.tensor("x", [4], luminal.dtype_name("bfloat16"))
    y = (x * 2).output("y")
    i = g.tensor("i", [3], np.int64)
    j = (i + 1).output("j")
    s = luminal.compile(g, cpu, quick)
    s.set("x", [1.0, 0.5, -3.0, 1.00390625])  # a list, rounded to bf16
    s.set("i", np.array([1, 2, 3], np.int32))  # i32 values into an i64 input
    s.execute()
    out = s.get("y")
    assert out.dtype == np.float32  # bf16 reads as f32
    np.testing.assert_array_equal(out, [2.0, 1.0, -6.0, 2.0])  # 1.00390625 rounds to 1 in bf16
    np.testing.assert_array_equal(s.get(j), np.array([2, 3, 4], np.int64))
    assert s.get(j).dtype == np.int64


def test_errors_are_luminal_errors(cpu, quick):
    assert issubclass(luminal.Error, RuntimeError)
    g = luminal.Graph()
    x = g.tensor("x", [2, 2])
    (x + 1).output("y")
    s = luminal.compile(g, cpu, quick)
    with pytest.raises(luminal.Error, match="nope"):
        s.set("nope", np.zeros(4, np.float32))
    with pytest.raises(luminal.Error, match="'x'"):
        s.set("x", np.zeros(5, np.float32))  # 5 values for 4
    with pytest.raises(luminal.Error, match="unknown dtype 'f33'"):
        g.tensor("z", [2], "f33")
    g2 = luminal.Graph()
    (g2.tensor("k", [2], "i32") + 1).output("o")
    s2 = luminal.compile(g2, cpu, quick)
    with pytest.raises(luminal.Error, match="'k'"):
        s2.set("k", np.array([0.5, 1.5]))  # floats into an integer input
    with pytest.raises(luminal.Error, match="not an output"):
        s2.get("k")
    with pytest.raises(luminal.Error, match="shape|broadcast"):
        g.tensor("a", [3]) + g.tensor("b", [4])
    with pytest.raises(luminal.Error, match="cuda"):
        if luminal.cuda_available():
            raise luminal.Error("cuda: a GPU is here, nothing to check")
        luminal.cuda()


def test_graph_introspection():
    g = luminal.Graph()
    g.declare_dim("n", 1, 8)
    a = g.tensor("a", ["n", 2])
    b = a.sum(1).output("b")
    assert g.inputs == ["a"] and g.outputs == ["b"]
    assert g.dim_range("n") == (1, 8)
    assert b.shape == ("n",)
    assert "SumReduce" in g.to_text()
    assert repr(a) == "<luminal.Tensor f32[n, 2]>"


def test_bind_external_reads_the_array_in_place(cpu, quick):
    g = luminal.Graph()
    x = g.tensor("x", [4, 4])
    y = (x * 2).output("y")
    s = luminal.compile(g, cpu, quick)
    buf = np.zeros((4, 4), np.float32)
    s.bind_external("x", buf)
    buf[:] = 1.5  # the session reads this memory itself: no set() needed
    s.execute()
    np.testing.assert_array_equal(s.get(y), np.full((4, 4), 3.0, np.float32))
    buf[1, 2] = -4
    s.execute()
    assert s.get(y)[1, 2] == -8
    with pytest.raises(luminal.Error, match="bind_external"):
        s.bind_external("x", np.zeros((4, 4), np.float64))


def test_reference_agrees_and_get_into_out(cpu, quick):
    g = luminal.Graph()
    g.declare_dim("n", 1, 16)
    x = g.tensor("x", ["n", 8])
    w = g.tensor("w", [8, 8]).persist()
    y = (x @ w).gelu().rms_norm().output("y")
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((5, 8)).astype(np.float32)
    wv = rng.standard_normal((8, 8)).astype(np.float32)
    ref = luminal.Reference(g)
    s = luminal.Session(g, cpu, quick)
    for rt in (ref, s):
        rt.set("x", xv)
        rt.set("w", wv)
        rt.execute(n=5)
    out = np.empty((5, 8), np.float32)
    assert s.get(y, out=out) is out  # read in place, no allocation
    np.testing.assert_allclose(out, ref.get(y), rtol=1e-5, atol=1e-6)
    with pytest.raises(luminal.Error, match="out="):
        s.get(y, out=np.empty((4, 8), np.float32))
    with pytest.raises(luminal.Error, match="out="):
        s.get(y, out=np.empty((5, 8), np.float64))


def test_bf16_output_into_a_torch_tensor(cpu, quick):
    torch = pytest.importorskip("torch")
    g = luminal.Graph()
    x = g.tensor("x", [3, 4], "bf16")
    y = (x * 2).output("y")
    s = luminal.Session(g, cpu, quick)
    xt = torch.arange(12, dtype=torch.bfloat16).reshape(3, 4)
    s.set("x", xt)
    s.execute()
    out = torch.empty(3, 4, dtype=torch.bfloat16)  # NumPy lacks bf16; torch has it
    assert s.get(y, out=out) is out
    assert torch.equal(out, xt * 2)
    ref = luminal.Reference(g)
    ref.set("x", xt)
    ref.execute()
    out2 = torch.zeros(3, 4, dtype=torch.bfloat16)
    ref.get(y, out=out2)
    assert torch.equal(out2, xt * 2)
