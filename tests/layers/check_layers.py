#!/usr/bin/env python3
"""Check that #include "luminal/..." lines only point down the library's layers.

Usage:
    check_layers.py ROOT        check the tree at ROOT (the repository root)
    check_layers.py --self-test check the checker on small generated trees

Every C++ file under ROOT/luminal/<layer>/ belongs to <layer>; files under ROOT/apps and
ROOT/python belong to the layers 'apps' and 'python'. Each `#include "luminal/<folder>/..."`
(or `<luminal/<folder>/...>`, or a relative include that resolves into ROOT/luminal) is
checked against ALLOWED below. Inside a folder with layers of its own (SUBLAYERS: luminal/cuda),
each file belongs to one of them by its path, and an include of a file of the same folder must
not run back up those layers either. Includes inside comments are ignored; system includes are
ignored. Exit status: 0 clean, 1 layer violations, 2 configuration errors (an unknown folder, a
file of a layered folder that no layer names).
"""

import fnmatch

import os
import re
import subprocess
import sys
import tempfile

# The layers, lowest first. A layer may include itself and the layers listed for it.
# When adding a folder under luminal/, add it here (and think about where it sits).
_BELOW_RUNTIME = ["core", "ir", "egraph", "program", "kernels", "compiler"]
ALLOWED = {
    "core": [],
    "ir": ["core"],
    "egraph": ["core", "ir"],
    "program": ["core", "ir", "egraph"],
    # Backend-neutral kernel IR: between program and compiler.
    "kernels": ["core", "ir", "egraph", "program"],
    "compiler": ["core", "ir", "egraph", "program", "kernels"],
    "runtime": _BELOW_RUNTIME,
    # Backends: everything below runtime (the plan layout and memory planner are in program),
    # never each other, nor runtime/nn/io/models/apps.
    "cpu": _BELOW_RUNTIME,
    "cuda": _BELOW_RUNTIME,
    # io binds weights into a runtime session.
    "io": ["core", "ir", "egraph", "program", "compiler", "runtime"],
    "nn": ["core", "ir"],
    "models": _BELOW_RUNTIME + ["runtime", "io", "nn"],
    # Top: may include everything, including the one-include public header.
    "apps": "*",
    "python": "*",
}
# Folders with layers of their own: per folder, its layers lowest first, each with the fnmatch
# patterns of its files (paths below the folder). A file may include the files of its own layer
# and of the layers before it. Every file of the folder must match a pattern: when adding one,
# give it a layer here.
SUBLAYERS = {
    "cuda": [
        # The driver API loaded at run time, public plain types, the test hooks.
        ("driver", ["options.hpp", "testing.hpp", "loader.*", "driver.*"]),
        # Helpers over a CUDA graph's nodes; what the graph executor asks of library steps.
        ("graph", ["graph_nodes.*", "graph_splice.hpp", "step_deps.*"]),
        # NVRTC and the device prelude every kernel starts with.
        ("nvrtc", ["nvrtc.*", "prelude.*", "compile_batch.*"]),
        # cuda::Device: context, modules, queues, memory and uploads, counters.
        ("device", ["staged_upload.*", "modules.*", "counters.hpp", "device.*",
                    "device_memory.cpp", "queue.*"]),
        # Code generation and the ops (no GPU needed).
        ("ops", ["codegen.*", "cuda_op.hpp", "elementwise.cpp", "gather_scatter.cpp",
                 "reduce.cpp", "matmul_tiled.cpp", "fused_reduce.cpp", "gemv.cpp", "gemv_kn.cpp", "attention.cpp", "scatter_store.cpp",
                 "row.cpp", "row_prologue.*",
                 "row_gen.*", "matmul_operands.*",
                 "quant_device.*", "quant_dp4a_device.cpp", "q8_store.*", "quantize_q8.cpp", "quant_repack.cpp",
                 "dequantize.cpp", "qgemv.cpp", "qgemv_rules.cpp", "qgemv_ops.hpp", "qgemm.cpp", "qgemm.hpp", "qgemm_bf16.cpp", "gemv_epilogue.*", "gemv_then.*", "gemv_form.*", "gemv_kernel.hpp", "gemv_mma.cpp",
                 "expert_gemv.cpp", "expert_sum.cpp", "expert_loops.hpp"]),
        # cuBLASLt: its ops, specs, prepares and a plan's islands (or the build without it);
        # the op registry, which lists the cuBLASLt ops too.
        ("cublaslt", ["cublaslt/*", "cublaslt_absent.cpp", "cuda_ops.cpp"]),
        # The plan, its layout, dims staging and graph executor.
        ("plan", ["dims_staging.*", "graph_exec.*", "plan.*", "plan_timing.cpp"]),
        # CudaBackend: the public adapter over a Device and its plans.
        ("backend", ["cuda_backend.*"]),
    ],
}

