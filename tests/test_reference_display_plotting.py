"""gtlib.display and gtlib.plotting against hand-written expected strings and matplotlib's own
state (issue 19, section 6): exact HTML for tiny tables, escaping of every user string, number
formatting at non-default digits, and every argument of the plotting helpers read back from the
figure it made."""
import html

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from gtlib import display, plotting  # noqa: E402

WRAP = ('<div class="gtlib-table-wrap" tabindex="0" role="region" '
        'aria-label="table (scrolls sideways)"><table class="gtlib-table">')


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ---------------------------------------------------------------------------------------------
# display.fmt
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value,digits,text", [
    (0.123456, 2, "0.12"), (0.123456, 5, "0.12346"), (123456.0, 4, "1.235e+05"),
    (2.0, 3, "2"), (-0.0031415, 1, "-0.003"), (1234.5, 3, "1.23e+03"), (99.96, 3, "100"),
    (float("inf"), 3, "∞"), (float("-inf"), 2, "−∞"), (float("nan"), 4, "nan"),
    (7, 1, "7"), (12345, 2, "12345"), (True, 3, "True"), (False, 2, "False"),
    (None, 3, "None"), ("a<b", 3, "a<b"), (np.float64(0.98765), 2, "0.99"),
    (np.float32(0.25), 3, "0.25"), (np.int64(42), 1, "42"), (np.bool_(True), 3, "True"),
    (torch.tensor(0.98765, dtype=torch.float64), 3, "0.988"), (torch.tensor(5), 3, "5")])
def test_fmt_by_hand(value, digits, text):
    assert display.fmt(value, digits) == text


def test_fmt_default_is_three_significant_digits_and_refuses_bad_digits():
    assert display.fmt(0.98765) == "0.988" and display.fmt(3.14159) == "3.14"
    assert display.fmt(1) == "1"
    display.fmt(0.5, 1)  # the smallest allowed
    for bad in (0, -1, True, 2.0, "3"):
        with pytest.raises(ValueError, match="digits"):
            display.fmt(0.5, bad)


def test_fmt_formats_an_array_as_text_not_a_number():
    assert display.fmt(np.array([1, 2])) == str(np.array([1, 2]))


# ---------------------------------------------------------------------------------------------
# display.table_html
# ---------------------------------------------------------------------------------------------
def test_table_html_exact_for_dict_rows():
    rows = [{"model": "MLP", "acc": 0.6789, "n": 3}, {"model": "CNN", "acc": 0.9412, "n": 10}]
    got = display.table_html(rows, caption="Test accuracy")
    want = (WRAP + "<caption>Test accuracy</caption>"
            "<thead><tr><th>model</th><th>acc</th><th>n</th></tr></thead><tbody>"
            "<tr><td>MLP</td><td>0.679</td><td>3</td></tr>"
            "<tr><td>CNN</td><td>0.941</td><td>10</td></tr></tbody></table></div>")
    assert got == want


def test_table_html_exact_for_sequence_rows_with_digits():
    got = display.table_html([("a", 1.23456), ("b", 2.0)], columns=["name", "x"], digits=2)
    want = (WRAP + "<thead><tr><th>name</th><th>x</th></tr></thead><tbody>"
            "<tr><td>a</td><td>1.2</td></tr><tr><td>b</td><td>2</td></tr></tbody></table></div>")
    assert got == want


def test_table_html_columns_choose_and_order_dict_cells_and_fill_missing_ones():
    rows = [{"a": 1, "b": 2.5, "c": "x"}, {"c": "y", "a": 4}]
    got = display.table_html(rows, columns=["c", "a", "b"])
    assert "<thead><tr><th>c</th><th>a</th><th>b</th></tr></thead>" in got
    assert "<tr><td>x</td><td>1</td><td>2.5</td></tr><tr><td>y</td><td>4</td><td></td></tr>" \
        in got
    # without columns: the first row's keys; a later row's extra key is not shown
    got2 = display.table_html([{"a": 1}, {"a": 2, "z": 9}])
    assert "<th>a</th></tr>" in got2 and "9" not in got2 and "<td>2</td>" in got2


