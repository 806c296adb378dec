"""luminal-cpp's C++ API (the `luminal` package re-exports it).

Written by python/make_stubs.py (nanobind's stubgen, then the argument types that the
bindings take as Python objects spelled out)."""

from collections.abc import Mapping, Sequence
from typing import Any, Union, overload

import numpy

# A dtype: a name ("f32", "bfloat16", "int64"), a NumPy dtype or scalar type, or a torch dtype.
DTypeLike = Union[str, Any]
# A shape: sizes and dynamic-dim names, such as ["s", 4].
ShapeLike = Sequence[Union[int, str]]


class Error(RuntimeError):
    pass

def dtype_name(dtype: DTypeLike) -> str:
    """The canonical name of a dtype ('f32', 'bf16', 'i64', ...)."""

dtypes: tuple[str, ...] = ...

class Backend:
    """
    Where a session's buffers live and its programs run (luminal.cpu(), luminal.cuda()).
    """

    @property
    def name(self) -> str:
        """'cpu' or 'cuda'."""

    @property
    def device(self) -> str:
        """The device as the compile cache keys it (threads and ISA, or the GPU)."""

    def __repr__(self) -> str: ...

class CpuBackend(Backend):
    """The CPU backend."""

    def __init__(self, threads: int = 0) -> None:
        """A CPU backend on `threads` threads (0: all)."""

def cpu(threads: int | None = None) -> CpuBackend:
    """The CPU backend on `threads` threads (None: every core)."""

class CudaBackend(Backend):
    """The CUDA backend (one GPU)."""

def cuda_available() -> bool:
    """True when a GPU can be used by the CUDA backend."""

def cuda() -> CudaBackend:
    """
    The CUDA backend on the first GPU; raises luminal.Error saying why when none is usable.
    """

class DimBucket:
    """
    An inclusive range [min, max] of a dynamic dim, searched once at its representative value (default (min + max) // 2).
    """

    def __init__(self, min: int, max: int, representative: int | None = None) -> None: ...

    @property
    def min(self) -> int:
        """The smallest value (inclusive)."""

    @property
    def max(self) -> int:
        """The largest value (inclusive)."""

    @property
    def representative(self) -> int:
        """The value the search times it at."""

    def __contains__(self, arg: int, /) -> bool:
        """Whether a value lies in the range."""

    def __repr__(self) -> str: ...

class CompileOptions:
    """
    How the compiler searches. Every keyword is optional; unset ones keep the C++ defaults (search_graph_limit 100, seed 0, verbose True, folding True, no time budget).
    """

    def __init__(self, *, search_graph_limit: int | None = None, seed: int | None = None, verbose: bool | None = None, dim_buckets: dict | None = None, time_budget: float | None = None, cache_dir: str | None = None, folding: bool | None = None, trials: int | None = None, profile_timeout: float | None = None, max_memory: int | None = None) -> None:
        """
        dim_buckets maps a dim name to a list of DimBucket or (min, max[, representative]).
        """

    @property
    def search_graph_limit(self) -> int:
        """Candidates tried per bucket."""

    @property
    def seed(self) -> int:
        """Seed of the search."""

    @property
    def verbose(self) -> bool:
        """Progress and reports on stderr."""

    @property
    def time_budget(self) -> float | None:
        """Seconds each bucket's search may take (None: no limit)."""

    @property
    def cache_dir(self) -> str:
        """Root of the caches (empty: the default)."""

    @property
    def folding(self) -> bool:
        """Load-time folding on."""

    @property
    def trials(self) -> int:
        """Timed runs per candidate."""

    @property
    def dim_buckets(self) -> dict[str, list[DimBucket]]:
        """The buckets of each dim."""

