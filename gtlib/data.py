"""Datasets of the book: MNIST-1D (generated offline), scikit-learn's digits, and two transforms
every chapter reuses: label corruption (Zhang et al. 2017) and long-tailed subsampling.

MNIST-1D (Greydanus and Kobak, ICML 2024) is a procedurally generated 1-D analogue of MNIST:
ten 12-point templates are padded, sheared, scaled, translated and corrupted by correlated and
i.i.d. noise into 40-point signals. It is generated here from the ``mnist1d`` package's own
generator (no download) and cached on disk.
"""
from __future__ import annotations

import hashlib
import os
import random
import uuid
import pickle
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from .checks import check_fraction, check_int
from .config import settings


@dataclass(frozen=True)
class Dataset:
    """A supervised dataset as tensors: ``x`` (n, d) float32, ``y`` (n,) int64, plus a test split."""

    x: torch.Tensor
    y: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    name: str = ""

    @property
    def n(self) -> int:
        return int(self.x.shape[0])

    @property
    def dim(self) -> int:
        return int(self.x.shape[1])

    def to(self, device: str | torch.device) -> "Dataset":
        """Move every tensor to ``device``."""
        return replace(self, x=self.x.to(device), y=self.y.to(device),
                       x_test=self.x_test.to(device), y_test=self.y_test.to(device))

    def with_labels(self, y: torch.Tensor) -> "Dataset":
        """The same inputs with new training labels (test labels unchanged)."""
        if not isinstance(y, torch.Tensor) or y.shape != self.y.shape:
            raise ValueError(f"y must be a tensor of shape {tuple(self.y.shape)}")
        return replace(self, y=y.to(self.y.device, torch.int64))

    def subset(self, idx) -> "Dataset":
        """The training points at ``idx`` (test split unchanged)."""
        idx = torch.as_tensor(idx, dtype=torch.int64, device=self.x.device)
        return replace(self, x=self.x[idx], y=self.y[idx])


def _mnist1d_arrays(num_samples: int, data_seed: int, cache_dir: Path):
    """Generate (or load from the cache) ``num_samples`` MNIST-1D signals with their labels."""
    from mnist1d.data import get_dataset_args, make_dataset

    key = hashlib.sha1(f"mnist1d-v1-{num_samples}-{data_seed}".encode()).hexdigest()[:12]
    path = cache_dir / f"mnist1d_{num_samples}_{data_seed}_{key}.pkl"
    if path.exists():
        with open(path, "rb") as fh:
            return pickle.load(fh)
    args = get_dataset_args()
    args.num_samples = num_samples
    args.seed = data_seed
    args.train_split = 1.0
    np_state, py_state = np.random.get_state(), random.getstate()
    try:  # mnist1d reseeds the global RNGs: leave the caller's streams alone
        d = make_dataset(args)
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
    arrays = (d["x"].astype(np.float32), d["y"].astype(np.int64))
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "wb") as fh:
        pickle.dump(arrays, fh)
    tmp.replace(path)  # atomic: parallel notebooks may generate the same file
    return arrays


def mnist1d(n_train: int = 4000, n_test: int = 1000, data_seed: int = 42,
            device: str | None = None) -> Dataset:
    """MNIST-1D with ``n_train`` training and ``n_test`` test signals of length 40.

    The signals come from ``mnist1d.data.make_dataset`` (Greydanus and Kobak 2024), never from the
    internet; the default ``data_seed=42`` and 4000/1000 split are the dataset's own defaults.
    Samples are class-balanced up to rounding, standardized over the whole generated set.

    Raises
    ------
    TypeError, ValueError
        If a size is not a positive int.
    """
    n_train = check_int("n_train", n_train)
    n_test = check_int("n_test", n_test)
    data_seed = check_int("data_seed", data_seed, minimum=0)
    total = n_train + n_test
    # make_dataset draws num_samples // 10 per class: round up so that we can take exactly `total`
    num_samples = int(np.ceil(total / 10) * 10)
    x, y = _mnist1d_arrays(num_samples, data_seed, settings().cache_dir)
    x, y = torch.from_numpy(x[:total]), torch.from_numpy(y[:total])
    ds = Dataset(x=x[:n_train], y=y[:n_train], x_test=x[n_train:], y_test=y[n_train:],
                 num_classes=10, name="MNIST-1D")
    return ds.to(device or settings().device)


