"""Tests of gtlib.uniform.common, the input checks the sections share: one integer check
for every chapter, each call of gtlib.checks.check_int stating its minimum."""

from gtlib import uniform as U
from gtlib.uniform import (
    common,
    linear,
    margin,
    norms,
    power_law,
    randomization,
    spheres,
)


# =================================================================================================
# one integer check for every chapter (gtlib.checks.check_int)
# =================================================================================================
def test_one_integer_check():
    # one integer check for every chapter: uniform's own _int helper is gone, and every
    # call of gtlib.checks.check_int states its minimum
    import inspect
    import re

    assert not hasattr(U, "_int")
    source = "".join(
        inspect.getsource(m)
        for m in (common, randomization, norms, power_law, margin, linear, spheres)
    )
    calls = re.findall(r"check_int\(([^()]*(?:\([^()]*\)[^()]*)*)\)", source)
    assert len(calls) > 10
    assert all("minimum=" in c for c in calls), [
        c for c in calls if "minimum=" not in c
    ]
