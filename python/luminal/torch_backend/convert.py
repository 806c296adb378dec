"""FX graph (core ATen) to a luminal Graph.

``Converter(gm).build()`` walks the nodes in order: placeholders become graph inputs ("in0",
"in1", ...; SymInt placeholders become sizes), each call goes through table.CONVERTERS, and the
returned tensors become outputs ("out0", ...). Symbolic sizes (Dynamo's SymInts, sympy
expressions) become luminal dims named after their symbols ("s0", "2*s0 + 1").

With ``probe=True`` a node that does not convert gets a stand-in input instead of failing, so
one pass finds every node that converts (``supported`` / ``reasons``); the partitioner uses it.
"""

import torch

from . import ops, ops_conv, ops_group, ops_shape  # noqa: F401  (fill the table)
from .table import _DTYPES, CHECKS, CONVERTERS, Unsupported, luminal_dtype

def size_expr(v, shifted=None):
    """An int, a dim name or a size expression string for an int, SymInt or sympy expression.
    shifted: {symbol: (sign, offset)} for integers that can be below 1 (Converter._symbol): the
    luminal dim of that name holds sign * (value - offset), and the symbol is offset + sign * dim."""
    if isinstance(v, int):
        return v
    if isinstance(v, torch.SymInt):
        if getattr(v.node, "is_nested_int", lambda: False)():
            raise Unsupported("a nested int size")
        v = v.node.expr
    import sympy

    from torch.utils._sympy.functions import FloorDiv, Mod, PythonMod

    if isinstance(v, sympy.Integer) or (hasattr(v, "is_Integer") and v.is_Integer):
        return int(v)
    if isinstance(v, sympy.Symbol):
        if not v.name.startswith("s"):  # u0...: unbacked, data-dependent
            raise Unsupported(f"the data-dependent size {v.name}")
        if shifted and v.name in shifted:
            sign, offset = shifted[v.name]
            return f"({offset} {'+' if sign > 0 else '-'} {v.name})"
        return v.name
    args = [size_expr(a, shifted) for a in v.args]
    if isinstance(v, sympy.Add):
        return "(" + " + ".join(str(a) for a in args) + ")"
    if isinstance(v, sympy.Mul):
        return "(" + " * ".join(str(a) for a in args) + ")"
    if isinstance(v, sympy.Pow) and isinstance(args[1], int) and args[1] > 0:
        return "(" + " * ".join([str(args[0])] * args[1]) + ")"
    if isinstance(v, FloorDiv):
        return f"(({args[0]}) // ({args[1]}))"
    if isinstance(v, (Mod, PythonMod)):
        return f"(({args[0]}) % ({args[1]}))"
    raise Unsupported(f"the size {v}")


def eval_size(v, values, shifted=None):
    """The value of an int, SymInt or sympy size given {dim name: int} (dim_values: a shifted
    symbol's dim holds sign * (value - offset))."""
    if isinstance(v, int):
        return v
    if isinstance(v, torch.SymInt):
        v = v.node.expr
    shifted = shifted or {}

    def value(name):
        sign, offset = shifted.get(name, (1, 0))
        return offset + sign * values[name]

    return int(v.subs({s: value(s.name) for s in v.free_symbols}))


def _device_ok(val, device):
    """A CPU tensor converts in a CUDA graph too: torch puts Python floats it lifts into the
    graph (an RMSNorm's eps in torch 2.11) and constants on the CPU as 0-dim tensors, which
    mix with CUDA tensors; the piece uploads them, and every output goes back to the device
    torch's graph gives it."""
    if not isinstance(val, torch.Tensor):
        return True
    return val.device.type == device or (device == "cuda" and val.device.type == "cpu")


