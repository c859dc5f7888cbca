"""Sliders that work on the static site: precomputed figures behind an HTML range input.

A live ``ipywidgets.interact`` needs a running kernel: on the book's static site its slider moves
but the figure never changes, and the widget library weighs 3.6 MB. :func:`static_slider` draws
the figure once for every value of a small grid and returns a self-contained HTML control (an
``<input type="range">`` with a label and a readout that swaps the ``<img>``): no kernel, no
external library, works offline. :func:`live` is the Jupyter/Colab version of the same
exploration, built on ``ipywidgets.interact`` over the same grid.

How a chapter does both (copy, then change ``draw``, the grid and the texts)::

    # cell 1, tagged "remove-output" (cell metadata {"tags": ["remove-output"]}): the live
    # sliders (ipywidgets.interact), for Jupyter and Colab; the site shows this code but not
    # its widgets, which would not work without a kernel
    from gtlib import widgets

    def draw(noise):
        fig, ax = plotting.subplots(width=6.4, height=2.8)
        ax.plot(signal(noise))
        plotting.label(ax, "position", "value")
        return fig

    widgets.live(draw, {"noise": [0.0, 0.25, 0.5, 1.0]})

    # cell 2 (no tag): the same exploration on every page, site included
    widgets.static_slider(draw, {"noise": [0.0, 0.25, 0.5, 1.0]},
                          labels={"noise": "correlated noise scale"},
                          alt="Three MNIST-1D signals with correlated noise {noise}")

Why the tag: myst-nb removes a ``remove-output`` cell's outputs from the page, so the page has
no widget view, and the book's Sphinx extension then leaves out the widget library (3.6 MB).
Use ``remove-cell`` instead to hide the live cell's code as well. The build (and any
notebook executor) makes no live widget at all: :func:`live` and :func:`interact` build
them only when a reader runs the cell (:func:`reader_frontend`), because under nbclient a
widget cell sometimes stalls until the cell timeout. ``draw`` must return the
figure (or leave it current) and must not call ``plt.show()``.

Page weight: each frame is a PNG of about 20-60 kB (more for many panels), stored in the page;
a chapter page must stay under 4 MB, so keep a slider to about 4-12 frames. The static slider
cell needs no figure metadata: its ``alt`` template describes every frame. See
``book/preliminaries.ipynb`` ("Interactive exploration") for a two-parameter example.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
from typing import Any, Callable, Mapping, Sequence

__all__ = [
    "StaticSlider",
    "interact",
    "live",
    "reader_frontend",
    "static_slider",
]


#: Above this many frames a slider gets heavy (each frame is a PNG of about 20-60 kB).
MAX_FRAMES = 24
#: The largest ``scale`` (PNG resolution relative to the figure's dpi) a slider accepts.
MAX_SCALE = 8.0


def _grid_values(grid: Any, what: str) -> tuple[list[str], list[list[Any]]]:
    """The parameter names and value lists of a slider grid, or an error naming what is wrong."""
    if not isinstance(grid, Mapping):
        raise TypeError(
            f"grid must be a dict {{name: values}}, got {type(grid).__name__}"
        )
    if not grid:
        raise ValueError(f"grid must name at least one parameter ({what})")
    names, values = [], []
    for n, v in grid.items():
        if not isinstance(n, str) or not n.isidentifier():
            raise ValueError(f"grid keys must be parameter names of draw, got {n!r}")
        if isinstance(v, (str, bytes, Mapping)) or not hasattr(v, "__iter__"):
            raise TypeError(f"grid[{n!r}] must be a list of values, got {v!r}")
        v = list(v)
        if not v:
            raise ValueError(f"grid[{n!r}] has no values")
        names.append(n)
        values.append(v)
    return names, values


def _check_alt(alt: str) -> None:
    """The alt template may only hold plain ``{name}`` fields: the values are filled in as the
    slider shows them (strings), so a format spec or conversion can only fail or blow up."""
    import string

    try:
        fields = list(string.Formatter().parse(alt))
    except ValueError as err:
        raise ValueError(
            f"alt {alt[:80]!r} is not a valid template: {err}"
        ) from None
    for _, field, spec, conversion in fields:
        if field is not None and (spec or conversion or not field.isidentifier()):
            raise ValueError(
                f"alt fields must be plain {{name}} placeholders, got "
                f"{{{field}{'!' + conversion if conversion else ''}"
                f"{':' + spec[:20] if spec else ''}}} in alt"
            )


def _texts(name: str, mapping: Any) -> dict:
    """``labels``: None or a dict of parameter name -> str."""
    if mapping is None:
        return {}
    if not isinstance(mapping, Mapping):
        raise TypeError(
            f"{name} must be a dict {{parameter: text}} or None, got "
            f"{type(mapping).__name__}"
        )
    for k, v in mapping.items():
        if not isinstance(v, str):
            raise TypeError(f"{name}[{k!r}] must be a str, got {type(v).__name__}")
    return dict(mapping)


# One inline handler per range input: read the frames once, pick the frame of the current
# position(s), update the image, its alt text, the readouts and aria-valuetext.
_ONINPUT = (
    "var r=this.closest('.gtlib-slider'),d=r._d||(r._d=JSON.parse("
    "r.querySelector('script').textContent)),i=0;"
    "r.querySelectorAll('input').forEach(function(e,j){var v=+e.value;i=i*d.n[j]+v;"
    "e.setAttribute('aria-valuetext',d.v[j][v]);"
    "r.querySelectorAll('output')[j].textContent=d.v[j][v];});"
    "var m=r.querySelector('img');m.src=d.f[i];m.alt=d.a[i];"
)


def _fmt_value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _png(fig, scale: float, quantize: bool) -> tuple[bytes, int, int]:
    """PNG bytes of ``fig`` at ``scale`` times its dpi, and its CSS size (px at 1x)."""
    from PIL import Image

    dpi = fig.dpi * scale
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white")
    buf.seek(0)
    img = Image.open(buf)
    width, height = img.size
    if quantize:  # a palette of 256 colours: line plots lose nothing visible, bytes shrink 2-4x
        img = img.convert("RGB").quantize(
            colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
    out = io.BytesIO()
    img.save(out, format="PNG", optimize=True)
    return out.getvalue(), round(width / scale), round(height / scale)


class StaticSlider:
    """A precomputed slider: the object :func:`static_slider` returns.

    Displays as HTML (``_repr_html_``). Attributes: ``html`` (the markup), ``nbytes`` (its
    size in bytes), ``names`` and ``values`` (the grid), ``frames`` (the PNG bytes, in grid
    order with the last parameter varying fastest).

    Parameters
    ----------
    html_text : str
        The markup.
    names : list[str]
        The parameters' names.
    values : list[list[Any]]
        Each parameter's grid values.
    frames : list[bytes]
        The PNG bytes of every frame.
    """

    def __init__(
        self,
        html_text: str,
        names: list[str],
        values: list[list[Any]],
        frames: list[bytes],
    ):
        if not isinstance(html_text, str):
            raise TypeError(
                f"html_text must be a str, got {type(html_text).__name__}"
            )
        for name, v in (("names", names), ("values", values), ("frames", frames)):
            if not isinstance(v, (list, tuple)):
                raise TypeError(f"{name} must be a list, got {type(v).__name__}")
        if len(names) != len(values):
            raise ValueError(
                f"names and values must have the same length, got {len(names)} and "
                f"{len(values)}"
            )
        if not all(isinstance(f, (bytes, bytearray)) for f in frames):
            raise TypeError("frames must be a list of PNG bytes")
        self.html = html_text
        self.names = names
        self.values = values
        self.frames = frames

    @property
    def nbytes(self) -> int:
        return len(self.html.encode("utf-8"))

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        grid = " x ".join(
            f"{n} ({len(v)} values)" for n, v in zip(self.names, self.values)
        )
        return f"<static slider over {grid}: {len(self.frames)} figures, {self.nbytes // 1024} kB>"


def static_slider(
    draw: Callable[..., Any],
    grid: Mapping[str, Sequence[Any]],
    *,
    alt: str,
    labels: Mapping[str, str] | None = None,
    start: Mapping[str, Any] | None = None,
    scale: float = 2.0,
    quantize: bool = True,
) -> StaticSlider:
    """Precompute a figure for every grid value and return a kernel-free slider over them.

    Parameters
    ----------
    draw : callable
        ``draw(**params)`` draws the figure for one value of each parameter and returns the
        matplotlib ``Figure`` (or returns None and leaves it as the current figure). It is
        called once per grid point; each figure is closed after it is saved.
    grid : dict of str to sequence
        One or two parameters, each with the values the slider can take, in slider order, e.g.
        ``{"noise": [0, 0.25, 0.5, 1]}``. At most ``MAX_FRAMES`` (24) grid points in all.
    alt : str
        Alt text of the figure, a template filled with the current values, e.g.
        ``"Three signals with correlated noise {noise}"``. Say what the figure shows.
    labels : dict of str to str, optional
        The visible label of each parameter's slider (default: the parameter name).
    start : dict, optional
        The value each slider starts at (default: the middle of its grid).
    scale : float
        Resolution of the PNGs relative to the figure's dpi (2 = sharp on phones and retina
        screens; the figure is shown at its 1x size).
    quantize : bool
        Store the PNGs with a 256-colour palette (about 3x smaller; invisible on line plots).

    Returns
    -------
    StaticSlider
        Displays as HTML when it is a cell's last expression: a label, an
        ``<input type="range">``, a readout of the current value and the figure. Moving the
        slider (mouse, touch or arrow keys) swaps the figure; nothing else is loaded.

    Examples
    --------
    In a chapter (see the module docstring for the live twin of this cell)::

        def draw(noise):
            fig, ax = plotting.subplots(width=6.4, height=2.8)
            xs, _ = prelim.sample_signals(corr_noise_scale=noise)
            ax.plot(xs[0])
            plotting.label(ax, "position (index 0-39)", "value")
            return fig

        widgets.static_slider(
            draw, {"noise": [0.0, 0.25, 0.5, 1.0]},
            labels={"noise": "correlated noise scale"},
            alt="An MNIST-1D signal of digit 0 with correlated noise {noise}")

    Two parameters: ``grid={"noise": [...], "shift": [...]}`` and ``draw(noise, shift)``; the
    page then shows two sliders. Keep the grid small: every figure is stored in the page.
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    if not callable(draw):
        raise TypeError(f"draw must be callable, got {type(draw).__name__}")
    names, values = _grid_values(grid, "one or two")
    if len(names) > 2:
        raise ValueError(
            f"grid must be a dict of one or two parameters: {{name: values}}, got "
            f"{len(names)}"
        )
    total = 1
    for v in values:
        total *= len(v)
    if total > MAX_FRAMES:
        raise ValueError(
            f"the grid has {total} points; at most {MAX_FRAMES} (each is a figure "
            "stored in the page): use fewer values"
        )
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError("alt must be a non-empty description of the figure")
    _check_alt(alt)
    labels = _texts("labels", labels)
    if start is not None and not isinstance(start, Mapping):
        raise TypeError(
            f"start must be a dict {{parameter: value}} or None, got "
            f"{type(start).__name__}"
        )
    unknown = set(labels) - set(names) | set(start or {}) - set(names)
    if unknown:
        raise ValueError(
            f"labels/start name unknown parameters {sorted(unknown)}; grid has {names}"
        )
    from .checks import Interval

    scale = float(
        Interval(float, 0, MAX_SCALE, closed="right").check("scale", scale)
    )
    if not isinstance(quantize, bool):
        raise TypeError(f"quantize must be a bool, got {quantize!r}")
    idx0 = []
    for n, v in zip(names, values):
        if start and n in start:
            if start[n] not in v:
                raise ValueError(
                    f"start[{n!r}] = {start[n]!r} is not one of grid[{n!r}]"
                )
            idx0.append(v.index(start[n]))
        else:
            idx0.append((len(v) - 1) // 2)

    frames, alts, size = [], [], None
    for combo in itertools.product(*values):
        params = dict(zip(names, combo))
        fig = draw(**params)
        if fig is None:
            fig = plt.gcf()
        if not isinstance(fig, Figure):
            raise TypeError(
                f"draw must return a matplotlib Figure or None, got "
                f"{type(fig).__name__}"
            )
        png, w, h = _png(fig, scale, quantize)
        plt.close(fig)
        size = size or (w, h)
        frames.append(png)
        try:
            alts.append(alt.format(**{k: _fmt_value(x) for k, x in params.items()}))
        except (KeyError, IndexError) as err:
            raise ValueError(
                f"alt {alt!r} names a parameter the grid lacks: {err}"
            ) from None

    digest = hashlib.sha1(b"".join(frames) + repr(names).encode()).hexdigest()[:10]
    uris = [
        "data:image/png;base64," + base64.b64encode(f).decode("ascii")
        for f in frames
    ]
    shown = [[_fmt_value(x) for x in v] for v in values]
    first = 0
    for j, v in enumerate(values):
        first = first * len(v) + idx0[j]
    data = {"n": [len(v) for v in values], "v": shown, "f": uris, "a": alts}
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    controls = []
    for j, n in enumerate(names):
        sid = f"gtlib-slider-{digest}-{j}"
        text = html.escape(labels.get(n, n))
        controls.append(
            f'<div class="gtlib-slider-row"><label for="{sid}">{text}</label>'
            f'<input type="range" id="{sid}" min="0" max="{len(values[j]) - 1}" step="1" '
            f'value="{idx0[j]}" aria-valuetext="{html.escape(shown[j][idx0[j]])}" '
            f'oninput="{html.escape(_ONINPUT)}">'
            f'<output for="{sid}">{html.escape(shown[j][idx0[j]])}</output></div>'
        )
    markup = (
        f'<div class="gtlib-slider" id="gtlib-slider-{digest}">'
        + "".join(controls)
        + f'<img class="gtlib-slider-img" src="{uris[first]}" alt="{html.escape(alts[first])}" '
        f'width="{size[0]}" height="{size[1]}" style="max-width:100%;height:auto">'
        f'<script type="application/json">{payload}</script></div>'
    )
    return StaticSlider(markup, names, values, frames)


#: What a live-widget cell prints instead of its widgets when a notebook executor runs it.
SKIPPED = (
    "(live widgets not made: this cell was run by a notebook executor, not by a\n"
    "reader; run it in Jupyter or Colab, or pass force=True)"
)


def reader_frontend() -> bool:
    """Whether the running cell was sent by a frontend a reader drives (Jupyter, Colab, VS Code).

    Such a frontend sends its execute requests with ``allow_stdin=True`` (``input()`` works);
    every notebook executor sends ``False``: nbclient and what builds on it (``jupyter nbconvert
    --execute``, papermill, jupyter-cache, myst-nb, hence ``jupyter-book build``) and nbval. Under
    nbclient a cell that makes widgets sometimes waits for the whole cell timeout although the
    kernel has replied (upstream: jupyter/nbclient#312; measured by
    book/_tools/widget_hang_loop.py), so
    :func:`live` and :func:`interact` make no widget for an executor. Outside a kernel (a script,
    the unit tests) there is no executor to stall: True.

    Returns
    -------
    bool
        True for a reader's frontend (or outside a kernel), False for a notebook executor.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return True
    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None:
        return True
    return bool(getattr(kernel, "_allow_stdin", True))


def interact(
    fn: Callable[..., Any], /, force: bool = False, **controls: Any
) -> None:
    """``ipywidgets.interact(fn, **controls)`` when a reader runs the cell.

    ``ipywidgets.interact(fn, **controls)`` when a reader runs the cell, nothing (a one-line
    note) when a notebook executor does (:func:`reader_frontend`); ``force=True`` always builds.

    Give the controls as ipywidgets abbreviations (``(min, max, step)`` tuples, lists of
    options; the start values are ``fn``'s defaults), not as widget objects: a widget object
    is made, and talks to the frontend, before this function can decide. Returns None.

    Parameters
    ----------
    fn : Callable[..., Any]
        The function the controls call.
    force : bool, default False
        Whether to build the widgets under a notebook executor too.
    **controls
        ipywidgets abbreviations, one per argument of ``fn``.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not (force or reader_frontend()):
        print(SKIPPED)
        return None
    import ipywidgets

    ipywidgets.interact(fn, **controls)
    return None


def live(
    draw: Callable[..., Any],
    grid: Mapping[str, Sequence[Any]],
    labels: Mapping[str, str] | None = None,
    force: bool = False,
) -> None:
    """The live twin of :func:`static_slider`: ``ipywidgets.interact`` over the same grid.

    ``draw(**params)`` is the same function (it returns a Figure or None). Each parameter gets a
    ``SelectionSlider`` over its grid values, starting in the middle. Returns None (so the cell
    shows no function repr). Tag the cell ``remove-output`` so that the static site, where a
    widget cannot recompute, shows the code but not a dead control (module docstring).

    The sliders are made only when a reader runs the cell (:func:`reader_frontend`); a notebook
    executor (the build, nbval, nbclient) gets a one-line note instead, after the arguments are
    checked. ``force=True`` always makes them.

    Parameters
    ----------
    draw : Callable[..., Any]
        ``draw(**params)`` draws one frame and returns the figure (or None).
    grid : Mapping[str, Sequence[Any]]
        Parameter name -> its grid values.
    labels : Mapping[str, str] | None, default None
        Parameter name -> the slider's label (default: the name).
    force : bool, default False
        Whether to build the widgets under a notebook executor too.
    """
    import ipywidgets
    import matplotlib.pyplot as plt

    if not callable(draw):
        raise TypeError(f"draw must be callable, got {type(draw).__name__}")
    names, values = _grid_values(grid, "the sliders")
    labels = _texts("labels", labels)
    unknown = set(labels) - set(names)
    if unknown:
        raise ValueError(
            f"labels name unknown parameters {sorted(unknown)}; grid has {names}"
        )
    if not (force or reader_frontend()):
        print(SKIPPED)
        return None
    sliders = {}
    for n, v in zip(names, values):
        sliders[n] = ipywidgets.SelectionSlider(
            options=[(_fmt_value(x), x) for x in v],
            value=v[(len(v) - 1) // 2],
            description=labels.get(n, n),
            style={"description_width": "initial"},
            continuous_update=False,
        )

    def show(**params):
        fig = draw(**params)
        if fig is None:
            fig = plt.gcf()
        plt.show()

    ipywidgets.interact(show, **sliders)
