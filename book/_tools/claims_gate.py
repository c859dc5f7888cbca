"""The strict half of the claims: `make test` fails here, `make book` never does.

A chapter records a claim that does not hold as FAILED and goes on, so the reader's build always
produces a site that says what failed. This script reads the results folder the execution wrote
and exits non-zero when

* a claim is FAILED (at this seed), unless the committed seed sweep already records that claim,
  with the same rule and statement, as holding at fewer than all of its seeds: the site then
  shows it as not robust, and it is not counted as reproduced anywhere;
* a chapter has a committed sweep record (``book/_data/sweep/<chapter>.json``) whose claims are
  not this run's claims (ids, rules, statements): the record must be made again (`make sweep`);
* a chapter notebook wrote no results at all.

With ``--fresh`` (the CI run at a seed derived from the commit) only claims that the sweep shows
holding at every seed are held to account: a failure there is a seed nobody tuned to breaking a
claim the book calls reproduced.

Usage: ``python book/_tools/claims_gate.py RESULTS_DIR [--fresh]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "book" / "_data" / "sweep"


def sweep_record(slug: str) -> dict | None:
    path = SWEEP / f"{slug}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--fresh", action="store_true")
    args = ap.parse_args(argv)
    problems, notes = [], []
    slugs = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))
    for slug in slugs:
        path = args.results / f"{slug}.json"
        if not path.is_file():
            problems.append(f"{slug}: wrote no claims (did the notebook run?)")
            continue
        data = json.loads(path.read_text())
        record = sweep_record(slug)
        entries = {e["id"]: e for e in record["claims"]} if record else {}
        if record and not args.fresh:
            now = [(c["id"], c["rule"], c["statement"]) for c in data["claims"]]
            then = [(e["id"], e["rule"], e["statement"]) for e in record["claims"]]
            if now != then:
                diff = sorted(set(now) ^ set(then))[:4]
                problems.append(
                    f"{slug}: the committed sweep record does not match this run's "
                    f"claims (e.g. {diff}); run `make sweep CHAPTERS={slug}`"
                )
        for c in data["claims"]:
            if c["status"] != "FAILED":
                continue
            e = entries.get(c["id"])
            same = (
                e is not None
                and e["rule"] == c["rule"]
                and e["statement"] == c["statement"]
            )
            seed = data.get("seed")
            if same and e["holds"] < e["n"]:
                notes.append(
                    f"{slug}: {c['id']} FAILED at seed {seed}; the sweep shows it "
                    f"holding at {e['holds']} of {e['n']} seeds (shown as not robust)"
                )
            elif args.fresh and not same:
                notes.append(
                    f"{slug}: {c['id']} FAILED at seed {seed}; not in the sweep record"
                )
            else:
                problems.append(
                    f"{slug}: {c['id']} FAILED at seed {seed}: rule {c['rule']!r}"
                    + (
                        f"; refused control: {c['refused']}"
                        if c.get("refused")
                        else ""
                    )
                )
    for n in notes:
        print("note:", n)
    for p in problems:
        print("ERROR:", p)
    print(
        f"claims gate: {len(problems)} problem(s), {len(notes)} note(s) over {len(slugs)} chapters"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
