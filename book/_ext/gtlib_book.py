"""Sphinx extension of the book: the reproduction report, the student edition and script hygiene.

* ``{chapter-times}`` directive: each chapter's execution time in this build, by title in book
  order.
* Every image gets alt text that is not its file path (its figure's caption by default).
* ``{claims-report}`` directive: replaced, after every page has been read (and so every chapter
  executed), by the claims that this build's chapters wrote to ``GTLIB_RESULTS_DIR``, each with
  the committed seed sweep's count (``book/_data/sweep``), opened by a list of what did not
  reproduce and why. A chapter whose claims FAILED on this build gets a banner at its top. The folder is
  emptied when the build starts, so the report can only show numbers measured by this build.
  A notebook in the table of contents that wrote no claims file is reported as a build warning
  (an error under ``-W``).
* ``hide_solutions: true`` (the student edition, ``make student``) removes every exercise
  solution, executable (gated) ones included.
* Repeated script tags (sphinx-thebe's configuration reaches every page twice under Jupyter
  Book 1) are dropped, so that pages load without console errors; the widget library is left
  out of pages that show no widget.
* Accessibility repairs of the theme and of docutils' output (axe-core, WCAG 2 A/AA): the search
  button's accessible name, the colour-mode icons, citation list items, folded cells' toggles.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from gtlib.claims import claims_table_html, failure_text, shown_status, sweep_entries
from gtlib.claims import _reason_values

logger = logging.getLogger(__name__)


class claims_report(nodes.General, nodes.Element):
    """Placeholder filled in at ``doctree-resolved`` time."""


class ClaimsReportDirective(SphinxDirective):
    has_content = False

    def run(self):
        return [claims_report("")]


class chapter_times(nodes.General, nodes.Element):
    """Placeholder of the execution-time table, filled at ``doctree-resolved`` time."""


class ChapterTimesDirective(SphinxDirective):
    """``{chapter-times}``: how long each chapter took to execute in this build, by chapter
    title in book order (myst-nb's ``nb-exec-table`` lists file paths alphabetically, with
    jupyter-cache columns and emoji statuses)."""

    has_content = False

    def run(self):
        return [chapter_times("")]


def _results_dir(app) -> Path:
    return Path(os.environ["GTLIB_RESULTS_DIR"])


def _on_builder_inited(app):
    root = Path(app.srcdir)
    results = Path(
        os.environ.get("GTLIB_RESULTS_DIR") or root / "_build" / "results"
    )
    os.environ["GTLIB_RESULTS_DIR"] = str(
        results
    )  # inherited by every kernel this build starts
    if app.config.nb_execution_mode == "force" and results.exists():
        shutil.rmtree(results)
    results.mkdir(parents=True, exist_ok=True)


def _chapter_docs(app) -> list[str]:
    """Notebook pages of the book, in table-of-contents order."""
    env = app.env
    order = [env.config.root_doc] + [
        d for d in env.toctree_includes.get(env.config.root_doc, [])
    ]
    seen, out = set(), []

    def walk(doc):
        if doc in seen:
            return
        seen.add(doc)
        if str(env.doc2path(doc)).endswith(".ipynb"):
            out.append(doc)
        for child in env.toctree_includes.get(doc, []):
            walk(child)

    for d in order:
        walk(d)
    return out


def _full_record(app) -> tuple[dict | None, dict]:
    """The committed full-scale record (``book/_data/full-scale``), if one exists."""
    folder = Path(app.srcdir) / "book" / "_data" / "full-scale"
    if not (folder / "record.json").exists():
        return None, {}
    record = json.loads((folder / "record.json").read_text())
    by_chapter = {}
    for p in sorted((folder / "results").glob("*.json")):
        data = json.loads(p.read_text())
        by_chapter[data["chapter"]] = {c["id"]: c for c in data["claims"]}
    return record, by_chapter


def _record_html(record: dict | None) -> str:
    cmd = (
        "GTLIB_DEVICE=cuda python book/_tools/run_scale.py --scale full "
        "--out book/_data/full-scale"
    )
    if record is None:
        return (
            "<p><strong>Full scale.</strong> No full-scale run has been recorded yet: the "
            "<code>full</code> presets are meant for one data-centre GPU and have not been run "
            f"on one. The command that makes the record is <code>{html.escape(cmd)}</code>; "
            "once a record is committed, a column beside this build's numbers shows it.</p>"
        )
    times = ", ".join(
        f"{k} {v['wall_s']:.0f} s" for k, v in record["chapters"].items()
    )
    return (
        f"<p><strong>Full scale.</strong> The last column shows the run recorded on "
        f"{html.escape(record['date'])} on {html.escape(record['device_name'])} (torch "
        f"{html.escape(record['torch'])}), made with <code>{html.escape(record['command'])}"
        f"</code>. Wall times: {html.escape(times)}.</p>"
    )


def _results(app) -> dict:
    out = {}
    for p in sorted(_results_dir(app).glob("*.json")):
        data = json.loads(p.read_text())
        out[data["chapter"]] = data
    return out


def _not_reproduced(
    claims: list[dict], swept: dict | None
) -> list[tuple[dict, str, str]]:
    """The effects a reader must not count as reproduced, with the label and the reason."""
    out = []
    for c in claims:
        if c.get("kind", "effect") != "effect" and c["status"] != "FAILED":
            continue
        label, cls = shown_status(c, None if swept is None else swept.get(c["id"]))
        if cls == "ok":
            continue
        r = c.get("reason") or {}
        if c["status"] == "FAILED":
            why = failure_text(c)
        elif c["status"] == "documented non-reproduction":
            why = f"{r.get('text', '')} (measured: {r.get('rule', '')}, with {_reason_values(c)})"
        else:
            e = swept[c["id"]]
            why = (
                f"held at this build's seed, but at {e['holds']} of {e['n']} seeds of the sweep"
                + (
                    f"; worst margin {e['worst_margin']:+.1%} at seed {e['worst_seed']} "
                    f"({e.get('worst_text', '')})"
                    if e.get("worst_margin") is not None
                    else ""
                )
            )
        out.append((c, label, why))
    return out


def _report_html(app, fromdocname: str) -> str:
    results = _results(app)
    record, full = _full_record(app)
    summary = [
        "<div class='gtlib-table-wrap' tabindex='0' role='region' aria-label='table (scrolls sideways)'><table class='gtlib-report-summary'><thead><tr>"
        "<th>chapter</th><th>seed</th><th>effects</th><th>reproduced at every sweep seed</th>"
        "<th>not robust</th><th>documented non-reproductions</th><th>failed</th>"
        "<th>checks (passed / all)</th></tr></thead><tbody>"
    ]
    detail, missing = [], []
    totals = dict(
        effects=0, robust=0, fragile=0, nonrep=0, failed=0, sanity=0, sanity_ok=0
    )
    for doc in _chapter_docs(app):
        slug = doc.split("/")[-1]
        title = app.env.titles[doc].astext() if doc in app.env.titles else slug
        uri = app.builder.get_relative_uri(fromdocname, doc)
        link = f"<a href='{html.escape(uri)}'>{html.escape(title)}</a>"
        data = results.get(slug)
        if data is None:
            if (
                app.config.nb_execution_mode != "off"
            ):  # a chapter that ran must have claims
                logger.warning(
                    f"claims report: chapter {slug!r} wrote no claims in this build",
                    location=fromdocname,
                )
            summary.append(
                f"<tr><td>{link}</td><td colspan='7'>not executed in this build</td></tr>"
            )
            continue
        claims = data["claims"]
        swept = sweep_entries(slug, claims)
        eff = [c for c in claims if c.get("kind", "effect") == "effect"]
        san = [c for c in claims if c.get("kind") == "sanity"]
        labels = [
            shown_status(c, None if swept is None else swept.get(c["id"]))
            for c in eff
        ]
        row = dict(
            effects=len(eff),
            robust=sum(
                lab.startswith("reproduced (") and "not swept" not in lab
                for lab, _ in labels
            ),
            fragile=sum(lab.startswith("not robust") for lab, _ in labels),
            nonrep=sum(c["status"] == "documented non-reproduction" for c in eff),
            failed=sum(c["status"] == "FAILED" for c in claims),
            sanity=len(san),
            sanity_ok=sum(c["status"] == "passed" for c in san),
        )
        for k, v in row.items():
            totals[k] += v
        unswept = "" if swept is not None else " <small>(no sweep record)</small>"
        summary.append(
            f"<tr><td>{link}{unswept}</td><td>{data['seed']}</td>"
            f"<td>{row['effects']}</td><td>{row['robust']}</td><td>{row['fragile']}</td>"
            f"<td>{row['nonrep']}</td><td>{row['failed']}</td>"
            f"<td>{row['sanity_ok']} / {row['sanity']}</td></tr>"
        )
        for c, label, why in _not_reproduced(claims, swept):
            missing.append(
                f"<li><a href='#report-{slug}'>{html.escape(title)}</a>: "
                f"<code>{html.escape(c['id'])}</code> ({html.escape(c['statement'])}) "
                f"<strong>{html.escape(label)}</strong>. {html.escape(why)}</li>"
            )
        table = claims_table_html(
            claims,
            full=full.get(slug, {}) if record else None,
            sweep=swept if swept is not None else {},
        )
        detail.append(f"<h3 id='report-{slug}'>{link}</h3>{table}")
    summary.append(
        f"<tr class='gtlib-total'><td><strong>all chapters</strong></td><td></td>"
        f"<td>{totals['effects']}</td><td>{totals['robust']}</td><td>{totals['fragile']}</td>"
        f"<td>{totals['nonrep']}</td><td>{totals['failed']}</td>"
        f"<td>{totals['sanity_ok']} / {totals['sanity']}</td></tr>"
    )
    summary.append("</tbody></table></div>")
    parts = ["".join(summary)]
    parts.append(
        "<h3 id='report-not-reproduced'>What did not reproduce, and why</h3>"
        + (
            f"<ul class='gtlib-not-reproduced'>{''.join(missing)}</ul>"
            if missing
            else "<p>Every effect of this build held at every seed of its sweep.</p>"
        )
    )
    parts.append(_record_html(record))
    parts.extend(detail)
    return "\n".join(parts)


STUDENT_BRANCH = (
    "student-notebooks"  # where the Pages workflow publishes the student notebooks
)


def _student_url(app, slug: str) -> str | None:
    """The Colab address of a chapter's student notebook (no solutions), or None."""
    opts = app.config.html_theme_options or {}
    repo = str(opts.get("repository_url", "")).rstrip("/")
    colab = str((opts.get("launch_buttons") or {}).get("colab_url", "")).rstrip("/")
    if not repo.startswith("https://github.com/") or not colab:
        return None
    return f"{colab}/github/{repo[len('https://github.com/') :]}/blob/{STUDENT_BRANCH}/book/{slug}.ipynb"


