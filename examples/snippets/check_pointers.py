#!/usr/bin/env python3
"""Check that header comments and snippets point at each other.

Usage: check_pointers.py ROOT (the repository root)

Every `Example: examples/snippets/...` line of a header under ROOT/luminal must name a snippet
that exists, and every snippet (ROOT/examples/snippets/<folder>/<file>.cpp) must start with
`// luminal/<path>.hpp:` naming a header that exists and points back to it. Exit status: 0 when
every pointer holds, 1 otherwise (each broken pointer on a line of its own).
"""

import pathlib
import re
import sys

EXAMPLE_RE = re.compile(r"^//.*\bExample: (examples/snippets/\S+?\.cpp)", re.M)
HEADER_RE = re.compile(r"^// (luminal/\S+?\.hpp):")


def main(root):
    root = pathlib.Path(root)
    problems = []
    pointed = {}  # snippet -> the headers naming it
    for header in sorted((root / "luminal").rglob("*.hpp")):
        rel = header.relative_to(root).as_posix()
        for snippet in EXAMPLE_RE.findall(header.read_text(encoding="utf-8")):
            pointed.setdefault(snippet, []).append(rel)
            if not (root / snippet).is_file():
                problems.append(f"{rel}: its example {snippet} does not exist")
    for snippet in sorted((root / "examples" / "snippets").glob("*/*.cpp")):
        rel = snippet.relative_to(root).as_posix()
        first = snippet.read_text(encoding="utf-8").split("\n", 1)[0]
        m = HEADER_RE.match(first)
        if not m:
            problems.append(f"{rel}: the first line does not name its header (// luminal/...hpp:)")
        elif not (root / m.group(1)).is_file():
            problems.append(f"{rel}: its header {m.group(1)} does not exist")
        elif m.group(1) not in pointed.get(rel, []):
            problems.append(f"{rel}: {m.group(1)} has no line 'Example: {rel}'")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip())
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
