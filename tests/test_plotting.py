import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gtlib import plotting  # noqa: E402


def test_style_is_white_and_colourblind_safe():
    plotting.use_style()
    assert matplotlib.rcParams["figure.facecolor"] == "white"
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    assert [c.lower() for c in colors] == [c.lower() for c in plotting.OKABE_ITO]


def test_small_multiples_titles_and_hides_extra_panels():
    fig, axes = plotting.small_multiples(lambda ax, v: ax.plot([0, v]), [1, 2, 3], "k", ncols=2)
    assert axes.shape == (2, 2) and axes[0, 1].get_title() == "k = 2"
    assert not axes[1, 1].get_visible()
    plt.close(fig)
    with pytest.raises(ValueError, match="values"):
        plotting.small_multiples(lambda ax, v: None, [], "k")


def test_helpers():
    fig, ax = plotting.subplots()
    plotting.label(ax, "x (units)", "y (units)", title="t")
    assert ax.get_xlabel() == "x (units)"
    plt.close(fig)
    assert plotting.loglog_fit_label("test error", -0.35, 0.04) == "test error (slope -0.35 ± 0.04)"
    with pytest.raises(ValueError, match="nrows"):
        plotting.subplots(0, 1)


def test_small_multiples_rejects_bad_ncols():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="ncols"):
            plotting.small_multiples(lambda ax, v: None, [1, 2], "k", ncols=bad)


def test_house_fonts_are_legible_on_a_phone():
    plotting.use_style()
    rc = matplotlib.rcParams
    for key in ("font.size", "axes.labelsize", "axes.titlesize", "xtick.labelsize",
                "ytick.labelsize", "legend.fontsize"):
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