def _student_note(app, doctree, docname) -> None:
    """One line under a chapter's title: the student edition of it, one click away."""
    if app.config.gtlib_hide_solutions:
        return
    url = _student_url(app, docname.split("/")[-1])
    section = next(iter(doctree.findall(nodes.section)), None)
    if url is None or section is None:
        return
    title = next(iter(section.findall(nodes.title)), None)
    note = nodes.raw(
        "",
        "<p class='gtlib-student-link'>Teaching or studying? Open the "
        f"<a href='{html.escape(url)}'>student edition of this chapter in Colab"
        "</a> (the same notebook without the exercises' solutions).</p>",
        format="html",
    )
    section.insert(section.index(title) + 1 if title is not None else 0, note)


def _failure_banner(app, doctree, docname) -> None:
    """A plain banner at the top of a chapter whose claims failed on this build."""
    slug = docname.split("/")[-1]
    path = _results_dir(app) / f"{slug}.json"
    if not path.is_file():
        return
    failed = [
        c for c in json.loads(path.read_text())["claims"] if c["status"] == "FAILED"
    ]
    if not failed:
        return
    seed = json.loads(path.read_text()).get("seed")
    items = "".join(
        f"<li><code>{html.escape(c['id'])}</code>: {html.escape(c['statement'])}</li>"
        for c in failed
    )
    banner = nodes.raw(
        "",
        f"<div class='gtlib-failed-banner' role='alert'><strong>"
        f"{len(failed)} claim{'s' if len(failed) != 1 else ''} of this chapter "
        f"did not hold on this build</strong> (seed {seed}); each is explained "
        f"where it is checked and in the claims table.<ul>{items}</ul></div>",
        format="html",
    )
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None:
        return
    title = next(iter(section.findall(nodes.title)), None)
    idx = section.index(title) + 1 if title is not None else 0
    section.insert(idx, banner)


