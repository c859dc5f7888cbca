"""Tests of gtlib.plotting, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from gtlib import plotting


matplotlib.use("Agg")


matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


matplotlib.use("Agg")


NAN, INF = float("nan"), float("inf")


BAD = (TypeError, ValueError)


# =================================================================================================
# plotting.MIN_FONT_PT
# =================================================================================================
@pytest.mark.reference
def test_okabe_ito_palette_and_constants():
    assert plotting.OKABE_ITO == [
        "#0072B2",
        "#E69F00",
        "#009E73",
        "#D55E00",
        "#CC79A7",
        "#56B4E9",
        "#F0E442",
        "#000000",
    ]
    assert (plotting.MIN_FONT_PT, plotting.MAX_PANELS, plotting.MAX_INCHES) == (
        10.0,
        64,
        100.0,
    )
    sizes = [
        plotting.STYLE[k]
        for k in plotting.STYLE
        if k.endswith("size") and k != "figure.figsize"
    ]
    assert min(sizes) >= plotting.MIN_FONT_PT


# =================================================================================================
# plotting.STYLE
# =================================================================================================
@pytest.mark.reference
def test_use_style_sets_every_house_setting(monkeypatch):
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        plotting.use_style()
        rc = matplotlib.rcParams
        for k, v in plotting.STYLE.items():
            if k == "axes.prop_cycle":
                assert rc[k].by_key()["color"] == plotting.OKABE_ITO
            elif isinstance(v, tuple):
                assert tuple(rc[k]) == v, k
            else:
                assert rc[k] == v, k
        assert rc["figure.figsize"] == [6.4, 3.6] and rc["savefig.dpi"] == 200
        assert rc["figure.dpi"] == 100 and rc["axes.spines.top"] is False
        assert rc["figure.constrained_layout.use"] is True


@pytest.mark.reference
def test_house_style_values_as_documented():
    """The module docstring's promises, written out: white backgrounds, Okabe-Ito colours, a
    6.4 x 3.6 in figure at 100 dpi saved at 2x, no text under 10 pt, light grid, open top/right."""
    want = {
        "figure.figsize": (6.4, 3.6),
        "figure.dpi": 100,
        "savefig.dpi": 200,
        "figure.facecolor": "white",
        "axes.facecolor": "white",
        "savefig.facecolor": "white",
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
    style = dict(plotting.STYLE)
    assert style.pop("axes.prop_cycle").by_key()["color"] == plotting.OKABE_ITO
    assert style == want


# =================================================================================================
# plotting.use_style
# =================================================================================================
def test_style_is_white_and_colourblind_safe():
    plotting.use_style()
    assert matplotlib.rcParams["figure.facecolor"] == "white"
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    assert [c.lower() for c in colors] == [c.lower() for c in plotting.OKABE_ITO]


@pytest.mark.reference
def test_use_style_asks_jupyter_for_retina_pngs_only_inside_ipython(monkeypatch):
    import IPython
    import matplotlib_inline.backend_inline as inline

    formats = []
    monkeypatch.setattr(
        inline, "set_matplotlib_formats", lambda *f, **kw: formats.append(f)
    )
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    with matplotlib.rc_context():
        plotting.use_style()
    assert formats == []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    with matplotlib.rc_context():
        plotting.use_style()
    assert formats == [("retina",)]


# =================================================================================================
# plotting.min_font_size
# =================================================================================================
def test_house_fonts_are_legible_on_a_phone():
    plotting.use_style()
    rc = matplotlib.rcParams
    for key in (
        "font.size",
        "axes.labelsize",
        "axes.titlesize",
        "xtick.labelsize",
        "ytick.labelsize",
        "legend.fontsize",
    ):
        assert float(rc[key]) >= plotting.MIN_FONT_PT, key
    assert rc["savefig.dpi"] >= 2 * rc["figure.dpi"], "figures are saved at 2x"
    fig, ax = plotting.subplots()
    ax.plot([0, 1], label="a")
    plotting.label(ax, "x", "y", title="t", legend=True)
    fig.canvas.draw()
    assert plotting.min_font_size(fig) >= plotting.MIN_FONT_PT
    ax.text(0, 0, "tiny", fontsize=6)
    assert plotting.min_font_size(fig) == 6
    plt.close(fig)


@pytest.mark.reference
def test_min_font_size_skips_hidden_and_blank_text():
    fig = plt.figure(figsize=(3, 2))
    assert plotting.min_font_size(fig) == float("inf")  # no text at all
    ax = fig.add_subplot()
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(0.1, 0.1, "big", fontsize=14)
    ax.text(0.2, 0.2, "mid", fontsize=12.5)
    assert plotting.min_font_size(fig) == 12.5
    hidden = ax.text(0.3, 0.3, "hidden", fontsize=4)
    hidden.set_visible(False)
    ax.text(0.4, 0.4, "   ", fontsize=3)
    ax.text(0.5, 0.5, "", fontsize=2)
    assert plotting.min_font_size(fig) == 12.5
    assert isinstance(plotting.min_font_size(fig), float)
    sub = fig.subfigures(1, 1)
    sub.suptitle("sub", fontsize=11)
    assert plotting.min_font_size(sub) == 11.0
    fig.suptitle("s", fontsize=9)
    assert plotting.min_font_size(fig) == 9.0


# =================================================================================================
# plotting.subplots
# =================================================================================================
def test_helpers():
    fig, ax = plotting.subplots()
    plotting.label(ax, "x (units)", "y (units)", title="t")
    assert ax.get_xlabel() == "x (units)"
    plt.close(fig)
    assert (
        plotting.loglog_fit_label("test error", -0.35, 0.04)
        == "test error (slope -0.35 ± 0.04)"
    )
    with pytest.raises(ValueError, match="nrows"):
        plotting.subplots(0, 1)


@pytest.mark.reference
def test_subplots_sizes_and_passes_keywords():
    fig, axes = plotting.subplots(2, 3, width=5.5)
    assert tuple(fig.get_size_inches()) == pytest.approx(
        (5.5, 6.4)
    )  # 3.2 in per row
    assert axes.shape == (2, 3)
    fig, ax = plotting.subplots(height=2.25)
    assert tuple(fig.get_size_inches()) == pytest.approx((6.4, 2.25))
    fig, ax = plotting.subplots()
    assert tuple(fig.get_size_inches()) == pytest.approx((6.4, 3.2))
    fig, axes = plotting.subplots(1, 2, sharey=True, width=4.0, height=1.5)
    assert axes[0].get_shared_y_axes().joined(axes[0], axes[1])


@pytest.mark.reference
def test_subplots_height_is_capped_and_sizes_have_closed_upper_bounds(monkeypatch):
    calls = []
    monkeypatch.setattr(
        plotting.plt, "subplots", lambda *a, **kw: calls.append((a, kw))
    )
    plotting.subplots(40, 1)  # 3.2 * 40 = 128 in: capped at MAX_INCHES
    plotting.subplots(64, 64, width=100.0, height=100.0)  # every bound met exactly
    plotting.subplots(31, 2, width=0.01)
    assert calls[0] == ((40, 1), {"figsize": (6.4, 100.0)})
    assert calls[1] == ((64, 64), {"figsize": (100.0, 100.0)})
    assert calls[2] == ((31, 2), {"figsize": (0.01, pytest.approx(99.2))})
    for kw, name in (
        ({"width": 100.001}, "width"),
        ({"height": 0.0}, "height"),
        ({"nrows": 65}, "nrows"),
        ({"ncols": 65}, "ncols"),
        ({"ncols": 0}, "ncols"),
    ):
        with pytest.raises((ValueError, TypeError), match=name):
            plotting.subplots(**kw)


@pytest.mark.boundary
@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: plotting.subplots("2"), "nrows"),
        (lambda: plotting.subplots(1, True), "ncols"),
        (lambda: plotting.subplots(10**6), "nrows"),
        (lambda: plotting.subplots(width=0), "width"),
        (lambda: plotting.subplots(width=NAN), "width"),
        (lambda: plotting.subplots(height=True), "height"),
        (lambda: plotting.label(None, "x", "y"), "ax"),
        (lambda: plotting.label(plt.gca(), 3, "y"), "xlabel"),
        (lambda: plotting.label(plt.gca(), "x", "y", legend="yes"), "legend"),
        (lambda: plotting.loglog_fit_label("a", NAN), "slope"),
        (lambda: plotting.loglog_fit_label("a", 0.3, -0.1), "err"),
        (lambda: plotting.min_font_size(None), "fig"),
        (lambda: plotting.small_multiples(None, [1], "v"), "draw"),
        (lambda: plotting.small_multiples(lambda ax, v: None, "abc", "v"), "values"),
        (
            lambda: plotting.small_multiples(
                lambda ax, v: None, [1], "v", width=INF
            ),
            "width",
        ),
        (
            lambda: plotting.small_multiples(
                lambda ax, v: None, [1], "v", sharey=None
            ),
            "sharey",
        ),
    ],
)
def test_plotting_boundaries(call, name):
    try:
        with pytest.raises(BAD, match=name):
            call()
    finally:
        plt.close("all")


# =================================================================================================
# plotting.label
# =================================================================================================
@pytest.mark.reference
def test_label_sets_exactly_what_it_is_given():
    fig, ax = plotting.subplots()
    ax.plot([0, 1], label="curve")
    plotting.label(ax, "epochs", "test error (%)")
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == (
        "epochs",
        "test error (%)",
        "",
    )
    assert ax.get_legend() is None
    plotting.label(ax, "x (s)", "y (m)", title="T", legend=True)
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == (
        "x (s)",
        "y (m)",
        "T",
    )
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["curve"]
    fig, ax = plotting.subplots()
    plotting.label(ax, "a", "b", title="", legend=np.bool_(False))
    assert ax.get_title() == "" and ax.get_legend() is None
    with pytest.raises(TypeError, match="ylabel"):
        plotting.label(ax, "a", None)
    with pytest.raises(TypeError, match="title"):
        plotting.label(ax, "a", "b", title=3)
    with pytest.raises(TypeError, match="legend"):
        plotting.label(ax, "a", "b", legend=1)


# =================================================================================================
# plotting.small_multiples
# =================================================================================================
def test_small_multiples_titles_and_hides_extra_panels():
    fig, axes = plotting.small_multiples(
        lambda ax, v: ax.plot([0, v]), [1, 2, 3], "k", ncols=2
    )
    assert axes.shape == (2, 2) and axes[0, 1].get_title() == "k = 2"
    assert not axes[1, 1].get_visible()
    plt.close(fig)
    with pytest.raises(ValueError, match="values"):
        plotting.small_multiples(lambda ax, v: None, [], "k")


def test_small_multiples_rejects_bad_ncols():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="ncols"):
            plotting.small_multiples(lambda ax, v: None, [1, 2], "k", ncols=bad)


@pytest.mark.reference
def test_small_multiples_draws_each_value_in_order_in_a_grid():
    seen = []

    def draw(ax, v):
        seen.append((ax, v))
        ax.plot([0, 1], [0, v])

    values = [0.1, 0.3, 0.5, 0.7, 0.9]
    fig, axes = plotting.small_multiples(
        draw, values, "alpha", ncols=3, width=6.0, panel_height=1.5
    )
    assert axes.shape == (2, 3)
    assert tuple(fig.get_size_inches()) == pytest.approx((6.0, 3.0))
    assert [v for _, v in seen] == values
    assert [ax for ax, _ in seen] == list(axes.flat)[:5]  # row-major order
    assert [ax.get_title() for ax in axes.flat[:5]] == [
        f"alpha = {v}" for v in values
    ]
    assert all(
        ax.title.get_fontsize() == plotting.MIN_FONT_PT for ax in axes.flat[:5]
    )
    assert [ax.get_visible() for ax in axes.flat] == [True] * 5 + [False]
    assert (
        axes[0, 0].get_shared_y_axes().joined(axes[0, 0], axes[1, 1])
    )  # sharey=True default


@pytest.mark.reference
def test_small_multiples_few_values_one_row_and_sharey_off():
    fig, axes = plotting.small_multiples(
        lambda ax, v: None, ["a", "b"], "k", ncols=4, sharey=False
    )
    assert axes.shape == (1, 2)  # ncols shrinks to the number of values
    assert tuple(fig.get_size_inches()) == pytest.approx((7.0, 1.9))  # the defaults
    assert not axes[0, 0].get_shared_y_axes().joined(axes[0, 0], axes[0, 1])
    fig, axes = plotting.small_multiples(lambda ax, v: None, [1], "k")
    assert axes.shape == (1, 1) and axes[0, 0].get_visible()
    fig, axes = plotting.small_multiples(
        lambda ax, v: None, [1, 2, 3, 4], "k", ncols=4
    )
    assert axes.shape == (1, 4) and all(ax.get_visible() for ax in axes.flat)
    fig, axes = plotting.small_multiples(
        lambda ax, v: None, [1, 2, 3, 4], "k", ncols=1, sharey="row"
    )
    assert axes.shape == (4, 1)
    fig, axes = plotting.small_multiples(
        lambda ax, v: None, [1, 2], "k", sharey=np.bool_(False)
    )
    assert not axes[0, 0].get_shared_y_axes().joined(axes[0, 0], axes[0, 1])


@pytest.mark.reference
def test_small_multiples_row_limit_is_inclusive(monkeypatch):
    monkeypatch.setattr(plotting, "MAX_PANELS", 3)
    fig, axes = plotting.small_multiples(
        lambda ax, v: None, [1, 2, 3, 4, 5, 6], "k", ncols=2
    )
    assert axes.shape == (3, 2)
    with pytest.raises(ValueError, match="at most 3 rows"):
        plotting.small_multiples(
            lambda ax, v: None, [1, 2, 3, 4, 5, 6, 7], "k", ncols=2
        )


@pytest.mark.reference
@pytest.mark.parametrize(
    "kw,err,match",
    [
        ({"name": 3}, TypeError, "name"),
        ({"panel_height": 0}, ValueError, "panel_height"),
        ({"panel_height": 100.5}, ValueError, "panel_height"),
        ({"width": -1.0}, ValueError, "width"),
        ({"sharey": "rows"}, TypeError, "sharey"),
        ({"ncols": 65}, ValueError, "ncols"),
        ({"values": (1, 2)[:0]}, ValueError, "values"),
        ({"values": 5}, TypeError, "values"),
    ],
)
def test_small_multiples_refuses_bad_arguments(kw, err, match):
    args = {"draw": lambda ax, v: None, "values": [1, 2], "name": "k", **kw}
    with pytest.raises(err, match=match):
        plotting.small_multiples(**args)


# =================================================================================================
# plotting.loglog_fit_label
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize(
    "args,text",
    [
        (("err", 0.314159), "err (slope +0.31)"),
        (("err", -0.5), "err (slope -0.50)"),
        (("a", 0.0), "a (slope +0.00)"),
        (("b", 1.236, 0.0449), "b (slope +1.24 ± 0.04)"),
        (("c", -2, 0), "c (slope -2.00 ± 0.00)"),
        (("d", 0.004, 1.5), "d (slope +0.00 ± 1.50)"),
    ],
)
def test_loglog_fit_label_by_hand(args, text):
    assert plotting.loglog_fit_label(*args) == text


@pytest.mark.reference
def test_loglog_fit_label_refuses_bad_values():
    for bad in (float("inf"), "0.3", None):
        with pytest.raises((ValueError, TypeError), match="slope"):
            plotting.loglog_fit_label("a", bad)
    with pytest.raises((ValueError, TypeError), match="err"):
        plotting.loglog_fit_label("a", 0.3, float("nan"))
    with pytest.raises(TypeError, match="name"):
        plotting.loglog_fit_label(None, 0.3)
