"""The GitHub workflow files validate against the GitHub workflow schema (offline, vendored in
check-jsonschema)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def test_expected_workflows_exist():
    names = {p.stem for p in WORKFLOWS}
    assert {"ci", "gpu", "pages", "colab-path"} <= names


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_validates(path):
    exe = Path(sys.executable).with_name("check-jsonschema")
    r = subprocess.run(
        [str(exe), "--builtin-schema", "vendor.github-workflows", str(path)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_ci_runs_make_test_and_gpu_runs_full_scale():
    assert "bash .ci/run" in (ROOT / ".github/workflows/ci.yml").read_text()
    assert "make test" in (ROOT / ".ci/run").read_text()
    gpu = (ROOT / ".github/workflows/gpu.yml").read_text()
    assert "GTLIB_SCALE: full" in gpu and "gpu" in gpu and "--nbval-lax" in gpu


def _workflow(name: str) -> dict:
    import yaml

    return yaml.safe_load(
        (ROOT / ".github" / "workflows" / f"{name}.yml").read_text()
    )


def _steps(workflow: dict) -> list[dict]:
    return [s for job in workflow["jobs"].values() for s in job.get("steps", [])]


def test_hosted_workflows_cache_pip_downloads():
    for name in ("ci", "pages", "colab-path"):
        for step in _steps(_workflow(name)):
            if step.get("uses", "").startswith("actions/setup-python"):
                assert step["with"].get("cache") == "pip", f"{name}: no pip cache"


def test_ci_uses_the_runners_chrome_and_the_cpu_torch():
    ci = _workflow("ci")
    text = (ROOT / ".github/workflows/ci.yml").read_text()
    assert "apt-get" not in text and "chromium-browser" not in text
    run = [s for s in _steps(ci) if s.get("run") == "bash .ci/run"][0]
    assert run["env"]["GTLIB_CHROMIUM"] == "/usr/bin/google-chrome"
    assert ci["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    package = ci["jobs"]["package"]
    assert "3.10" in package["strategy"]["matrix"]["python"], (
        "gtlib is tested on Python 3.10"
    )


def test_colab_path_runs_the_notebooks_own_install_against_this_commit():
    steps = _steps(_workflow("colab-path"))
    text = "\n".join(str(s.get("run", "")) for s in steps)
    assert "pip install ." not in text and "install -e" not in text
    run = [s for s in steps if "--nbval-lax" in str(s.get("run", ""))][0]
    assert (
        run["env"]["GTLIB_SOURCE"]
        == "git+file://${{ github.workspace }}@${{ github.sha }}"
    )
    assert "torch" in text and "==" not in text, (
        "the newest torch/numpy/matplotlib, unpinned"
    )


def test_pages_publishes_both_editions_and_the_student_notebooks():
    import sys

    sys.path.insert(0, str(ROOT / "book" / "_tools"))
    from build_config import STUDENT_BRANCH

    text = (ROOT / ".github/workflows/pages.yml").read_text()
    assert "make book student" in text
    assert "_build/student/_build/html/_sources/book/*.ipynb" in text
    assert (
        f"-b {STUDENT_BRANCH}" in text
        and f"\n            {STUDENT_BRANCH}\n" in text
    )
    assert _workflow("pages")["permissions"]["contents"] == "write"


def test_ci_run_finds_a_browser_the_way_the_browser_test_does():
    run = (ROOT / ".ci/run").read_text()
    assert (
        "GTLIB_CHROMIUM" in run
        and "google-chrome" in run
        and "/usr/bin/chromium" in run
    )
    browser = (ROOT / "tests/site/test_browser.py").read_text()
    assert (
        'os.environ.get("GTLIB_CHROMIUM")' in browser
        and "/usr/bin/google-chrome" in browser
    )