def test_table_html_escapes_headers_cells_and_caption():
    got = display.table_html([{"<h>&": "<script>x</script>", "q": 'say "hi"'}],
                             caption="a < b & c > 'd'")
    assert "<th>&lt;h&gt;&amp;</th>" in got and "<th>q</th>" in got
    assert "<td>&lt;script&gt;x&lt;/script&gt;</td>" in got
    assert "<td>say &quot;hi&quot;</td>" in got
    assert "<caption>a &lt; b &amp; c &gt; &#x27;d&#x27;</caption>" in got
    assert "<script>" not in got
    # sequence rows too, including a non-string header
    got = display.table_html([["<i>"]], columns=[3])
    assert "<th>3</th>" in got and "<td>&lt;i&gt;</td>" in got


def test_table_html_no_caption_for_none_or_empty_and_rows_from_a_generator():
    for cap in (None, ""):
        assert "<caption>" not in display.table_html([[1]], columns=["x"], caption=cap)
    got = display.table_html(([i, i * 0.5] for i in range(3)), columns=("i", "half"))
    assert got.count("<tr>") == 4 and "<tr><td>2</td><td>1</td></tr>" in got


@pytest.mark.parametrize("rows,columns,err,match", [
    ([], None, ValueError, "rows must not be empty"),
    ([[1, 2]], None, ValueError, "columns must be given"),
    ([[1, 2], [3]], ["a", "b"], ValueError, r"rows\[1\]"),
    ([[1, 2], "ab"], ["a", "b"], ValueError, r"rows\[1\]"),
    ([{"a": 1}, [2]], None, TypeError, r"rows\[1\]"),
    ([[1]], [], ValueError, "at least one column"),
    ({"a": 1}, None, TypeError, "rows"),
    ("ab", None, TypeError, "rows")])
def test_table_html_refuses_malformed_rows(rows, columns, err, match):
    with pytest.raises(err, match=match):
        display.table_html(rows, columns=columns)


def test_table_is_html_of_table_html_with_every_argument():
    rows = [{"x": 0.123456}]
    out = display.table(rows, columns=["x"], caption="c&", digits=4)
    assert out.data == display.table_html(rows, columns=["x"], caption="c&", digits=4)
    assert "<td>0.1235</td>" in out.data and "<caption>c&amp;</caption>" in out.data
    assert "<td>0.123</td>" in display.table(rows).data
    assert display.__all__ == ["table", "table_html", "fmt"]


def test_every_cell_is_escaped_after_formatting():
    class Odd:
        def __str__(self):
            return "<b>"

    got = display.table_html([[Odd(), 1.5]], columns=["o", "v"])
    assert "<td>&lt;b&gt;</td><td>1.5</td>" in got
    assert html.unescape("&lt;b&gt;") == "<b>"


# ---------------------------------------------------------------------------------------------
# plotting: style, sizes, labels
# ---------------------------------------------------------------------------------------------
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


def test_use_style_asks_jupyter_for_retina_pngs_only_inside_ipython(monkeypatch):
    import IPython
    import matplotlib_inline.backend_inline as inline

    formats = []
    monkeypatch.setattr(inline, "set_matplotlib_formats", lambda *f, **kw: formats.append(f))
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    with matplotlib.rc_context():
        plotting.use_style()
    assert formats == []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    with matplotlib.rc_context():
        plotting.use_style()
    assert formats == [("retina",)]


def test_house_style_values_as_documented():
    """The module docstring's promises, written out: white backgrounds, Okabe-Ito colours, a
    6.4 x 3.6 in figure at 100 dpi saved at 2x, no text under 10 pt, light grid, open top/right."""
    want = {"figure.figsize": (6.4, 3.6), "figure.dpi": 100, "savefig.dpi": 200,
            "figure.facecolor": "white", "axes.facecolor": "white", "savefig.facecolor": "white",
            "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
            "axes.spines.right": False, "font.size": 11, "axes.titlesize": 11,
            "axes.labelsize": 11, "xtick.labelsize": 10, "ytick.labelsize": 10,
            "legend.fontsize": 10, "figure.titlesize": 11, "figure.labelsize": 11,
            "legend.frameon": False, "lines.linewidth": 2.0,
            "figure.constrained_layout.use": True}
    style = dict(plotting.STYLE)
    assert style.pop("axes.prop_cycle").by_key()["color"] == plotting.OKABE_ITO
    assert style == want


