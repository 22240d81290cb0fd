#!/usr/bin/env python3
"""dead_public.py — public functions nobody calls: every function a header
under src/ declares (cdsh_* or cdsh__*) whose name appears in no .c/.h file
under src/ other than its own module's .c and .h (tests, fuzz and bench do
not count as callers). Prints "<header>: <name>" per candidate; exit status
0. A candidate is dead, or public only for tests: make it static, or say in
its header why it stays. Run from the repository root."""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
SRC = os.path.join(ROOT, "src")
DECL = re.compile(r"^[A-Za-z_][\w \*]*?\b(cdsh_\w+)\s*\(", re.M)


def files(ext):
    for d, _, names in os.walk(SRC):
        for n in names:
            if n.endswith(ext):
                yield os.path.join(d, n)


texts = {p: open(p, encoding="utf-8", errors="replace").read() for p in files((".c", ".h"))}
for header in sorted(p for p in texts if p.endswith(".h")):
    module = header[:-2]
    own = {module + ".c", header}
    for name in sorted(set(DECL.findall(texts[header]))):
        word = re.compile(r"\b" + re.escape(name) + r"\b")
        if not any(word.search(t) for p, t in texts.items() if p not in own):
            print(f"{os.path.relpath(header, ROOT)}: {name}")
