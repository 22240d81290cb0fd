"""pending_list.py — the "pending list" both source checks share
(scripts/dead_public.py, scripts/long_functions.py): a file of known findings
still to be dealt with, one "<entry>" a line ("#" starts a comment), that may
only shrink. sort_out() prints the findings and counts the failures: an
unjustified finding that is not listed, and a listed entry that is no longer
an unjustified finding (take it off the list)."""


def read_pending(path):
    """The set of entries in a pending file (comments and blank lines dropped)."""
    entries = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                entries.add(line)
    return entries


def sort_out(findings, pending, check, stale_why):
    """findings: (entry, shown, reason) triples in print order — entry is the
    pending-list key, shown the line to print, reason the justification or
    None. Without check every finding is printed (" # pending" or " # reason"
    appended); with check only the failing ones. pending (a set) is consumed.
    Returns the number of failures."""
    pending = set(pending)
    bad = 0
    for entry, shown, reason in findings:
        if reason is None and entry in pending:
            pending.discard(entry)
            if not check:
                print(f"{shown} # pending")
        elif reason is None:
            bad += 1
            print(shown)
        elif not check:
            print(f"{shown} # {reason}")
    for entry in sorted(pending):
        bad += 1
        print(f"{entry} (listed as pending, but no longer {stale_why}: take it off the list)")
    return bad
