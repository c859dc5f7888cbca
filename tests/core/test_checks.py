"""Tests of gtlib.checks, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

from __future__ import annotations
import dataclasses
import importlib
import math
import matplotlib
import numpy as np
import pkgutil
import pytest
import torch
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence as _Seq, Any, Callable, Optional, Sequence

from gtlib import checks as C, checks, config
from gtlib.checks import (
    check_fraction,
    check_int,
    check_positive,
    Tensor,
    boundary,
    count,
    Boolean,
    Device,
    InstanceOf,
    Interval,
    Options,
    check_finite,
    check_indices,
    check_labels,
    check_real,
    check_seed,
    check_seeds,
    fraction,
    nonnegative,
    positive,
    tuple_of,
    Sequence as Sequence_bou,
)
from gtlib.config import Config, Settings, param, seed_everything
import gtlib


@boundary(n=count(), y=Tensor("int", 1, optional=True))
def _probe(
    x: torch.Tensor,
    y: torch.Tensor | None = None,
    n: int = 3,
    lr: float = 0.1,
    seeds: _Seq[int] = (0,),
    flag: bool = False,
    name: str = "a",
    fn=None,
):
    return "ran"


EPS = 1e-12


LO, HI = -1.5, 2.0


class _Later:  # named in an annotation before it is used (annotations are strings here)
    pass


@boundary()
def _annotated(
    a: int = 0,
    b: float = 0.0,
    c: bool = False,
    d: str = "",
    e: list[int] = (0,),
    f: Sequence[float] = (0.0,),
    g: dict = None,
    h: Callable = None,
    i: torch.Tensor = None,
    j: np.ndarray = None,
    k: int | None = 0,
    m: int | str = 0,
    n: Optional[float] = None,
    o: _Later = None,
    p: torch.nn.Module = None,
    q: Any = None,
    r: int | Path = 0,
    s: list = (0,),
    t: tuple[int, ...] = (0,),
    u: dict[str, int] = None,
    v: Settings = None,
):
    return "ok"


@pytest.fixture
def clean_env(monkeypatch):
    for k in (
        "GTLIB_SCALE",
        "GTLIB_SEED",
        "GTLIB_THREADS",
        "GTLIB_DEVICE",
        "GTLIB_RESULTS_DIR",
        "GTLIB_CACHE_DIR",
    ):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


@dataclass
class _Inner(Config):
    k: int = param(2, count())


@dataclass
class _Cfg(Config):
    """A config with every kind of field, a FULL preset and a cross-field rule."""

    FULL = {"n": 50, "lr": 0.5, "widths": [16, 32, 64]}
    n: int = param(6, count(), doc="rows")
    lr: float = param(0.1, positive())
    opt: str = param("sgd", Options(("sgd", "adamw")))
    widths: tuple = param((4, 8), tuple_of(count(), increasing="strict"))
    inner: _Inner = param(constraint=InstanceOf(_Inner), factory=_Inner)
    frac: float | None = param(None, fraction(optional=True))

    def _check_together(self):
        if self.n < len(self.widths):
            self._refuse("n", f"at least len(widths) = {len(self.widths)}")


def _configs():
    for mod in pkgutil.iter_modules(gtlib.__path__):
        importlib.import_module(f"gtlib.{mod.name}")
    seen, todo = [], list(Config.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("gtlib."):
            seen.append(cls)
    return sorted(seen, key=lambda c: c.__name__)


CONFIGS = _configs()


def _bad_values(constraint):
    if isinstance(constraint, Interval):
        bad = (
            [math.inf, math.nan, "1", True]
            if constraint.kind is float
            else [1.5, "1", True]
        )
        if constraint.low is not None:
            bad.append(constraint.low - 1)
        return bad
    if isinstance(constraint, Options):
        return ["not-an-option", 3]
    if isinstance(constraint, Sequence_bou):
        return ["abc", 3.0, [math.nan]]
    return [object()]


matplotlib.use("Agg")


NAN, INF = float("nan"), float("inf")


BAD = (TypeError, ValueError)


# =================================================================================================
# checks.Interval
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize(
    "closed,lo_in,hi_in",
    [
        ("both", True, True),
        ("left", True, False),
        ("right", False, True),
        ("neither", False, False),
    ],
)
def test_float_interval_at_each_end_for_each_closed_mode(closed, lo_in, hi_in):
    iv = Interval(float, LO, HI, closed)
    cases = {
        LO - 1e-9: False,
        LO: lo_in,
        LO + 1e-9: True,
        0.0: True,
        HI - 1e-9: True,
        HI: hi_in,
        HI + 1e-9: False,
        -100.0: False,
        100.0: False,
    }
    for v, inside in cases.items():
        assert iv.contains(v) is inside, (closed, v)
        if inside:
            assert iv.check("v", v) == v
        else:
            with pytest.raises(ValueError, match=r"^v must be a finite number in "):
                iv.check("v", v)
    br = ("[" if lo_in else "(") + f"{LO}, {HI}" + ("]" if hi_in else ")")
    assert iv.describe() == f"a finite number in {br}"


@pytest.mark.reference
@pytest.mark.parametrize(
    "closed,lo_in,hi_in",
    [
        ("both", True, True),
        ("left", True, False),
        ("right", False, True),
        ("neither", False, False),
    ],
)
def test_int_interval_at_each_end_for_each_closed_mode(closed, lo_in, hi_in):
    iv = Interval(int, -2, 3, closed)
    for v, inside in {
        -3: False,
        -2: lo_in,
        -1: True,
        2: True,
        3: hi_in,
        4: False,
    }.items():
        assert iv.contains(v) is inside, (closed, v)
        assert iv.contains(np.int64(v)) is inside
        if inside:
            assert iv.check("k", v) is v
        else:
            with pytest.raises(
                ValueError, match=r"^k must be an int in [\[(]-2, 3[\])], got "
            ):
                iv.check("k", v)


@pytest.mark.reference
@pytest.mark.parametrize("closed", ["both", "left", "right", "neither"])
def test_half_bounded_intervals_ignore_closed_at_the_missing_end(closed):
    lo_in = closed in ("both", "left")
    hi_in = closed in ("both", "right")
    low_only = Interval(float, 1.0, None, closed)
    assert low_only.contains(1.0) is lo_in and low_only.contains(1e300) is True
    assert low_only.contains(1.0 - 1e-9) is False
    assert low_only.describe() == f"a finite number {'>=' if lo_in else '>'} 1.0"
    high_only = Interval(int, None, 5, closed)
    assert high_only.contains(5) is hi_in and high_only.contains(-(10**30)) is True
    assert high_only.contains(6) is False
    assert high_only.describe() == f"an int {'<=' if hi_in else '<'} 5"
    none = Interval(float, None, None, closed)
    assert (
        none.contains(-1e300)
        and none.contains(1e300)
        and none.describe() == "a finite number"
    )


@pytest.mark.reference
def test_interval_edges_with_zero_width_and_negative_zero():
    point = Interval(float, 0.5, 0.5)
    assert point.contains(0.5) and not point.contains(0.5 + EPS)
    assert not Interval(float, 0.5, 0.5, "left").contains(0.5)
    assert not Interval(float, 0.5, 0.5, "right").contains(0.5)
    assert Interval(float, 0, 1, "both").contains(-0.0)
    assert not Interval(float, 0, 1, "neither").contains(-0.0)


@pytest.mark.reference
@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        np.float32("nan"),
        np.float64("inf"),
    ],
)
def test_non_finite_numbers_are_never_inside(value):
    for iv in (
        Interval(float),
        Interval(float, None, None, "neither"),
        Interval(float, -1, 1),
    ):
        assert iv.contains(value) is False
        with pytest.raises(ValueError, match="finite"):
            iv.check("x", value)


@pytest.mark.reference
def test_ints_too_large_for_a_float_are_not_finite_numbers():
    with pytest.raises(ValueError, match=r"x must be a finite number, got 1000"):
        Interval(float).check("x", 10**400)
    assert (
        Interval(int).check("x", 10**400) == 10**400
    )  # an unbounded int interval: fine
    with pytest.raises(ValueError):
        Interval(int, 0, 10).check("x", 10**400)
    assert Interval(float).check("x", 2**1000) == 2**1000


@pytest.mark.reference
@pytest.mark.parametrize(
    "kind,value,ok",
    [
        (int, 3, True),
        (int, np.int64(3), True),
        (int, np.uint8(3), True),
        (int, True, False),
        (int, np.bool_(True), False),
        (int, 3.0, False),
        (int, np.float64(3), False),
        (int, "3", False),
        (int, None, False),
        (int, [3], False),
        (float, 3, True),
        (float, 3.5, True),
        (float, np.float32(3.5), True),
        (float, np.int64(3), True),
        (float, False, False),
        (float, np.bool_(False), False),
        (float, "3.5", False),
        (float, None, False),
        (float, 1 + 0j, False),
        (float, torch.tensor(1.0), False),
        (float, np.array(1.0), False),
    ],
)
def test_interval_types(kind, value, ok):
    iv = Interval(kind)
    if ok:
        assert iv.check("v", value) is value  # returned unchanged (no conversion)
    else:
        with pytest.raises(TypeError, match=r"^v must be an? "):
            iv.check("v", value)


@pytest.mark.reference
def test_contains_refuses_non_numbers():
    for bad in (True, "1", None, [1]):
        with pytest.raises(TypeError, match="value must be a real number"):
            Interval(float).contains(bad)


@pytest.mark.reference
def test_optional_intervals_accept_none_only_when_optional():
    assert Interval(int, 1, optional=True).check("n", None) is None
    assert Interval(int, 1, optional=True).describe() == "an int >= 1 or None"
    with pytest.raises(TypeError, match="n must be an int >= 1, got None"):
        Interval(int, 1).check("n", None)
    with pytest.raises(ValueError, match="n must be an int >= 1 or None, got 0"):
        Interval(int, 1, optional=True).check("n", 0)


@pytest.mark.reference
def test_exact_error_messages():
    with pytest.raises(ValueError) as info:
        Interval(float, 0, None, closed="neither").check("lr", float("inf"))
    assert str(info.value) == "lr must be a finite number > 0, got inf"
    with pytest.raises(TypeError) as info:
        Interval(int, 0, 2**63 - 1).check("seed", 1.5)
    assert (
        str(info.value) == "seed must be an int in [0, 9223372036854775807], got 1.5"
    )
    with pytest.raises(ValueError) as info:
        Interval(float, None, 1.0, closed="left").check("p", 1.0)
    assert str(info.value) == "p must be a finite number < 1.0, got 1.0"


@pytest.mark.reference
@pytest.mark.parametrize(
    "args,kw,err,words",
    [
        ((str,), {}, ValueError, "kind"),
        ((bool,), {}, ValueError, "kind"),
        ((float, 0, 1), {"closed": "open"}, ValueError, "closed"),
        ((float, 0, 1), {"closed": None}, ValueError, "closed"),
        ((float, 2, 1), {}, ValueError, "low must be <= high"),
        ((int, 0, -1), {}, ValueError, "low must be <= high"),
        ((int, 0.5, None), {}, TypeError, "low must be an int"),
        ((int, None, 2.0), {}, TypeError, "high must be an int"),
        ((float, True, None), {}, TypeError, "low"),
        ((int, None, True), {}, TypeError, "high"),
        ((float, float("nan"), None), {}, ValueError, "low must be a finite number"),
        (
            (float, None, float("inf")),
            {},
            ValueError,
            "high must be a finite number",
        ),
        ((float, "0", None), {}, TypeError, "low"),
        ((float, 0, 1), {"optional": 1}, TypeError, "optional must be a bool"),
    ],
)
def test_interval_refuses_a_bad_declaration(args, kw, err, words):
    with pytest.raises(err, match=words):
        Interval(*args, **kw)


@pytest.mark.reference
def test_interval_declarations_that_are_fine():
    assert Interval(float, 1, 1).contains(1)
    assert Interval(float, np.float64(0.5), np.int64(2)).contains(1.0)
    assert Interval(float, 0, 1, optional=np.bool_(True)).optional is True


@pytest.mark.reference
@pytest.mark.parametrize("name", ["", None, 3, b"x"])
def test_every_constraint_needs_a_name(name):
    for c in (
        Interval(float),
        Options(("a",)),
        Boolean(),
        InstanceOf(int),
        tuple_of(count()),
    ):
        with pytest.raises(TypeError, match="name must be a non-empty str"):
            c.check(name, 1)


@pytest.mark.reference
def test_show_keeps_messages_short_and_describes_arrays():
    assert C._show("a" * 78) == repr("a" * 78)  # 80 characters: kept
    long = C._show("a" * 79)  # 81 characters: cut to 80
    assert len(long) == 80 and long.endswith("...") and long.startswith("'aaa")
    assert (
        C._show(torch.zeros(2, 3, dtype=torch.float64))
        == "Tensor of shape (2, 3) and dtype float64"
    )
    assert (
        C._show(np.zeros((4,), dtype=np.int32))
        == "ndarray of shape (4,) and dtype int32"
    )
    with pytest.raises(ValueError) as info:
        Interval(float, 0, 1).check("w", 2.5)
    assert str(info.value).endswith("got 2.5")


@pytest.mark.reference
@pytest.mark.parametrize(
    "args,kw,err",
    [
        ((3,), {}, TypeError),
        ((Interval(int),), {"min_len": 1.0}, TypeError),
        ((Interval(int),), {"min_len": True}, TypeError),
        ((Interval(int),), {"min_len": -1}, ValueError),
        ((Interval(int),), {"increasing": "yes"}, ValueError),
        ((Interval(int),), {"increasing": True}, ValueError),
        ((Interval(int),), {"distinct": 1}, TypeError),
    ],
)
def test_sequence_refuses_a_bad_declaration(args, kw, err):
    with pytest.raises(err):
        C.Sequence(*args, **kw)


@pytest.mark.boundary
@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_field_refuses_bad_values_naming_it(cls):
    assert CONFIGS, "no configs found"
    for f in dataclasses.fields(cls):
        for bad in _bad_values(f.metadata["constraint"]):
            with pytest.raises(
                (TypeError, ValueError), match=rf"{cls.__name__}\.{f.name}"
            ):
                cls(**{f.name: bad})


@pytest.mark.boundary
@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: checks.check_int(3, 5), "name"),
        (lambda: checks.check_int("n", 5, minimum=1.5), "minimum"),
        (lambda: checks.check_positive("lr", 0.1, allow_zero="yes"), "allow_zero"),
        (
            lambda: checks.check_fraction("p", 0.5, open_interval=None),
            "open_interval",
        ),
        (
            lambda: checks.check_labels(
                "y", torch.zeros(3, dtype=torch.long), num_classes=2.5
            ),
            "num_classes",
        ),
        (lambda: checks.check_indices("idx", [0], size=None), "size"),
        (lambda: checks.Interval(float, low=NAN), "low"),
        (lambda: checks.Interval(float, high="1"), "high"),
        (lambda: checks.Interval(float, 2, 1), "low"),
        (lambda: checks.Interval(float, optional="yes"), "optional"),
        (lambda: checks.Options("ab"), "values"),
        (lambda: checks.Options([]), "values"),
        (lambda: checks.InstanceOf(3), "cls"),
        (lambda: checks.Sequence(None), "item"),
        (lambda: checks.Sequence(checks.count(), min_len=-1), "min_len"),
        (lambda: checks.count(minimum="1"), "minimum"),
        (lambda: checks.check("v", 1, "not a constraint"), "constraint"),
        (lambda: checks.check_positive("lr", 10**400), "lr"),
    ],
)
def test_checks_refuse_bad_arguments_of_their_own(call, name):
    with pytest.raises(BAD, match=name):
        call()


@pytest.mark.boundary
def test_interval_contains_is_false_for_nan_and_infinities():
    assert not checks.Interval(float, 0).contains(NAN)
    assert not checks.Interval(float, 0).contains(INF)
    assert checks.Interval(int, 0).contains(10**400)
    with pytest.raises(TypeError, match="value"):
        checks.Interval(float, 0).contains("1")


# =================================================================================================
# checks.Options
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize(
    "values,value,ok,err",
    [
        (("sgd", "adamw"), "sgd", True, None),
        (("sgd", "adamw"), "adamw", True, None),
        (("sgd", "adamw"), "SGD", False, ValueError),
        (("sgd", "adamw"), "sgd ", False, ValueError),
        (("sgd", "adamw"), 1, False, TypeError),
        (("sgd", "adamw"), None, False, TypeError),
        (("sgd", "adamw"), np.str_("sgd"), False, ValueError),
        ((1, 2), 1, True, None),
        ((1, 2), True, False, ValueError),
        ((1, 2), 1.0, False, ValueError),
        ((1, 2), np.int64(1), False, ValueError),
        ((1, 2), 3, False, ValueError),
        ((1, 2), "1", False, ValueError),
        ((0.5, "a"), 0.5, True, None),
        ((0.5, "a"), "a", True, None),
        ((None, "a"), None, True, None),
        ((False, 0), 0, True, None),
        ((False, 0), False, True, None),
        ((False,), 0, False, ValueError),
        (("a", "b"), np.array(["a"]), False, TypeError),
        (["x", "y"], "y", True, None),
        ({"x"}, "x", True, None),
    ],
)
def test_options_compare_value_and_type(values, value, ok, err):
    opt = Options(values)
    if ok:
        assert opt.check("o", value) is value
    else:
        with pytest.raises(err, match=r"^o must be one of "):
            opt.check("o", value)


@pytest.mark.reference
def test_options_optional_describe_and_declaration():
    three = Options(("a", "b", "c"))
    assert (
        three.check("o", "c") == "c" and three.describe() == "one of ('a', 'b', 'c')"
    )
    assert Options([0, 1, 2, 3]).check("o", 3) == 3
    assert Options(("a", "b")).describe() == "one of ('a', 'b')"
    assert Options(("a",), optional=True).describe() == "one of ('a',) or None"
    assert Options(("a",), optional=True).check("o", None) is None
    with pytest.raises(TypeError) as info:
        Options(("a", "b")).check("o", 3)
    assert str(info.value) == "o must be one of ('a', 'b'), got 3"
    for bad, err in (
        ("ab", TypeError),
        (b"ab", TypeError),
        (None, TypeError),
        (3, TypeError),
        ((), ValueError),
        ([], ValueError),
    ):
        with pytest.raises(err, match="values"):
            Options(bad)
    with pytest.raises(TypeError, match="optional"):
        Options(("a",), optional="yes")


@pytest.mark.mutation
@pytest.mark.parametrize("value", [True, 1.0])
def test_options_compare_types_not_only_values(value):
    """True == 1 and 1.0 == 1 in Python, but neither is the option 1."""
    with pytest.raises((TypeError, ValueError), match="k"):
        Options((1, 2)).check("k", value)


# =================================================================================================
# checks.Boolean
# =================================================================================================
@pytest.mark.reference
def test_boolean():
    for v in (True, False, np.bool_(True), np.bool_(False)):
        assert Boolean().check("f", v) is v
    for v in (0, 1, 1.0, "True", None, torch.tensor(True), np.array([True])):
        with pytest.raises(TypeError, match=r"^f must be a bool, got "):
            Boolean().check("f", v)
    assert Boolean().describe() == "a bool"


@pytest.mark.reference
def test_from_annotation_mapping():
    f = C._from_annotation
    assert isinstance(f(bool), Boolean) and isinstance(f(str), InstanceOf)
    assert f(int).kind is int and f(float).kind is float and f(int).low is None
    assert isinstance(f(torch.Tensor), Tensor) and not f(torch.Tensor).numpy
    assert f(np.ndarray).numpy is True
    assert f(list[int]).item.kind is int and f(list).__class__ is not C._SequenceOf
    assert f(tuple[int, ...]).item is None and f(Sequence[Any]).item is None
    assert f(dict).cls is dict and f(dict[str, int]).cls is dict
    assert isinstance(f(Callable), C._Callable) and isinstance(
        f(Callable[[int], int]), C._Callable
    )
    assert f(Any) is None and f(Path) is None and f(int | Path) is None
    assert f(Optional[int]).optional is True and f(int | str).optional is False
    assert f(torch.nn.Module).cls is torch.nn.Module and f(Settings).cls is Settings


# =================================================================================================
# checks.InstanceOf
# =================================================================================================
@pytest.mark.reference
def test_instance_of():
    class A:
        pass

    class B(A):
        pass

    assert InstanceOf(A).check("a", B()) is not None
    with pytest.raises(TypeError, match="a must be a B, got"):
        InstanceOf(B).check("a", A())
    with pytest.raises(TypeError, match="a must be a A, got None"):
        InstanceOf(A).check("a", None)
    assert InstanceOf(A, optional=True).check("a", None) is None
    assert InstanceOf(A, optional=True).describe() == "a A or None"
    assert InstanceOf(int).check("i", True) is True  # a bool is an int instance
    for bad in (3, "int", None, A()):
        with pytest.raises(TypeError, match="cls must be a class"):
            InstanceOf(bad)
    with pytest.raises(TypeError, match="optional"):
        InstanceOf(A, optional=0)


# =================================================================================================
# checks.count
# =================================================================================================
@pytest.mark.reference
def test_full_preset_values_are_copies(clean_env):
    f = _Cfg.full()
    assert f.widths == _Cfg.FULL["widths"] and f.widths is not _Cfg.FULL["widths"]
    f.widths.append(128)
    assert _Cfg.FULL["widths"] == [16, 32, 64] and _Cfg.full().widths == [16, 32, 64]


@pytest.mark.reference
@pytest.mark.parametrize(
    "kw,err,msg",
    [
        (dict(n=0), ValueError, "_Cfg.n must be an int >= 1, got 0"),
        (dict(n=True), TypeError, "_Cfg.n must be an int >= 1, got True"),
        (
            dict(lr=float("nan")),
            ValueError,
            "_Cfg.lr must be a finite number > 0, got nan",
        ),
        (
            dict(opt="adam"),
            ValueError,
            "_Cfg.opt must be one of ('sgd', 'adamw'), got 'adam'",
        ),
        (
            dict(widths=(8, 4)),
            ValueError,
            "_Cfg.widths must be a tuple (at least 1 item, strictly",
        ),
        (
            dict(widths=(4, 0)),
            ValueError,
            "_Cfg.widths[1] must be an int >= 1, got 0",
        ),
        (
            dict(inner={"k": 2}),
            TypeError,
            "_Cfg.inner must be a _Inner, got {'k': 2}",
        ),
        (
            dict(frac=1.5),
            ValueError,
            "_Cfg.frac must be a finite number in [0, 1] or None, got 1.5",
        ),
        (dict(n=1), ValueError, "_Cfg.n must be at least len(widths) = 2, got 1"),
        (
            dict(n=2, widths=tuple(range(1, 11))),
            ValueError,
            "_Cfg.n must be at least len(widths) = 10, got 2",
        ),
    ],
)
def test_construction_refuses_with_exact_messages(kw, err, msg):
    with pytest.raises(err) as info:
        _Cfg(**kw)
    assert str(info.value).startswith(msg), str(info.value)


@pytest.mark.reference
def test_assignment_is_revalidated_and_rolled_back():
    c = _Cfg()
    c.n = 2
    assert c.n == 2
    with pytest.raises(ValueError, match="_Cfg.n must be an int >= 1"):
        c.n = 0
    assert c.n == 2
    with pytest.raises(
        ValueError, match=r"_Cfg.n must be at least len\(widths\) = 3"
    ):
        c.widths = (1, 2, 3)
    assert c.widths == (4, 8)  # the failed assignment is undone
    c.n = 3
    c.widths = (1, 2, 3)
    assert c.widths == (1, 2, 3)
    with pytest.raises(TypeError, match="_Cfg has no field 'nn'; its fields are"):
        c.nn = 3
    assert not hasattr(c, "nn")
    c._private = 1  # names starting with "_" are not fields and are allowed
    assert c._private == 1


@pytest.mark.reference
def test_validate_returns_self_and_catches_what_bypassed_assignment():
    c = _Cfg()
    assert c.validate() is c
    object.__setattr__(c, "lr", -1.0)
    with pytest.raises(ValueError, match="_Cfg.lr"):
        c.validate()
    object.__setattr__(c, "lr", 0.1)
    object.__setattr__(c, "n", 1)
    with pytest.raises(ValueError, match=r"len\(widths\)"):
        c.validate()


@pytest.mark.reference
def test_config_html_table():
    text = _Cfg(lr=0.2)._repr_html_()
    assert text.startswith(
        "<table><caption>_Cfg</caption><tr><th>field</th><th>value</th>"
        "<th><code>full</code> preset</th></tr>"
    )
    rows = {
        r.split("<code>")[1].split("</code>")[0]: r
        for r in text.split("<tr title=")[1:]
    }
    assert list(rows) == ["n", "lr", "opt", "widths", "inner", "frac"]
    assert rows["n"].startswith("'rows'>") and "<td>6</td><td>50</td>" in rows["n"]
    assert rows["lr"].startswith("'a finite number &gt; 0'>")
    assert "<td>0.2</td><td>0.5</td>" in rows["lr"]
    assert (
        "<td>(16, 32, 64)</td>" in rows["widths"]
        and "<td>&#x27;sgd&#x27;</td><td></td>" in rows["opt"]
    )


@pytest.mark.boundary
def test_a_config_refuses_an_unknown_attribute_and_param_a_bad_doc():
    from gtlib.train import TrainConfig

    cfg = TrainConfig()
    with pytest.raises(TypeError, match="lrr"):
        cfg.lrr = 0.5
    cfg._private_cache = 1  # private names stay free
    with pytest.raises(TypeError, match="doc"):
        config.param(1, checks.count(), doc=3)


# =================================================================================================
# checks.positive
# =================================================================================================
@pytest.mark.reference
def test_refuse_shows_the_value_short():
    @dataclass
    class R(Config):
        lr: float = param(0.5, positive())
        w: tuple = param((1,), tuple_of(count(), min_len=0))

        def _check_together(self):
            if self.lr > 1:
                self._refuse("lr", "at most 1")
            if len(self.w) > 9:
                self._refuse("w", "at most 9 long")

    with pytest.raises(ValueError) as info:
        R(lr=1.23456789)
    assert str(info.value) == "R.lr must be at most 1, got 1.23457"
    with pytest.raises(ValueError) as info:
        R(w=tuple(range(1, 11)))
    assert (
        str(info.value)
        == "R.w must be at most 9 long, got (1, 2, 3, ..., 10) [10 values]"
    )


# =================================================================================================
# checks.fraction
# =================================================================================================
@pytest.mark.reference
def test_count_positive_nonnegative_fraction_at_their_edges():
    assert count().check("n", 1) == 1 and count(0).check("n", 0) == 0
    assert count(-3).check("n", -3) == -3
    for c, bad in ((count(), 0), (count(5), 4), (count(0), -1)):
        with pytest.raises(ValueError):
            c.check("n", bad)
    assert count(2, optional=True).check("n", None) is None
    with pytest.raises(TypeError, match="minimum"):
        count(1.0)
    with pytest.raises(TypeError, match="minimum"):
        count(True)
    assert positive().check("x", 5e-324) == 5e-324
    with pytest.raises(ValueError, match="> 0"):
        positive().check("x", 0.0)
    assert nonnegative().check("x", 0) == 0
    with pytest.raises(ValueError, match=">= 0"):
        nonnegative().check("x", -5e-324)
    assert positive(optional=True).check("x", None) is None
    assert nonnegative(optional=True).check("x", None) is None
    assert fraction().check("p", 0) == 0 and fraction().check("p", 1) == 1
    assert fraction("left").contains(0) and not fraction("left").contains(1)
    assert fraction("right").contains(1) and not fraction("right").contains(0)
    assert not fraction("neither").contains(0) and fraction("neither").contains(0.5)
    assert fraction(optional=True).check("p", None) is None


# =================================================================================================
# checks.tuple_of
# =================================================================================================
@pytest.mark.reference
def test_sequence_min_len_at_its_edge():
    seq = tuple_of(count(), min_len=2)
    assert seq.check("w", (1, 2)) == (1, 2) and seq.check("w", [3, 4, 5]) == [
        3,
        4,
        5,
    ]
    with pytest.raises(ValueError, match=r"^w must be a tuple \(at least 2 items\)"):
        seq.check("w", (1,))
    assert tuple_of(count(), min_len=0).check("w", ()) == ()
    with pytest.raises(ValueError, match=r"at least 1 item\)"):
        tuple_of(count()).check("w", [])


@pytest.mark.reference
def test_sequence_items_are_checked_by_index():
    seq = tuple_of(count())
    with pytest.raises(ValueError, match=r"^w\[2\] must be an int >= 1, got 0$"):
        seq.check("w", (3, 1, 0, 5))
    with pytest.raises(TypeError, match=r"^w\[1\] must be an int >= 1, got 2.0$"):
        seq.check("w", [3, 2.0])
    for bad in ("ab", None, 3, np.array([1, 2]), {1: 2}, range(3), {1, 2}):
        with pytest.raises(TypeError, match=r"^w must be a tuple"):
            seq.check("w", bad)


@pytest.mark.reference
@pytest.mark.parametrize(
    "value,strict_ok,weak_ok",
    [
        ((1, 2, 3), True, True),
        ((1, 2, 2), False, True),
        ((2, 1), False, False),
        ((1, 3, 2), False, False),
        ((5,), True, True),
        ((1, 1), False, True),
        ((3, 2, 4), False, False),
        ((1, 2, 3, 2), False, False),
    ],
)
def test_sequence_increasing_strict_and_weak(value, strict_ok, weak_ok):
    for mode, ok in (("strict", strict_ok), ("weak", weak_ok)):
        seq = tuple_of(Interval(int), increasing=mode)
        if ok:
            assert seq.check("w", value) == value
        else:
            with pytest.raises(ValueError, match="w must be"):
                seq.check("w", value)
    assert tuple_of(Interval(int)).check("w", value) == value  # no order asked


@pytest.mark.reference
def test_sequence_distinct():
    seq = tuple_of(Interval(int), distinct=True)
    assert seq.check("w", (3, 1, 2)) == (3, 1, 2)
    with pytest.raises(ValueError, match="without repeats"):
        seq.check("w", (3, 1, 3))
    assert tuple_of(Interval(int)).check("w", (3, 1, 3)) == (3, 1, 3)


@pytest.mark.reference
def test_sequence_describe():
    assert (
        tuple_of(count()).describe()
        == "a tuple (at least 1 item) of items each an int >= 1"
    )
    assert tuple_of(fraction(), 0, "weak", True).describe() == (
        "a tuple (at least 0 items, sorted, without repeats) of items each a finite number in "
        "[0, 1]"
    )
    assert tuple_of(positive(), 3, "strict").describe() == (
        "a tuple (at least 3 items, strictly increasing) of items each a finite number > 0"
    )


# =================================================================================================
# checks.check
# =================================================================================================
@pytest.mark.reference
def test_check_dispatches_to_the_constraint():
    assert C.check("n", 3, count()) == 3
    with pytest.raises(ValueError, match="n must be an int >= 4"):
        C.check("n", 3, count(4))
    with pytest.raises(TypeError, match="constraint must be"):
        C.check("n", 3, int)


# =================================================================================================
# checks.check_int
# =================================================================================================
def test_valid_values_pass_through():
    assert check_int("n", np.int64(3)) == 3 and isinstance(
        check_int("n", np.int64(3)), int
    )
    assert (
        check_positive("lr", 1) == 1.0
        and check_positive("wd", 0.0, allow_zero=True) == 0.0
    )
    assert check_fraction("p", 0) == 0.0 and check_fraction("p", 1) == 1.0


@pytest.mark.parametrize(
    "fn,args,err",
    [
        (check_int, ("n", True), TypeError),
        (check_int, ("n", 2.0), TypeError),
        (check_int, ("n", 0), ValueError),
        (check_int, ("n", -1, 0), ValueError),
        (check_positive, ("lr", "a"), TypeError),
        (check_positive, ("lr", 0.0), ValueError),
        (check_positive, ("lr", float("inf")), ValueError),
        (check_positive, ("lr", -1.0, True), ValueError),
        (check_fraction, ("p", 1.5), ValueError),
        (check_fraction, ("p", 0.0, True), ValueError),
        (check_fraction, ("p", None), TypeError),
    ],
)
def test_bad_values_name_the_argument(fn, args, err):
    with pytest.raises(err, match=args[0]):
        fn(*args)


@pytest.mark.reference
def test_check_int():
    out = check_int("n", np.int64(7))
    assert out == 7 and type(out) is int
    assert check_int("n", 1) == 1 and check_int("n", 0, minimum=0) == 0
    assert check_int("n", -5, minimum=-5) == -5 and check_int("n", 9, 1, 9) == 9
    assert check_int("n", 10**30) == 10**30  # no upper bound by default
    for args, err in (
        ((0,), ValueError),
        ((10, 1, 9), ValueError),
        ((-6, -5), ValueError),
        ((True,), TypeError),
        ((2.0,), TypeError),
        (("2",), TypeError),
    ):
        with pytest.raises(err, match="^n must be an int"):
            check_int("n", *args)
    with pytest.raises(TypeError, match="minimum must be an int"):
        check_int("n", 3, minimum=1.0)
    with pytest.raises(TypeError, match="minimum"):
        check_int("n", 3, minimum=None)


# =================================================================================================
# checks.check_positive
# =================================================================================================
@pytest.mark.reference
def test_check_positive():
    out = check_positive("lr", np.int64(2))
    assert out == 2.0 and type(out) is float
    assert check_positive("lr", 1e-300) == 1e-300
    assert check_positive("wd", 0, allow_zero=True) == 0.0
    assert type(check_positive("wd", 0, allow_zero=True)) is float
    assert check_positive("wd", 0.0, allow_zero=np.bool_(True)) == 0.0
    with pytest.raises(ValueError, match="lr must be a finite number > 0, got 0"):
        check_positive("lr", 0)
    with pytest.raises(
        ValueError, match="wd must be a finite number >= 0, got -1e-300"
    ):
        check_positive("wd", -1e-300, allow_zero=True)
    for flag in (1, "yes", None):
        with pytest.raises(TypeError, match="allow_zero must be a bool"):
            check_positive("lr", 1.0, allow_zero=flag)


# =================================================================================================
# checks.check_fraction
# =================================================================================================
@pytest.mark.reference
def test_check_fraction():
    assert check_fraction("p", 0) == 0.0 and check_fraction("p", 1) == 1.0
    assert type(check_fraction("p", 1)) is float
    assert check_fraction("p", 0.25, open_interval=True) == 0.25
    assert check_fraction("p", EPS, open_interval=True) == EPS
    assert check_fraction("p", 1 - 1e-9, open_interval=True) == 1 - 1e-9
    for v, op in (
        (-EPS, False),
        (1 + 1e-9, False),
        (0, True),
        (1, True),
        (1.0, True),
    ):
        with pytest.raises(ValueError, match="p must be a finite number in"):
            check_fraction("p", v, open_interval=op)
    with pytest.raises(ValueError, match=r"in \(0, 1\)"):
        check_fraction("p", 1, open_interval=True)
    with pytest.raises(TypeError, match="open_interval must be a bool"):
        check_fraction("p", 0.5, open_interval=0)


# =================================================================================================
# checks.check_real
# =================================================================================================
@pytest.mark.reference
def test_check_real():
    assert check_real("x", -3) == -3.0 and type(check_real("x", -3)) is float
    assert (
        check_real("x", np.float32(-0.5)) == -0.5 and check_real("x", 1e308) == 1e308
    )
    for bad, err in (
        (float("nan"), ValueError),
        (-float("inf"), ValueError),
        (True, TypeError),
        ("1", TypeError),
        (None, TypeError),
    ):
        with pytest.raises(err, match="^x must be a finite number"):
            check_real("x", bad)


# =================================================================================================
# checks.check_finite
# =================================================================================================
@pytest.mark.reference
def test_check_finite():
    for x in (
        torch.ones(2, 3),
        torch.zeros(0),
        torch.tensor([1, 2]),
        np.ones(3),
        np.zeros((0, 2)),
        np.array([1, 2]),
        torch.ones(2, dtype=torch.float16),
        torch.tensor([True]),
    ):
        assert check_finite("x", x) is x
    for x in (
        torch.tensor([1.0, float("nan")]),
        torch.tensor([[0.0], [float("inf")]]),
        torch.tensor([-float("inf")], dtype=torch.float64),
        np.array([np.nan]),
        np.array([[1.0, -np.inf]], dtype=np.float32),
    ):
        with pytest.raises(ValueError, match="^x must hold finite values only"):
            check_finite("x", x)
    for x in ([1.0], 1.0, None):
        with pytest.raises(
            TypeError, match="x must be a torch.Tensor or numpy array"
        ):
            check_finite("x", x)
    with pytest.raises(TypeError, match="name"):
        check_finite("", torch.ones(1))


# =================================================================================================
# checks.check_labels
# =================================================================================================
@pytest.mark.reference
def test_check_labels_accepts_good_labels_at_the_edges():
    y = torch.tensor([0, 2, 1, 2])
    assert check_labels("y", y, 3, 4) is y
    assert check_labels("y", torch.tensor([0, 0]), 1) is not None  # one class
    assert (
        check_labels("y", torch.tensor([[0, 4], [3, 1], [2, 2]]), 5, 2) is not None
    )  # (E, n)
    assert (
        check_labels("y", torch.tensor([7], dtype=torch.int32)) is not None
    )  # no range asked
    assert (
        check_labels("y", torch.tensor([-1, 5])) is not None
    )  # no num_classes: any int


@pytest.mark.reference
@pytest.mark.parametrize(
    "y,kw,err,words",
    [
        (
            torch.tensor([0, 3]),
            {"num_classes": 3},
            ValueError,
            r"labels in \[0, 3\), got range \[0, 3\]",
        ),
        (
            torch.tensor([-1, 1]),
            {"num_classes": 3},
            ValueError,
            r"got range \[-1, 1\]",
        ),
        (
            torch.tensor([[0, 1], [1, 5]]),
            {"num_classes": 5},
            ValueError,
            r"range \[0, 5\]",
        ),
        (
            torch.tensor([0, 1, 1]),
            {"n": 4},
            ValueError,
            r"must have 4 labels .* got \(3,\)",
        ),
        (
            torch.tensor([[0, 1, 1]] * 2),
            {"n": 2},
            ValueError,
            r"must have 2 labels .* \(2, 3\)",
        ),
        (torch.tensor([[0, 1, 1]] * 2), {"n": 3}, None, None),
        (torch.tensor([], dtype=torch.long), {}, ValueError, "must not be empty"),
        (torch.zeros(2, 0, dtype=torch.long), {}, ValueError, "must not be empty"),
        (
            torch.tensor([], dtype=torch.long),
            {"n": 0},
            ValueError,
            "must not be empty",
        ),
        (torch.tensor(1), {}, ValueError, r"shape \(n,\) or \(E, n\), got \(\)"),
        (torch.zeros(1, 1, 2, dtype=torch.long), {}, ValueError, "shape"),
        (torch.tensor([0.0, 1.0]), {}, TypeError, "dtype torch.float32"),
        (torch.tensor([True]), {}, TypeError, "dtype torch.bool"),
        (torch.tensor([1j]), {}, TypeError, "integer class labels"),
        (
            np.array([0, 1]),
            {},
            TypeError,
            "torch.Tensor of integer labels, got ndarray",
        ),
        ([0, 1], {}, TypeError, "got list"),
        (
            torch.tensor([0]),
            {"num_classes": 0},
            ValueError,
            "num_classes must be an int >= 1",
        ),
        (torch.tensor([0]), {"num_classes": True}, TypeError, "num_classes"),
        (torch.tensor([0]), {"num_classes": 2.0}, TypeError, "num_classes"),
        (torch.tensor([0]), {"n": -1}, ValueError, "n must be an int >= 0"),
        (torch.tensor([0]), {"n": 1.0}, TypeError, "n must be an int"),
    ],
)
def test_check_labels_refuses(y, kw, err, words):
    if err is None:
        assert check_labels("y", y, **kw) is y
        return
    with pytest.raises(err, match=words):
        check_labels("y", y, **kw)


@pytest.mark.reference
def test_check_labels_checks_the_count_before_emptiness_and_dtype_before_shape():
    with pytest.raises(ValueError, match="must have 2 labels"):
        check_labels("y", torch.tensor([], dtype=torch.long), n=2)
    with pytest.raises(TypeError, match="dtype"):
        check_labels("y", torch.zeros(1, 1, 1))


# =================================================================================================
# checks.check_indices
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize(
    "idx,size,expected",
    [
        ([0, 4, 2], 5, [0, 4, 2]),
        ((4,), 5, [4]),
        (np.array([1, 0], dtype=np.int32), 2, [1, 0]),
        (np.array([3], dtype=np.uint8), 4, [3]),
        (torch.tensor([2, 2], dtype=torch.int16), 3, [2, 2]),
        ([], 0, []),
        ([], 5, []),
        (np.array([], dtype=np.int64), 3, []),
        (range(3), 3, [0, 1, 2]),
    ],
)
def test_check_indices_converts_to_int64(idx, size, expected):
    t = check_indices("idx", idx, size)
    assert (
        isinstance(t, torch.Tensor)
        and t.dtype == torch.int64
        and t.tolist() == expected
    )


@pytest.mark.reference
def test_check_indices_does_not_share_memory_with_a_numpy_input():
    a = np.array([0, 1])
    t = check_indices("idx", a, 2)
    a[0] = 1
    assert t.tolist() == [0, 1]


@pytest.mark.reference
@pytest.mark.parametrize(
    "idx,size,err,words",
    [
        (
            [0, 5],
            5,
            ValueError,
            r"idx must hold indices in \[0, 5\), got range \[0, 5\]",
        ),
        ([-1, 2], 5, ValueError, r"got range \[-1, 2\]"),
        ([0], 0, ValueError, r"\[0, 0\)"),
        (torch.tensor([3, 9]), 9, ValueError, r"range \[3, 9\]"),
        ([[0, 1]], 5, ValueError, r"one-dimensional, got shape \(1, 2\)"),
        (torch.tensor(1), 5, ValueError, "one-dimensional"),
        ([0.0, 1.0], 5, TypeError, "float"),
        (torch.tensor([1.0]), 5, TypeError, "float32"),
        ([True, False], 5, TypeError, "bool"),
        (torch.tensor([True]), 5, TypeError, "bool"),
        (torch.tensor([1j]), 5, TypeError, "complex"),
        (["a"], 5, TypeError, "integer indices"),
        (None, 5, TypeError, "got None"),
        ([object()], 5, TypeError, "integer indices"),
        ([0], -1, ValueError, "size must be an int >= 0"),
        ([0], 2.0, TypeError, "size"),
        ([0], True, TypeError, "size"),
    ],
)
def test_check_indices_refuses(idx, size, err, words):
    with pytest.raises(err, match=words):
        check_indices("idx", idx, size)


# =================================================================================================
# checks.check_seed
# =================================================================================================
@pytest.mark.reference
def test_seed_checks_at_their_edges():
    assert check_seed("s", 0) == 0 and check_seed("s", 2**63 - 1) == 2**63 - 1
    assert type(check_seed("s", np.uint64(5))) is int
    for bad, err in (
        (-1, ValueError),
        (2**63, ValueError),
        (True, TypeError),
        (1.0, TypeError),
        (None, TypeError),
    ):
        with pytest.raises(
            err, match=r"^s must be an int in \[0, 9223372036854775807\]"
        ):
            check_seed("s", bad)
    assert C.SEED.low == 0 and C.SEED.high == 2**63 - 1 and C.SEED.closed == "both"


@pytest.mark.mutation
def test_seeds_stop_where_torch_generators_stop():
    """Every seed check_seed accepts can seed a torch.Generator, and the first it refuses is the
    first torch refuses (2**63 - 1 is the largest value of torch's int64 seed)."""
    top = check_seed("seed", 2**63 - 1)
    torch.Generator().manual_seed(top)
    with pytest.raises(ValueError, match="seed"):
        check_seed("seed", 2**63)
    with pytest.raises(ValueError, match="seed"):
        seed_everything(2**63)


# =================================================================================================
# checks.check_seeds
# =================================================================================================
@pytest.mark.reference
def test_check_seeds():
    assert check_seeds("seeds", range(3)) == [0, 1, 2]
    assert check_seeds("seeds", (5, np.int64(2))) == [5, 2]
    assert all(type(s) is int for s in check_seeds("seeds", [np.int64(1)]))
    assert check_seeds("seeds", (s for s in [4, 0])) == [4, 0]
    assert check_seeds("seeds", [2**63 - 1]) == [2**63 - 1]
    with pytest.raises(ValueError, match=r"seeds\[2\] must be an int in"):
        check_seeds("seeds", [0, 1, -1])
    with pytest.raises(TypeError, match=r"seeds\[1\]"):
        check_seeds("seeds", [0, True])
    with pytest.raises(ValueError, match=r"seeds\[0\]"):
        check_seeds("seeds", [2**63])
    for bad in (3, "012", b"01", None):
        with pytest.raises(TypeError, match="seeds must be a non-empty sequence"):
            check_seeds("seeds", bad)
    for empty in ([], (), range(0)):
        with pytest.raises(ValueError, match=r"non-empty .* got \[\]"):
            check_seeds("seeds", empty)
    with pytest.raises(TypeError, match="name"):
        check_seeds("", [1])


@pytest.mark.mutation
def test_check_seeds_refuses_an_empty_list():
    with pytest.raises(ValueError, match="seeds"):
        check_seeds("seeds", [])


# =================================================================================================
# checks.Tensor
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize(
    "kw,text",
    [
        ({}, "a torch.Tensor (non-empty, finite)"),
        (
            {"dtype": "int", "ndim": 1},
            "a torch.Tensor (non-empty, integer, 1-dimensional)",
        ),
        (
            {"dtype": "float", "ndim": (1, 2), "numpy": True},
            "a torch.Tensor or numpy array (non-empty, floating-point, 1 or 2-dimensional, finite)",
        ),
        ({"empty": True, "finite": False}, "a torch.Tensor"),
        ({"empty": True}, "a torch.Tensor (finite)"),
        ({"dtype": "int", "finite": True}, "a torch.Tensor (non-empty, integer)"),
    ],
)
def test_tensor_describe(kw, text):
    assert Tensor(**kw).describe() == text


@pytest.mark.reference
@pytest.mark.parametrize(
    "kw,value,err",
    [
        ({}, torch.ones(2), None),
        ({}, torch.tensor([1, 2]), None),
        ({}, torch.tensor([True]), None),
        ({}, np.ones(2), TypeError),
        ({"numpy": True}, np.ones(2), None),
        ({"numpy": True}, [1.0], TypeError),
        ({}, None, TypeError),
        ({"optional": True}, None, None),
        ({"dtype": "float"}, torch.ones(2, dtype=torch.float64), None),
        ({"dtype": "float"}, torch.ones(2, dtype=torch.long), TypeError),
        ({"dtype": "float"}, torch.tensor([True]), TypeError),
        ({"dtype": "float", "numpy": True}, np.ones(2, dtype=np.int64), TypeError),
        ({"dtype": "float", "numpy": True}, np.ones(2, dtype=np.float32), None),
        ({"dtype": "int"}, torch.ones(2, dtype=torch.int32), None),
        ({"dtype": "int"}, torch.ones(2), TypeError),
        ({"dtype": "int"}, torch.tensor([True]), TypeError),
        ({"dtype": "int"}, torch.tensor([1j]), TypeError),
        ({"dtype": "int", "numpy": True}, np.array([1, 2], dtype=np.uint8), None),
        ({"dtype": "int", "numpy": True}, np.array([True]), TypeError),
        ({"ndim": 2}, torch.ones(2, 3), None),
        ({"ndim": 2}, torch.ones(2), ValueError),
        ({"ndim": 2}, torch.ones(1, 1, 1), ValueError),
        ({"ndim": (1, 3)}, torch.ones(1, 1, 1), None),
        ({"ndim": (1, 3)}, torch.ones(1, 1), ValueError),
        ({"ndim": 0}, torch.tensor(1.0), None),
        ({}, torch.ones(0), ValueError),
        ({}, torch.ones(3, 0), ValueError),
        ({"empty": True}, torch.ones(0), None),
        ({"numpy": True}, np.ones((0, 2)), ValueError),
        ({}, torch.tensor([1.0, float("nan")]), ValueError),
        ({"finite": False}, torch.tensor([float("nan")]), None),
        ({"numpy": True}, np.array([np.inf]), ValueError),
        ({"numpy": True, "finite": False}, np.array([np.inf]), None),
        ({"dtype": "int"}, torch.tensor([2**40]), None),
    ],
)
def test_tensor_constraint(kw, value, err):
    t = Tensor(**kw)
    if err is None:
        assert t.check("x", value) is value
    else:
        with pytest.raises(err, match="^x must "):
            t.check("x", value)


@pytest.mark.reference
def test_tensor_declaration():
    with pytest.raises(ValueError, match="dtype"):
        Tensor("double")
    assert Tensor(ndim=2).ndim == (2,) and Tensor(ndim=(1, 2)).ndim == (1, 2)
    assert Tensor().ndim is None


# =================================================================================================
# checks.Device
# =================================================================================================
@pytest.mark.reference
def test_device_constraint():
    d = Device()
    assert d.check("device", "cpu") == "cpu"
    dev = torch.device("cpu")
    assert d.check("device", dev) is dev
    for bad in ("nonsense", "meta", "cpu:x"):
        with pytest.raises(
            ValueError, match="^device must be an available torch device"
        ):
            d.check("device", bad)
    for bad in (0, None, ["cpu"]):
        with pytest.raises(TypeError, match="^device must be"):
            d.check("device", bad)
    if not torch.cuda.is_available():
        for bad in ("cuda", "cuda:0", torch.device("cuda")):
            with pytest.raises(ValueError, match="not available on this machine"):
                d.check("device", bad)
    else:
        assert d.check("device", "cuda") == "cuda"
        with pytest.raises(ValueError, match="not available"):
            d.check("device", f"cuda:{torch.cuda.device_count()}")
    mps = getattr(torch.backends, "mps", None)
    if mps is None or not mps.is_available():
        with pytest.raises(ValueError, match="'mps' is not available"):
            d.check("device", "mps")


@pytest.mark.reference
def test_device_counts_cuda_devices(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert (
        Device().check("d", "cuda") == "cuda"
        and Device().check("d", "cuda:1") == "cuda:1"
    )
    with pytest.raises(ValueError, match="not available"):
        Device().check("d", "cuda:2")


# =================================================================================================
# checks.boundary
# =================================================================================================
def test_boundary_refuses_a_constraint_for_an_unknown_argument():
    with pytest.raises(TypeError, match="no such argument"):
        boundary(q=count())(lambda x: x)
    with pytest.raises(TypeError, match="Constraint"):
        boundary(x=3)


@pytest.mark.reference
@pytest.mark.parametrize(
    "kw,err,words",
    [
        (dict(a=True), TypeError, "a must be an int, got True"),
        (dict(a=1.0), TypeError, "a must be an int"),
        (dict(b=float("nan")), ValueError, "b must be a finite number, got nan"),
        (dict(b="1"), TypeError, "b must be a finite number"),
        (dict(b=True), TypeError, "b must be a finite number"),
        (dict(c=1), TypeError, "c must be a bool"),
        (dict(d=1), TypeError, "d must be a str"),
        (
            dict(e=[]),
            ValueError,
            "e must be a non-empty list or tuple whose items are each an int",
        ),
        (dict(e="ab"), TypeError, "e must be a non-empty list"),
        (dict(e={1: 2}), TypeError, "e must be"),
        (dict(e=None), TypeError, "e must be"),
        (dict(e=3), TypeError, "e must be"),
        (dict(e=[1, True]), TypeError, r"e\[1\] must be an int"),
        (dict(e=np.array([])), ValueError, "e must be"),
        (dict(f=[1.0, float("inf")]), ValueError, r"f\[1\] must be a finite number"),
        (dict(g=[]), TypeError, "g must be a dict"),
        (dict(h=3), TypeError, "h must be a function"),
        (dict(i=np.ones(1)), TypeError, "i must be a torch.Tensor"),
        (dict(i=torch.ones(0)), ValueError, "i must be"),
        (dict(j=[1.0]), TypeError, "j must be a torch.Tensor or numpy array"),
        (dict(j=np.array([np.nan])), ValueError, "j must hold finite values"),
        (dict(k="3"), TypeError, "^_annotated\\(\\): k must be an int, got '3'$"),
        (dict(k=True), TypeError, "k must be an int"),
        (
            dict(m=1.5),
            TypeError,
            "^_annotated\\(\\): m must be an int or a str, got 1.5$",
        ),
        (dict(m=None), TypeError, "m must be an int or a str"),
        (dict(n="x"), TypeError, "n must be a finite number"),
        (dict(n=float("inf")), ValueError, "n must be a finite number, got inf"),
        (dict(v=object()), TypeError, "v must be a Settings"),
        (dict(p=torch.ones(1)), TypeError, "p must be a Module"),
        (dict(t=()), ValueError, "t must be a non-empty list or tuple, got"),
        (dict(u=[("a", 1)]), TypeError, "u must be a dict"),
    ],
)
def test_annotations_refuse_naming_function_and_argument(kw, err, words):
    with pytest.raises(err, match=words) as info:
        _annotated(**kw)
    assert str(info.value).startswith("_annotated(): ")


@pytest.mark.reference
def test_a_union_with_mixed_failures_is_a_value_error():
    @boundary()
    def f(x: int | torch.Tensor):
        return x

    assert f(3) == 3
    with pytest.raises(
        ValueError,
        match=r"x must be an int or a torch.Tensor \(non-empty, "
        r"finite\), got Tensor of shape \(0,\)",
    ):
        f(torch.ones(0))
    with pytest.raises(TypeError, match="x must be an int or a torch.Tensor"):
        f(1.5)

    @boundary()
    def g(x: int | str | None = 0):
        return x

    assert g(None) is None and g("a") == "a" and g(-4) == -4
    with pytest.raises(
        TypeError,
        match=r"<locals>.g\(\): x must be an int or a str or None, got 1.5$",
    ):
        g(1.5)


@pytest.mark.reference
def test_declared_constraints_win_over_annotations_and_none_switches_a_check_off():
    @boundary(n=count(3), x=None, y=fraction())
    def f(n: int, x: int, y, z: int = 1, *rest: int, **extra: int):
        return n, x, y, z, rest, extra

    assert f(3, "not an int", 0.5, 2, "r", k="v") == (
        3,
        "not an int",
        0.5,
        2,
        ("r",),
        {"k": "v"},
    )
    with pytest.raises(
        ValueError, match="<locals>.f\\(\\): n must be an int >= 3, got 2$"
    ):
        f(2, 0, 0.5)
    with pytest.raises(ValueError, match="y must be a finite number in \\[0, 1\\]"):
        f(3, 0, 1.5)
    with pytest.raises(TypeError, match="z must be an int"):
        f(3, 0, 0.5, "z")


@pytest.mark.reference
def test_defaults_are_trusted_only_when_they_are_the_default_object():
    sentinel = []

    @boundary(x=Tensor())
    def f(x=sentinel, n: int = None):
        return x

    assert f() is sentinel and f(n=None) is sentinel  # the function's own defaults
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        f([])  # equal to the default, but another object
    with pytest.raises(TypeError, match="n must be an int"):
        f(torch.ones(1), 2.0)


@pytest.mark.reference
def test_methods_skip_self_and_binding_errors_name_the_function():
    class K:
        @boundary(n=count())
        def m(self, n: int, lr: float = 0.1):
            return n * 2

        @classmethod
        @boundary()
        def c(cls, n: int):
            return n

    assert K().m(3) == 6 and K.c(4) == 4
    with pytest.raises(
        ValueError,
        match=r"^test_methods_skip_self_and_binding_errors_name_the_"
        r"function.<locals>.K.m\(\): n must be an int >= 1",
    ):
        K().m(0)
    with pytest.raises(TypeError, match=r"K.m\(\): .*argument"):
        K().m()
    with pytest.raises(TypeError, match=r"K.m\(\): "):
        K().m(1, 0.1, 3)
    with pytest.raises(TypeError, match="lr must be a finite number"):
        K().m(1, lr="x")
    with pytest.raises(TypeError, match="c\\(\\): n must be an int"):
        K.c("4")


@pytest.mark.reference
def test_the_wrapper_keeps_the_function_and_reads_annotations_once(monkeypatch):
    def g(x: int) -> int:
        "doc of g"
        return x + 1

    calls = []
    real = C._from_annotation
    monkeypatch.setattr(C, "_from_annotation", lambda h: calls.append(h) or real(h))
    w = boundary()(g)
    assert calls == []  # not at decoration
    assert w.__wrapped__ is g and w.__name__ == "g" and w.__doc__ == "doc of g"
    assert w(1) == 2 and w(2) == 3
    assert calls == [int]  # read at the first call only
    with pytest.raises(TypeError, match="x must be an int"):
        w("1")


@pytest.mark.reference
def test_boundary_declaration_errors():
    with pytest.raises(TypeError, match="no such argument"):
        boundary(zz=count())(lambda x: x)
    with pytest.raises(TypeError, match=r"boundary\(a, b\)"):
        boundary(b=count(), a=count())(lambda x: x)
    for bad in (3, int, "count"):
        with pytest.raises(
            TypeError, match="must be a gtlib.checks Constraint or None"
        ):
            boundary(x=bad)
    assert boundary(x=None)(lambda x: x)("anything") == "anything"


# =================================================================================================
# gtlib.checks as a whole
# =================================================================================================
@pytest.mark.parametrize(
    "kw,error,word",
    [
        (dict(x=None), TypeError, "x must be a torch.Tensor"),
        (
            dict(x=torch.tensor([[float("nan")]])),
            ValueError,
            "x must hold finite values",
        ),
        (dict(x=torch.ones(0, 2)), ValueError, "x must be"),
        (dict(x=torch.ones(2), y=torch.ones(2)), TypeError, "y must be"),
        (dict(x=torch.ones(2), y=torch.ones(2, 2).long()), ValueError, "y must be"),
        (dict(x=torch.ones(2), n=0), ValueError, "n must be an int >= 1"),
        (dict(x=torch.ones(2), n=True), TypeError, "n must be"),
        (
            dict(x=torch.ones(2), lr=float("inf")),
            ValueError,
            "lr must be a finite number",
        ),
        (dict(x=torch.ones(2), seeds=[]), ValueError, "seeds must be a non-empty"),
        (
            dict(x=torch.ones(2), seeds=[0.5]),
            TypeError,
            r"seeds\[0\] must be an int",
        ),
        (dict(x=torch.ones(2), seeds="ab"), TypeError, "seeds must be"),
        (dict(x=torch.ones(2), flag="yes"), TypeError, "flag must be a bool"),
        (dict(x=torch.ones(2), name=3), TypeError, "name must be a str"),
    ],
)
def test_boundary_refuses_bad_arguments_naming_function_and_argument(
    kw, error, word
):
    with pytest.raises(error, match=word) as info:
        _probe(**kw)
    assert str(info.value).startswith("_probe(): ")


def test_boundary_passes_good_arguments_and_trusts_defaults():
    assert _probe(torch.ones(3, 2)) == "ran"
    assert (
        _probe(torch.ones(3, 2), torch.arange(3), 2, 0.5, [1, 2], True, "b", fn=3)
        == "ran"
    )
    assert (
        _probe.__wrapped__(None) == "ran"
    )  # the undecorated function stays reachable
    with pytest.raises(TypeError, match="_probe\\(\\): .*zz"):
        _probe(torch.ones(2), zz=1)
