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
whole section, up to the next rule or the end of the header (the words
may stand on any line of the rule's comment).

Usage: dead_public.py [--check] [--pending FILE] [ROOT]   (ROOT: ".")
Without --check: lists every candidate, marked or not, with its marker's
reason after " # ", and exits 0. With --check: lists only the unmarked ones
and exits 1 when there is any (tests/meta runs it so). --pending FILE names
a list of known candidates still to be dealt with ("<header>: <name>" lines,
"#" comments): those do not fail the check, but an entry that is no longer
an unmarked candidate does (take it off the list), so the list only shrinks."""
import os
import re
import sys

from pending_list import read_pending, sort_out

DECL = re.compile(r"^[A-Za-z_][\w \*]*?\b(cdsh_\w+)\s*\(", re.M)
MARK = re.compile(r"keep-public:\s*(\S[^*]*)")
WORD = re.compile(r"\bcdsh_\w+")
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
        start = i
        while "/*" not in lines[start] and start > 0:
            start -= 1
        section = bool(RULE.match(lines[start]))
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
    words = {p: set(WORD.findall(t)) for p, t in texts.items()}
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
            if any(name in words[p] for p in texts if p not in own):
                continue
            line = text.count("\n", 0, m.start(1))
            yield os.path.relpath(header, root), name, covered.get(line)


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    pending = set()
    if "--pending" in args:
        i = args.index("--pending")
        pending = read_pending(args[i + 1])
        del args[i:i + 2]
    root = args[0] if args else "."
    findings = ((f"{h}: {n}", f"{h}: {n}", r) for h, n, r in candidates(root))
    bad = sort_out(findings, pending, check, "an unmarked candidate")
    if check and bad:
        print(f"{bad} public function(s) nobody outside their module calls and no "
              "keep-public: comment explains; remove them, make them static, or "
              "say in the header why they stay (see scripts/dead_public.py)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
