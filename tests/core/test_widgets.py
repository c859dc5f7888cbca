"""Tests of gtlib.widgets, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import base64
import html
import io
import itertools
import json
import matplotlib
import matplotlib.pyplot as plt
import pytest
import re
import shutil
import subprocess
from PIL import Image

from gtlib import plotting, widgets


matplotlib.use("Agg")


def draw(a, b=0):
    fig, ax = plotting.subplots(width=3.0, height=2.0)
    ax.plot([0, 1], [0, a + b])
    return fig


def payload(s):
    return json.loads(
        re.search(r'<script type="application/json">(.*?)</script>', s.html, re.S)
        .group(1)
        .replace("<\\/", "</")
    )


class _Shell:
    """A stand-in for IPython's shell in a kernel whose current request has ``allow_stdin``."""

    def __init__(self, allow_stdin):
        self.kernel = type("K", (), {"_allow_stdin": allow_stdin})()


matplotlib.use("Agg")


W_IN, H_IN = 1.0, 0.5  # tiny figures: fast


def colour_draw(calls=None, width=W_IN, height=H_IN):
    """A draw whose figure is one flat colour that encodes its parameters."""

    def draw(a, b=0):
        if calls is not None:
            calls.append((a, b))
        fig = plt.figure(figsize=(width, height), dpi=100)
        ax = fig.add_axes([0, 0, 1, 1])
        ax.set_axis_off()
        ax.add_patch(
            plt.Rectangle(
                (0, 0), 1, 1, color=expected_rgb(a, b)[0], transform=ax.transAxes
            )
        )
        return fig

    return draw


def expected_rgb(a, b):
    rgb = (min(255, 40 * int(a)), min(255, 60 * int(b)), 200)
    return tuple(c / 255 for c in rgb), rgb


