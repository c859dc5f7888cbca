"""`make sweep`: every chapter executed at several seeds, and the committed record of what held.

Each (chapter, seed) pair is one nbval run of the notebook (the executor of the build) in its own
process with one torch thread, ``JOBS`` at a time, writing its claims to
``_build/sweep/seed-<s>/<chapter>.json``. The record of a chapter, ``book/_data/sweep/<chapter>.json``,
holds for every claim its rule and statement, each seed's outcome, values and control values, how
many seeds it held at, and its worst margin: the smallest relative slack of the rule on the
measurement, or of its negation on the control (:func:`gtlib.claims.margin`), over the seeds. The
reproduction report and each chapter's claims table show it; an effect that held at fewer than
all seeds is shown as not robust, never as reproduced.

Usage::

    python book/_tools/sweep.py [--seeds 0-9] [--jobs 2] [--chapters slug,slug]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gtlib.claims import _env, margin  # noqa: E402

OUT = ROOT / "book" / "_data" / "sweep"
WORK = ROOT / "_build" / "sweep"


def chapters() -> list[str]:
    return sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))


def parse_seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        elif part.strip():
            out.append(int(part))
    if not out:
        raise SystemExit("--seeds names no seed")
    return out


#: Runs a command and writes its CPU seconds (its own and its kernel's, user + system) to a file:
#: wall time on a shared machine says little about a chapter's budget, CPU time does.
_TIMED = (
    "import os, subprocess, sys; p = subprocess.Popen(sys.argv[2:]); "
    "_, status, use = os.wait4(p.pid, 0); "
    "open(sys.argv[1], 'w').write(repr(use.ru_utime + use.ru_stime)); "
    "sys.exit(os.waitstatus_to_exitcode(status))"
)


def run_one(slug: str, seed: int, timeout: int) -> dict:
    results = WORK / f"seed-{seed}"
    results.mkdir(parents=True, exist_ok=True)
    stale = results / f"{slug}.json"
    if stale.exists():
        stale.unlink()
    env = {
        **os.environ,
        "GTLIB_SEED": str(seed),
        "GTLIB_RESULTS_DIR": str(results),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "GTLIB_THREADS": "1",
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    env.pop("GTLIB_STRICT_CLAIMS", None)
    start = time.time()
    cpu_file = results / f"{slug}.cpu"
    cpu_file.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        "-c",
        _TIMED,
        str(cpu_file),
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "--nbval-lax",
        "-p",
        "no:cacheprovider",
        f"book/{slug}.ipynb",
    ]
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
        )
        ok, tail = proc.returncode == 0, proc.stdout[-2000:]
    except subprocess.TimeoutExpired:
        ok, tail = False, f"timed out after {timeout} s"
    wall = time.time() - start
    cpu = float(cpu_file.read_text()) if cpu_file.exists() else None
    print(
        f"  {slug} seed {seed}: {'ok' if ok else 'CELL ERRORS'} in {wall:.0f} s"
        + ("" if cpu is None else f" ({cpu:.0f} s of CPU)"),
        flush=True,
    )
    return {
        "slug": slug,
        "seed": seed,
        "ok": ok,
        "tail": tail,
        "wall_s": round(wall, 1),
        "cpu_s": None if cpu is None else round(cpu, 1),
        "results": stale,
    }


def _margins(claim: dict) -> tuple[float | None, str]:
    """The claim's distance from flipping at one seed (signed; negative where it failed)."""
    given = claim.get("given") or {}
    m, text = margin(claim["rule"], _env(claim["values"], given))
    if claim.get("kind", "effect") == "sanity" or not claim.get("control"):
        return m, text
    mc, textc = margin(claim["rule"], _env(claim["control"]["values"], given))
    candidates = [(m, text)] + (
        [(-mc, f"control: {textc}")] if mc is not None else []
    )
    candidates = [c for c in candidates if c[0] is not None]
    return min(candidates, key=lambda c: c[0]) if candidates else (None, "")


