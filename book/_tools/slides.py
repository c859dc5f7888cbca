"""`make slides`: a short lecture deck per chapter, made from the chapter's own cells and outputs.

Each deck (``_build/slides/<slug>.html``, reveal.js) has: the title and learning objectives; the
question; the chapter's first display equation; one slide per experiment with its first figure and
the claims checked in that experiment, each with this build's measured value and status; the
exercise prompts; and the claims count. Figures and numbers come from the executed notebooks of the
last build (``_build/.jupyter_cache-executed``) and its results (``_build/results``), so a deck shows what
the site shows. reveal.js comes from npm (``package-lock.json``) and MathJax from the site's
vendored copy: a deck opens offline, from disk or any static server.

Usage: ``python book/_tools/slides.py [--build _build] [--out _build/slides]``
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
MD = MarkdownIt("commonmark", {"html": False}).enable("table")
ROLE = re.compile(r"\{(cite:[tp]|ref|doc|eq|numref)\}`([^`]*)`")
DIRECTIVE = re.compile(r"^```\{(\w[\w-]*)\}[^\n]*\n(.*?)^```", re.M | re.S)


def _plain_roles(text: str) -> str:
    """MyST roles as plain text: {cite:t}`a,b` -> a, b; {ref}`x` -> x."""

    def sub(m):
        body = m.group(2)
        if m.group(1).startswith("cite"):
            return ", ".join(k.strip() for k in body.split(","))
        return body.split("<")[0].strip() or body

    return ROLE.sub(sub, text)


def _md(text: str) -> str:
    return MD.render(_plain_roles(text))


def _source(cell: dict) -> str:
    s = cell["source"]
    return s if isinstance(s, str) else "".join(s)


def _sections(nb: dict) -> list[dict]:
    """The notebook cut at its level-2 headings: title, markdown text, code and images."""
    out = [{"title": "", "markdown": "", "code": "", "images": []}]
    for cell in nb["cells"]:
        text = _source(cell)
        if cell["cell_type"] == "markdown":
            for part in re.split(r"(?m)^(?=## )", text):
                if part.startswith("## "):
                    head, _, rest = part.partition("\n")
                    out.append(
                        {
                            "title": head[3:].strip(),
                            "markdown": rest,
                            "code": "",
                            "images": [],
                        }
                    )
                else:
                    out[-1]["markdown"] += part + "\n"
        elif cell["cell_type"] == "code":
            out[-1]["code"] += text + "\n"
            for o in cell.get("outputs", []):
                png = (o.get("data") or {}).get("image/png")
                if png:
                    out[-1]["images"].append(
                        png if isinstance(png, str) else "".join(png)
                    )
    return out


def _objectives(first_markdown: str) -> list[str]:
    m = re.search(
        r"\*\*Learning objectives\.\*\*[^\n]*\n+((?:- .*\n(?:  .*\n)*)+)",
        first_markdown,
    )
    if not m:
        return []
    items = re.split(r"(?m)^- ", m.group(1))
    return [" ".join(i.split()) for i in items if i.strip()]


def _first_paragraph(text: str) -> str:
    text = DIRECTIVE.sub("", text)
    for para in re.split(r"\n\s*\n", text):
        p = para.strip()
        if p and not p.startswith(("$$", "```", "|", "#", ":::")):
            return p
    return ""


def _first_equation(sections: list[dict]) -> tuple[str, str]:
    for sec in sections:
        m = re.search(r"\$\$(.+?)\$\$", sec["markdown"], re.S)
        if m:
            return sec["title"], m.group(1).strip()
        m = re.search(r"^```\{math\}[^\n]*\n(.*?)^```", sec["markdown"], re.M | re.S)
        if m:
            return sec["title"], "\n".join(
                ln for ln in m.group(1).splitlines() if not ln.startswith(":")
            )
    return "", ""


def _claim_html(claim: dict) -> str:
    names = set(re.findall(r"[A-Za-z_]\w*", claim["rule"]))
    vals = "; ".join(
        f"{k} = {_short(v)}" for k, v in claim["values"].items() if k in names
    )
    status = {
        "reproduced": "reproduced",
        "passed": "passed",
        "FAILED": "FAILED",
        "documented non-reproduction": "not reproduced (documented)",
    }.get(claim["status"], claim["status"])
    return (
        f"<li><strong>{html.escape(claim['statement'])}</strong><br><small>measured: "
        f"{html.escape(vals)} &middot; {html.escape(status)}</small></li>"
    )


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, list):
        return (
            "["
            + ", ".join(_short(x) for x in v[:6])
            + (", …" if len(v) > 6 else "")
            + "]"
        )
    return str(v)


def _exercises(nb: dict) -> list[tuple[str, str]]:
    md = "\n".join(_source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    out = []
    for m in re.finditer(
        r"^```\{exercise\} ([^\n]*)\n((?::[^\n]*\n)*)(.*?)^```", md, re.M | re.S
    ):
        body = " ".join(m.group(3).split())
        first = re.split(r"(?<=[.?!])\s", body, maxsplit=1)[0]
        out.append((m.group(1).strip(), first))
    return out


def deck(slug: str, nb: dict, claims: list[dict]) -> str:
    """The reveal.js HTML of one chapter's deck."""
    sections = _sections(nb)
    head = sections[0]["markdown"]
    title = re.search(r"(?m)^# (.+)$", head).group(1).strip()
    by_id = {c["id"]: c for c in claims}
    slides = [
        f"<section><h2>{html.escape(title)}</h2>"
        "<p><small>Generalization in Deep Learning, Executed</small></p></section>"
    ]
    objectives = _objectives(head)
    if objectives:
        items = "".join(f"<li>{_md(o)[3:-5]}</li>" for o in objectives)
        slides.append(
            f"<section><h3>Learning objectives</h3><ul class='small'>{items}</ul></section>"
        )
    question = next(
        (s for s in sections if s["title"].lower().startswith("the question")), None
    )
    if question:
        slides.append(
            f"<section><h3>{html.escape(question['title'])}</h3>"
            f"{_md(_first_paragraph(question['markdown']))}</section>"
        )
    where, eq = _first_equation(sections)
    if eq:
        slides.append(
            f"<section><h3>The key equation</h3><div class='math'>$$ {html.escape(eq)} $$"
            f"</div><p><small>from “{html.escape(where)}”</small></p></section>"
        )
    for sec in sections:
        if not sec["title"].lower().startswith("experiment"):
            continue
        ids = re.findall(
            r"claims\.check\(\s*\n?\s*[\"']([a-z0-9_.]+)[\"']", sec["code"]
        )
        found = [
            by_id[i] for i in ids if i in by_id and by_id[i].get("kind") != "sanity"
        ]
        fig = (
            f"<img alt='Figure of {html.escape(sec['title'])}' "
            f"src='data:image/png;base64,{sec['images'][0].strip()}'>"
            if sec["images"]
            else ""
        )
        lead = _first_paragraph(sec["markdown"])
        claims_html = (
            f"<ul class='claims'>{''.join(_claim_html(c) for c in found)}</ul>"
            if found
            else ""
        )
        slides.append(
            f"<section><h3>{html.escape(sec['title'])}</h3>"
            + (fig or _md(lead))
            + claims_html
            + "</section>"
        )
    ex = _exercises(nb)
    if ex:
        items = "".join(
            f"<li><strong>{html.escape(t)}.</strong> {_md(b)[3:-5]}</li>"
            for t, b in ex
        )
        slides.append(
            f"<section><h3>Exercises</h3><ol class='small'>{items}</ol></section>"
        )
    effects = [c for c in claims if c.get("kind", "effect") == "effect"]
    if claims:
        counts = {
            s: sum(c["status"] == s for c in effects)
            for s in ("reproduced", "documented non-reproduction", "FAILED")
        }
        slides.append(
            "<section><h3>Claims of this chapter, this build</h3>"
            f"<p>{len(effects)} effects: {counts['reproduced']} reproduced, "
            f"{counts['documented non-reproduction']} documented non-reproductions, "
            f"{counts['FAILED']} failed. The site's reproduction report says at how many "
            "of ten seeds each one holds.</p>"
            f"<ul class='claims'>{''.join(_claim_html(c) for c in effects)}</ul>"
            "</section>"
        )
    body = "\n".join(slides)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{html.escape(title)}: slides</title>