class Graph:
    """
    The nodes of one model plus its dynamic dims. Copies share the same nodes.
    """

    def __init__(self) -> None:
        """An empty graph."""

    def tensor(self, label: str, shape: ShapeLike, dtype: DTypeLike | None = None) -> Tensor:
        """
        A named input; shape entries are ints or dim names ('s'); dtype default 'f32'.
        """

    def constant(self, value: float, dtype: DTypeLike | None = None) -> Tensor:
        """A scalar constant."""

    def full(self, shape: ShapeLike, value: float, dtype: DTypeLike | None = None) -> Tensor:
        """A tensor of `shape` filled with `value` (no memory)."""

    def zeros(self, shape: ShapeLike, dtype: DTypeLike | None = None) -> Tensor:
        """Zeros of `shape`."""

    def ones(self, shape: ShapeLike, dtype: DTypeLike | None = None) -> Tensor:
        """Ones of `shape`."""

    def arange(self, n: int | str, dtype: DTypeLike | None = None) -> Tensor:
        """
        0, 1, ..., n-1 (i32 by default); n is an int, a dim name or a size ('s + 1').
        """

    def iota(self, expr: int | str, n: int | str) -> Tensor:
        """
        i32 tensor of length n whose element i is `expr` (a size; the name z stands for i): a dynamic size as a value, negative ones included.
        """

    def set_dim(self, name: str, value: int) -> None:
        """Sets a dynamic dim's value for the next executes."""

    def declare_dim(self, name: str, min: int, max: int) -> None:
        """
        Declares a dynamic dim's range; values outside are rejected at execute.
        """

    @property
    def dims(self) -> dict[str, int]:
        """The set_dim values."""

    def dim_range(self, name: str) -> tuple[int, int]:
        """A dim's (min, max)."""

    def carry(self, output: Tensor, input: Tensor) -> None:
        """
        After every execute the input takes the output's value (a KV cache), without a copy.
        """

    @property
    def inputs(self) -> list[str]:
        """Input labels."""

    @property
    def outputs(self) -> list[str]:
        """Output labels."""

    def to_text(self) -> str:
        """One line per node."""

    def to_dot(self) -> str:
        """Graphviz DOT."""

    def __repr__(self) -> str: ...