def test_okabe_ito_palette_and_constants():
    assert plotting.OKABE_ITO == ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7",
                                  "#56B4E9", "#F0E442", "#000000"]
    assert (plotting.MIN_FONT_PT, plotting.MAX_PANELS, plotting.MAX_INCHES) == (10.0, 64, 100.0)
    sizes = [plotting.STYLE[k] for k in plotting.STYLE if k.endswith("size") and k != "figure.figsize"]
    assert min(sizes) >= plotting.MIN_FONT_PT


def test_subplots_sizes_and_passes_keywords():
    fig, axes = plotting.subplots(2, 3, width=5.5)
    assert tuple(fig.get_size_inches()) == pytest.approx((5.5, 6.4))  # 3.2 in per row
    assert axes.shape == (2, 3)
    fig, ax = plotting.subplots(height=2.25)
    assert tuple(fig.get_size_inches()) == pytest.approx((6.4, 2.25))
    fig, ax = plotting.subplots()
    assert tuple(fig.get_size_inches()) == pytest.approx((6.4, 3.2))
    fig, axes = plotting.subplots(1, 2, sharey=True, width=4.0, height=1.5)
    assert axes[0].get_shared_y_axes().joined(axes[0], axes[1])


def test_subplots_height_is_capped_and_sizes_have_closed_upper_bounds(monkeypatch):
    calls = []
    monkeypatch.setattr(plotting.plt, "subplots", lambda *a, **kw: calls.append((a, kw)))
    plotting.subplots(40, 1)   # 3.2 * 40 = 128 in: capped at MAX_INCHES
    plotting.subplots(64, 64, width=100.0, height=100.0)  # every bound met exactly
    plotting.subplots(31, 2, width=0.01)
    assert calls[0] == ((40, 1), {"figsize": (6.4, 100.0)})
    assert calls[1] == ((64, 64), {"figsize": (100.0, 100.0)})
    assert calls[2] == ((31, 2), {"figsize": (0.01, pytest.approx(99.2))})
    for kw, name in (({"width": 100.001}, "width"), ({"height": 0.0}, "height"),
                     ({"nrows": 65}, "nrows"), ({"ncols": 65}, "ncols"), ({"ncols": 0}, "ncols")):
        with pytest.raises((ValueError, TypeError), match=name):
            plotting.subplots(**kw)


def test_label_sets_exactly_what_it_is_given():
    fig, ax = plotting.subplots()
    ax.plot([0, 1], label="curve")
    plotting.label(ax, "epochs", "test error (%)")
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("epochs", "test error (%)", "")
    assert ax.get_legend() is None
    plotting.label(ax, "x (s)", "y (m)", title="T", legend=True)
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("x (s)", "y (m)", "T")
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


# ---------------------------------------------------------------------------------------------
# plotting: small_multiples
# ---------------------------------------------------------------------------------------------
def test_small_multiples_draws_each_value_in_order_in_a_grid():
    seen = []

    def draw(ax, v):
        seen.append((ax, v))
        ax.plot([0, 1], [0, v])

    values = [0.1, 0.3, 0.5, 0.7, 0.9]
    fig, axes = plotting.small_multiples(draw, values, "alpha", ncols=3, width=6.0,
                                         panel_height=1.5)
    assert axes.shape == (2, 3)
    assert tuple(fig.get_size_inches()) == pytest.approx((6.0, 3.0))
    assert [v for _, v in seen] == values
    assert [ax for ax, _ in seen] == list(axes.flat)[:5]  # row-major order
    assert [ax.get_title() for ax in axes.flat[:5]] == [f"alpha = {v}" for v in values]
    assert all(ax.title.get_fontsize() == plotting.MIN_FONT_PT for ax in axes.flat[:5])
    assert [ax.get_visible() for ax in axes.flat] == [True] * 5 + [False]
    assert axes[0, 0].get_shared_y_axes().joined(axes[0, 0], axes[1, 1])  # sharey=True default


