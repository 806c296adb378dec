"""One compiled piece: a converted FX (sub)graph in a luminal Session, called like the graph.

Inputs bind without a copy where they can: a contiguous CPU tensor of the input's dtype is used in
place (``Session.set`` through DLPack), and a tensor seen before (the same object at the same
version: parameters, buffers) is not bound again. CUDA tensors of a fixed size (parameters) bind
by ``bind_external``; CUDA activations are copied to the host and uploaded, and so are CPU
tensors in a CUDA graph (0-dim tensors torch makes of Python floats and constants). Each output
is one copy out of the session into a new tensor on the device torch's graph gives it: on the
GPU, a device-to-device copy into a new CUDA tensor (``Session.get(out=)``); else through the
host. A CUDA session first waits for torch's current stream, so that what torch wrote into a
bound tensor (a KV cache) is there before the session reads it, and torch reads the outputs
after the session's work: by events between the two streams (``wait_stream`` /
``signal_stream``, ``stream_order="events"``, the default), so no call waits on the host, or by
host waits (``options={"stream_order": "sync"}``). An input the graph mutates (a
static KV cache written in place) is the session's carried state bound to the tensor's own memory:
the session writes the new value there (in place where its program updates it in place), nothing
is copied in or out. The session is made at the first call (with several dims, its buckets are
timed at that call's sizes).
"""

import torch

import luminal

from .convert import Converter, eval_size
from .table import _DTYPES

# Dtypes whose bytes a CUDA output is copied as, into a torch tensor of the same dtype.
_DEVICE_COPY = {t for t in _DTYPES if t != torch.bool}
# The GPU luminal.cuda() runs on (the first).
_GPU = 0


