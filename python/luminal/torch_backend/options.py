"""``torch.compile(..., options={...})`` for the luminal backend, mapped to CompileOptions.

Keys (all optional):
  search_budget  graphs the search times per bucket (CompileOptions.search_graph_limit); 20, or
                 100 with mode="max-autotune"
  time_budget    seconds the search may take per bucket
  backend        "cpu" or "cuda" (default: "cuda" when the inputs are CUDA tensors, else "cpu")
  threads        CPU threads (default: every core)
  cache          a folder for the compile cache, or False for none (default: the library's,
                 $LUMINAL_CACHE or ~/.cache/luminal/programs)
  max_dim        the largest value of a dynamic size (default 2048; buffers are sized for it)
  dim_buckets    buckets for every dynamic size: [(min, max[, representative]), ...]; default
                 one bucket [min, max] profiled at 32
  fallback       True (default): ops without a converter run in eager PyTorch; False: an error
  seed, verbose  as CompileOptions (verbose default False)
"""

import luminal

_KEYS = {
    "search_budget",
    "time_budget",
    "backend",
    "threads",
    "cache",
    "max_dim",
    "dim_buckets",
    "fallback",
    "seed",
    "verbose",
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
        self.backend = options.get("backend")
        if self.backend not in (None, "cpu", "cuda"):
            raise luminal.Error(f"options['backend'] is 'cpu' or 'cuda', not {self.backend!r}")
        self.threads = options.get("threads")
        self.cache = options.get("cache")
        self.max_dim = int(options.get("max_dim", 2048))
        self.dim_buckets = options.get("dim_buckets")
        self.fallback = bool(options.get("fallback", True))
        self.seed = options.get("seed")
        self.verbose = bool(options.get("verbose", False))

    def buckets_for(self, dim, lo, hi):
        b = self.dim_buckets
        if isinstance(b, dict):
            b = b.get(dim)
        if b:
            return [tuple(x) for x in b]
        return [(lo, hi, min(max(32, lo), hi))]

    def compile_options(self, buckets):
        kw = {"search_graph_limit": int(self.search_budget), "verbose": self.verbose}
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
