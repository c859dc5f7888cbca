"""Every config of gtlib refuses NaN, infinities, wrong types and unknown names in every field,
naming the config and the field (issue 19): one generic test over all of them."""
import dataclasses
import importlib
import math
import pkgutil

import pytest

import gtlib
from gtlib.checks import Interval, Options, Sequence
from gtlib.config import Config


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
        bad = [math.inf, math.nan, "1", True] if constraint.kind is float else [1.5, "1", True]
        if constraint.low is not None:
            bad.append(constraint.low - 1)
        return bad
    if isinstance(constraint, Options):
        return ["not-an-option", 3]
    if isinstance(constraint, Sequence):
        return ["abc", 3.0, [math.nan]]
    return [object()]


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_field_refuses_bad_values_naming_it(cls):
    assert CONFIGS, "no configs found"
    for f in dataclasses.fields(cls):
        for bad in _bad_values(f.metadata["constraint"]):
            with pytest.raises((TypeError, ValueError), match=rf"{cls.__name__}\.{f.name}"):
                cls(**{f.name: bad})


def test_the_configs_the_issue_names_are_covered():
    names = {c.__name__ for c in CONFIGS}
    assert {"TrainConfig", "Recipe", "ContrastiveConfig", "PrelimConfig", "TheoryConfig",
            "DefaultConfig", "DistillConfig", "Mnist1dConfig", "PolyConfig", "GPConfig",
            "RFConfig", "MLPSweepConfig", "CompressionConfig", "LongTailConfig",
            "ConnectivityConfig", "CorruptionConfig", "MarginSweepConfig",
            "SpheresConfig"} <= names
