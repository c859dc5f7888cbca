"""The student edition (`make student`, `hide_solutions: true`) keeps the exercises and drops every
solution, the executable (gated) ones included. Built here without executing the notebooks."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_student_edition_hides_every_solution(tmp_path):
    cfg_text = (ROOT / "_config.yml").read_text()
    assert "    hide_solutions: false" in cfg_text
    cfg = ROOT / "_config_student_test.yml"  # beside _config.yml: its relative paths stay valid
    cfg.write_text(cfg_text.replace("    hide_solutions: false", "    hide_solutions: true")
                   .replace("execute_notebooks: force", 'execute_notebooks: "off"'))
    try:
        jb = Path(sys.executable).with_name("jupyter-book")
        r = subprocess.run([str(jb), "build", str(ROOT), "--all", "-W", "-n", "--keep-going",
                            "--config", str(cfg), "--path-output", str(tmp_path)],
                           capture_output=True, text=True, cwd=ROOT)
    finally:
        cfg.unlink()
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    html = tmp_path / "_build" / "html" / "book"
    pages = [p for p in html.glob("*.html") if (ROOT / "book" / f"{p.stem}.ipynb").exists()]
    assert pages
    for page in pages:
        text = page.read_text()
        assert 'class="exercise' in text, f"{page.name}: the exercises must stay"
        assert 'class="solution' not in text, f"{page.name}: a solution is still shown"
        source = (ROOT / "book" / f"{page.stem}.ipynb").read_text()
        assert "solution-start" in source  # the notebook does have executable solutions
    shutil.rmtree(tmp_path, ignore_errors=True)
