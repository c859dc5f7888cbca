"""Claims: how a chapter states what a paper found and checks it against this run's measurement.

A chapter creates one :class:`Claims` register and calls :meth:`Claims.check` once per result::

    claims = Claims("preliminaries")
    claims.check("prelim.mlp_beats_linear",
                 statement="An MLP beats a linear classifier on MNIST-1D by a wide margin",
                 paper="about 68% vs 32% test accuracy (MNIST-1D README)",
                 measured=f"MLP {mlp:.1%} vs linear {lin:.1%}",
                 holds=mlp >= lin + 0.20)

``holds`` is computed by the chapter's code from this run's numbers. A claim that does not hold
raises :class:`ClaimFailed`, which fails the notebook, nbval and the site build, unless the chapter
passes ``nonreproduction="why it does not reproduce at our scale"``: the claim is then recorded and
shown everywhere as a *documented non-reproduction*. Every check rewrites
``GTLIB_RESULTS_DIR/<chapter>.json`` so the reproduction report always shows this run's claims.
"""
from __future__ import annotations

import html
import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .config import settings

_ID = re.compile(r"^[a-z0-9]+(\.[a-z0-9_]+)+$")
_SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class ClaimFailed(AssertionError):
    """A claim that the chapter expects to hold did not hold in this run."""


@dataclass
class Claim:
    """One checked claim (the fields of the results JSON)."""

    id: str
    statement: str
    paper: str
    measured: str
    holds: bool
    status: str
    values: dict = field(default_factory=dict)
    explanation: str = ""


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return _jsonable(value.item())
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


class Claims:
    """The claims register of one chapter.

    Parameters
    ----------
    chapter : str
        The chapter's slug (its notebook is ``book/<slug>.ipynb``).
    results_dir : path, optional
        Where to write ``<slug>.json`` (default: ``GTLIB_RESULTS_DIR``).
    """

    def __init__(self, chapter: str, results_dir: str | Path | None = None):
        if not isinstance(chapter, str) or not _SLUG.match(chapter):
            raise ValueError(f"chapter must be a lowercase slug like 'mode-connectivity', got {chapter!r}")
        s = settings()
        self.chapter = chapter
        self.scale = s.scale
        self.seed = s.seed
        self.results_dir = Path(results_dir) if results_dir is not None else s.results_dir
        self.claims: list[Claim] = []
        self.path = self.results_dir / f"{chapter}.json"
        self._write()

    def check(self, id: str, statement: str, paper: str, measured: str, holds: bool,
              values: dict | None = None, nonreproduction: str | None = None) -> Claim:
        """Record a claim measured in this run; raise :class:`ClaimFailed` if it does not hold.

        Parameters
        ----------
        id : str
            The claim's id from the chapter's issue, e.g. ``"prelim.mlp_beats_linear"``.
        statement, paper, measured : str
            One line each: the claim, what the paper reports, what this run measured.
        holds : bool
            The outcome of the chapter's check on this run's numbers.
        values : dict, optional
            The raw measured numbers (stored in the JSON for machine use).
        nonreproduction : str, optional
            If given, a failing claim is recorded as a documented non-reproduction with this
            explanation instead of raising. (A claim that holds ignores it.)
        """
        for name, val in (("id", id), ("statement", statement), ("paper", paper), ("measured", measured)):
            if not isinstance(val, str) or not val.strip():
                raise TypeError(f"{name} must be a non-empty str")
        if not _ID.match(id):
            raise ValueError(f"id must look like 'chapter.claim_name', got {id!r}")
        if any(c.id == id for c in self.claims):
            raise ValueError(f"claim {id!r} was already checked in this chapter")
        if not isinstance(holds, bool):
            if hasattr(holds, "item"):
                holds = bool(holds.item())
            else:
                raise TypeError(f"holds must be a bool, got {type(holds).__name__}")
        if holds:
            status = "reproduced"
        elif nonreproduction:
            status = "documented non-reproduction"
        else:
            status = "FAILED"
        claim = Claim(id=id, statement=statement, paper=paper, measured=measured, holds=holds,
                      status=status, values=_jsonable(values or {}),
                      explanation="" if holds else (nonreproduction or ""))
        self.claims.append(claim)
        self._write()
        if status == "FAILED":
            raise ClaimFailed(f"claim {id} does not hold in this run: {measured} "
                              f"(scale={self.scale}, seed={self.seed})")
        return claim

    # -- output ---------------------------------------------------------------------------------
    def as_dict(self) -> dict:
        return {"chapter": self.chapter, "scale": self.scale, "seed": self.seed,
                "claims": [asdict(c) for c in self.claims]}

    def _write(self) -> None:
        self.results_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.as_dict(), indent=2))
        tmp.replace(self.path)

    def table(self):
        """The chapter's claims as an HTML table (display it as a cell's last expression)."""
        from IPython.display import HTML

        return HTML(claims_table_html(self.as_dict()["claims"]))

    def _repr_html_(self) -> str:
        return claims_table_html(self.as_dict()["claims"])


STATUS_MARK = {"reproduced": "✅ reproduced", "documented non-reproduction": "⚠️ not reproduced (documented)",
               "FAILED": "❌ failed"}


def claims_table_html(claims: list[dict], chapter_col: bool = False,
                      measured_header: str = "measured here") -> str:
    """Render claims (dicts with id/statement/paper/measured/status) as an HTML table.

    Used by every chapter's claims table and by the site's reproduction report.
    """
    head = "".join(f"<th>{h}</th>" for h in
                   (["chapter"] if chapter_col else []) + ["id", "claim", "paper", measured_header, "status"])
    rows = []
    for c in claims:
        cells = ([c.get("chapter", "")] if chapter_col else []) + [
            f"<code>{html.escape(c['id'])}</code>", html.escape(c["statement"]), html.escape(c["paper"]),
            html.escape(c["measured"]), STATUS_MARK.get(c["status"], html.escape(c["status"]))
            + (f"<br><small>{html.escape(c['explanation'])}</small>" if c.get("explanation") else "")]
        rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    return f'<table class="gtlib-claims"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def load_results(results_dir: str | Path | None = None) -> list[dict]:
    """Every ``<chapter>.json`` in ``results_dir`` (default ``GTLIB_RESULTS_DIR``), sorted by name."""
    d = Path(results_dir) if results_dir is not None else settings().results_dir
    if not d.exists():
        return []
    return [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))]