def digits(test_fraction: float = 0.25, seed: int = 0, device: str | None = None) -> Dataset:
    """scikit-learn's bundled 8x8 handwritten digits (1797 images, 64 features scaled to [0, 1])."""
    from sklearn.datasets import load_digits

    test_fraction = check_fraction("test_fraction", test_fraction, open_interval=True)
    data = load_digits()
    x = torch.tensor(data.data / 16.0, dtype=torch.float32)
    y = torch.tensor(data.target, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_test = int(round(test_fraction * len(y)))
    te, tr = perm[:n_test], perm[n_test:]
    ds = Dataset(x=x[tr], y=y[tr], x_test=x[te], y_test=y[te], num_classes=10, name="digits")
    return ds.to(device or settings().device)


def corrupt_labels(y: torch.Tensor, fraction: float, num_classes: int, seed: int = 0) -> torch.Tensor:
    """Replace a ``fraction`` of the labels by uniformly random labels, fixed once (Zhang et al. 2017).

    As in Zhang et al., a corrupted label is drawn uniformly from all classes, so it may coincide
    with the true one: at ``fraction=1`` the labels are independent of the inputs, and about
    ``fraction * (1 - 1/num_classes)`` of them differ from the truth. The same ``seed`` corrupts the
    same points, and the points corrupted at a smaller fraction are a subset of those at a larger one.

    Raises
    ------
    TypeError, ValueError
        If ``y`` is not a 1-D integer tensor, ``fraction`` is outside [0, 1] or ``num_classes`` < 2.
    """
    if not isinstance(y, torch.Tensor) or y.ndim != 1 or y.is_floating_point():
        raise TypeError("y must be a 1-D integer torch.Tensor")
    fraction = check_fraction("fraction", fraction)
    num_classes = check_int("num_classes", num_classes, minimum=2)
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= num_classes):
        raise ValueError(f"y must hold labels in [0, {num_classes}), got range "
                         f"[{int(y.min())}, {int(y.max())}]")
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(y), generator=g)
    random_labels = torch.randint(num_classes, (len(y),), generator=g)
    k = int(round(fraction * len(y)))
    out = y.clone().cpu()
    out[order[:k]] = random_labels[order[:k]]
    return out.to(y.device)


def long_tail_indices(y: torch.Tensor, imbalance_ratio: float, num_classes: int,
                      seed: int = 0) -> torch.Tensor:
    """Indices of a long-tailed subsample: class k keeps ``n_max * ratio ** (-k / (C - 1))`` points.

    Class 0 is the head (keeps all of the smallest class count ``n_max``) and class ``C - 1`` the
    tail (keeps ``n_max / imbalance_ratio``), the exponential profile of the long-tailed CIFAR
    benchmarks. ``imbalance_ratio=1`` gives a balanced subsample.

    Raises
    ------
    ValueError
        If ``imbalance_ratio`` < 1 or a class is missing from ``y``.
    """
    if isinstance(imbalance_ratio, bool) or not isinstance(imbalance_ratio, (int, float, np.number)):
        raise TypeError("imbalance_ratio must be a number >= 1")
    if imbalance_ratio < 1:
        raise ValueError(f"imbalance_ratio must be >= 1, got {imbalance_ratio}")
    if not isinstance(y, torch.Tensor) or y.ndim != 1:
        raise TypeError("y must be a 1-D integer torch.Tensor")
    num_classes = check_int("num_classes", num_classes, minimum=2)
    y_cpu = y.cpu()
    counts = torch.bincount(y_cpu, minlength=num_classes)
    if int(counts.min()) == 0:
        raise ValueError("every class must appear in y")
    n_max = int(counts.min())
    g = torch.Generator().manual_seed(seed)
    keep = []
    for k in range(num_classes):
        n_k = max(1, int(round(n_max * float(imbalance_ratio) ** (-k / (num_classes - 1)))))
        members = torch.nonzero(y_cpu == k).flatten()
        keep.append(members[torch.randperm(len(members), generator=g)[:n_k]])
    return torch.sort(torch.cat(keep)).values.to(y.device)


def long_tailed(ds: Dataset, imbalance_ratio: float, seed: int = 0) -> Dataset:
    """``ds`` with its training split subsampled by :func:`long_tail_indices` (test split kept balanced)."""
    return ds.subset(long_tail_indices(ds.y, imbalance_ratio, ds.num_classes, seed))
