"""Reference implementations and small helpers that several test modules of gtlib.soft use."""

import numpy as np
import pytest
import torch

from gtlib.data import Dataset


def _tiny_dataset(n=80, n_test=40, seed=0):
    from gtlib.data import Dataset

    g = torch.Generator().manual_seed(seed)
    return Dataset(
        torch.randn(n, 40, generator=g),
        torch.randint(0, 10, (n,), generator=g),
        torch.randn(n_test, 40, generator=g),
        torch.randint(0, 10, (n_test,), generator=g),
        10,
    )


def _dataset(n=40, n_test=24, seed=0, classes=3, length=40):
    g = torch.Generator().manual_seed(seed)
    return Dataset(
        torch.randn(n, length, generator=g),
        torch.randint(0, classes, (n,), generator=g),
        torch.randn(n_test, length, generator=g),
        torch.randint(0, classes, (n_test,), generator=g),
        classes,
    )


def _close(a, b, rtol, atol):
    """Tensors close (numpy's check: torch.testing's first call costs seconds of imports)."""
    np.testing.assert_allclose(
        a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol
    )


def _differs(a, b) -> bool:
    """Whether two to_dict() trees differ anywhere (numbers compared exactly)."""
    if isinstance(a, dict):
        return a.keys() != b.keys() or any(_differs(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) != len(b) or any(_differs(u, v) for u, v in zip(a, b))
    return a != b


def _raises(error, name, fn, *args, **kwargs):
    with pytest.raises(error, match=name):
        fn(*args, **kwargs)
