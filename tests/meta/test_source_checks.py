#!/usr/bin/env python3
"""test_source_checks.py — the source checks themselves (scripts/dead_public.py
and scripts/long_functions.py) on small trees built here: an unmarked dead
function fails, a keep-public: reason (line or section) passes, a pending
entry that no longer applies fails; a long function fails unless a
long-function: reason stands above it. Usage: test_source_checks.py ROOT."""
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
DEAD = os.path.join(ROOT, "scripts", "dead_public.py")
LONG = os.path.join(ROOT, "scripts", "long_functions.py")
failures = 0


def tree(files):
    d = tempfile.mkdtemp(prefix="cdsh-srccheck-")
    for rel, text in files.items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
    return d


def run(script, *args):
    r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
    return r.returncode, r.stdout


def expect(name, got, want_rc, want_out):
    global failures
    rc, out = got
    if rc != want_rc or out != want_out:
        failures += 1
        print(f"FAIL {name}: rc {rc} (want {want_rc}), output {out!r} (want {want_out!r})")
    else:
        print(f"ok   {name}")


HEADER = """/* m.h */
int cdsh_m_used(void);
int cdsh_m_dead(void);
"""
SRC = {
    "src/a/m.c": "int cdsh_m_used(void)\n{\n    return cdsh_m_dead();\n}\n",
    "src/b/user.c": "int f(void)\n{\n    return cdsh_m_used();\n}\n",
}

d = tree({**SRC, "src/a/m.h": HEADER})
expect("dead: unmarked fails", run(DEAD, "--check", d), 1, "src/a/m.h: cdsh_m_dead\n")
expect("dead: plain listing", run(DEAD, d), 0, "src/a/m.h: cdsh_m_dead\n")
pend = os.path.join(d, "pending")
with open(pend, "w") as f:
    f.write("# owed\nsrc/a/m.h: cdsh_m_dead\n")
expect("dead: pending passes", run(DEAD, "--check", "--pending", pend, d), 0, "")
with open(pend, "a") as f:
    f.write("src/a/m.h: cdsh_m_used  # is called\n")
expect("dead: stale pending fails", run(DEAD, "--check", "--pending", pend, d), 1,
       "src/a/m.h: cdsh_m_used (listed as pending, but no longer an unmarked candidate: "
       "take it off the list)\n")

d = tree({**SRC, "src/a/m.h": "/* m.h */\nint cdsh_m_used(void);\n"
          "/* keep-public: the m API for tests */\nint cdsh_m_dead(void);\n"})
expect("dead: line marker passes", run(DEAD, "--check", d), 0, "")
expect("dead: marker reason listed", run(DEAD, d), 0,
       "src/a/m.h: cdsh_m_dead # the m API for tests\n")

d = tree({**SRC, "src/a/m.h": "/* m.h */\n/* keep-public: too far */\n\nint cdsh_m_dead(void);\n"})
expect("dead: marker stops at a blank line", run(DEAD, "--check", d), 1,
       "src/a/m.h: cdsh_m_dead\n")

d = tree({**SRC, "src/a/m.h": "/* ---- api -----\n * keep-public: the section */\n\n"
          "int cdsh_m_x(void);\n\nint cdsh_m_dead(void);\n/* ---- internal ---- */\n"
          "int cdsh_m_y(void);\n"})
expect("dead: section marker covers its section only", run(DEAD, "--check", d), 1,
       "src/a/m.h: cdsh_m_y\n")


def body(n):
    return "".join(f"    x += {i};\n" for i in range(n))


LONGSRC = ("static int small(int x)\n{\n" + body(3) + "    return x;\n}\n\n"
           "int big_one(int x,\n            int y)\n{\n" + body(125) + "    return x + y;\n}\n")
d = tree({"src/a/f.c": LONGSRC})
expect("long: unjustified fails", run(LONG, "--check", d), 1, "128 src/a/f.c:9 big_one\n")
expect("long: higher limit passes", run(LONG, "--check", "--limit", "200", d), 0, "")
expect("long: skipped folder passes", run(LONG, "--check", "--skip", "src/a", d), 0, "")
pend = os.path.join(d, "pending")
with open(pend, "w") as f:
    f.write("src/a/f.c: big_one\n")
expect("long: pending passes", run(LONG, "--check", "--pending", pend, d), 0, "")
with open(pend, "a") as f:
    f.write("src/a/f.c: small\n")
expect("long: stale pending fails", run(LONG, "--check", "--pending", pend, d), 1,
       "src/a/f.c: small (listed as pending, but no longer an unjustified function over "
       "120 lines: take it off the list)\n")
d = tree({"src/a/f.c": LONGSRC.replace(
    "int big_one", "/* Sums. long-function: one table of steps, read top to bottom */\nint big_one")})
expect("long: reason passes", run(LONG, "--check", d), 0, "")
expect("long: reason listed", run(LONG, d), 0,
       "128 src/a/f.c:10 big_one # one table of steps, read top to bottom\n")

sys.exit(1 if failures else 0)
