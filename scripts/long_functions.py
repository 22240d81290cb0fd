#!/usr/bin/env python3
"""long_functions.py — C functions under src/ longer than a limit (120 lines,
from the opening brace to the closing one). The tree is clang-formatted, so
a function body opens with "{" alone in column 0 and closes with "}" alone
in column 0; the name is the identifier before the "(" on the definition's
first line. A long function is split along its phases, or carries a comment
with "long-function:" and a reason directly above its definition (or on its
first body line).

Usage: long_functions.py [--check] [--limit N] [--skip DIR] [--pending FILE] [ROOT]
Prints "<lines> <file>:<line> <name>" per long function (justified ones with
"# reason"). --skip DIR (repeatable, relative to ROOT) leaves a folder out.
--check: prints only the unjustified ones and exits 1 when there is any.
--pending FILE: "<file>: <name>" lines ("#" comments) of known long
functions still to split; they do not fail the check, an entry that is no
longer an unjustified long function does (so the list only shrinks)."""
import os
import re
import sys

from pending_list import read_pending, sort_out

NAME = re.compile(r"\b(\w+)\s*\(")
MARK = re.compile(r"long-function:\s*\S")


def functions(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    i = 1
    while i < len(lines):
        if lines[i] != "{":
            i += 1
            continue
        head = i - 1
        while head > 0 and not NAME.search(lines[head]):
            head -= 1
        while head > 0 and lines[head - 1].strip() and not lines[head - 1].rstrip().endswith(
                (";", "}", "*/")) and lines[head][0] in " \t":
            head -= 1
        m = NAME.search(lines[head])
        end = i + 1
        while end < len(lines) and lines[end] != "}":
            end += 1
        # the comment directly above the definition, and the first body line
        above = []
        k = head - 1
        if k >= 0 and lines[k].rstrip().endswith("*/"):
            while k >= 0:
                above.append(lines[k])
                if "/*" in lines[k]:
                    break
                k -= 1
        if i + 1 < len(lines):
            above.append(lines[i + 1])
        justified = next((a for a in above if MARK.search(a)), None)
        reason = None
        if justified:
            reason = justified.split("long-function:", 1)[1].strip(" */")
        yield end - i + 1, head + 1, m.group(1) if m else "?", reason
        i = end + 1


def main(argv):
    check, limit, skips, pending, root = False, 120, [], set(), "."
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--check":
            check = True
        elif a == "--limit":
            limit = int(args.pop(0))
        elif a == "--skip":
            skips.append(os.path.normpath(args.pop(0)))
        elif a == "--pending":
            pending = read_pending(args.pop(0))
        else:
            root = a
    found = []
    for d, dirs, names in os.walk(os.path.join(root, "src")):
        rel = os.path.relpath(d, root)
        if any(rel == s or rel.startswith(s + os.sep) for s in skips):
            dirs[:] = []
            continue
        for n in sorted(names):
            if n.endswith(".c"):
                p = os.path.join(d, n)
                for length, line, name, reason in functions(p):
                    if length > limit:
                        found.append((length, os.path.relpath(p, root), line, name, reason))
    findings = ((f"{path}: {name}", f"{length} {path}:{line} {name}", reason)
                for length, path, line, name, reason in sorted(found, reverse=True))
    bad = sort_out(findings, pending, check,
                   f"an unjustified function over {limit} lines")
    if check and bad:
        print(f"{bad} function(s) over {limit} lines without a long-function: reason "
              "(see scripts/long_functions.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
