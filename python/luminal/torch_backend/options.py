"""``torch.compile(..., options={...})`` for the luminal backend, mapped to CompileOptions.

Keys (all optional):
  search_budget  graphs the search times per bucket (CompileOptions.search_graph_limit); 20, or
                 100 with mode="max-autotune"
  time_budget    seconds the search may take per bucket
  profile_timeout  seconds one candidate's timed runs may take (warm-up included) before it is
                 rejected; 30, as the CLI and luminal.load (the C++ default of 1 s rejects
                 every candidate of an 8B decode step on the GPU)
  trials         timed runs per candidate (the median counts; default 3)
  backend        "cpu" or "cuda" (default: "cuda" when the inputs are CUDA tensors, else "cpu")
  threads        CPU threads (default: every core)
  cache          a folder for the compile cache, or False for none (default: the library's,
                 $LUMINAL_CACHE or ~/.cache/luminal/programs)
  max_dim        the largest value of a dynamic size (default 2048; buffers are sized for it)
  dim_buckets    buckets for every dynamic size: [(min, max[, representative]), ...]; default
                 one bucket [min, max]. In a piece with two dims or more, a bucket without a
                 representative that holds the size of the piece's first call is timed at it
                 (sizes Dynamo keeps apart may be related at run time; the first call's
                 agree); otherwise the default bucket is timed at 32, a given one at its middle
  fallback       True (default): ops without a converter run in eager PyTorch; False: an error
  fold_constants bytes: values that read no input of the graph (rope's inverse frequencies built
                 in forward) are computed once by PyTorch at compile time and read as
                 constants when they hold at most this many bytes (default 1 MiB; 0: none;
                 const_fold.py)
  seed, verbose  as CompileOptions (verbose default False)
  stream_order   CUDA: how a compiled piece is ordered with PyTorch's current stream. "events"
                 (default): by events on the two streams, no host wait where the inputs are
                 bound in place and the outputs copied on the device, so the host's work for the
                 next call overlaps the device's (docs/python.md); kernel errors surface at a
                 later call, as torch's own do. "sync": the host waits for torch's stream before
                 each execute and for the session's work before returning (outputs copied,
                 mutated inputs written), so a kernel error is raised by the call that made it
"""

import luminal

_KEYS = {
    "search_budget",
    "time_budget",
    "profile_timeout",
    "trials",
    "backend",
    "threads",
    "cache",
    "max_dim",
    "dim_buckets",
    "fallback",
    "fold_constants",
    "seed",
    "verbose",
    "stream_order",
}


class Options:
    def __init__(self, options=None, mode=None):
        options = dict(options or {})
        unknown = set(options) - _KEYS
        if unknown:
            raise luminal.Error(
                f"torch.compile(backend='luminal'): unknown option(s) {sorted(unknown)}; "
                f"the options are {sorted(_KEYS)}"
            )
        if mode not in (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
            raise luminal.Error(f"torch.compile(backend='luminal'): unknown mode {mode!r}")
        self.search_budget = options.get("search_budget", 100 if "max-autotune" in (mode or "") else 20)
        self.time_budget = options.get("time_budget")
        self.profile_timeout = float(options.get("profile_timeout", 30.0))
        self.trials = options.get("trials")
        self.backend = options.get("backend")
        if self.backend not in (None, "cpu", "cuda"):
            raise luminal.Error(f"options['backend'] is 'cpu' or 'cuda', not {self.backend!r}")
        self.threads = options.get("threads")
        self.cache = options.get("cache")
        self.max_dim = int(options.get("max_dim", 2048))
        self.dim_buckets = options.get("dim_buckets")
        self.fallback = bool(options.get("fallback", True))
        self.fold_constants = int(options.get("fold_constants", 1 << 20))
        self.seed = options.get("seed")
        self.verbose = bool(options.get("verbose", False))
        self.stream_order = options.get("stream_order", "events")
        if self.stream_order not in ("sync", "events"):
            raise luminal.Error(
                f"options['stream_order'] is 'sync' or 'events', not {self.stream_order!r}"
            )

    def buckets_for(self, dim, lo, hi, value=None):
        """The dim's buckets [(min, max, representative)]: the one holding `value` (the size at
        the piece's first call) is timed at it unless the option gives its representative; the
        default is one bucket [lo, hi]."""
        b = self.dim_buckets
        if isinstance(b, dict):
            b = b.get(dim)
        default = not b
        out = []
        for x in [tuple(x) for x in b] if b else [(lo, hi)]:
            if len(x) == 2 and value is not None and x[0] <= value <= x[1]:
                x = (*x, value)
            elif len(x) == 2 and default:
                x = (*x, min(max(32, x[0]), x[1]))
            out.append(x)
        return out

    def compile_options(self, buckets):
        kw = {"search_graph_limit": int(self.search_budget), "verbose": self.verbose}
        kw["profile_timeout"] = self.profile_timeout
        if self.trials is not None:
            kw["trials"] = int(self.trials)
        kw["dim_buckets"] = buckets
        if self.time_budget is not None:
            kw["time_budget"] = float(self.time_budget)
        if self.seed is not None:
            kw["seed"] = int(self.seed)
        if self.cache is False:
            kw["cache_dir"] = ""
        elif self.cache:
            kw["cache_dir"] = str(self.cache)
        return luminal.CompileOptions(**kw)
