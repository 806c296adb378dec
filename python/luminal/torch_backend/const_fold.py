"""Values that read no input of the graph, computed once when the graph compiles.

A model that builds constants in its forward (rope's inverse frequencies, ``1 / theta **
(torch.arange(0, d, 2) / d)``; a mask from ``torch.ones(...).tril()``) makes the ATen graph
compute them on every call: dozens of small kernels a step on a GPU (pow alone decomposes into
its special cases). fold() evaluates each such node once with PyTorch itself (so the values are
eager's, bit for bit), and the graph reads the result as a constant: a buffer of the
GraphModule, which the pieces take as a static input (bound once, like a weight).

Folded: call_function nodes of ATen ops that are functional and deterministic (no random ops,
no uninitialised ``empty``), whose inputs are all folded or constants of the graph (get_attr),
with a static shape. A value over ``limit`` bytes is not kept (it stays computed in the graph,
where it may fuse with its readers; its smaller inputs are kept instead), and one over 16 times
that (64 MiB at least) is not even evaluated. A reader that is a graph output, or a view that is
returned (directly or through more views), keeps reading the computation: what the caller gets
must never alias the buffer.
"""

import torch

# Ops whose result is not a function of their arguments.
_NOT_VALUES = {
    "aten.empty.memory_format",
    "aten.empty_like.default",
    "aten.empty_strided.default",
    "aten.empty_permuted.default",
    "aten.new_empty.default",
    "aten.new_empty_strided.default",
}


def _pure(node):
    t = node.target
    if not isinstance(t, torch._ops.OpOverload):
        return False
    if str(t) in _NOT_VALUES or t._schema.is_mutable:
        return False
    return torch.Tag.nondeterministic_seeded not in t.tags


def _static_tensor(v):
    return isinstance(v, torch.Tensor) and all(isinstance(d, int) for d in v.shape)


def _bytes(v):
    return v.numel() * v.element_size()


def fold(gm, limit=1 << 20):
    """Replaces gm's input-free values by buffers (in place); returns how many it kept and their
    bytes."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    # (AOTAutograd compiles under its fake mode: these values are real)
    with unset_fake_temporarily(), torch.no_grad():
        return _fold(gm, limit)


def _aliases(node):
    """Whether the op may return a view of an argument (its schema's return aliases one)."""
    t = node.target
    if not isinstance(t, torch._ops.OpOverload):
        return True
    return any(r.alias_info is not None for r in t._schema.returns)


def _returned_as_view(node):
    """Whether node's value, or a view of it, is an output of the graph."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for u in n.users:
            if u.op == "output":
                return True
            if _aliases(u):
                stack.append(u)
    return False


def _same_bytes(a, b):
    """Whether two tensors of one dtype and shape hold the same bytes (NaNs and signed zeros
    included, where torch.equal would differ)."""
    a, b = a.contiguous(), b.contiguous()
    return torch.equal(a.view(-1).view(torch.uint8), b.view(-1).view(torch.uint8))


def _fold(gm, limit):
    # Values past `cap` bytes are not evaluated at all (a 4 GiB mask built to be summed would be
    # allocated at compile time only to be dropped).
    cap = max(16 * limit, 64 << 20)
    values = {}  # node -> its real value (tensors, or the Python values of get_attr)
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            v = getattr(gm, node.target, None)
            if isinstance(v, torch.Tensor):
                values[node] = v
        elif node.op == "call_function":
            val = node.meta.get("val")
            if not _pure(node) or not _static_tensor(val) or _bytes(val) > cap:
                continue
            if not all(a in values for a in node.all_input_nodes):
                continue
            args = torch.fx.node.map_arg(node.args, lambda a: values[a])
            kwargs = torch.fx.node.map_arg(node.kwargs, lambda a: values[a])
            try:
                v = node.target(*args, **kwargs)
            except Exception:  # noqa: BLE001  (whatever fails to evaluate stays in the graph)
                continue
            if isinstance(v, torch.Tensor):
                values[node] = v
    folded = {
        n
        for n, v in values.items()
        if n.op == "call_function" and _bytes(v) <= limit
    }
    kept = size = 0
    # Kept buffers by (dtype, shape, bytes): a value equal to one kept before (each layer of a
    # model building the same rope frequencies) reads that buffer, so the graph and its pieces
    # take one input for all of them.
    same = {}
    for node in list(gm.graph.nodes):
        if node not in folded:
            continue
        if all(u in folded for u in node.users):
            continue  # only read by folded values: computed here, not kept
        value = values[node]
        key = (value.dtype, tuple(value.shape))
        twin = next((a for a in same.get(key, ()) if _same_bytes(a.meta["val"], value)), None)
        if twin is not None:
            attr = twin
        else:
            name = f"_luminal_const{kept}"
            while hasattr(gm, name):
                name += "_"
            # A dense copy of its own (the value may be a view into a larger intermediate).
            buf = value.clone(memory_format=torch.contiguous_format)
            gm.register_buffer(name, buf)
            with gm.graph.inserting_before(node):
                attr = gm.graph.get_attr(name)
            attr.meta["val"] = buf
        redirected = False
        for user in list(node.users):
            # An output keeps its own computation (a caller may write into what it returns), and
            # so does a view of it that is returned (functional graphs write nothing else).
            if user in folded or user.op == "output":
                continue
            if not (_aliases(user) and _returned_as_view(user)):
                user.replace_input_with(node, attr)
                redirected = True
        if twin is not None:
            continue
        if not redirected:
            gm.graph.erase_node(attr)
            delattr(gm, name)
            continue
        same.setdefault(key, []).append(attr)
        kept += 1
        size += _bytes(buf)
    if kept:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return kept, size
