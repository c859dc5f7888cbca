import torch
import numpy as np
import pytest

from gtlib.checks import check_fraction, check_int, check_positive


def test_valid_values_pass_through():
    assert check_int("n", np.int64(3)) == 3 and isinstance(check_int("n", np.int64(3)), int)
    assert check_positive("lr", 1) == 1.0 and check_positive("wd", 0.0, allow_zero=True) == 0.0
    assert check_fraction("p", 0) == 0.0 and check_fraction("p", 1) == 1.0


@pytest.mark.parametrize("fn,args,err", [
    (check_int, ("n", True), TypeError), (check_int, ("n", 2.0), TypeError),
    (check_int, ("n", 0), ValueError), (check_int, ("n", -1, 0), ValueError),
    (check_positive, ("lr", "a"), TypeError), (check_positive, ("lr", 0.0), ValueError),
    (check_positive, ("lr", float("inf")), ValueError), (check_positive, ("lr", -1.0, True), ValueError),
    (check_fraction, ("p", 1.5), ValueError), (check_fraction, ("p", 0.0, True), ValueError),
    (check_fraction, ("p", None), TypeError)])
def test_bad_values_name_the_argument(fn, args, err):
    with pytest.raises(err, match=args[0]):
        fn(*args)


# --- the boundary decorator ----------------------------------------------------------------------
from typing import Sequence as _Seq  # noqa: E402

from gtlib.checks import Tensor, boundary, count  # noqa: E402


@boundary(n=count(), y=Tensor("int", 1, optional=True))
def _probe(x: torch.Tensor, y: torch.Tensor | None = None, n: int = 3, lr: float = 0.1,
           seeds: _Seq[int] = (0,), flag: bool = False, name: str = "a", fn=None):
    return "ran"


@pytest.mark.parametrize("kw,error,word", [
    (dict(x=None), TypeError, "x must be a torch.Tensor"),
    (dict(x=torch.tensor([[float("nan")]])), ValueError, "x must hold finite values"),
    (dict(x=torch.ones(0, 2)), ValueError, "x must be"),
    (dict(x=torch.ones(2), y=torch.ones(2)), TypeError, "y must be"),
    (dict(x=torch.ones(2), y=torch.ones(2, 2).long()), ValueError, "y must be"),
    (dict(x=torch.ones(2), n=0), ValueError, "n must be an int >= 1"),
    (dict(x=torch.ones(2), n=True), TypeError, "n must be"),
    (dict(x=torch.ones(2), lr=float("inf")), ValueError, "lr must be a finite number"),
    (dict(x=torch.ones(2), seeds=[]), ValueError, "seeds must be a non-empty"),
    (dict(x=torch.ones(2), seeds=[0.5]), TypeError, r"seeds\[0\] must be an int"),
    (dict(x=torch.ones(2), seeds="ab"), TypeError, "seeds must be"),
    (dict(x=torch.ones(2), flag="yes"), TypeError, "flag must be a bool"),
    (dict(x=torch.ones(2), name=3), TypeError, "name must be a str"),
])
def test_boundary_refuses_bad_arguments_naming_function_and_argument(kw, error, word):
    with pytest.raises(error, match=word) as info:
        _probe(**kw)
    assert str(info.value).startswith("_probe(): ")


def test_boundary_passes_good_arguments_and_trusts_defaults():
    assert _probe(torch.ones(3, 2)) == "ran"
    assert _probe(torch.ones(3, 2), torch.arange(3), 2, 0.5, [1, 2], True, "b", fn=3) == "ran"
    assert _probe.__wrapped__(None) == "ran"  # the undecorated function stays reachable
    with pytest.raises(TypeError, match="_probe\\(\\): .*zz"):
        _probe(torch.ones(2), zz=1)


def test_boundary_refuses_a_constraint_for_an_unknown_argument():
    with pytest.raises(TypeError, match="no such argument"):
        boundary(q=count())(lambda x: x)
    with pytest.raises(TypeError, match="Constraint"):
        boundary(x=3)
