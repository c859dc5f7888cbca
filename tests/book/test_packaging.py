"""Packaging statements of the README and pyproject.toml that must hold: the license, the
setuptools floor (checked by building the wheel with exactly that setuptools; needs the package
index, so opt-in: GTLIB_PACKAGING_TEST=1, as the CI package job sets), the pinned build
environment, and the documented paths and settings."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = (ROOT / "pyproject.toml").read_text()
README = (ROOT / "README.md").read_text()


def setuptools_floor() -> str:
    m = re.search(r'requires = \["setuptools>=([0-9.]+)"\]', PYPROJECT)
    assert m, "pyproject.toml declares a setuptools floor"
    return m.group(1)


def test_license_is_the_mit_license_pyproject_declares():
    assert (
        'license = "MIT"' in PYPROJECT and 'license-files = ["LICENSE"]' in PYPROJECT
    )
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_setuptools_is_pinned_at_or_above_the_floor():
    floor = tuple(int(x) for x in setuptools_floor().split("."))
    pins = re.findall(
        r"^setuptools==([0-9.]+)$", (ROOT / "requirements.txt").read_text(), re.M
    )
    assert len(pins) == 1 and tuple(int(x) for x in pins[0].split(".")) >= floor


@pytest.mark.skipif(
    os.environ.get("GTLIB_PACKAGING_TEST") != "1",
    reason="downloads setuptools (set GTLIB_PACKAGING_TEST=1)",
)
def test_wheel_builds_with_the_setuptools_floor(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("README.md", "LICENSE"):
        shutil.copy(ROOT / name, src)
    shutil.copytree(
        ROOT / "gtlib", src / "gtlib", ignore=shutil.ignore_patterns("__pycache__")
    )
    floor = setuptools_floor()
    (src / "pyproject.toml").write_text(
        PYPROJECT.replace(f'"setuptools>={floor}"', f'"setuptools=={floor}"')
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(tmp_path / "dist"),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert list((tmp_path / "dist").glob("gtlib-*.whl"))


def test_readme_states_the_python_versions_pyproject_and_the_pins_need():
    assert 'requires-python = ">=3.10"' in PYPROJECT
    assert (
        "Python 3.11 or newer" in README
        and "supports Python 3.10 and newer" in README
    )
    pins = (ROOT / "requirements.txt").read_text()
    assert (
        "check-jsonschema==0.39.0" in pins and "numpy==2.4.6" in pins
    )  # the 3.11-only pins
    assert "torch==2.13.0" in pins and "download.pytorch.org/whl/cpu" in README


def test_readme_gives_the_student_edition_where_make_student_writes_it():
    make = (ROOT / "Makefile").read_text()
    assert "--path-output _build/student" in make
    assert "_build/student/_build/html" in README  # jupyter-book appends _build/html


def test_readme_documents_every_setting_gtlib_reads():
    config = (ROOT / "gtlib" / "config.py").read_text()
    read = set(re.findall(r'"(GTLIB_[A-Z_]+)"', config))
    assert {"GTLIB_THREADS", "GTLIB_CACHE_DIR", "GTLIB_RESULTS_DIR"} <= read
    for name in read | {"GTLIB_SOURCE"}:
        assert f"`{name}" in README, f"{name} is not documented in the README"
    assert "`_build/results` under the current folder" in README