def centre_pixel(png):
    img = Image.open(io.BytesIO(png)).convert("RGB")
    return img.getpixel((img.width // 2, img.height // 2))


def payload_ref(s):
    raw = re.search(
        r'<script type="application/json">(.*?)</script>', s.html, re.S
    ).group(1)
    return raw, json.loads(raw)


_NODE = r"""
const spec = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const handler = new Function(spec.code);
const img = {src: spec.src0, alt: spec.alt0};
const outputs = spec.n.map(() => ({textContent: ''}));
const inputs = spec.start.map((v) => ({value: String(v), attrs: {},
  setAttribute(k, x) { this.attrs[k] = x; },
  closest(sel) { return sel === '.gtlib-slider' ? root : null; }}));
inputs.forEach = Array.prototype.forEach;
const root = {
  querySelector(sel) {
    if (sel === 'script') return {textContent: spec.script};
    if (sel === 'img') return img;
    throw new Error('unexpected selector ' + sel);
  },
  querySelectorAll(sel) {
    if (sel === 'input') return inputs;
    if (sel === 'output') return outputs;
    throw new Error('unexpected selector ' + sel);
  },
};
const states = [];
for (const pos of spec.positions) {
  pos.forEach((v, j) => { inputs[j].value = String(v); });
  handler.call(inputs[spec.moved]);
  states.push({src: img.src, alt: img.alt, out: outputs.map((o) => o.textContent),
               aria: inputs.map((e) => e.attrs['aria-valuetext'])});
}
process.stdout.write(JSON.stringify(states));
"""


def run_handler(s, positions, moved=0):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    code = html.unescape(re.search(r'oninput="([^"]*)"', s.html).group(1))
    raw, data = payload_ref(s)
    src0 = re.search(r'<img[^>]* src="([^"]*)"', s.html).group(1)
    alt0 = html.unescape(re.search(r'<img[^>]* alt="([^"]*)"', s.html).group(1))
    spec = dict(
        code=code,
        script=raw,
        n=data["n"],
        start=[0] * len(data["n"]),
        src0=src0,
        alt0=alt0,
        positions=positions,
        moved=moved,
    )
    out = subprocess.run(
        [node, "-e", _NODE],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


matplotlib.use("Agg")


NAN, INF = float("nan"), float("inf")


BAD = (TypeError, ValueError)


def _draw(noise):
    fig, ax = plt.subplots(figsize=(2, 1.5), dpi=40)
    ax.plot([0, noise])
    return fig


# =================================================================================================
# widgets.StaticSlider
# =================================================================================================
@pytest.mark.reference
def test_static_slider_object_checks_and_repr():
    s = widgets.static_slider(
        colour_draw(), {"a": [1, 2, 3], "b": [0, 1]}, alt="x", scale=0.2
    )
    assert (
        s.names == ["a", "b"]
        and s.values == [[1, 2, 3], [0, 1]]
        and len(s.frames) == 6
    )
    assert (
        repr(s) == f"<static slider over a (3 values) x b (2 values): 6 figures, "
        f"{s.nbytes // 1024} kB>"
    )
    big = widgets.StaticSlider("é" * 3000, ["a"], [[1]], [b"x"])
    assert big.nbytes == 6000 and "5 kB" in repr(big)
    with pytest.raises(TypeError, match="html_text"):
        widgets.StaticSlider(b"<div>", ["a"], [[1]], [b"x"])
    with pytest.raises(TypeError, match="names"):
        widgets.StaticSlider("x", "a", [[1]], [b"x"])
    with pytest.raises(ValueError, match="same length"):
        widgets.StaticSlider("x", ["a", "b"], [[1]], [b"x"])
    with pytest.raises(TypeError, match="PNG bytes"):
        widgets.StaticSlider("x", ["a"], [[1]], ["x"])


# =================================================================================================
# widgets.static_slider
# =================================================================================================
def test_one_parameter_slider_is_self_contained_and_accessible():
    before = len(plt.get_fignums())
    s = widgets.static_slider(
        draw, {"a": [1, 2, 3]}, labels={"a": "slope a"}, alt="a line of slope {a}"
    )
    assert len(plt.get_fignums()) == before, "every precomputed figure is closed"
    assert len(s.frames) == 3 and all(f.startswith(b"\x89PNG") for f in s.frames)
    assert (
        s._repr_html_() == s.html and "http" not in s.html
    )  # nothing loaded from outside
    m = re.search(
        r'<label for="([^"]+)">slope a</label><input type="range" id="\1"', s.html
    )
    assert m, "the range input has a visible, associated label"
    assert (
        'min="0" max="2"' in s.html and 'value="1"' in s.html
    )  # starts in the middle
    assert re.search(r'<output for="[^"]+">2</output>', s.html)
    assert 'alt="a line of slope 2"' in s.html
    d = payload(s)
    assert d["n"] == [3] and d["v"] == [["1", "2", "3"]] and len(d["f"]) == 3
    assert d["a"] == [f"a line of slope {k}" for k in (1, 2, 3)]
    assert base64.b64decode(d["f"][0].split(",", 1)[1]) == s.frames[0]
    assert "=" not in repr(s) and "3 figures" in repr(
        s
    )  # no object dump on the page


def test_frames_are_2x_and_shown_at_1x():
    s = widgets.static_slider(draw, {"a": [1, 2]}, alt="line {a}", start={"a": 1})
    from io import BytesIO

    from PIL import Image

    w, h = Image.open(BytesIO(s.frames[0])).size
    shown = int(re.search(r'<img[^>]* width="(\d+)"', s.html).group(1))
    assert abs(w - 2 * shown) <= 2 and shown == round(
        3.0 * plt.rcParams["figure.dpi"]
    )
    assert 'value="0"' in s.html  # start={"a": 1} is the first value


def test_two_parameters_in_row_major_order():
    s = widgets.static_slider(
        draw, {"a": [0, 1], "b": [0.5, 1.0, 2.0]}, alt="{a} and {b}"
    )
    d = payload(s)
    assert d["n"] == [2, 3] and s.html.count('type="range"') == 2
    assert d["a"][4] == "1 and 1"  # index 1 * 3 + 1
    assert d["v"][1] == ["0.5", "1", "2"]


def test_draw_may_leave_the_current_figure():
    def draw_current(a):
        plt.figure()
        plt.plot([0, a])

    assert (
        len(widgets.static_slider(draw_current, {"a": [1]}, alt="x {a}").frames) == 1
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(grid={}), "one or two"),
        (dict(grid={"a": [1], "b": [1], "c": [1]}), "one or two"),
        (dict(grid={"a": []}), "no values"),
        (dict(grid={"a": list(range(30))}), "at most"),
        (dict(grid={"a": [1]}, alt=""), "alt"),
        (dict(grid={"a": [1]}, alt="{zzz}"), "zzz"),
        (dict(grid={"a": [1]}, labels={"q": "x"}), "unknown"),
        (dict(grid={"a": [1]}, start={"a": 5}), "start"),
    ],
)
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


@pytest.mark.reference
def test_the_handler_shows_the_frame_of_every_two_slider_position():
    calls = []
    grid = {"a": [1, 2, 3], "b": [0.5, 4, 2]}
    s = widgets.static_slider(
        colour_draw(calls),
        grid,
        alt="a={a}, b={b}",
        labels={"a": "first", "b": "second"},
        scale=1.0,
    )
    combos = list(itertools.product(grid["a"], grid["b"]))
    assert calls == combos  # row-major: the last parameter varies fastest
    positions = [[i, j] for i in range(3) for j in range(3)]
    for moved in (0, 1):  # either slider's handler reads both positions
        states = run_handler(s, positions, moved)
        for (i, j), st in zip(positions, states):
            k = 3 * i + j
            assert base64.b64decode(st["src"].split(",", 1)[1]) == s.frames[k]
            a, b = combos[k]
            shown_b = {0.5: "0.5", 4: "4", 2: "2"}[b]
            assert st["alt"] == f"a={a}, b={shown_b}"
            assert st["out"] == [str(a), shown_b] and st["aria"] == [str(a), shown_b]
    # and frame k is the picture of grid point k
    for k, (a, b) in enumerate(combos):
        assert centre_pixel(s.frames[k]) == pytest.approx(
            expected_rgb(a, b)[1], abs=2
        )


@pytest.mark.reference
def test_the_handler_on_one_slider_and_escaped_payload():
    s = widgets.static_slider(
        colour_draw(),
        {"a": [0, 5, 6, 1]},
        alt="</script> slope {a} & <b>",
        scale=0.5,
    )
    raw, data = payload_ref(s)
    assert "</script" not in raw and data["a"][1] == "</script> slope 5 & <b>"
    states = run_handler(s, [[3], [0], [2]])
    for (k,), st in zip([[3], [0], [2]], states):
        assert (
            st["src"] == data["f"][k]
            and st["alt"] == f"</script> slope {[0, 5, 6, 1][k]} & <b>"
        )
        assert st["out"] == [str([0, 5, 6, 1][k])]


@pytest.mark.reference
@pytest.mark.parametrize(
    "values, start, index",
    [
        ([1, 2, 3, 4], None, 1),  # even length: the lower middle, (n - 1) // 2
        ([1, 2, 3, 4, 5], None, 2),
        ([7], None, 0),
        ([1, 2, 3, 4], 4, 3),  # the last value
        ([1, 2, 3, 4], 1, 0),  # the first value
    ],
)
def test_start_position_and_the_first_frame(values, start, index):
    kw = {} if start is None else {"start": {"a": start}}
    s = widgets.static_slider(
        colour_draw(), {"a": values}, alt="v {a}", scale=0.5, **kw
    )
    assert f'value="{index}"' in s.html and f'max="{len(values) - 1}"' in s.html
    assert f'aria-valuetext="{values[index]}"' in s.html
    assert re.search(rf'<output for="[^"]+">{values[index]}</output>', s.html)
    _, data = payload_ref(s)
    assert (
        f'src="{data["f"][index]}"' in s.html
        and f'alt="v {values[index]}"' in s.html
    )


@pytest.mark.reference
def test_two_slider_start_combines_row_major():
    grid = {"a": [1, 2, 3], "b": [0, 1, 2, 3]}
    s = widgets.static_slider(
        colour_draw(), grid, alt="{a} {b}", scale=0.5, start={"b": 3}
    )
    _, data = payload_ref(s)
    first = 1 * 4 + 3  # a starts in the middle (index 1), b at its last value
    assert f'src="{data["f"][first]}"' in s.html and 'alt="2 3"' in s.html
    assert s.html.count('value="1"') == 1 and s.html.count('value="3"') == 1


@pytest.mark.reference
@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
def test_png_size_is_inches_times_dpi_times_scale_shown_at_1x(scale):
    s = widgets.static_slider(
        colour_draw(width=1.2, height=0.7), {"a": [1, 2]}, alt="x {a}", scale=scale
    )
    w, h = Image.open(io.BytesIO(s.frames[0])).size
    assert (w, h) == (round(120 * scale), round(70 * scale))
    assert f'width="{round(w / scale)}" height="{round(h / scale)}"' in s.html
    assert abs(round(w / scale) - 120) <= 1 and abs(round(h / scale) - 70) <= 1


@pytest.mark.reference
def test_scale_bounds_and_types_of_the_other_arguments():
    d = colour_draw()
    top = widgets.static_slider(
        d, {"a": [1]}, alt="x", scale=8.0
    )  # MAX_SCALE, included
    assert widgets.MAX_SCALE == 8.0 and Image.open(
        io.BytesIO(top.frames[0])
    ).size == (800, 400)
    for bad in (0, 0.0, -1.0, 8.5):
        with pytest.raises(ValueError, match="scale"):
            widgets.static_slider(d, {"a": [1]}, alt="x", scale=bad)
    with pytest.raises(ValueError, match="one or two"):
        widgets.static_slider(d, {"a": [1], "b": [2], "c": [3]}, alt="x")
    with pytest.raises(TypeError, match="quantize"):
        widgets.static_slider(d, {"a": [1]}, alt="x", quantize=1)
    with pytest.raises(TypeError, match="draw"):
        widgets.static_slider("not callable", {"a": [1]}, alt="x")
    with pytest.raises(TypeError, match="start"):
        widgets.static_slider(d, {"a": [1]}, alt="x", start=[1])
    with pytest.raises(ValueError, match="unknown"):
        widgets.static_slider(d, {"a": [1]}, alt="x", start={"b": 1})
    with pytest.raises(ValueError, match="alt"):
        widgets.static_slider(d, {"a": [1]}, alt="   ")
    with pytest.raises(ValueError, match="alt"):
        widgets.static_slider(d, {"a": [1]}, alt=None)
    plt.close("all")


@pytest.mark.reference
def test_quantize_stores_a_palette_and_keeps_the_colour():
    d = colour_draw()
    q = widgets.static_slider(d, {"a": [3], "b": [2]}, alt="x", scale=0.5)
    f = widgets.static_slider(
        d, {"a": [3], "b": [2]}, alt="x", scale=0.5, quantize=False
    )
    assert Image.open(io.BytesIO(q.frames[0])).mode == "P"
    assert Image.open(io.BytesIO(f.frames[0])).mode in ("RGB", "RGBA")
    assert centre_pixel(q.frames[0]) == pytest.approx(expected_rgb(3, 2)[1], abs=2)
    assert centre_pixel(f.frames[0]) == expected_rgb(3, 2)[1]


@pytest.mark.reference
def test_frame_budget_is_inclusive_and_checked_before_drawing():
    calls = []
    d = colour_draw(calls, width=0.3, height=0.2)
    s = widgets.static_slider(
        d, {"a": list(range(4)), "b": list(range(6))}, alt="x", scale=0.2
    )
    assert len(s.frames) == widgets.MAX_FRAMES == 24 and len(calls) == 24
    calls.clear()
    with pytest.raises(ValueError, match="25 points"):
        widgets.static_slider(d, {"a": list(range(5)), "b": list(range(5))}, alt="x")
    assert calls == []


@pytest.mark.reference
def test_labels_are_escaped_and_default_to_the_name():
    s = widgets.static_slider(
        colour_draw(),
        {"a": [1], "b": [2]},
        alt="x",
        labels={"a": 'noise < 1 & "σ"'},
        scale=0.5,
    )
    assert ">noise &lt; 1 &amp; &quot;σ&quot;</label>" in s.html
    assert re.search(r'<label for="[^"]+">b</label>', s.html)
    assert s.nbytes == len(s.html.encode("utf-8")) > len(s.html)  # σ is two bytes
    # every label points at its own input
    ids = re.findall(r'<label for="([^"]+)">', s.html)
    assert len(set(ids)) == 2
    for i in ids:
        assert (
            f'<input type="range" id="{i}"' in s.html
            and f'<output for="{i}">' in s.html
        )


@pytest.mark.reference
def test_value_readouts_use_short_float_format():
    s = widgets.static_slider(
        colour_draw(),
        {"a": [0.25, 1e-5, 3.0, 7, 0.1 + 0.2, True]},
        alt="v {a}",
        scale=0.2,
    )
    _, data = payload_ref(s)
    assert data["v"] == [["0.25", "1e-05", "3", "7", "0.3", "True"]]
    assert data["a"] == ["v 0.25", "v 1e-05", "v 3", "v 7", "v 0.3", "v True"]
    assert data["n"] == [6]


@pytest.mark.reference
def test_ids_depend_on_the_frames_and_repeat_for_the_same_input():
    d = colour_draw()
    s1 = widgets.static_slider(d, {"a": [1, 2]}, alt="x", scale=0.5)
    s2 = widgets.static_slider(d, {"a": [1, 2]}, alt="x", scale=0.5)
    s3 = widgets.static_slider(d, {"a": [1, 3]}, alt="x", scale=0.5)

    def ident(s):
        return re.search(r'class="gtlib-slider" id="([^"]+)"', s.html).group(1)

    assert ident(s1) == ident(s2) != ident(s3)


@pytest.mark.reference
def test_grid_and_alt_validation_by_case():
    d = colour_draw()
    for grid, err in [
        ([("a", [1])], TypeError),
        ({"1a": [1]}, ValueError),
        ({"a b": [1]}, ValueError),
        ({"a": "123"}, TypeError),
        ({"a": {"x": 1}}, TypeError),
        ({"a": 3}, TypeError),
        ({"a": b"ab"}, TypeError),
    ]:
        with pytest.raises(err):
            widgets.static_slider(d, grid, alt="x")
    # any iterable of values is a grid: a range, a tuple, a generator
    assert (
        len(
            widgets.static_slider(
                d, {"a": range(2), "b": (1,)}, alt="x", scale=0.2
            ).frames
        )
        == 2
    )
    g = widgets.static_slider(d, {"a": (v for v in [2, 1])}, alt="{a}", scale=0.2)
    assert g.values == [[2, 1]] and payload_ref(g)[1]["a"] == ["2", "1"]
    for alt in ("{a:.2f}", "{a!r}", "{0}", "{a.real}", "{a[0]}", "{", "x {a"):
        with pytest.raises(ValueError, match="alt"):
            widgets.static_slider(d, {"a": [1]}, alt=alt)
    ok = widgets.static_slider(d, {"a": [1]}, alt="{{braces}} {a}", scale=0.2)
    assert payload_ref(ok)[1]["a"] == ["{braces} 1"]
    with pytest.raises(TypeError, match="labels"):
        widgets.static_slider(d, {"a": [1]}, alt="x", labels=["a"])
    with pytest.raises(TypeError, match="labels"):
        widgets.static_slider(d, {"a": [1]}, alt="x", labels={"a": 3})
    plt.close("all")


@pytest.mark.reference
def test_a_draw_that_returns_none_is_saved_from_the_current_figure():
    seen = []

    def draw(a):
        fig = plt.figure(figsize=(0.4, 0.3), dpi=100)
        seen.append(fig)
        ax = fig.add_axes([0, 0, 1, 1])
        ax.set_axis_off()
        ax.add_patch(
            plt.Rectangle(
                (0, 0), 1, 1, color=expected_rgb(a, 1)[0], transform=ax.transAxes
            )
        )

    before = set(plt.get_fignums())
    s = widgets.static_slider(draw, {"a": [1, 4]}, alt="x", scale=1.0)
    assert set(plt.get_fignums()) == before  # closed after saving
    assert [centre_pixel(f) for f in s.frames] == [
        expected_rgb(1, 1)[1],
        expected_rgb(4, 1)[1],
    ]


@pytest.mark.boundary
@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: widgets.static_slider(_draw, {"noise": "ab"}, alt="a"), "grid"),
        (lambda: widgets.static_slider(_draw, {"noise": 3}, alt="a"), "grid"),
        (
            lambda: widgets.static_slider(
                _draw, {"noise": [0.0]}, alt="a", labels={"noise": 3}
            ),
            "labels",
        ),
        (
            lambda: widgets.static_slider(
                _draw, {"noise": [0.0]}, alt="a", labels=[1]
            ),
            "labels",
        ),
        (
            lambda: widgets.static_slider(
                _draw, {"noise": [0.0]}, alt="a", scale=INF
            ),
            "scale",
        ),
        (
            lambda: widgets.static_slider(
                _draw, {"noise": [0.0]}, alt="a", scale=1e6
            ),
            "scale",
        ),
        (
            lambda: widgets.static_slider(
                _draw, {"noise": [0.0]}, alt="a", quantize=None
            ),
            "quantize",
        ),
        (lambda: widgets.live(None, {"noise": [0.0]}), "draw"),
        (lambda: widgets.live(_draw, {"noise": "ab"}), "grid"),
        (lambda: widgets.StaticSlider("<p>", ["a"], [[1]], None), "frames"),
    ],
)
def test_widget_boundaries(call, name):
    try:
        with pytest.raises(BAD, match=name):
            call()
    finally:
        plt.close("all")


