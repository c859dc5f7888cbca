"""Tests of gtlib.display, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import html
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from gtlib import display
from gtlib.display import fmt


matplotlib.use("Agg")


WRAP = (
    '<div class="gtlib-table-wrap" tabindex="0" role="region" '
    'aria-label="table (scrolls sideways)"><table class="gtlib-table">'
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


matplotlib.use("Agg")


# =================================================================================================
# display.fmt
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize(
    "value,digits,text",
    [
        (0.123456, 2, "0.12"),
        (0.123456, 5, "0.12346"),
        (123456.0, 4, "1.235e+05"),
        (2.0, 3, "2"),
        (-0.0031415, 1, "-0.003"),
        (1234.5, 3, "1.23e+03"),
        (99.96, 3, "100"),
        (float("inf"), 3, "∞"),
        (float("-inf"), 2, "−∞"),
        (float("nan"), 4, "nan"),
        (7, 1, "7"),
        (12345, 2, "12345"),
        (True, 3, "True"),
        (False, 2, "False"),
        (None, 3, "None"),
        ("a<b", 3, "a<b"),
        (np.float64(0.98765), 2, "0.99"),
        (np.float32(0.25), 3, "0.25"),
        (np.int64(42), 1, "42"),
        (np.bool_(True), 3, "True"),
        (torch.tensor(0.98765, dtype=torch.float64), 3, "0.988"),
        (torch.tensor(5), 3, "5"),
    ],
)
def test_fmt_by_hand(value, digits, text):
    assert display.fmt(value, digits) == text


@pytest.mark.reference
def test_fmt_default_is_three_significant_digits_and_refuses_bad_digits():
    assert display.fmt(0.98765) == "0.988" and display.fmt(3.14159) == "3.14"
    assert display.fmt(1) == "1"
    display.fmt(0.5, 1)  # the smallest allowed
    for bad in (0, -1, True, 2.0, "3"):
        with pytest.raises(ValueError, match="digits"):
            display.fmt(0.5, bad)


@pytest.mark.reference
def test_fmt_formats_an_array_as_text_not_a_number():
    assert display.fmt(np.array([1, 2])) == str(np.array([1, 2]))


@pytest.mark.reference
@pytest.mark.parametrize(
    "value,text",
    [
        (0.000123, "0.000123"),
        (123456.0, "1.23e+05"),
        (0.5, "0.5"),
        (2, "2"),
        (float("nan"), "nan"),
    ],
)
def test_fmt_uses_significant_digits(value, text):
    assert fmt(value) == text


# =================================================================================================
# display.table_html
# =================================================================================================
@pytest.mark.reference
def test_table_html_exact_for_dict_rows():
    rows = [
        {"model": "MLP", "acc": 0.6789, "n": 3},
        {"model": "CNN", "acc": 0.9412, "n": 10},
    ]
    got = display.table_html(rows, caption="Test accuracy")
    want = (
        WRAP + "<caption>Test accuracy</caption>"
        "<thead><tr><th>model</th><th>acc</th><th>n</th></tr></thead><tbody>"
        "<tr><td>MLP</td><td>0.679</td><td>3</td></tr>"
        "<tr><td>CNN</td><td>0.941</td><td>10</td></tr></tbody></table></div>"
    )
    assert got == want


@pytest.mark.reference
def test_table_html_exact_for_sequence_rows_with_digits():
    got = display.table_html(
        [("a", 1.23456), ("b", 2.0)], columns=["name", "x"], digits=2
    )
    want = (
        WRAP + "<thead><tr><th>name</th><th>x</th></tr></thead><tbody>"
        "<tr><td>a</td><td>1.2</td></tr><tr><td>b</td><td>2</td></tr></tbody></table></div>"
    )
    assert got == want


@pytest.mark.reference
def test_table_html_columns_choose_and_order_dict_cells_and_fill_missing_ones():
    rows = [{"a": 1, "b": 2.5, "c": "x"}, {"c": "y", "a": 4}]
    got = display.table_html(rows, columns=["c", "a", "b"])
    assert "<thead><tr><th>c</th><th>a</th><th>b</th></tr></thead>" in got
    assert (
        "<tr><td>x</td><td>1</td><td>2.5</td></tr><tr><td>y</td><td>4</td><td></td></tr>"
        in got
    )
    # without columns: the first row's keys; a later row's extra key is not shown
    got2 = display.table_html([{"a": 1}, {"a": 2, "z": 9}])
    assert "<th>a</th></tr>" in got2 and "9" not in got2 and "<td>2</td>" in got2


@pytest.mark.reference
def test_table_html_escapes_headers_cells_and_caption():
    got = display.table_html(
        [{"<h>&": "<script>x</script>", "q": 'say "hi"'}], caption="a < b & c > 'd'"
    )
    assert "<th>&lt;h&gt;&amp;</th>" in got and "<th>q</th>" in got
    assert "<td>&lt;script&gt;x&lt;/script&gt;</td>" in got
    assert "<td>say &quot;hi&quot;</td>" in got
    assert "<caption>a &lt; b &amp; c &gt; &#x27;d&#x27;</caption>" in got
    assert "<script>" not in got
    # sequence rows too, including a non-string header
    got = display.table_html([["<i>"]], columns=[3])
    assert "<th>3</th>" in got and "<td>&lt;i&gt;</td>" in got


@pytest.mark.reference
def test_table_html_no_caption_for_none_or_empty_and_rows_from_a_generator():
    for cap in (None, ""):
        assert "<caption>" not in display.table_html(
            [[1]], columns=["x"], caption=cap
        )
    got = display.table_html(([i, i * 0.5] for i in range(3)), columns=("i", "half"))
    assert got.count("<tr>") == 4 and "<tr><td>2</td><td>1</td></tr>" in got


@pytest.mark.reference
@pytest.mark.parametrize(
    "rows,columns,err,match",
    [
        ([], None, ValueError, "rows must not be empty"),
        ([[1, 2]], None, ValueError, "columns must be given"),
        ([[1, 2], [3]], ["a", "b"], ValueError, r"rows\[1\]"),
        ([[1, 2], "ab"], ["a", "b"], ValueError, r"rows\[1\]"),
        ([{"a": 1}, [2]], None, TypeError, r"rows\[1\]"),
        ([[1]], [], ValueError, "at least one column"),
        ({"a": 1}, None, TypeError, "rows"),
        ("ab", None, TypeError, "rows"),
    ],
)
def test_table_html_refuses_malformed_rows(rows, columns, err, match):
    with pytest.raises(err, match=match):
        display.table_html(rows, columns=columns)


@pytest.mark.reference
def test_every_cell_is_escaped_after_formatting():
    class Odd:
        def __str__(self):
            return "<b>"

    got = display.table_html([[Odd(), 1.5]], columns=["o", "v"])
    assert "<td>&lt;b&gt;</td><td>1.5</td>" in got
    assert html.unescape("&lt;b&gt;") == "<b>"


@pytest.mark.boundary
def test_display_table_boundaries():
    with pytest.raises(TypeError, match="rows"):
        display.table_html(None)
    with pytest.raises(TypeError, match="columns"):
        display.table_html([["x", "y", "z"]], columns="abc")
    with pytest.raises(TypeError, match="caption"):
        display.table_html([{"a": 1}], caption=3)


# =================================================================================================
# display.table
# =================================================================================================
@pytest.mark.reference
def test_table_is_html_of_table_html_with_every_argument():
    rows = [{"x": 0.123456}]
    out = display.table(rows, columns=["x"], caption="c&", digits=4)
    assert out.data == display.table_html(
        rows, columns=["x"], caption="c&", digits=4
    )
    assert "<td>0.1235</td>" in out.data and "<caption>c&amp;</caption>" in out.data
    assert "<td>0.123</td>" in display.table(rows).data
    assert display.__all__ == ["table", "table_html", "fmt"]
