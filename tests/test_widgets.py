"""gtlib.widgets: precomputed sliders for the static site."""
import base64
import json
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gtlib import plotting, widgets  # noqa: E402


def draw(a, b=0):
    fig, ax = plotting.subplots(width=3.0, height=2.0)
    ax.plot([0, 1], [0, a + b])
    return fig


def payload(s):
    return json.loads(re.search(r'<script type="application/json">(.*?)</script>', s.html,
                                re.S).group(1).replace("<\\/", "</"))


def test_one_parameter_slider_is_self_contained_and_accessible():
    before = len(plt.get_fignums())
    s = widgets.static_slider(draw, {"a": [1, 2, 3]}, labels={"a": "slope a"},
                              alt="a line of slope {a}")
    assert len(plt.get_fignums()) == before, "every precomputed figure is closed"
    assert len(s.frames) == 3 and all(f.startswith(b"\x89PNG") for f in s.frames)
    assert s._repr_html_() == s.html and "http" not in s.html  # nothing loaded from outside
    m = re.search(r'<label for="([^"]+)">slope a</label><input type="range" id="\1"', s.html)
    assert m, "the range input has a visible, associated label"
    assert 'min="0" max="2"' in s.html and 'value="1"' in s.html  # starts in the middle
    assert re.search(r'<output for="[^"]+">2</output>', s.html)
    assert 'alt="a line of slope 2"' in s.html
    d = payload(s)
    assert d["n"] == [3] and d["v"] == [["1", "2", "3"]] and len(d["f"]) == 3
    assert d["a"] == [f"a line of slope {k}" for k in (1, 2, 3)]
    assert base64.b64decode(d["f"][0].split(",", 1)[1]) == s.frames[0]
    assert "=" not in repr(s) and "3 figures" in repr(s)  # no object dump on the page


def test_frames_are_2x_and_shown_at_1x():
    s = widgets.static_slider(draw, {"a": [1, 2]}, alt="line {a}", start={"a": 1})
    from io import BytesIO

    from PIL import Image

    w, h = Image.open(BytesIO(s.frames[0])).size
    shown = int(re.search(r'<img[^>]* width="(\d+)"', s.html).group(1))
    assert abs(w - 2 * shown) <= 2 and shown == round(3.0 * plt.rcParams["figure.dpi"])
    assert 'value="0"' in s.html  # start={"a": 1} is the first value


def test_two_parameters_in_row_major_order():
    s = widgets.static_slider(draw, {"a": [0, 1], "b": [0.5, 1.0, 2.0]}, alt="{a} and {b}")
    d = payload(s)
    assert d["n"] == [2, 3] and s.html.count('type="range"') == 2
    assert d["a"][4] == "1 and 1"  # index 1 * 3 + 1
    assert d["v"][1] == ["0.5", "1", "2"]


def test_draw_may_leave_the_current_figure():
    def draw_current(a):
        plt.figure()
        plt.plot([0, a])

    assert len(widgets.static_slider(draw_current, {"a": [1]}, alt="x {a}").frames) == 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(grid={}), "one or two"),
    (dict(grid={"a": [1], "b": [1], "c": [1]}), "one or two"),
    (dict(grid={"a": []}), "no values"),
    (dict(grid={"a": list(range(30))}), "at most"),
    (dict(grid={"a": [1]}, alt=""), "alt"),
    (dict(grid={"a": [1]}, alt="{zzz}"), "zzz"),
    (dict(grid={"a": [1]}, labels={"q": "x"}), "unknown"),
    (dict(grid={"a": [1]}, start={"a": 5}), "start"),
])
def test_bad_arguments_are_named(kwargs, match):
    kw = dict(alt="x")
    kw.update(kwargs)
    grid = kw.pop("grid")
    with pytest.raises(ValueError, match=match):
        widgets.static_slider(draw, grid, **kw)
    plt.close("all")


def test_draw_must_return_a_figure():
    with pytest.raises(TypeError, match="Figure"):
        widgets.static_slider(lambda a: 3, {"a": [1]}, alt="x")


def test_live_builds_selection_sliders_and_returns_nothing():
    pytest.importorskip("ipywidgets")
    assert widgets.live(draw, {"a": [1, 2, 3]}, labels={"a": "slope"}) is None
    plt.close("all")


class _Shell:
    """A stand-in for IPython's shell in a kernel whose current request has ``allow_stdin``."""

    def __init__(self, allow_stdin):
        self.kernel = type("K", (), {"_allow_stdin": allow_stdin})()


@pytest.mark.parametrize("allow_stdin, force, built", [
    (True, False, True),    # a reader's frontend (Jupyter, Colab) sends allow_stdin=True
    (False, False, False),  # a notebook executor (nbclient, nbval) sends False: no widgets
    (False, True, True),    # force=True builds them anyway
])
def test_live_widgets_are_made_only_for_a_reader(monkeypatch, capsys, allow_stdin, force, built):
    ipywidgets = pytest.importorskip("ipywidgets")
    import IPython

    made = []
    monkeypatch.setattr(ipywidgets, "interact", lambda fn, **kw: made.append(sorted(kw)))
    monkeypatch.setattr(IPython, "get_ipython", lambda: _Shell(allow_stdin))
    assert widgets.reader_frontend() is allow_stdin
    assert widgets.live(draw, {"a": [1, 2, 3]}, force=force) is None
    assert widgets.interact(lambda p=2: p, p=(1, 5), force=force) is None
    assert made == ([["a"], ["p"]] if built else [])
    assert (widgets.SKIPPED in capsys.readouterr().out) is not built
    # the arguments are checked for an executor too
    with pytest.raises(ValueError, match="no values"):
        widgets.live(draw, {"a": []}, force=force)
    with pytest.raises(TypeError, match="callable"):
        widgets.interact(None, force=force)


def test_outside_a_kernel_is_a_reader():
    assert widgets.reader_frontend() is True
