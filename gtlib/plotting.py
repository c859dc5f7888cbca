"""The book's house style for figures, and the helpers chapters share.

* Colours: the Okabe-Ito palette (distinguishable under the common colour-vision deficiencies).
* White figure background, so figures stay legible when the site is in dark mode.
* Sizes chosen to be readable at the site's text width (about 700 px) and on a phone (390 px,
  where a 6.4 in figure shrinks to about 0.55 of its size): no text below ``MIN_FONT_PT``
  (10 pt) at the saved size, the default figure 6.4 in wide at 100 dpi (640 CSS px).
* Saved at twice that resolution (``retina`` PNGs in Jupyter, shown at 1x): sharp on phones and
  high-density screens.

Call :func:`use_style` once per chapter (``gtlib.setup_chapter`` does it for you).
:func:`min_font_size` tells whether a finished figure keeps to ``MIN_FONT_PT``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from .checks import Interval, check_int, check_real

__all__ = [
    "OKABE_ITO",
    "label",
    "loglog_fit_label",
    "min_font_size",
    "small_multiples",
    "subplots",
    "use_style",
]


#: The most panels a figure may have per row or column (a page cannot show more).
MAX_PANELS = 64
#: The largest figure side (inches) the helpers accept.
MAX_INCHES = 100.0

#: Okabe and Ito's colour-blind-safe palette (black last).
OKABE_ITO = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
]

#: The smallest text size (points, at the saved size) the house style uses and allows.
MIN_FONT_PT = 10.0

STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.prop_cycle": mpl.cycler(color=OKABE_ITO),
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 11,
    "axes.titlesize": 11,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "figure.titlesize": 11,
    "figure.labelsize": 11,
    "legend.frameon": False,
    "lines.linewidth": 2.0,
    "figure.constrained_layout.use": True,
}


def use_style() -> None:
    """Apply the house style to matplotlib's global settings.

    In Jupyter it also asks the inline backend for ``retina`` PNGs: saved at twice the figure's
    dpi and displayed at its 1x size (the notebook and the site read the size from the output's
    metadata).
    """
    mpl.rcParams.update(STYLE)
    try:
        from IPython import get_ipython

        if get_ipython() is not None:
            from matplotlib_inline.backend_inline import set_matplotlib_formats

            set_matplotlib_formats("retina")
    except ImportError:  # plain Python: nothing to configure
        pass


def _inches(name: str, value) -> float:
    """A figure size in inches: a finite number in (0, MAX_INCHES]."""
    return float(Interval(float, 0, MAX_INCHES, closed="right").check(name, value))


def _panels(name: str, value) -> int:
    """A number of panels per row or column: an int in [1, MAX_PANELS]."""
    return check_int(name, value, minimum=1, maximum=MAX_PANELS)


def _text(name: str, value, optional: bool = False):
    if value is None and optional:
        return value
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a str{' or None' if optional else ''}, got "
            f"{type(value).__name__}"
        )
    return value


def _flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def min_font_size(fig) -> float:
    """The smallest size (points) of any visible, non-empty text in ``fig``.

    A figure follows the house style when ``min_font_size(fig) >= MIN_FONT_PT``; a chapter can
    assert it after drawing a figure whose fonts it set by hand.

    Parameters
    ----------
    fig : object
        The matplotlib figure.

    Returns
    -------
    float
        The smallest font size in points.
    """
    from matplotlib.figure import Figure, SubFigure
    from matplotlib.text import Text

    if not isinstance(fig, (Figure, SubFigure)):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    sizes = [
        t.get_fontsize()
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip()
    ]
    return float(min(sizes)) if sizes else float("inf")


def subplots(
    nrows: int = 1,
    ncols: int = 1,
    width: float = 6.4,
    height: float | None = None,
    **kw,
):
    """``plt.subplots`` with the house size: ``width`` inches wide, 3.2 in tall per row by default.

    ``nrows`` and ``ncols`` are ints in ``[1, MAX_PANELS]``; ``width`` and ``height`` finite sizes
    in inches in ``(0, MAX_INCHES]``.

    Parameters
    ----------
    nrows : int, default 1
        Rows of panels, in ``[1, MAX_PANELS]``.
    ncols : int, default 1
        Columns of panels, in ``[1, MAX_PANELS]``.
    width : float, default 6.4
        Figure width in inches, in ``(0, MAX_INCHES]``.
    height : float | None, default None
        Figure height in inches (default 3.2 per row).
    **kw
        Passed on to :func:`matplotlib.pyplot.subplots`.

    Returns
    -------
    tuple of (matplotlib.figure.Figure, axes)
        What :func:`matplotlib.pyplot.subplots` returns.
    """
    nrows, ncols = _panels("nrows", nrows), _panels("ncols", ncols)
    width = _inches("width", width)
    height = (
        min(3.2 * nrows, MAX_INCHES) if height is None else _inches("height", height)
    )
    return plt.subplots(nrows, ncols, figsize=(width, height), **kw)


def label(
    ax, xlabel: str, ylabel: str, title: str | None = None, legend: bool = False
) -> None:
    """Label an axis (every figure in the book has labelled axes with units).

    Parameters
    ----------
    ax : object
        The matplotlib axes.
    xlabel : str
        Label of the x axis (with units).
    ylabel : str
        Label of the y axis (with units).
    title : str | None, default None
        Title of the axes, if any.
    legend : bool, default False
        Whether to draw the legend.
    """
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    _text("xlabel", xlabel)
    _text("ylabel", ylabel)
    _text("title", title, optional=True)
    _flag("legend", legend)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if legend:
        ax.legend()


def small_multiples(
    draw: Callable,
    values: Sequence,
    name: str,
    ncols: int = 4,
    width: float = 7.0,
    panel_height: float = 1.9,
    sharey: bool = True,
):
    """A grid of panels, one per parameter value: the static stand-in for an interactive slider.

    ``draw(ax, value)`` draws one panel; each panel is titled ``"{name} = {value}"``.
    ``ncols`` (>= 1) is the number of panels per row. For a sweep that a reader should step
    through, :func:`gtlib.widgets.static_slider` is usually better (one readable figure).

    Parameters
    ----------
    draw : Callable
        ``draw(ax, value)`` draws one panel.
    values : Sequence
        The parameter values, one panel each.
    name : str
        The parameter's name, in each panel's title.
    ncols : int, default 4
        Panels per row, at least 1.
    width : float, default 7.0
        Figure width in inches.
    panel_height : float, default 1.9
        Height of one row in inches.
    sharey : bool, default True
        Whether the panels share the y axis.

    Returns
    -------
    tuple of (matplotlib.figure.Figure, numpy.ndarray)
        The figure and its array of axes.
    """
    if not callable(draw):
        raise TypeError(
            f"draw must be a function draw(ax, value), got {type(draw).__name__}"
        )
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"values must be a list of parameter values, got {values!r}")
    if len(values) == 0:
        raise ValueError("values must not be empty")
    _text("name", name)
    try:
        ncols = _panels("ncols", ncols)
    except (
        TypeError
    ) as e:  # small_multiples has always answered a bad ncols with ValueError
        raise ValueError(str(e)) from None
    width, panel_height = (
        _inches("width", width),
        _inches("panel_height", panel_height),
    )
    if not (
        isinstance(sharey, (bool, np.bool_))
        or sharey in ("row", "col", "all", "none")
    ):
        raise TypeError(
            f"sharey must be a bool or one of 'row', 'col', 'all', 'none', got "
            f"{sharey!r}"
        )
    ncols = min(ncols, len(values))
    nrows = int(np.ceil(len(values) / ncols))
    if nrows > MAX_PANELS:
        raise ValueError(
            f"values must fill at most {MAX_PANELS} rows of {ncols} panels, got "
            f"{len(values)} values"
        )
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(width, panel_height * nrows),
        sharey=sharey,
        squeeze=False,
    )
    for ax, v in zip(axes.flat, values):
        draw(ax, v)
        ax.set_title(f"{name} = {v}", fontsize=MIN_FONT_PT)
    for ax in list(axes.flat)[len(values) :]:
        ax.set_visible(False)
    return fig, axes


def loglog_fit_label(name: str, slope: float, err: float | None = None) -> str:
    """A legend entry ``"name (slope +0.31 ± 0.04)"`` for a log-log fit.

    Parameters
    ----------
    name : str
        The curve's name.
    slope : float
        The fitted slope.
    err : float | None, default None
        Its standard error, if known.

    Returns
    -------
    str
        The legend entry.
    """
    _text("name", name)
    slope = check_real("slope", slope)
    if err is not None:
        err = float(Interval(float, 0).check("err", err))
    return f"{name} (slope {slope:+.2f}" + (
        f" ± {err:.2f})" if err is not None else ")"
    )