<link rel="stylesheet" href="assets/reveal/reveal.css">
<link rel="stylesheet" href="assets/reveal/theme/white.css">
<style>
 .reveal img {{ max-height: 52vh; max-width: 100%; background: white; }}
 .reveal .small {{ font-size: 0.9em; }}
 .reveal ul.claims {{ font-size: 0.7em; }}
 .reveal h2, .reveal h3 {{ text-transform: none; }}
 .reveal p, .reveal li {{ font-size: 0.75em; }}
</style>
<script>window.MathJax = {{tex: {{inlineMath: [['$', '$'], ['\\\\(', '\\\\)']]}},
  startup: {{typeset: true}}}};</script>
<script src="assets/mathjax/tex-chtml-full.js"></script>
</head><body><div class="reveal"><div class="slides">
{body}
</div></div>
<script src="assets/reveal/reveal.js"></script>
<script>Reveal.initialize({{hash: true, center: true, slideNumber: true}});</script>
</body></html>
"""


def assets(out: Path) -> None:
    reveal = ROOT / "node_modules" / "reveal.js" / "dist"
    mathjax = ROOT / "book" / "_vendor" / "mathjax"
    for src, name in ((reveal, "reveal"), (mathjax, "mathjax")):
        if not src.exists():
            raise SystemExit(
                f"{src} is missing: run `make setup` (npm ci and the vendoring step)"
            )
        dst = out / "assets" / name
        if not dst.exists():
            shutil.copytree(
                src, dst, ignore=shutil.ignore_patterns("*.mjs", "*.d.ts", "*.map")
            )


def build(build_dir: Path, out: Path) -> list[Path]:
    # the executions of `make book` (book/_tools/nbval_record.py keeps them, outputs and all);
    # jupyter_execute holds the site build's copies, whose figures are written out as files
    executed = [
        build_dir / ".jupyter_cache-executed" / "book",
        build_dir / "jupyter_execute" / "book",
    ]
    results = build_dir / "results"
    out.mkdir(parents=True, exist_ok=True)
    assets(out)
    written = []
    for src in sorted((ROOT / "book").glob("*.ipynb")):
        slug = src.stem
        nb_path = next(
            (
                d / f"{slug}.ipynb"
                for d in executed
                if (d / f"{slug}.ipynb").exists()
            ),
            src,
        )
        nb = json.loads(nb_path.read_text())
        res = results / f"{slug}.json"
        claims = json.loads(res.read_text())["claims"] if res.exists() else []
        target = out / f"{slug}.html"
        target.write_text(deck(slug, nb, claims))
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", type=Path, default=ROOT / "_build")
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "slides")
    args = ap.parse_args(argv)
    for p in build(args.build, args.out):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