class Tensor:
    """
    A lazy value in a Graph: every method adds nodes and returns a new Tensor; nothing runs until a session executes.
    """

    @property
    def shape(self) -> tuple:
        """Sizes: ints, or strings for symbolic sizes ('s', 's + 1')."""

    @property
    def dtype(self) -> str:
        """Element dtype name."""

    @property
    def ndim(self) -> int:
        """Number of axes."""

    @property
    def graph(self) -> Graph:
        """The graph holding this tensor."""

    def __repr__(self) -> str: ...

    def output(self, label: str = '') -> Tensor:
        """
        Marks the value as an output a session keeps and get() reads (label default 'output<N>'); returns the output tensor.
        """

    def persist(self) -> Tensor:
        """
        Keeps the buffer across executes (weights, caches; inputs and outputs).
        """

    def cast(self, dtype: DTypeLike) -> Tensor:
        """This tensor converted to `dtype` (floats round to nearest even)."""

    def neg(self) -> Tensor:
        """-x."""

    def exp(self) -> Tensor:
        """e^x."""

    def exp2(self) -> Tensor:
        """2^x."""

    def log(self) -> Tensor:
        """Natural logarithm."""

    def log2(self) -> Tensor:
        """Base-2 logarithm."""

    def sin(self) -> Tensor:
        """Sine."""

    def cos(self) -> Tensor:
        """Cosine."""

    def tanh(self) -> Tensor:
        """Hyperbolic tangent."""

    def sigmoid(self) -> Tensor:
        """1 / (1 + e^-x)."""

    def relu(self) -> Tensor:
        """max(x, 0)."""

    def gelu(self) -> Tensor:
        """Exact GELU (erf)."""

    def gelu_tanh(self) -> Tensor:
        """GELU, tanh approximation."""

    def silu(self) -> Tensor:
        """x * sigmoid(x)."""

    def erf(self) -> Tensor:
        """Error function."""

    def abs(self) -> Tensor:
        """|x|."""

    def sign(self) -> Tensor:
        """-1, 0 or 1."""

    def sqrt(self) -> Tensor:
        """Square root."""

    def rsqrt(self) -> Tensor:
        """1 / sqrt(x)."""

    def reciprocal(self) -> Tensor:
        """1 / x."""

    def square(self) -> Tensor:
        """x * x."""

    @overload
    def pow(self, p: float) -> Tensor:
        """x ** p."""

    @overload
    def pow(self, p: Tensor) -> Tensor:
        """Elementwise x ** p."""

    def logical_not(self) -> Tensor:
        """not x (bool), x == 0 otherwise."""

    def isnan(self) -> Tensor:
        """Bool: x is NaN."""

    def isinf(self) -> Tensor:
        """Bool: x is infinite."""

    def add(self, other: Tensor) -> Tensor:
        """x + other (broadcasting; same dtype)."""

    def sub(self, other: Tensor) -> Tensor:
        """x - other."""

    def mul(self, other: Tensor) -> Tensor:
        """x * other."""

    def div(self, other: Tensor) -> Tensor:
        """x / other (floats)."""

    def fmod(self, other: Tensor) -> Tensor:
        """C's truncated remainder."""

    def remainder(self, other: Tensor) -> Tensor:
        """Python's remainder (sign of other)."""

    def minimum(self, other: Tensor) -> Tensor:
        """Elementwise minimum."""

    def maximum(self, other: Tensor) -> Tensor:
        """Elementwise maximum."""

    def clamp(self, lo: float, hi: float) -> Tensor:
        """Clamps into [lo, hi]."""

    @overload
    def eq(self, other: Tensor) -> Tensor: ...

    @overload
    def eq(self, other: float) -> Tensor:
        """Bool: ==."""

    @overload
    def ne(self, other: Tensor) -> Tensor: ...

    @overload
    def ne(self, other: float) -> Tensor:
        """Bool: !=."""

    def logical_and(self, other: Tensor) -> Tensor:
        """Bool: and."""

    def logical_or(self, other: Tensor) -> Tensor:
        """Bool: or."""

    @overload
    def where(self, a: Tensor, b: Tensor) -> Tensor: ...

    @overload
    def where(self, a: Tensor, b: float) -> Tensor: ...

    @overload
    def where(self, a: float, b: Tensor) -> Tensor:
        """Where this (bool) is true take a, else b."""

    def masked_fill(self, mask: Tensor, value: float) -> Tensor:
        """x where mask is false, value where it is true."""

    def matmul(self, other: Tensor) -> Tensor:
        """torch.matmul semantics (1-D to 5-D)."""

    @overload
    def __add__(self, arg: Tensor, /) -> Tensor: ...

    @overload
    def __add__(self, arg: float, /) -> Tensor:
        """self + other"""

    def __radd__(self, arg: float, /) -> Tensor:
        """other + self"""

    @overload
    def __sub__(self, arg: Tensor, /) -> Tensor: ...

    @overload
    def __sub__(self, arg: float, /) -> Tensor:
        """self - other"""

    def __rsub__(self, arg: float, /) -> Tensor:
        """other - self"""

    @overload
    def __mul__(self, arg: Tensor, /) -> Tensor: ...

    @overload
    def __mul__(self, arg: float, /) -> Tensor:
        """self * other"""

    def __rmul__(self, arg: float, /) -> Tensor:
        """other * self"""

    @overload
    def __truediv__(self, arg: Tensor, /) -> Tensor: ...

    @overload
    def __truediv__(self, arg: float, /) -> Tensor:
        """self / other"""

    def __rtruediv__(self, arg: float, /) -> Tensor:
        """other / self"""

    @overload
    def __mod__(self, arg: Tensor, /) -> Tensor: ...

    @overload
    def __mod__(self, arg: float, /) -> Tensor:
        """self % other (C's truncated remainder)"""

    def __pow__(self, arg: float, /) -> Tensor:
        """self ** p"""

    def __matmul__(self, arg: Tensor, /) -> Tensor:
        """self @ other (matmul)"""

    def __neg__(self) -> Tensor:
        """-self"""

    @overload
    def __lt__(self, arg: Tensor, /) -> Tensor: ...

    @overload
    def __lt__(self, arg: float, /) -> Tensor:
        """Bool: self < other"""

    @overload
    def __le__(self, arg: Tensor, /) -> Tensor: ...

    @overload
    def __le__(self, arg: float, /) -> Tensor:
        """Bool: self <= other"""

    @overload
    def __gt__(self, arg: Tensor, /) -> Tensor: ...

    @overload
    def __gt__(self, arg: float, /) -> Tensor:
        """Bool: self > other"""

    @overload
    def __ge__(self, arg: Tensor, /) -> Tensor: ...

    @overload
    def __ge__(self, arg: float, /) -> Tensor:
        """Bool: self >= other"""

    def sum(self, axis: int | Sequence[int], keepdim: bool = False) -> Tensor:
        """Sum over an axis or a list of axes."""

    def mean(self, axis: int | Sequence[int], keepdim: bool = False) -> Tensor:
        """Mean over an axis or a list of axes."""

    def max(self, axis: int | Sequence[int], keepdim: bool = False) -> Tensor:
        """Maximum over an axis or a list of axes."""

    def min(self, axis: int | Sequence[int], keepdim: bool = False) -> Tensor:
        """Minimum over an axis or a list of axes."""

    def var(self, axis: int, keepdim: bool = False) -> Tensor:
        """Biased variance over one axis."""

    def softmax(self, axis: int = -1) -> Tensor:
        """Softmax over an axis."""

    def log_softmax(self, axis: int = -1) -> Tensor:
        """Log-softmax over an axis."""

    def layer_norm(self, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-05) -> Tensor:
        """
        Layer norm over the last weight.ndim axes (the last axis without weight).
        """

    def rms_norm(self, weight: Tensor | None = None, eps: float = 1e-06) -> Tensor:
        """x / sqrt(mean(x^2, -1) + eps) * weight."""

    def argmax(self, axis: int, keepdim: bool = False) -> Tensor:
        """Index of the first maximum (i32)."""

    def argmin(self, axis: int, keepdim: bool = False) -> Tensor:
        """Index of the first minimum (i32)."""

    def topk(self, k: int, axis: int = -1, largest: bool = True) -> tuple[Tensor, Tensor]:
        """(values, indices) of the k largest along axis."""

    def argsort(self, axis: int = -1, descending: bool = False) -> Tensor:
        """
        The positions that sort the axis (i32; ties keep their order, NaN last ascending).
        """

    def cumsum(self, axis: int) -> Tensor:
        """Cumulative sum."""

    def reshape(self, *args) -> Tensor:
        """
        A new shape (ints and dim names), as reshape(2, 's') or reshape([2, 's']).
        """

    def permute(self, *args) -> Tensor:
        """Reorders the axes: permute(1, 0) or permute([1, 0])."""

    def transpose(self, a: int, b: int) -> Tensor:
        """Swaps two axes."""

    @property
    def T(self) -> Tensor:
        """The last two axes swapped."""

    def expand(self, *args) -> Tensor:
        """Broadcasts size-1 axes (and new leading ones) to a shape."""

    def squeeze(self, axis: int) -> Tensor:
        """Removes a size-1 axis."""

    def unsqueeze(self, axis: int) -> Tensor:
        """Inserts a size-1 axis."""

    def flatten(self, start: int = 0, end: int = -1) -> Tensor:
        """Merges axes start..end."""

    def contiguous(self) -> Tensor:
        """A contiguous copy."""

    def slice(self, axis: int, start: int | str, end: int | str | None = None, step: int = 1) -> Tensor:
        """
        Python slicing [start:end:step] on one axis (start and end: ints or sizes such as 's' or 's - 1').
        """

    def unfold(self, axis: int, size: int | str, step: int | str) -> Tensor:
        """
        Sliding windows along an axis (torch.Tensor.unfold): that axis counts the windows, a new last axis of `size` holds each.
        """

    def triu(self, k: int = 0) -> Tensor:
        """Upper triangle."""

    def tril(self, k: int = 0) -> Tensor:
        """Lower triangle."""

    def gather_flat(self, indexes: Tensor) -> Tensor:
        """
        Elements of this tensor read as flat (row-major) at integer `indexes`: the indexes' shape.
        """

    def gather_elements(self, axis: int, index: Tensor) -> Tensor:
        """torch.gather."""

    def index_select(self, axis: int, index: Tensor) -> Tensor:
        """Rows of an axis picked by a 1-D index."""

    def scatter_flat(self, indexes: Tensor, src: Tensor) -> Tensor:
        """
        A copy of this tensor with flat (row-major) element indexes[i] set to src[i] (indexes and src of one shape; out-of-range indexes are skipped).
        """

    def scatter_elements(self, axis: int, index: Tensor, src: Tensor) -> Tensor:
        """torch.scatter: a copy with out[..index[..i..]..] = src[..i..]."""

    def embedding(self, ids: Tensor) -> Tensor:
        """Rows of this [vocab, dim] table for integer ids: ids.shape + [dim]."""