class Piece(torch.nn.Module):
    def __init__(self, gm, backend, options, dim_range, stats, persist=(), graph_dims=None):
        super().__init__()
        self.cx = Converter(gm, device=backend.device_type, dim_range=dim_range).build()
        self.device_type = backend.device_type
        self.dims = sorted(self.cx.symbols)
        self.backend = backend
        self.options = options
        # Inputs of one size whatever the dims: a CUDA tensor can be their buffer.
        self.fixed = {
            label
            for label, node in self.cx.inputs
            if label and all(isinstance(d, int) for d in node.meta["val"].shape)
        }
        # Parameters and buffers persist: the search may fold what is computed from them alone.
        for i, (label, node) in enumerate(self.cx.inputs):
            if i in persist and label in self.fixed:
                self.cx.values[node].persist()
        # Inputs the graph mutates (copy_ of a new value): label -> the output carried into it.
        self.mutations = dict(self.cx.mutations)
        self.labels = [label for label, _node in self.cx.inputs]  # None for a size
        # forward's binding loop, split once: (argument index, label) of the inputs bound by
        # value and version, and of those bound by address (the mutated ones).
        self.by_version = [
            (i, lb) for i, lb in enumerate(self.labels) if lb and lb not in self.mutations
        ]
        self.by_address = [(i, lb) for i, lb in enumerate(self.labels) if lb in self.mutations]
        # Made at the first call (_open).
        self.session = None
        self.at_call = False  # time the buckets at the first call's sizes (see _open)
        self.ran = False  # the session has executed
        self.bound = {}  # label -> (tensor, version)
        self.copy_back = {}  # mutated inputs not bound in place: label -> tensor, at this call
        self.stats = stats
        self.nodes = sum(1 for n in gm.graph.nodes if n.op == "call_function")
        # The values of the whole graph's dims at this call (split() keeps them up to date), for
        # dims no input of this piece carries alone (an input of size s//4 does not give s).
        self.graph_dims = graph_dims if graph_dims is not None else {}

    def _open(self, dims):
        """The session; with two dims or more (or at_call), its buckets are timed at this call's
        values. Dynamo gives sizes that are related at run time separate symbols (transformers 5.17's
        attention mask of s16 columns, read at the s40 + 1 positions of the cache), and only a
        real call's sizes are sure to agree with each other (timed at 32 each, such a gather
        reads past the end of the mask). One dim cannot disagree with itself: it keeps the
        fixed default, so the compile cache's key does not depend on the first call."""
        related = len(self.dims) > 1 or self.at_call
        buckets = {
            d: self.options.buckets_for(
                d, *self.cx.ranges[d], value=dims.get(d) if related else None
            )
            for d in self.dims
        }
        self.session = luminal.Session(
            self.cx.g, self.backend.luminal, self.options.compile_options(buckets)
        )

    def _bind(self, label, t):
        """Binds input `label` (not a mutated one) to t: forward skipped an unchanged tensor."""
        version = _version(t)
        if t.device.type == "cpu":
            src = t if t.is_contiguous() else t.contiguous()
            self.session.set(label, src)
        elif t.device.type == "cuda" and label in self.fixed and t.is_contiguous():
            self.session.bind_external(label, t)
        else:
            self.session.set(label, t.detach().contiguous().cpu())
        self.bound[label] = (t, version)

    def _bind_state(self, label, t):
        """A mutated input (forward skipped one at the same address and shape, not copied
        back: the session reads whatever that memory holds, and AOTAutograd counts the session's
        writes as versions): its own memory becomes the session's carried state where it can
        (contiguous, on the session's device, 16-byte aligned; it need only hold the state at
        the sizes it runs at), so the new value is written there (in place where the program
        updates it in place) with no copy; else its value is set and the new value copied back
        into it after the execute."""
        self.copy_back.pop(label, None)
        if t.is_contiguous() and t.device.type == self.device_type:
            try:
                self.session.bind_external(label, t)
                return
            except luminal.Error:
                pass  # a view's offset: copied
        self.session.set(label, t.detach().contiguous().cpu())
        self.copy_back[label] = t

    def forward(self, *args):
        dims = self.cx.dim_values(args)
        for d in self.dims:
            if d not in dims:
                if d not in self.graph_dims:
                    raise RuntimeError(
                        f"luminal: no input of the graph carries the dynamic size {d} alone; "
                        "mark fewer sizes dynamic, or options={'fallback': False} to see why"
                    )
                dims[d] = self.graph_dims[d]
        if self.session is None:
            self._open(dims)
        bound = self.bound
        # The common cases inline: the same tensor at the same version (parameters, buffers),
        # or a mutated input at the same address and shape, binds nothing. A call's Python work
        # grows with its inputs (hundreds for an 8B model) and adds to every step.
        for i, label in self.by_version:
            a = args[i]
            last = bound.get(label)
            if last is not None and last[0] is a:
                try:
                    if a._version == last[1]:
                        continue
                except RuntimeError:
                    pass  # an inference tensor: no version counter
            self._bind(label, a)
        copy_back = self.copy_back
        for i, label in self.by_address:
            a = args[i]
            last = bound.get(label)
            if (
                last is not None
                and last[0] is a
                and last[1] == a.data_ptr()
                and last[2] == a.shape
                and label not in copy_back
            ):
                continue
            self._bind_state(label, a)
            bound[label] = (a, a.data_ptr(), a.shape)
        # CUDA: the session's work after what torch queued (a KV cache it wrote), either by the
        # host waiting for torch's stream or by an event the session's stream waits for.
        events = self.device_type == "cuda" and self.options.stream_order == "events"
        if events:
            stream = torch.cuda.current_stream(_GPU).cuda_stream
            session = self.session  # (_run may drop it to time the buckets again)
            session.wait_stream(stream)
            try:
                outs, backs = self._run(args, dims, events)
            finally:
                # torch's later work (reading the outputs and the mutated inputs, or reusing
                # the memory of outputs an error dropped) after the session's: the execute and
                # the copies queued.
                session.signal_stream(stream)
        else:
            if self.device_type == "cuda":
                torch.cuda.current_stream(_GPU).synchronize()
            outs, backs = self._run(args, dims, events)
            if self.mutations and self.device_type == "cuda":
                self.session.sync()  # the state written in place is there before torch reads it
        if outs is None:
            return self.forward(*args)  # the buckets timed again at this call's sizes (_run)
        # (AOTAutograd's wrapper counts the writes in the inputs' version counters.)
        for t, value in backs:
            with torch.no_grad():
                t.copy_(value)
        return tuple(outs)

    def _run(self, args, dims, events):
        """The execute and the outputs' copies: (outputs, [(mutated input, new value)] to copy
        back), or (None, None) when the buckets must be timed at this call's sizes."""
        try:
            self.session.execute(dims)
        except luminal.Error as e:
            # Every candidate failed at the dim's default value (a gather past the end of a table
            # shorter than it, as Whisper's 448 decoder positions): the buckets are timed at this
            # call's sizes instead, which the model itself just ran at.
            if self.at_call or self.ran or "were rejected" not in str(e):
                raise
            self.at_call, self.session = True, None
            self.bound.clear()
            self.copy_back.clear()
            return None, None
        self.ran = True
        self.stats["executes"] += 1
        outs = []
        for kind, what, dtype, device in self.cx.outputs:
            if kind == "size":
                outs.append(eval_size(what, dims, self.cx.shifted) if what is not None else None)
            elif kind == "list":
                outs.append(
                    [self._get(lb, dt, dv, events) for lb, dt, dv in zip(what, dtype, device)]
                )
            else:
                outs.append(self._get(what, dtype, device, events))
        # Mutated inputs not bound in place: their new values, copied back by forward.
        backs = [
            (t, self._get(self.mutations[label], t.dtype, t.device, events))
            for label, t in self.copy_back.items()
        ]
        return outs, backs

    def _get(self, label, dtype, device, events=False):
        if (
            self.device_type == "cuda"
            and device is not None
            and device.type == "cuda"
            and device.index in (None, _GPU)
            and dtype in _DEVICE_COPY
            and self.cx.out_dtypes.get(label) == _DTYPES[dtype]
        ):
            t = torch.empty(tuple(self.session.shape(label)), dtype=dtype, device=device)
            self.session.get(label, out=t, wait=not events)
            return t
        t = torch.from_numpy(self.session.get(label))
        if t.dtype != dtype:
            t = t.to(dtype)
        if device is not None and device.type != "cpu":
            t = t.to(device)
        return t


def _version(t):
    """The tensor's version counter; None for inference tensors (they have none)."""
    try:
        return t._version
    except RuntimeError:
        return None