def _times_html(app, fromdocname: str) -> str:
    from myst_nb.sphinx_ import NbMetadataCollector

    rows = []
    for doc in _chapter_docs(app):
        title = (
            app.env.titles[doc].astext()
            if doc in app.env.titles
            else doc.split("/")[-1]
        )
        uri = app.builder.get_relative_uri(fromdocname, doc)
        data = NbMetadataCollector.get_exec_data(app.env, doc) or {}
        runtime = data.get("runtime")
        if runtime is None:
            seconds, status = "", "not executed in this build"
        else:
            seconds = f"{runtime:.0f}"
            status = "ran" if data.get("succeeded") else "failed"
        rows.append(
            f"<tr><td><a href='{html.escape(uri)}'>{html.escape(title)}</a></td>"
            f"<td class='gtlib-num'>{seconds}</td><td>{status}</td></tr>"
        )
    return (
        "<div class='gtlib-table-wrap' tabindex='0' role='region' aria-label='table (scrolls sideways)'><table class='gtlib-table gtlib-times'><thead><tr>"
        "<th>chapter</th><th>execution time (s, wall clock)</th><th>status</th></tr>"
        "</thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )


def _is_path_like(text: str) -> bool:
    t = text.strip()
    return (
        not t
        or "/" in t
        and " " not in t
        or t.lower().endswith((".png", ".jpg", ".svg"))
    )


def _default_alt_text(doctree) -> None:
    """Give every image alt text that is not its file path: myst-nb sets the alt of a cell's
    image only from ``mystnb.image.alt``; without it, Sphinx writes the file path. The figure's
    caption is used when there is one, else a plain statement that the figure is undescribed."""
    for img in doctree.findall(nodes.image):
        if not _is_path_like(img.get("alt", "")):
            continue
        fig = img.parent if isinstance(img.parent, nodes.figure) else None
        caption = (
            next(iter(fig.findall(nodes.caption)), None) if fig is not None else None
        )
        if caption is not None and caption.astext().strip():
            img["alt"] = caption.astext().strip()
        else:
            img["alt"] = "Figure made by the code cell above (no description given)"


def _on_doctree_resolved(app, doctree, docname):
    _default_alt_text(doctree)
    if app.builder.format == "html" and docname in _chapter_docs(app):
        _student_note(app, doctree, docname)
        _failure_banner(app, doctree, docname)
    for node in doctree.findall(claims_report):
        if app.builder.format == "html":
            node.replace_self(
                nodes.raw("", _report_html(app, docname), format="html")
            )
        else:
            node.replace_self(
                nodes.paragraph(text="(The claims table is part of the HTML build.)")
            )
    for node in doctree.findall(chapter_times):
        if app.builder.format == "html":
            node.replace_self(
                nodes.raw("", _times_html(app, docname), format="html")
            )
        else:
            node.replace_self(
                nodes.paragraph(
                    text="(The execution times are part of the HTML build.)"
                )
            )


def _unique_scripts(files: list) -> list:
    seen, unique = set(), []
    for js in files:
        key = (
            js.filename or "",
            tuple(sorted((k, str(v)) for k, v in js.attributes.items())),
        )
        if key not in seen:
            seen.add(key)
            unique.append(js)
    return unique


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _is_widget_script(js, loaders: set) -> bool:
    """The widget state myst-nb saved, or one of the configured widget-library loaders."""
    name = os.fspath(js.filename or "").split("?")[0]
    return js.attributes.get("type") == WIDGET_STATE or any(
        name in (key, f"_static/{key}") for key in loaders
    )  # Sphinx prefixes local files


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    """Drop repeated script tags: sphinx-thebe's config snippet reaches Jupyter Book 1 pages
    twice, and a second ``const THEBE_JS_URL`` is a console error in every browser. Runs after
    every other handler (which may still add scripts, MathJax's among them).

    Also drop MathJax from a page with no mathematics, and the widget library (3.6 MB) and the
    saved widget state from a page that shows no widget: myst-nb loads them whenever the executed notebook stored widget state, even when
    every cell that made a widget is tagged ``remove-output`` (the live twin of a
    :func:`gtlib.widgets.static_slider`)."""
    files = context.get("script_files")
    if isinstance(
        files, list
    ):  # in place: it is the builder's list, reset for every page
        files[:] = _unique_scripts(files)
        if WIDGET_VIEW not in context.get("body", ""):
            loaders = set(app.config.nb_ipywidgets_js or {})
            files[:] = [js for js in files if not _is_widget_script(js, loaders)]
        if not _has_math(
            context.get("body", "")
        ):  # 1.3 MB a page with no math need not load
            files[:] = [js for js in files if not _is_mathjax_script(js)]


def _has_math(body: str) -> bool:
    """Whether a page body holds anything MathJax would typeset (Sphinx's math nodes, or TeX
    delimiters in a cell's output)."""
    return any(mark in body for mark in ('class="math', "\\(", "\\[", "$$"))


def _is_mathjax_script(js) -> bool:
    name = (js.filename or "").lower()
    body = str(js.attributes.get("body", ""))
    return "mathjax" in name or body.lstrip().startswith("window.MathJax")


class _RemoveSolutions(SphinxTransform):
    """The student edition: drop every solution, gated ones included, after sphinx-exercise has
    merged the gated pieces (its MergeGatedSolutions runs at priority 10)."""

    default_priority = 11

    def apply(self):
        if not self.config.gtlib_hide_solutions:
            return
        from sphinx_exercise.nodes import solution_node

        for node in list(self.document.findall(solution_node)):
            node.parent.remove(node)


def _accessible_templates(app, config):
    """Put book/_ext/templates first on the template path (theme components fixed for
    accessibility: see the templates' comments)."""
    here = str(Path(__file__).parent / "templates")
    if here not in config.templates_path:
        config.templates_path.insert(0, here)


def _accessible_citations(app, pagename, templatename, context, doctree):
    """docutils writes a citation list as ``role="list"`` whose items have the deprecated role
    ``doc-biblioentry``: axe-core reports a critical ``aria-required-children`` on every page
    with references. The entries become list items."""
    body = context.get("body")
    if isinstance(body, str) and 'role="doc-biblioentry"' in body:
        context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')


def _accessible_toggles(app, pagename, templatename, context, doctree):
    """A folded cell's ``summary`` carries ``aria-label="Toggle hidden content"`` (myst-nb), which
    does not contain its visible text ("Show code cell source"): axe-core reports a serious
    ``label-content-name-mismatch``. Without the label its accessible name is the visible text."""
    body = context.get("body")
    if (
        isinstance(body, str)
        and '<summary aria-label="Toggle hidden content">' in body
    ):
        context["body"] = body.replace(
            '<summary aria-label="Toggle hidden content">', "<summary>"
        )


def _lazy_images(app, pagename, templatename, context, doctree):
    """Let the browser fetch a figure only when the reader scrolls near it: a chapter holds 6-12
    figures (0.1-0.3 MB each) and most lie far below the first screen, so on a slow phone link
    the page is readable long before its last figure arrives. The first figure stays eager (it
    may be on the first screen), and so do small images that are not figures (the Colab logo of
    the student link). The PDF tool makes every image eager before it prints."""
    body = context.get("body")
    if not isinstance(body, str) or "<img " not in body:
        return
    seen = [0]

    def tag(m):
        if "_images/" not in m.group(0):
            return m.group(0)
        seen[0] += 1
        return (
            m.group(0)
            if seen[0] == 1
            else m.group(0).replace(
                "<img ", '<img loading="lazy" decoding="async" ', 1
            )
        )

    context["body"] = re.sub(r"<img [^>]*>", tag, body)


def _take_over_hide_solutions(app, config):
    """sphinx-exercise 1.2's own ``hide_solutions`` drops the start of a gated solution but leaves
    its code cells and end marker behind (the build then crashes on the orphaned end node). So the
    book reads ``hide_solutions`` itself: sphinx-exercise builds every solution, and
    :class:`_RemoveSolutions` removes them whole. Upstream: executablebooks/sphinx-exercise#89;
    drop this work-around once a release fixes it."""
    config.gtlib_hide_solutions = bool(config.hide_solutions)
    config.hide_solutions = False


def _shrink_figures(app, exception):
    """Store the site's figure PNGs with a 256-colour palette when that is smaller.

    The chapters' figures are saved at twice their display resolution (sharp on phones); as
    full-colour PNGs a chapter page then weighs over 4 MB. Line plots use a handful of colours,
    so an adaptive 256-colour palette changes nothing visible and shrinks the files 2-4x.
    """
    if exception is not None or app.builder.format != "html":
        return
    from PIL import Image

    for path in sorted(Path(app.outdir, "_images").glob("*.png")):
        try:
            with Image.open(path) as img:
                if img.mode == "P":
                    continue
                small = img.convert("RGB").quantize(
                    colors=256,
                    method=Image.Quantize.MEDIANCUT,
                    dither=Image.Dither.NONE,
                )
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            small.save(tmp, format="PNG", optimize=True)
            if tmp.stat().st_size < path.stat().st_size:
                os.replace(tmp, path)
            else:
                tmp.unlink()
        except OSError as exc:  # an unreadable image stays as it is, with a warning
            logger.warning(f"could not shrink {path.name}: {exc}")


def setup(app):
    app.add_config_value("gtlib_hide_solutions", False, "env")
    app.connect("build-finished", _shrink_figures)
    app.connect("config-inited", _take_over_hide_solutions, priority=900)
    app.connect("config-inited", _accessible_templates)
    app.connect("html-page-context", _accessible_citations)
    app.connect("html-page-context", _accessible_toggles)
    app.connect("html-page-context", _lazy_images)
    app.add_transform(_RemoveSolutions)
    app.add_node(claims_report)
    app.add_directive("claims-report", ClaimsReportDirective)
    app.add_node(chapter_times)
    app.add_directive("chapter-times", ChapterTimesDirective)
    app.connect("builder-inited", _on_builder_inited)
    app.connect("doctree-resolved", _on_doctree_resolved)
    app.connect("html-page-context", _dedupe_scripts, priority=999)
    app.add_css_file("gtlib.css")
    return {
        "version": "0.1",
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }
