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