def test_small_multiples_few_values_one_row_and_sharey_off():
    fig, axes = plotting.small_multiples(lambda ax, v: None, ["a", "b"], "k", ncols=4,
                                         sharey=False)
    assert axes.shape == (1, 2)  # ncols shrinks to the number of values
    assert tuple(fig.get_size_inches()) == pytest.approx((7.0, 1.9))  # the defaults
    assert not axes[0, 0].get_shared_y_axes().joined(axes[0, 0], axes[0, 1])
    fig, axes = plotting.small_multiples(lambda ax, v: None, [1], "k")
    assert axes.shape == (1, 1) and axes[0, 0].get_visible()
    fig, axes = plotting.small_multiples(lambda ax, v: None, [1, 2, 3, 4], "k", ncols=4)
    assert axes.shape == (1, 4) and all(ax.get_visible() for ax in axes.flat)
    fig, axes = plotting.small_multiples(lambda ax, v: None, [1, 2, 3, 4], "k", ncols=1,
                                         sharey="row")
    assert axes.shape == (4, 1)
    fig, axes = plotting.small_multiples(lambda ax, v: None, [1, 2], "k", sharey=np.bool_(False))
    assert not axes[0, 0].get_shared_y_axes().joined(axes[0, 0], axes[0, 1])


def test_small_multiples_row_limit_is_inclusive(monkeypatch):
    monkeypatch.setattr(plotting, "MAX_PANELS", 3)
    fig, axes = plotting.small_multiples(lambda ax, v: None, [1, 2, 3, 4, 5, 6], "k", ncols=2)
    assert axes.shape == (3, 2)
    with pytest.raises(ValueError, match="at most 3 rows"):
        plotting.small_multiples(lambda ax, v: None, [1, 2, 3, 4, 5, 6, 7], "k", ncols=2)


@pytest.mark.parametrize("kw,err,match", [
    ({"name": 3}, TypeError, "name"), ({"panel_height": 0}, ValueError, "panel_height"),
    ({"panel_height": 100.5}, ValueError, "panel_height"), ({"width": -1.0}, ValueError, "width"),
    ({"sharey": "rows"}, TypeError, "sharey"), ({"ncols": 65}, ValueError, "ncols"),
    ({"values": (1, 2)[:0]}, ValueError, "values"), ({"values": 5}, TypeError, "values")])
def test_small_multiples_refuses_bad_arguments(kw, err, match):
    args = {"draw": lambda ax, v: None, "values": [1, 2], "name": "k", **kw}
    with pytest.raises(err, match=match):
        plotting.small_multiples(**args)


# ---------------------------------------------------------------------------------------------
# plotting: loglog_fit_label, min_font_size
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,text", [
    (("err", 0.314159), "err (slope +0.31)"), (("err", -0.5), "err (slope -0.50)"),
    (("a", 0.0), "a (slope +0.00)"), (("b", 1.236, 0.0449), "b (slope +1.24 ± 0.04)"),
    (("c", -2, 0), "c (slope -2.00 ± 0.00)"), (("d", 0.004, 1.5), "d (slope +0.00 ± 1.50)")])
def test_loglog_fit_label_by_hand(args, text):
    assert plotting.loglog_fit_label(*args) == text


def test_loglog_fit_label_refuses_bad_values():
    for bad in (float("inf"), "0.3", None):
        with pytest.raises((ValueError, TypeError), match="slope"):
            plotting.loglog_fit_label("a", bad)
    with pytest.raises((ValueError, TypeError), match="err"):
        plotting.loglog_fit_label("a", 0.3, float("nan"))
    with pytest.raises(TypeError, match="name"):
        plotting.loglog_fit_label(None, 0.3)


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
