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
    r = subprocess.run([str(exe), "--builtin-schema", "vendor.github-workflows", str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ci_runs_make_test_and_gpu_runs_full_scale():
    assert "bash .ci/run" in (ROOT / ".github/workflows/ci.yml").read_text()
    assert "make test" in (ROOT / ".ci/run").read_text()
    gpu = (ROOT / ".github/workflows/gpu.yml").read_text()
    assert "GTLIB_SCALE: full" in gpu and "gpu" in gpu and "--nbval-lax" in gpu
