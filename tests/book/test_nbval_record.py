"""book/_tools/nbval_record.py: the notebooks nbval executes are recorded as a forced build would
execute
them (outputs, display updates, cleared output, widget state, Output widgets, a trailing ";"), and
the site build finds them in its jupyter-cache."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
from jupyter_cache import get_cache
from jupyter_cache.executors.utils import single_nb_execution

ROOT = Path(__file__).resolve().parents[2]

CELLS = [
    "import sys\nprint('out'); print('err', file=sys.stderr)",
    "from IPython.display import HTML, clear_output, display\n"
    "h = display(HTML('<b>one</b>'), display_id=True)\nh.update(HTML('<b>two</b>'))\n"
    "print('gone')\nclear_output(wait=True)\nprint('shown')",
    "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
    "%matplotlib inline\nplt.plot([1, 2, 3]); plt.show()",
    "import ipywidgets as w\ndef f(k=2):\n    print('k =', k)\nw.interact(f, k=(1, 5));",
    "w.IntSlider(3)",
    "41 + 1",
]


def _normal(outputs) -> str:
    s = json.dumps(outputs, sort_keys=True)
    s = re.sub(r"[0-9a-f]{32}", "ID", s)
    return re.sub(r'"image/png": "[^"]*"', '"image/png": "PNG"', s)


def _record(tmp_path, name, sources):
    """Write a notebook of ``sources`` and run it under nbval with the recorder; return
    (notebook path, cache folder, the pytest run)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(c) for c in sources]
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    cache = tmp_path / "cache"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "book" / "_tools")]),
        GTLIB_RESULTS_DIR=str(tmp_path / "results"),
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "--nbval-lax",
            "-p",
            "nbval_record",
            f"--nbval-record={cache}",
            str(path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    return path, cache, r


def test_recorded_notebook_matches_a_forced_execution(tmp_path):
    path, cache, r = _record(tmp_path, "toy", CELLS)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]

    forced = nbformat.read(path, as_version=4)
    single_nb_execution(forced, cwd=str(tmp_path), timeout=120, allow_errors=False)
    record = get_cache(str(cache)).match_cache_notebook(
        nbformat.read(path, as_version=4)
    )
    recorded = get_cache(str(cache)).get_cache_bundle(record.pk).nb
    for a, b in zip(recorded.cells, forced.cells):
        assert _normal(a.outputs) == _normal(b.outputs), a.source
        assert a.execution_count == b.execution_count
    state = recorded.metadata.widgets["application/vnd.jupyter.widget-state+json"][
        "state"
    ]
    forced_state = forced.metadata.widgets[
        "application/vnd.jupyter.widget-state+json"
    ]["state"]
    assert sorted(s["model_name"] for s in state.values()) == sorted(
        s["model_name"] for s in forced_state.values()
    )
    out = [s for s in state.values() if s["model_name"] == "OutputModel"][0]["state"]
    assert "k = 2" in json.dumps(out["outputs"]), (
        "the interact output is in its Output widget"
    )
    assert recorded.metadata.language_info["name"] == "python"
    assert (tmp_path / "results").is_dir(), (
        "the claims folder is (re)created for the run"
    )


def test_a_failing_notebook_is_not_recorded(tmp_path):
    path, cache, r = _record(tmp_path, "bad", ["x = 1", "1 / 0"])
    assert r.returncode != 0 and "ZeroDivisionError" in r.stdout
    assert not list(cache.parent.glob("cache-executed/**/*.ipynb"))
    assert (
        not (cache / "global.db").exists()
        or not get_cache(str(cache)).list_cache_records()
    )