def concat(tensors: Sequence[Tensor], axis: int) -> Tensor:
    """Concatenates along an axis."""

def stack(tensors: Sequence[Tensor], axis: int) -> Tensor:
    """Stacks along a new axis."""

class Session:
    """
    A graph's resident state on one backend: buffers allocated once, one searched program per bucket of the dynamic dims.
    """

    def __init__(self, graph: Graph, backend: Backend, options: CompileOptions | None = None) -> None:
        """
        Allocates every input and output buffer on `backend`; nothing is searched yet.
        """

    def compile(self) -> None:
        """
        Searches every bucket on the data set so far (execute() calls it if needed).
        """

    @property
    def compiled(self) -> bool:
        """True once compile() ran."""

    def set(self, key: str | Tensor, value: Any) -> None:
        """
        Sets an input (label or Tensor) from an array (NumPy, or anything with the buffer protocol or DLPack on the CPU). Same dtype: used in place (keep the array unchanged while the session reads it); else converted (floats round, integers must fit).
        """

    def set_bytes(self, key: str | Tensor, data: bytes) -> None:
        """Raw bytes in the input's dtype (e.g. bf16 bits)."""

    def execute(self, dims: Mapping[str, int] | None = None, **kwargs) -> None:
        """
        Runs the graph: dims by name, as execute({'s': 3}) or execute(s=3) (over the graph's set_dim values).
        """

    def get(self, key: str | Tensor, out: Any | None = None, wait: bool = True) -> Any:
        """
        An output (label or Tensor) as a new NumPy array of its shape at the last execute (bf16, tf32 and f8 outputs come back as f32), or read into `out` (a C-contiguous array of its dtype and size, NumPy or a torch tensor, bf16 too: no allocation; a CUDA tensor on a CUDA session is written on the GPU, with no host round trip, after the session's work and before this returns; torch work still queued on `out` must finish first, e.g. torch.cuda.synchronize() or wait_stream()). With wait=False that copy is only queued on the session's stream: signal_stream() orders torch after it.
        """

    def shape(self, key: str | Tensor) -> list[int]:
        """An output's shape at the last execute."""

    def bind_external(self, key: str | Tensor, array: Any) -> None:
        """
        Uses the array's memory (the backend's own: a CUDA tensor on a CUDA session, host memory on the CPU) as the input's buffer, without a copy. It must hold the input at its largest dims and be 16-byte aligned.
        """

    def bind_external_ptr(self, key: str | Tensor, ptr: int, nbytes: int, owner: Any | None = None) -> None:
        """
        bind_external by address (e.g. a torch tensor's data_ptr()); `owner` is kept alive.
        """

    def sync(self) -> None:
        """Waits for launched work."""

    def wait_stream(self, stream: int) -> None:
        """
        Orders the session after the work already queued on `stream`, a CUDA stream handle of the session's GPU (torch.cuda.current_stream().cuda_stream), without waiting on the host: the next execute reads what that work wrote. Nothing on the CPU.
        """

    def signal_stream(self, stream: int) -> None:
        """
        Orders work queued on `stream` after this behind the session's work so far (its executes and get(out=, wait=False) copies), without waiting on the host. This and wait_stream raise (after ordering the streams) an error an earlier execute's kernel reported, read without a wait: at a later call, once that execute has finished on the device. Nothing on the CPU.
        """

    def report(self) -> str:
        """The search reports of every bucket."""

    def fold_report(self) -> str:
        """The load-time folds the programs read."""

    def memory_bytes(self) -> int:
        """Bytes the session holds on its backend."""

    @property
    def dim_names(self) -> list[str]:
        """The dynamic dims, sorted."""

    @property
    def graph(self) -> Graph:
        """The session's graph."""

    def stats(self) -> dict:
        """
        Bytes uploaded, downloaded, used in place (bytes_wrapped), executes, rebinds, ...
        """

class Reference:
    """
    The ReferenceRuntime: interprets any graph on the CPU, op by op, for every dtype (slow; the correctness oracle).
    """

    def __init__(self, graph: Graph) -> None:
        """A reference runtime for `graph`."""

    def set(self, key: str | Tensor, value: Any) -> None:
        """Sets an input (copied), as Session.set."""

    def execute(self, dims: Mapping[str, int] | None = None, **kwargs) -> None:
        """Runs the graph; dims as Session.execute."""

    def get(self, key: str | Tensor, out: numpy.ndarray | None = None) -> numpy.ndarray:
        """An output, as Session.get."""

def compile(graph: Graph, backend: Backend, options: CompileOptions | None = None) -> Session:
    """
    A Session on `backend`, compiled (timing candidates on generated data; set inputs afterwards).
    """
