#!/usr/bin/env python3
"""dead_public.py — public functions nobody calls: every function a header
under src/ declares (cdsh_* or cdsh__*) whose name appears in no .c/.h file
under src/ other than its own module's .c and .h (tests, fuzz and bench do
not count as callers). Prints "<header>: <name>" per candidate. A candidate
is dead (remove it, or make it static), or public on purpose: then a
comment in its header says why, with the words "keep-public:" and a reason:

    /* keep-public: the plugin API (docs/host.md); plugins outside the tree */

Such a comment covers the declarations below it up to the next blank line;
written in a section rule (a comment opening with "/* ----") it covers the
whole section, up to the next rule or the end of the header.

Usage: dead_public.py [--check] [ROOT]   (ROOT defaults to ".")
Without --check: lists every candidate, marked or not, with its marker's
reason after " # ", and exits 0. With --check: lists only the unmarked ones
and exits 1 when there is any (tests/meta runs it so)."""
import os
import re
import sys

DECL = re.compile(r"^[A-Za-z_][\w \*]*?\b(cdsh_\w+)\s*\(", re.M)
MARK = re.compile(r"keep-public:\s*(\S[^*]*)")
RULE = re.compile(r"^\s*/\*\s*----")


def marked_lines(text):
    """Maps line number (0-based) -> reason for every line a marker covers."""
    lines = text.split("\n")
    covered = {}
    i = 0
    while i < len(lines):
        m = MARK.search(lines[i])
        if not m:
            i += 1
            continue
        reason = m.group(1).strip()
        section = bool(RULE.match(lines[i]))
        # The marker's own comment may run on over several lines.
        j = i
        while "*/" not in lines[j] and j + 1 < len(lines):
            j += 1
            reason += " " + lines[j].strip(" */")
        j += 1
        while j < len(lines):
            if section and RULE.match(lines[j]):
                break
            if not section and not lines[j].strip():
                break
            covered[j] = reason.strip()
            j += 1
        i = j
    return covered


def candidates(root):
    src = os.path.join(root, "src")
    texts = {}
    for d, _, names in os.walk(src):
        for n in names:
            if n.endswith((".c", ".h")):
                p = os.path.join(d, n)
                with open(p, encoding="utf-8", errors="replace") as f:
                    texts[p] = f.read()
    for header in sorted(p for p in texts if p.endswith(".h")):
        module = header[:-2]
        own = {module + ".c", header}
        text = texts[header]
        covered = marked_lines(text)
        seen = set()
        for m in DECL.finditer(text):
            name = m.group(1)
            if name in seen:
                continue
            seen.add(name)
            word = re.compile(r"\b" + re.escape(name) + r"\b")
            if any(word.search(t) for p, t in texts.items() if p not in own):
                continue
            line = text.count("\n", 0, m.start(1))
            yield os.path.relpath(header, root), name, covered.get(line)


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    root = args[0] if args else "."
    bad = 0
    for header, name, reason in candidates(root):
        if reason is None:
            bad += 1
            print(f"{header}: {name}")
        elif not check:
            print(f"{header}: {name} # {reason}")
    if check and bad:
        print(f"{bad} public function(s) nobody outside their module calls and no "
              "keep-public: comment explains; remove them, make them static, or "
              "say in the header why they stay (see scripts/dead_public.py)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
