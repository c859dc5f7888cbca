"""The notebooks' set-up cell (book/_tools/apply_install_cell.py): it fails at once, saying why and what to
do, when pip cannot install gtlib; it installs from the repository named in _config.yml; and
(opt-in, GTLIB_COLAB_PATH=1) its own install path works against this checkout in a fresh
environment with the newest torch, numpy and matplotlib, as on Colab."""

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_tools"))
import apply_install_cell  # noqa: E402

URL = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip(
    "/"
)


def test_header_installs_from_the_configured_repository_at_a_ref():
    header = apply_install_cell.header()
    assert f'"git+{URL}.git@main"' in header
    assert 'find_spec("gtlib") is None' in header and "raise RuntimeError" in header
    assert all(len(line) <= 88 for line in header.splitlines())


def test_install_failure_raises_with_what_to_do(tmp_path):
    """pip fails (a source that does not exist): the cell raises at once with pip's error."""
    code = apply_install_cell.header() + "print('went on')\n"
    env = dict(
        os.environ,
        GTLIB_SOURCE=f"git+file://{tmp_path}/no-such-repository@main",
        PIP_NO_INDEX="1",
    )
    env.pop(
        "PYTHONPATH", None
    )  # a PYTHONPATH to a checkout would make gtlib importable
    # -S: no site-packages, so gtlib is missing, as on a fresh Colab runtime (pip itself runs
    # normally, and cannot install anything from a repository that does not exist)
    r = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert r.returncode != 0 and "went on" not in r.stdout
    assert "RuntimeError: pip could not install gtlib from git+file://" in r.stderr
    assert "GTLIB_SOURCE" in r.stderr and "pip install path/to/clone" in r.stderr


def test_apply_rewrites_only_the_install_header(tmp_path):
    for src in sorted((ROOT / "book").glob("*.ipynb")):
        path = tmp_path / src.name
        shutil.copy(src, path)
        before = json.loads(path.read_text())
        apply_install_cell.apply(path)
        after = json.loads(path.read_text())
        assert not apply_install_cell.apply(path, check=True), (
            "applying twice changes nothing"
        )
        firsts = [
            i for i, c in enumerate(after["cells"]) if c["cell_type"] == "code"
        ][:1]
        first = "".join(after["cells"][firsts[0]]["source"])
        assert first.startswith(apply_install_cell.header())
        old = "".join(before["cells"][firsts[0]]["source"])
        assert (
            first.split("import gtlib\n", 1)[1] == old.split("import gtlib\n", 1)[1]
        )
        assert [c for i, c in enumerate(after["cells"]) if i != firsts[0]] == [
            c for i, c in enumerate(before["cells"]) if i != firsts[0]
        ]


def _newest_colab_like_env(where: Path) -> Path:
    venv.create(where, with_pip=True)
    py = where / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "-q", "--upgrade"]
    # unpinned: whatever pip finds newest (Colab ships recent torch, numpy, matplotlib)
    subprocess.run(pip + ["pip"], check=True)
    # GTLIB_COLAB_TORCH: another torch requirement where the newest is out of reach (offline)
    torch = os.environ.get("GTLIB_COLAB_TORCH", "torch")
    subprocess.run(
        pip
        + [
            torch,
            "numpy",
            "matplotlib",
            "ipykernel",
            "ipywidgets",
            "nbval",
            "pytest",
        ],
        check=True,
    )
    return py


@pytest.mark.skipif(
    os.environ.get("GTLIB_COLAB_PATH") != "1",
    reason="installs a fresh environment (set GTLIB_COLAB_PATH=1)",
)
def test_colab_path_installs_gtlib_with_the_cells_own_command(tmp_path):
    """The Colab-path workflow's check, locally: a fresh environment without gtlib, the newest
    unpinned torch/numpy/matplotlib, and the chapters executed under nbval; each set-up cell
    installs gtlib itself, from this checkout's HEAD through a git+file:// URL."""
    py = _newest_colab_like_env(tmp_path / "venv")
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    chapters = os.environ.get("GTLIB_COLAB_CHAPTERS", "preliminaries").split(",")
    book = tmp_path / "book"  # the notebooks alone: no gtlib/ folder beside them
    book.mkdir()
    for name in chapters:
        shutil.copy(ROOT / "book" / f"{name}.ipynb", book)
    env = dict(
        os.environ,
        GTLIB_SOURCE=f"git+file://{ROOT}@{head}",
        GTLIB_RESULTS_DIR=str(tmp_path / "results"),
        OMP_NUM_THREADS="1",
        GTLIB_THREADS="1",
    )
    env.pop("PYTHONPATH", None)
    r = subprocess.run(
        [
            str(py),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--nbval-lax",
            "--nbval-current-env",
            str(book),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    shown = subprocess.run(
        [str(py), "-m", "pip", "show", "gtlib"], capture_output=True, text=True
    ).stdout
    assert "Name: gtlib" in shown
