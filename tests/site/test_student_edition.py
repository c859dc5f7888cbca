"""The student edition (`make student`, `hide_solutions: true`) keeps the exercises and drops every
solution, the executable (gated) ones included, from its pages and from its notebooks: the
download button serves solution-free notebooks, and the Colab button opens them on the branch the
Pages workflow publishes them to. Built here without executing the notebooks."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_tools"))
from build_config import STUDENT_BRANCH  # noqa: E402

SOLUTION = re.compile(r"^\s*(`{3,}|:{3,})\{solution", re.M)


def _first_code(nb: dict) -> str:
    src = next(c["source"] for c in nb["cells"] if c["cell_type"] == "code")
    return "".join(src) if isinstance(src, list) else src


def test_student_edition_hides_every_solution(tmp_path):
    cfg = (
        ROOT / "_config_student_test.yml"
    )  # beside _config.yml: its relative paths stay valid
    py = Path(sys.executable)
    subprocess.run(
        [
            str(py),
            str(ROOT / "book" / "_tools" / "build_config.py"),
            "--student",
            "--execute",
            "off",
            "--output",
            cfg.name,
        ],
        check=True,
        cwd=ROOT,
    )
    try:
        jb = py.with_name("jupyter-book")
        r = subprocess.run(
            [
                str(jb),
                "build",
                str(ROOT),
                "--all",
                "-W",
                "-n",
                "--keep-going",
                "--config",
                str(cfg),
                "--path-output",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
    finally:
        cfg.unlink()
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = tmp_path / "_build" / "html"
    pages = [
        p
        for p in (out / "book").glob("*.html")
        if (ROOT / "book" / f"{p.stem}.ipynb").exists()
    ]
    assert pages
    for page in pages:
        text = page.read_text()
        assert 'class="exercise' in text, f"{page.name}: the exercises must stay"
        assert 'class="solution' not in text, (
            f"{page.name}: a solution is still shown"
        )
        source = (ROOT / "book" / f"{page.stem}.ipynb").read_text()
        assert (
            "solution-start" in source
        )  # the notebook does have executable solutions
        colab = re.findall(
            r'href="(https://colab\.research\.google\.com/[^"]+)"', text
        )
        assert colab and all(
            f"/blob/{STUDENT_BRANCH}/book/{page.stem}.ipynb" in h for h in colab
        )
        download = out / "_sources" / "book" / f"{page.stem}.ipynb"
        assert f"_sources/book/{page.stem}.ipynb" in text, (
            f"{page.name}: no notebook download"
        )
        nb = json.loads(download.read_text())
        cells = [
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in nb["cells"]
        ]
        assert not [c for c in cells if SOLUTION.search(c)], (
            f"{download.name} has a solution"
        )
        assert "{exercise}" in "".join(cells)
        if '.git@main"' in _first_code(
            json.loads(source)
        ):  # the set-up cell installs the
            head = subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "HEAD"],  # build's commit
                capture_output=True,
                text=True,
            ).stdout.strip()
            assert f'.git@{head}"' in _first_code(nb), f"{download.name}: not pinned"
    shutil.rmtree(tmp_path, ignore_errors=True)