# =================================================================================================
# widgets.reader_frontend
# =================================================================================================
def test_outside_a_kernel_is_a_reader():
    assert widgets.reader_frontend() is True


# =================================================================================================
# widgets.live
# =================================================================================================
def test_live_builds_selection_sliders_and_returns_nothing():
    pytest.importorskip("ipywidgets")
    assert widgets.live(draw, {"a": [1, 2, 3]}, labels={"a": "slope"}) is None
    plt.close("all")


@pytest.mark.parametrize(
    "allow_stdin, force, built",
    [
        (
            True,
            False,
            True,
        ),  # a reader's frontend (Jupyter, Colab) sends allow_stdin=True
        (
            False,
            False,
            False,
        ),  # a notebook executor (nbclient, nbval) sends False: no widgets
        (False, True, True),  # force=True builds them anyway
    ],
)
def test_live_widgets_are_made_only_for_a_reader(
    monkeypatch, capsys, allow_stdin, force, built
):
    ipywidgets = pytest.importorskip("ipywidgets")
    import IPython

    made = []
    monkeypatch.setattr(
        ipywidgets, "interact", lambda fn, **kw: made.append(sorted(kw))
    )
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


@pytest.mark.reference
def test_live_builds_one_selection_slider_per_parameter_and_redraws(monkeypatch):
    ipywidgets = pytest.importorskip("ipywidgets")
    captured = {}

    def fake_interact(fn, **kw):
        captured["fn"], captured["kw"] = fn, kw

    monkeypatch.setattr(ipywidgets, "interact", fake_interact)
    shows = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shows.append(1))
    calls = []
    out = widgets.live(
        colour_draw(calls),
        {"a": [0.5, 2.0, 3, 4], "b": [1, 2, 3]},
        labels={"b": "the b"},
    )
    assert out is None
    sl = captured["kw"]
    assert list(sl) == ["a", "b"]
    assert list(sl["a"].options) == [("0.5", 0.5), ("2", 2.0), ("3", 3), ("4", 4)]
    assert sl["a"].value == 2.0 and sl["b"].value == 2  # (n - 1) // 2
    assert sl["a"].description == "a" and sl["b"].description == "the b"
    assert sl["a"].continuous_update is False
    captured["fn"](a=3, b=1)
    assert calls == [(3, 1)] and shows == [1]
    with pytest.raises(ValueError, match="unknown"):
        widgets.live(colour_draw(), {"a": [1]}, labels={"z": "x"})
    with pytest.raises(TypeError, match="draw"):
        widgets.live(None, {"a": [1]})
    with pytest.raises(ValueError, match="no values"):
        widgets.live(colour_draw(), {"a": []})
    with pytest.raises(TypeError, match="labels"):
        widgets.live(colour_draw(), {"a": [1]}, labels={"a": 1})
    plt.close("all")