# The one-include public API header (luminal/luminal.hpp). It may include anything; as an
# include target it pulls in every layer (backends included), so only the '*' layers may use it.
UMBRELLA = "luminal.hpp"
UMBRELLA_LAYER = "luminal.hpp"

SOURCE_EXTS = (".hpp", ".cpp", ".h", ".cu")
# Top-level folders scanned besides luminal/, and the layer their files belong to.
TOP_FOLDERS = {"apps": "apps", "python": "python"}

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(["<])([^">\n]+)[">]', re.M)


def strip_comments(text):
    """Blank out // and /* */ comments and raw-string bodies, keeping newlines (and so line
    numbers). Ordinary string and character literals are kept but skipped over."""
    out = []
    i, n = 0, len(text)
    raw_re = re.compile(r'(?:u8|u|U|L)?R"([^()\\ \t\n]{0,16})\(')
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            # Line comment; a backslash-newline continues it.
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    out.append(" \n")
                    j += 2
                    continue
                out.append(" ")
                j += 1
            i = j
        elif c == "/" and nxt == "*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "uULR" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) \
                and raw_re.match(text, i):
            m = raw_re.match(text, i)
            close = ")" + m.group(1) + '"'
            end = text.find(close, m.end())
            end = n if end < 0 else end + len(close)
            out.append(text[i:m.end()])
            out.append(re.sub(r"[^\n]", " ", text[m.end():end]))
            i = end
        elif c == '"' or (c == "'" and not _is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _is_digit_separator(text, i):
    """True when the quote at text[i] is a C++14 digit separator (1'000), not a char literal."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_.'"):
        j -= 1
    return j < i and text[j].isdigit()


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def allowed_for(layer):
    a = ALLOWED[layer]
    return "*" if a == "*" else [layer] + list(a)


def layer_of_file(rel):
    """Layer of a file given its path relative to the root; None when exempt.
    Raises KeyError-like ValueError for an unknown folder."""
    parts = rel.split("/")
    if parts[0] == "luminal":
        if len(parts) == 2:
            if parts[1] == UMBRELLA:
                return None
            raise ValueError(
                "file '%s' sits directly under luminal/, outside any layer folder; move it "
                "into a layer folder or exempt it in check_layers.py" % rel)
        return parts[1]
    return TOP_FOLDERS[parts[0]]


def target_layer(path):
    """Layer named by an include path 'luminal/<folder>/...' (or the umbrella header)."""
    parts = path.split("/")
    if len(parts) == 2 and parts[1] == UMBRELLA:
        return UMBRELLA_LAYER
    if len(parts) < 3:
        raise ValueError("include '%s' is directly under luminal/, outside any layer folder"
                         % path)
    return parts[1]


def sublayer_of(folder, rel_in_folder):
    """(rank, name) of a file of a layered folder, by its path below the folder; None when no
    pattern of SUBLAYERS[folder] matches it."""
    for rank, (name, patterns) in enumerate(SUBLAYERS[folder]):
        if any(fnmatch.fnmatchcase(rel_in_folder, p) for p in patterns):
            return rank, name
    return None


def check_sublayers(rel, line, layer, path, errors, violations):
    """An include `path` of file `rel`, both in layered folder `layer`."""
    prefix = "luminal/%s/" % layer
    src = sublayer_of(layer, rel[len(prefix):])
    dst = sublayer_of(layer, path[len(prefix):])
    if src is None or dst is None:
        return  # reported once per file
    if dst[0] > src[0]:
        allowed = [n for n, _ in SUBLAYERS[layer][:src[0] + 1]]
        violations.append("%s:%d: in luminal/%s, layer '%s' includes %s of %s (allowed: %s)"
                          % (rel, line, layer, src[1], path, dst[1], ", ".join(allowed)))


def collect_files(root):
    files = []
    for top in ["luminal"] + sorted(TOP_FOLDERS):
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(SOURCE_EXTS):
                    full = os.path.join(dirpath, f)
                    files.append(os.path.relpath(full, root).replace(os.sep, "/"))
    return files


def check(root, out=sys.stdout, err=sys.stderr):
    root = os.path.abspath(root)
    lib = os.path.join(root, "luminal")
    if not os.path.isdir(lib):
        print("check_layers: no luminal/ folder under %s" % root, file=err)
        return 2

    errors = []
    known = set(ALLOWED)
    for d in sorted(os.listdir(lib)):
        if os.path.isdir(os.path.join(lib, d)) and d not in known:
            errors.append("unknown folder 'luminal/%s': add layer '%s' to the ALLOWED table in "
                          "%s (and decide which layers it may include)"
                          % (d, d, os.path.abspath(__file__)))

    files = collect_files(root)
    n_includes = 0
    violations = []
    for rel in files:
        try:
            layer = layer_of_file(rel)
        except ValueError as e:
            errors.append(str(e))
            continue
        if layer in SUBLAYERS:
            below = rel[len("luminal/%s/" % layer):]
            if sublayer_of(layer, below) is None:
                errors.append("file '%s' has no layer of luminal/%s: give it one in SUBLAYERS in "
                              "%s" % (rel, layer, os.path.abspath(__file__)))
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            text = strip_comments(fh.read())
        for m in INCLUDE_RE.finditer(text):
            delim, path = m.group(1), m.group(2).strip()
            if not path.startswith("luminal/"):
                if delim != '"':
                    continue  # a system include
                # A relative include that lands inside luminal/ is checked like the full path.
                resolved = os.path.normpath(os.path.join(root, os.path.dirname(rel), path))
                if not (resolved.startswith(lib + os.sep) and os.path.isfile(resolved)):
                    continue
                path = os.path.relpath(resolved, root).replace(os.sep, "/")
            n_includes += 1
            line = line_of(text, m.start())
            try:
                target = target_layer(path)
            except ValueError as e:
                errors.append("%s:%d: %s" % (rel, line, e))
                continue
            if target != UMBRELLA_LAYER and target not in known:
                errors.append("%s:%d: include '%s' names unknown folder 'luminal/%s': add layer "
                              "'%s' to the ALLOWED table in %s"
                              % (rel, line, path, target, target, os.path.abspath(__file__)))
                continue
            if layer is None:
                continue  # the umbrella header is exempt
            if layer not in known:
                continue  # reported once above as an unknown folder
            allowed = allowed_for(layer)
            if target == layer and layer in SUBLAYERS:
                check_sublayers(rel, line, layer, path, errors, violations)
                continue
            if allowed == "*" or target in allowed:
                continue
            violations.append("%s:%d: layer '%s' includes '%s' (allowed: %s)"
                              % (rel, line, layer, target, ", ".join(allowed)))

    for v in violations:
        print(v, file=out)
    for e in errors:
        print("error: " + e, file=err)
    if errors:
        return 2
    if violations:
        print("layers: %d files, %d includes, %d violations"
              % (len(files), n_includes, len(violations)), file=out)
        return 1
    print("layers: %d files, %d includes, 0 violations" % (len(files), n_includes), file=out)
    return 0


# ---------------------------------------------------------------------------------------------
# Self-test: the checker must flag a bad tree and pass a clean one, so it cannot silently pass.

CLEAN_TREE = {
    "luminal/luminal.hpp": '#include "luminal/cpu/b.hpp"\n#include "luminal/runtime/y.hpp"\n',
    "luminal/core/x.hpp": "#pragma once\n#include <vector>\n#include \"luminal/core/z.hpp\"\n"
                          "// #include \"luminal/runtime/y.hpp\"\n"
                          "/* old:\n#include \"luminal/runtime/y.hpp\"\n*/\n"
                          "const char* s = \"/* not a comment\"; int k = 1'000'000;\n"
                          "const char* r = R\"(\n#include \"luminal/cpu/b.hpp\"\n)\";\n",
    "luminal/core/z.hpp": "#pragma once\n",
    "luminal/ir/g.cpp": '#include "luminal/core/x.hpp"\n#include "../core/z.hpp"\n',
    "luminal/runtime/y.hpp": '#include "luminal/compiler/c.hpp"\n#include "luminal/core/x.hpp"\n',
    "luminal/compiler/c.hpp": '#include "luminal/egraph/e.hpp"\n',
    "luminal/egraph/e.hpp": '#include "luminal/ir/g.hpp"\n',
    "luminal/cpu/b.hpp": '#include "luminal/compiler/c.hpp"\n',
    "luminal/io/w.cpp": '#include "luminal/runtime/y.hpp"\n',
    "apps/tool/main.cpp": '#include "luminal/luminal.hpp"\n#include "luminal/io/w.hpp"\n',
    "luminal/cuda/driver.hpp": "#pragma once\n",
    "luminal/cuda/plan.cpp": '#include "luminal/cuda/driver.hpp"\n#include "luminal/compiler/c.hpp"\n',
}

# Each entry: files to add to the clean tree, and the substrings the report must contain.
BAD_CASES = [
    ({"luminal/core/x.hpp": '#pragma once\n\n#include "luminal/runtime/y.hpp"\n'},
     ["luminal/core/x.hpp:3: layer 'core' includes 'runtime' (allowed: core)"], 1),
    ({"luminal/cpu/b.cpp": '#include "luminal/cuda/k.hpp"\n'},
     ["luminal/cpu/b.cpp:1: layer 'cpu' includes 'cuda'"], 1),
    ({"luminal/cpu/r.cpp": '#include "luminal/runtime/y.hpp"\n'},
     ["luminal/cpu/r.cpp:1: layer 'cpu' includes 'runtime'"], 1),
    ({"luminal/nn/m.hpp": '#include "luminal/runtime/y.hpp"\n'},
     ["luminal/nn/m.hpp:1: layer 'nn' includes 'runtime' (allowed: nn, core, ir)"], 1),
    ({"luminal/io/t.cpp": 'int a; /* x */ #include "luminal/cpu/b.hpp"\n'
                          '/* x */ #include "luminal/cpu/b.hpp"\n'},
     ["luminal/io/t.cpp:2: layer 'io' includes 'cpu'"], 1),
    ({"luminal/ir/t.cpp": '#include "../runtime/y.hpp"\n'},
     ["luminal/ir/t.cpp:1: layer 'ir' includes 'runtime'"], 1),
    ({"luminal/runtime/t.cpp": '#include "luminal/luminal.hpp"\n'},
     ["layer 'runtime' includes 'luminal.hpp'"], 1),
    ({"luminal/widgets/w.hpp": "#pragma once\n"},
     ["unknown folder 'luminal/widgets'", "ALLOWED table"], 2),
    ({"luminal/core/q.hpp": '#include "luminal/gadgets/g.hpp"\n'},
     ["unknown folder 'luminal/gadgets'"], 2),
    ({"luminal/cuda/driver.cpp": '#include "luminal/cuda/driver.hpp"\n'
                                 '#include "luminal/cuda/plan.hpp"\n'},
     ["luminal/cuda/driver.cpp:2: in luminal/cuda, layer 'driver' includes luminal/cuda/plan.hpp "
      "of plan"], 1),
    ({"luminal/cuda/widget.cpp": "int x;\n"},
     ["file 'luminal/cuda/widget.cpp' has no layer of luminal/cuda"], 2),
]


def _write_tree(root, files):
    for rel, content in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(content)


def _run_cli(root):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), root],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    return p.returncode, p.stdout


def self_test():
    failures = []
    with tempfile.TemporaryDirectory(prefix="check_layers_") as tmp:
        clean = os.path.join(tmp, "clean")
        _write_tree(clean, CLEAN_TREE)
        rc, text = _run_cli(clean)
        n_files = len([f for f in CLEAN_TREE if f.endswith(SOURCE_EXTS)])
        expect = "layers: %d files, 15 includes, 0 violations" % n_files
        if rc != 0 or text.strip() != expect:
            failures.append("clean tree: expected rc 0 and %r, got rc %d:\n%s"
                            % (expect, rc, text))
        for k, (extra, needles, want_rc) in enumerate(BAD_CASES):
            bad = os.path.join(tmp, "bad%d" % k)
            files = dict(CLEAN_TREE)
            files.update(extra)
            _write_tree(bad, files)
            rc, text = _run_cli(bad)
            missing = [s for s in needles if s not in text]
            if rc != want_rc or missing:
                failures.append("bad tree %d (%s): expected rc %d mentioning %r, got rc %d:\n%s"
                                % (k, ", ".join(extra), want_rc, missing, rc, text))
            elif want_rc == 1 and text.count("layer '") != 1:
                failures.append("bad tree %d: expected exactly one violation, got:\n%s"
                                % (k, text))
    for f in failures:
        print("self-test FAILED: " + f)
    if failures:
        return 1
    print("layers self-test: clean tree passes, %d bad trees flagged" % len(BAD_CASES))
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) == 2 and not argv[1].startswith("-"):
        return check(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
