"""Execute every chapter at one scale, one after another, and write a dated record of the run.

The book's full-scale record (issue: "the full scale, run on a GPU") is made with::

    GTLIB_DEVICE=cuda python book/_tools/run_scale.py --scale full --out book/_data/full-scale

For each chapter in the table of contents it executes the notebook with ``GTLIB_SCALE`` set,
keeps the executed notebook and the chapter's claims JSON, and times it; ``record.json`` then holds
the date, the device (GPU name), the torch version, the command and each chapter's wall time and
exit status. Check the script on a laptop first::

    python book/_tools/run_scale.py --scale quick --only preliminaries --out /tmp/quick-record

Each chapter is executed by nbclient with ``--timeout`` seconds per cell, and at most
``WIDGET_TIMEOUT`` (60 s) for a live-widget cell, so no cell can hold a GPU run for long without
need.

The reproduction report shows a committed record (``book/_data/full-scale/``) beside this build's
numbers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


# nbclient, with a cell timeout of WIDGET_TIMEOUT s for the live-widget cells (which need well
# under a second): under nbclient a cell that makes widgets sometimes waits for the whole cell
# timeout although the kernel has replied (upstream: jupyter/nbclient#312). gtlib.widgets makes
# no widget for an executor, so this only bounds what a future cell might do.
WIDGET_TIMEOUT = 60
_EXECUTE = """
import re, sys, nbformat
from pathlib import Path
from nbclient import NotebookClient
src, dst, timeout, widget_timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
LIVE = re.compile(r"\\binteract(ive)?\\(|widgets\\.live\\(")
nb = nbformat.read(src, as_version=4)
try:
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   timeout_func=lambda cell: min(timeout, widget_timeout)
                   if LIVE.search(cell.source) else timeout,
                   resources={"metadata": {"path": str(Path(src).parent)}}).execute()
finally:
    nbformat.write(nb, dst)
"""


def chapters() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [
        c["file"] for p in toc.get("parts", []) for c in p.get("chapters", [])
    ]
    return [Path(f).name for f in files if (ROOT / f"{f}.ipynb").exists()]


def device_info() -> dict:
    import torch

    info = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": "cpu",
        "device_name": "CPU",
    }
    if torch.cuda.is_available():
        info.update(device="cuda", device_name=torch.cuda.get_device_name(0))
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", choices=("quick", "full"), required=True)
    ap.add_argument("--out", type=Path, required=True, help="folder for the record")
    ap.add_argument(
        "--only", nargs="*", default=None, help="chapter slugs (default: all)"
    )
    ap.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    known = chapters()
    todo = args.only or known
    unknown = [s for s in todo if s not in known]
    if unknown:
        ap.error(f"--only: unknown chapter(s) {unknown}; known: {known}")
    out = args.out.resolve()
    (out / "results").mkdir(parents=True, exist_ok=True)
    (out / "notebooks").mkdir(exist_ok=True)
    env = {
        **os.environ,
        "GTLIB_SCALE": args.scale,
        "GTLIB_SEED": str(args.seed),
        "GTLIB_RESULTS_DIR": str(out / "results"),
    }
    env.setdefault("OMP_NUM_THREADS", "1")
    record = {
        "scale": args.scale,
        "seed": args.seed,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python book/_tools/run_scale.py "
        + " ".join(argv or sys.argv[1:]),
        **device_info(),
        "chapters": {},
    }
    for slug in todo:
        start = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                _EXECUTE,
                str(ROOT / "book" / f"{slug}.ipynb"),
                str(out / "notebooks" / f"{slug}.ipynb"),
                str(args.timeout),
                str(WIDGET_TIMEOUT),
            ],
            cwd=ROOT / "book",
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - start
        record["chapters"][slug] = {
            "wall_s": round(wall, 1),
            "returncode": proc.returncode,
        }
        if proc.returncode:
            record["chapters"][slug]["error_tail"] = proc.stderr[-2000:]
        print(f"{slug}: {wall:.0f} s, exit {proc.returncode}", flush=True)
        (out / "record.json").write_text(json.dumps(record, indent=2))
    return int(any(c["returncode"] for c in record["chapters"].values()))


if __name__ == "__main__":
    sys.exit(main())