def aggregate(slug: str, runs: list[dict]) -> dict:
    by_id: dict[str, dict] = {}
    order: list[str] = []
    seeds = sorted(r["seed"] for r in runs)
    for r in sorted(runs, key=lambda r: r["seed"]):
        data = (
            json.loads(r["results"].read_text())
            if r["results"].exists()
            else {"claims": []}
        )
        for c in data["claims"]:
            if c["id"] not in by_id:
                order.append(c["id"])
                by_id[c["id"]] = {
                    "id": c["id"],
                    "kind": c.get("kind", "effect"),
                    "statement": c["statement"],
                    "rule": c["rule"],
                    "seeds": {},
                }
            m, text = _margins(c)
            by_id[c["id"]]["seeds"][r["seed"]] = {
                "status": c["status"],
                "values": c["values"],
                "control": (c.get("control") or {}).get("values"),
                "reason_holds": (c.get("reason") or {}).get("holds"),
                "margin": m,
                "tight": text,
            }
    claims = []
    for cid in order:
        e = by_id[cid]
        per = [
            {
                "seed": s,
                **e["seeds"].get(
                    s, {"status": "missing", "margin": None, "tight": ""}
                ),
            }
            for s in seeds
        ]
        held = sum(p["status"] in ("reproduced", "passed") for p in per)
        numeric = [p for p in per if p["margin"] is not None]
        worst = min(numeric, key=lambda p: p["margin"]) if numeric else None
        claims.append(
            {
                "id": cid,
                "kind": e["kind"],
                "statement": e["statement"],
                "rule": e["rule"],
                "n": len(seeds),
                "holds": held,
                "documented": sum(
                    p["status"] == "documented non-reproduction" for p in per
                ),
                "failed": sum(p["status"] in ("FAILED", "missing") for p in per),
                "worst_margin": None if worst is None else worst["margin"],
                "worst_seed": None if worst is None else worst["seed"],
                "worst_text": "" if worst is None else worst["tight"],
                "per_seed": per,
            }
        )
    return {
        "chapter": slug,
        "scale": os.environ.get("GTLIB_SCALE", "quick"),
        "seeds": seeds,
        "date": _dt.date.today().isoformat(),
        "command": f"make sweep CHAPTERS={slug}",
        "cell_errors": [r["seed"] for r in runs if not r["ok"]],
        "wall_s": {str(r["seed"]): r["wall_s"] for r in runs},
        "cpu_s": {str(r["seed"]): r.get("cpu_s") for r in runs},
        "claims": claims,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--chapters", default="")
    ap.add_argument(
        "--timeout", type=int, default=1200, help="seconds per (chapter, seed) run"
    )
    args = ap.parse_args(argv)
    known = chapters()
    todo = [c for c in args.chapters.split(",") if c] or known
    unknown = sorted(set(todo) - set(known))
    if unknown:
        raise SystemExit(f"--chapters: unknown chapter(s) {unknown}; known: {known}")
    seeds = parse_seeds(args.seeds)
    jobs = [(slug, s) for slug in todo for s in seeds]
    print(
        f"sweep: {len(todo)} chapter(s) x {len(seeds)} seeds, {args.jobs} at a time",
        flush=True,
    )
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        runs = list(pool.map(lambda j: run_one(*j, args.timeout), jobs))
    OUT.mkdir(parents=True, exist_ok=True)
    bad = 0
    for slug in todo:
        record = aggregate(slug, [r for r in runs if r["slug"] == slug])
        (OUT / f"{slug}.json").write_text(
            json.dumps(record, indent=1, allow_nan=False) + "\n"
        )
        for c in record["claims"]:
            if c["holds"] < c["n"]:
                bad += 1
            m = (
                ""
                if c["worst_margin"] is None
                else f", worst margin {c['worst_margin']:+.1%}"
            )
            print(f"{slug}: {c['id']}: holds at {c['holds']} of {c['n']}{m}")
        if record["cell_errors"]:
            print(f"{slug}: cell errors at seeds {record['cell_errors']}")
    print(
        f"sweep written to {OUT.relative_to(ROOT)}; {bad} claim(s) hold at fewer than all seeds"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
