"""Widget cells executed many times, the way the build executes chapters, never hang.

The full loop (more kernels and repeats, nbclient, the chapters' widget cells or the chapters
themselves) is ``python book/_tools/widget_hang_loop.py --help``; these tests are its cheap CI part
(about 30 s and 10 s).
"""

import subprocess
import sys
from pathlib import Path

LOOP = (
    Path(__file__).resolve().parents[2] / "book" / "_tools" / "widget_hang_loop.py"
)


def test_interact_cells_in_a_loop_under_nbval_do_not_stall():
    r = subprocess.run(
        [
            sys.executable,
            str(LOOP),
            "nbval",
            "--kernels",
            "1",
            "--repeats",
            "8",
            "--cell-timeout",
            "30",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = [line for line in r.stdout.splitlines() if "cell executions" in line]
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (
        summary and " 0 stall(s)" in summary[-1] and " 0 hang(s)" in summary[-1]
    ), r.stdout
    assert int(summary[-1].split()[0]) >= 41  # every cell ran: 1 + 8 x 5


def test_every_chapters_widget_cells_under_nbclient_make_no_widget_and_do_not_stall():
    """The chapters' live-widget cells, as committed, under nbclient (what ``jupyter-book build``,
    ``jupyter nbconvert --execute``, papermill and book/_tools/run_scale.py execute with), in a loop:
    each must print gtlib's note instead of making a widget (a widget cell under nbclient
    sometimes stalls until the cell timeout), and none may take over 5 s (about 10 s)."""
    r = subprocess.run(
        [
            sys.executable,
            str(LOOP),
            "cells",
            "--kernels",
            "2",
            "--repeats",
            "10",
            "--cell-timeout",
            "30",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = [line for line in r.stdout.splitlines() if "cell executions" in line]
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (
        summary and " 0 stall(s)" in summary[-1] and " 0 hang(s)" in summary[-1]
    ), r.stdout
    cells = int(r.stdout.split(" widget cells in ")[0].split()[-1])
    assert cells >= 6, r.stdout  # every chapter has at least one live-widget cell
    assert int(summary[-1].split()[0]) == 2 * 10 * cells