class Converter:
    def __init__(self, gm, device="cpu", probe=False, dim_range=None):
        import luminal

        ops_group.register_grouped_mm()  # transformers' op exists once its MoE code is imported
        self.gm = gm
        self.g = luminal.Graph()
        self.device = device
        self.probe = probe
        self.values = {}  # FX node -> luminal Tensor, size, or list of them
        self.inputs = []  # (label or None, placeholder node) in placeholder order
        self.outputs = []  # (kind, label(s) or size, dtype(s), device(s)) per returned value
        self.out_dtypes = {}  # output label -> its luminal dtype ("bf16")
        self.mutations = {}  # input label -> the output carried into it (copy_ of a new value)
        self.symbols = {}  # symbol name -> (placeholder index, axis or None)
        self.supported = set()
        self.reasons = {}  # FX node -> why it runs in eager
        self._stand_ins = 0
        self.dim_range = dim_range
        self.ranges = {}  # dim name -> (min, max), declared on the graph before any op
        self.shifted = {}  # integer inputs that can be below 1: name -> (sign, offset), size_expr

    # Used by the converters.
    def dtype(self, node):
        return node.meta["val"].dtype

    def shape(self, node):
        return self._sizes(node.meta["val"].shape)

    def _sizes(self, shape):
        return [self._size(d) for d in shape]

    def _size(self, d):
        """size_expr of d, every symbol it uses declared first (a shifted one is written shifted)."""
        if isinstance(d, torch.SymInt):
            for sym in d.node.expr.free_symbols:
                self._symbol(sym.name, None, None)
        return size_expr(d, self.shifted)

    def _input(self, label, val):
        return self.g.tensor(label, self._sizes(val.shape), luminal_dtype(val.dtype))

    def _symbol(self, name, index, axis):
        """A dim seen at (placeholder index, axis; None for a SymInt input, or (None, None) when
        no input of this graph carries it alone: split() passes the graph's values then)."""
        if name in self.symbols:
            if self.symbols[name][0] is None and index is not None:
                self.symbols[name] = (index, axis)
            return
        self.symbols[name] = (index, axis)
        if self.dim_range:
            r = self.dim_range(name)
            if len(r) == 4:  # (min, max, sign, offset): an integer that can be 0 or negative
                self.shifted[name] = r[2:]
            self.ranges[name] = r[:2]
            self.g.declare_dim(name, *self.ranges[name])

    def mutate(self, placeholder, value):
        """Input `placeholder` takes `value` after every execute (carried state). Once an input:
        ops_shape._check_copy_ leaves a second copy_ into it to eager."""
        label = next(lb for lb, n in self.inputs if n is placeholder)
        out = f"mut_{label}"
        self.g.carry(value.output(out), self.values[placeholder])
        self.out_dtypes[out] = str(value.dtype)
        self.mutations[label] = out

    def dim_values(self, args):
        """{dim: value} for the dims this graph's inputs carry, from the call's arguments."""
        vals = {}
        for name, (i, axis) in self.symbols.items():
            if i is not None:
                a = args[i]
                vals[name] = int(a) if axis is None else int(a.shape[axis])
                if name in self.shifted:
                    sign, offset = self.shifted[name]
                    vals[name] = sign * (vals[name] - offset)
        return vals

    def _placeholder(self, node, index):
        val = node.meta.get("val")
        if isinstance(val, torch.SymInt) or isinstance(val, int):
            e = size_expr(val)
            if isinstance(e, str) and e.isidentifier():
                self._symbol(e, index, None)
            self.inputs.append((None, node))
            return self._size(val)
        if not isinstance(val, torch.Tensor):
            raise Unsupported(f"the input {node.name} is a {type(val).__name__}")
        for axis, d in enumerate(val.shape):
            if isinstance(d, torch.SymInt):
                e = size_expr(d)
                if isinstance(e, str) and e.isidentifier():
                    self._symbol(e, index, axis)
        label = f"in{index}"
        self.inputs.append((label, node))
        return self._input(label, val)

    def _stand_in(self, val):
        if isinstance(val, torch.Tensor):
            if val.dtype not in _DTYPES:  # (a complex rope): whatever reads it is refused too
                return None
            self._stand_ins += 1
            return self._input(f"standin{self._stand_ins}", val)
        if isinstance(val, (torch.SymInt, int)):
            return self._size(val)
        if isinstance(val, (list, tuple)):
            return [self._stand_in(v) for v in val]
        return None

    def _map(self, a):
        if isinstance(a, torch.fx.Node):
            return self.values[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self._map(x) for x in a)
        return a

    def why_not(self, node):
        """None when the node's op and values can convert, else the reason."""
        if node.target not in CONVERTERS:
            return "no converter"
        check = CHECKS.get(node.target)
        if check:
            r = check(node)
            if r:
                return r
        val = node.meta.get("val")
        vals = val if isinstance(val, (list, tuple)) else [val]
        for v in vals:
            if isinstance(v, torch.Tensor):
                if v.dtype not in _DTYPES:
                    return f"dtype {v.dtype}"
                if not _device_ok(v, self.device):
                    return f"a {v.device.type} tensor"
        for a in node.all_input_nodes:
            v = a.meta.get("val")
            if isinstance(v, torch.Tensor) and v.dtype not in _DTYPES:
                return f"dtype {v.dtype}"
        return None

    def _call(self, node):
        reason = self.why_not(node)
        if reason:
            raise Unsupported(reason)
        args = self._map(node.args)
        kwargs = {k: self._map(v) for k, v in node.kwargs.items()}
        return CONVERTERS[node.target](self, node, *args, **kwargs)

    def build(self):
        import luminal

        index = 0
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                try:
                    self.values[node] = self._placeholder(node, index)
                except Unsupported:
                    if not self.probe:
                        raise
                    self.values[node] = None  # (a complex buffer): its readers run in eager
                index += 1
            elif node.op == "call_function":
                try:
                    self.values[node] = self._call(node)
                    self.supported.add(node)
                except Exception as e:  # noqa: BLE001  (any failure: the node runs in eager)
                    if not self.probe:
                        raise Unsupported(f"{node.target}: {e}") from e
                    known = isinstance(e, (Unsupported, luminal.Error, TypeError, ValueError))
                    why = str(e) or type(e).__name__
                    self.reasons[node] = why if known else f"{type(e).__name__}: {why}"
                    self.values[node] = self._stand_in(node.meta.get("val"))
            elif node.op == "output":
                if not self.probe:
                    self._outputs(node.args[0])
            elif node.op == "get_attr":
                # A constant the graph holds; pieces get it as an input (the partitioner keeps
                # get_attr nodes outside them), so only the probe meets it.
                if not self.probe:
                    raise Unsupported("a get_attr node inside a piece")
                self.values[node] = self._stand_in(node.meta.get("val"))
            else:
                raise Unsupported(f"an FX {node.op} node")
        return self

    def _outputs(self, ret):
        for i, r in enumerate(ret if isinstance(ret, (list, tuple)) else [ret]):
            v = self.values.get(r) if isinstance(r, torch.fx.Node) else r
            if isinstance(v, luminal_tensor()):
                val = r.meta["val"]
                self.outputs.append(("tensor", self._output(v, f"out{i}"), val.dtype, val.device))
            elif isinstance(v, (list, tuple)) and all(isinstance(x, luminal_tensor()) for x in v):
                labels = [self._output(x, f"out{i}_{j}") for j, x in enumerate(v)]
                vals = r.meta["val"]
                self.outputs.append(
                    ("list", labels, [x.dtype for x in vals], [x.device for x in vals])
                )
            elif isinstance(v, (int, str)):
                val = r.meta.get("val") if hasattr(r, "meta") else r
                self.outputs.append(("size", val, None, None))
            else:
                raise Unsupported(f"an output of type {type(v).__name__}")

    def _output(self, t, label):
        t.output(label)
        self.out_dtypes[label] = str(t.dtype)
        return label


def luminal_tensor():
    import luminal

    return luminal.Tensor
