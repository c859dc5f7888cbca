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
