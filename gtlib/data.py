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
import threading
import uuid
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from .checks import (
    Interval,
    check_finite,
    check_fraction,
    check_indices,
    check_int,
    check_labels,
    check_seed,
)
from .config import read_cache_dir, read_device

__all__ = [
    # datasets
    "CacheWarning",
    "Dataset",
    "MNIST1D_MAX_SAMPLES",
    "digits",
    "mnist1d",
    # what the chapters do to them
    "corrupt_labels",
    "long_tail_indices",
    "long_tailed",
]


#: signal length of MNIST-1D (the generator's ``final_seq_length``)
MNIST1D_LENGTH = 40
MNIST1D_CLASSES = 10
#: largest n_train + n_test (generation takes ~0.25 ms per signal)
MNIST1D_MAX_SAMPLES = 200_000
_CACHE_VERSION = "mnist1d-v2"
_GENERATE = (
    threading.Lock()
)  # make_dataset reseeds numpy's global RNG: one thread at a time


class CacheWarning(UserWarning):
    """A cache file was unreadable or held wrong data; it is regenerated."""


@dataclass(frozen=True)
class Dataset:
    """A supervised dataset as tensors: ``x`` (n, d) float, ``y`` (n,) int64, plus a test split.

    Construction checks what training relies on: 2-D finite float inputs with the same number of
    features and dtype in both splits, int64 labels in ``[0, num_classes)`` with one label per
    row, at least one training row, and every tensor on one device.

    Parameters
    ----------
    x : torch.Tensor
        Training inputs, a 2-D finite float tensor (n, d).
    y : torch.Tensor
        Training labels, int64 (n,) in ``[0, num_classes)``.
    x_test : torch.Tensor
        Test inputs (m, d), same dtype and device as ``x``.
    y_test : torch.Tensor
        Test labels, int64 (m,).
    num_classes : int
        Number of classes, at least 2.
    name : str, default ''
        A short name shown in tables.
    """

    x: torch.Tensor
    y: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    name: str = ""

    def __post_init__(self) -> None:
        check_int("num_classes", self.num_classes, minimum=2)
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {type(self.name).__name__}")
        for xn, yn in (("x", "y"), ("x_test", "y_test")):
            x, y = getattr(self, xn), getattr(self, yn)
            if (
                not isinstance(x, torch.Tensor)
                or not x.is_floating_point()
                or x.ndim != 2
            ):
                raise TypeError(
                    f"{xn} must be a 2-D floating-point torch.Tensor, got "
                    f"{getattr(x, 'dtype', type(x).__name__)} of shape "
                    f"{tuple(getattr(x, 'shape', ()))}"
                )
            if (
                not isinstance(y, torch.Tensor)
                or y.dtype != torch.int64
                or y.ndim != 1
            ):
                raise TypeError(
                    f"{yn} must be a 1-D torch.int64 tensor of labels, got "
                    f"{getattr(y, 'dtype', type(y).__name__)} of shape "
                    f"{tuple(getattr(y, 'shape', ()))}"
                )
            if x.shape[0] != y.shape[0]:
                raise ValueError(
                    f"{xn} and {yn} must have the same number of rows, got "
                    f"{x.shape[0]} and {y.shape[0]}"
                )
            check_finite(xn, x)
            if y.numel():
                check_labels(yn, y, self.num_classes)
        if self.x.shape[0] == 0:
            raise ValueError("x must hold at least one training row")
        if (
            self.x_test.shape[1] != self.x.shape[1]
            or self.x_test.dtype != self.x.dtype
        ):
            raise ValueError(
                f"x_test must match x in features and dtype, got "
                f"{tuple(self.x_test.shape)} {self.x_test.dtype} against "
                f"{tuple(self.x.shape)} {self.x.dtype}"
            )
        devices = {t.device for t in (self.x, self.y, self.x_test, self.y_test)}
        if len(devices) != 1:
            raise ValueError(
                f"all tensors must be on one device, got {sorted(map(str, devices))}"
            )

    @property
    def n(self) -> int:
        return int(self.x.shape[0])

    @property
    def dim(self) -> int:
        return int(self.x.shape[1])

    def to(self, device: str | torch.device) -> "Dataset":
        """Move every tensor to ``device``."""
        try:
            device = torch.device(device)
        except (RuntimeError, TypeError) as e:
            raise ValueError(
                f"device must name a torch device such as 'cpu' or 'cuda', got "
                f"{device!r}"
            ) from e
        return replace(
            self,
            x=self.x.to(device),
            y=self.y.to(device),
            x_test=self.x_test.to(device),
            y_test=self.y_test.to(device),
        )

    def with_labels(self, y: torch.Tensor) -> "Dataset":
        """The same inputs with new training labels (test labels unchanged)."""
        if not isinstance(y, torch.Tensor) or y.shape != self.y.shape:
            raise ValueError(f"y must be a tensor of shape {tuple(self.y.shape)}")
        if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
            raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
        return replace(self, y=y.to(self.y.device, torch.int64))

    def subset(self, idx) -> "Dataset":
        """The training points at ``idx`` (integer indices in ``[0, n)``; test split unchanged).

        At least one index is needed: a dataset always has a training row.
        """
        idx = check_indices("idx", idx, self.n).to(self.x.device)
        if idx.numel() == 0:
            raise ValueError(
                "idx must hold at least one index (a dataset needs a training row), "
                "got none"
            )
        return replace(self, x=self.x[idx], y=self.y[idx])


# ------------------------------------------------------------------------------------------------
# MNIST-1D with a cache that never executes code
# ------------------------------------------------------------------------------------------------
def _digest(x: np.ndarray, y: np.ndarray, key: str) -> np.ndarray:
    """SHA-256 of the request and the arrays' bytes, stored with them to catch corruption."""
    h = hashlib.sha256(key.encode())
    for a in (x, y):
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return np.frombuffer(h.digest(), dtype=np.uint8).copy()


def _validate_arrays(x, y, digest, num_samples: int, key: str) -> str | None:
    """Why the cached arrays cannot be the request's data (None when they pass every check)."""
    if not (isinstance(x, np.ndarray) and x.dtype == np.float32 and x.ndim == 2):
        return f"x is not a 2-D float32 array ({getattr(x, 'dtype', None)})"
    if x.shape != (num_samples, MNIST1D_LENGTH):
        return f"x has shape {x.shape}, expected {(num_samples, MNIST1D_LENGTH)}"
    if not np.isfinite(x).all():
        return "x holds NaN or inf"
    if not (
        isinstance(y, np.ndarray)
        and y.dtype == np.int64
        and y.shape == (num_samples,)
    ):
        return f"y is not an int64 array of shape {(num_samples,)}"
    if y.size and (int(y.min()) < 0 or int(y.max()) >= MNIST1D_CLASSES):
        return f"labels outside [0, {MNIST1D_CLASSES})"
    per_class = np.bincount(y, minlength=MNIST1D_CLASSES)
    if not (per_class == num_samples // MNIST1D_CLASSES).all():
        return f"class counts {per_class.tolist()} are not {num_samples // MNIST1D_CLASSES} each"
    if not np.array_equal(digest, _digest(x, y, key)):
        return "the checksum does not match the arrays"
    return None


def _load_cached(path: Path, num_samples: int, key: str):
    """The arrays cached at ``path``, or None (with a warning naming the file) if it is bad."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if sorted(z.files) != ["digest", "x", "y"]:
                raise ValueError(f"unexpected entries {sorted(z.files)}")
            x, y, digest = z["x"], z["y"], z["digest"]
    except (
        Exception
    ) as e:  # truncated, empty, zeroed, pickled, wrong entries: never executed
        reason = f"unreadable ({type(e).__name__}: {e})"
    else:
        reason = _validate_arrays(x, y, digest, num_samples, key)
        if reason is None:
            return x, y
    warnings.warn(
        f"gtlib: the MNIST-1D cache file {path} is bad ({reason}); it is replaced by "
        "freshly generated data",
        CacheWarning,
        stacklevel=3,
    )
    return None


def _write_cache(path: Path, x: np.ndarray, y: np.ndarray, key: str) -> None:
    """Write atomically: a unique temporary file in the same folder, then one rename, so parallel
    notebooks generating the same file never see a partial one."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(
            f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        )
        try:
            with open(tmp, "wb") as fh:
                np.savez(fh, x=x, y=y, digest=_digest(x, y, key))
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()
    except OSError as e:  # a read-only or full disk: work without the cache
        warnings.warn(
            f"gtlib: could not write the MNIST-1D cache file {path} ({e}); "
            "continuing without caching",
            CacheWarning,
            stacklevel=3,
        )


def _mnist1d_arrays(num_samples: int, data_seed: int, cache_dir: Path):
    """Generate (or load from the cache) ``num_samples`` MNIST-1D signals with their labels.

    The cache holds plain arrays (``np.savez``, read with ``allow_pickle=False``), so a crafted
    file cannot run code; on load the arrays are checked against the request (shape, dtype,
    finiteness, label range and class balance) and against a stored SHA-256 checksum. A bad file
    is reported (:class:`CacheWarning`, naming the file), regenerated and replaced.
    """
    key = f"{_CACHE_VERSION}-{num_samples}-{data_seed}"
    tag = hashlib.sha1(key.encode()).hexdigest()[:12]
    path = Path(cache_dir) / f"mnist1d_{num_samples}_{data_seed}_{tag}.npz"
    if path.exists():
        cached = _load_cached(path, num_samples, key)
        if cached is not None:
            return cached
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples = num_samples
    args.seed = data_seed
    args.train_split = 1.0
    with _GENERATE:
        np_state, py_state = np.random.get_state(), random.getstate()
        try:  # mnist1d reseeds the global RNGs: leave the caller's streams alone
            d = make_dataset(args)
        finally:
            np.random.set_state(np_state)
            random.setstate(py_state)
    x, y = d["x"].astype(np.float32), d["y"].astype(np.int64)
    _write_cache(path, x, y, key)
    return x, y


def mnist1d(
    n_train: int = 4000,
    n_test: int = 1000,
    data_seed: int = 42,
    device: str | None = None,
) -> Dataset:
    """MNIST-1D with ``n_train`` training and ``n_test`` test signals of length 40.

    The signals come from ``mnist1d.data.make_dataset`` (Greydanus and Kobak 2024), never from the
    internet; the default ``data_seed=42`` and 4000/1000 split are the dataset's own defaults.
    Samples are class-balanced up to rounding, standardized over the whole generated set (of
    ``n_train + n_test`` rounded up to a multiple of 10). The training split is the first
    ``n_train`` generated signals and the test split the next ``n_test``, so the two never share a
    signal. ``device`` defaults to ``GTLIB_DEVICE``.

    Parameters
    ----------
    n_train : int, default 4000
        Number of training signals.
    n_test : int, default 1000
        Number of test signals.
    data_seed : int, default 42
        Seed of the generator of ``mnist1d`` (42 is the dataset's own).
    device : str | None, default None
        Device of the tensors (default: ``GTLIB_DEVICE``).

    Returns
    -------
    Dataset
        The two splits, inputs of shape (n, 40), 10 classes.

    Raises
    ------
    TypeError, ValueError
        If a size is not a positive int, ``n_train + n_test`` exceeds
        :data:`MNIST1D_MAX_SAMPLES`, or ``data_seed`` is not in ``[0, 2**32)``.

    References
    ----------
    Greydanus and Kobak (2024), "Scaling down deep learning with MNIST-1D".
    """
    n_train = check_int("n_train", n_train)
    n_test = check_int("n_test", n_test)
    data_seed = int(Interval(int, 0, 2**32 - 1).check("data_seed", data_seed))
    total = n_train + n_test
    if total > MNIST1D_MAX_SAMPLES:
        raise ValueError(
            f"n_train + n_test must be <= {MNIST1D_MAX_SAMPLES}, got {total}"
        )
    # make_dataset draws num_samples // 10 per class: round up so that we can take exactly `total`
    num_samples = int(np.ceil(total / 10) * 10)
    x, y = _mnist1d_arrays(num_samples, data_seed, read_cache_dir())
    x, y = torch.from_numpy(x[:total]), torch.from_numpy(y[:total])
    ds = Dataset(
        x=x[:n_train],
        y=y[:n_train],
        x_test=x[n_train:],
        y_test=y[n_train:],
        num_classes=MNIST1D_CLASSES,
        name="MNIST-1D",
    )
    return ds.to(device or read_device())


def digits(
    test_fraction: float = 0.25, seed: int = 0, device: str | None = None
) -> Dataset:
    """The 8x8 handwritten digits bundled with scikit-learn, as a :class:`Dataset`.

    scikit-learn's bundled 8x8 handwritten digits (1797 images, 64 features scaled to [0, 1]).

    Parameters
    ----------
    test_fraction : float, default 0.25
        Fraction of the 1797 images held out as the test split.
    seed : int, default 0
        Seed of the train/test split.
    device : str | None, default None
        Device of the tensors (default: ``GTLIB_DEVICE``).

    Returns
    -------
    Dataset
        The digits, 64 features scaled to [0, 1], 10 classes.
    """
    from sklearn.datasets import load_digits

    test_fraction = check_fraction(
        "test_fraction", test_fraction, open_interval=True
    )
    seed = check_seed("seed", seed)
    data = load_digits()
    x = torch.tensor(data.data / 16.0, dtype=torch.float32)
    y = torch.tensor(data.target, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_test = int(round(test_fraction * len(y)))
    te, tr = perm[:n_test], perm[n_test:]
    ds = Dataset(
        x=x[tr], y=y[tr], x_test=x[te], y_test=y[te], num_classes=10, name="digits"
    )
    return ds.to(device or read_device())


def corrupt_labels(
    y: torch.Tensor, fraction: float, num_classes: int, seed: int = 0
) -> torch.Tensor:
    """Replace a ``fraction`` of the labels by uniformly random labels, fixed once.

    As in Zhang et al., a corrupted label is drawn uniformly from all classes, so it may coincide
    with the true one: at ``fraction=1`` the labels are independent of the inputs, and about
    ``fraction * (1 - 1/num_classes)`` of them differ from the truth. The same ``seed`` corrupts the
    same points, and the points corrupted at a smaller fraction are a subset of those at a larger one.

    Parameters
    ----------
    y : torch.Tensor
        The labels, a 1-D integer tensor.
    fraction : float
        The fraction of labels replaced, in [0, 1].
    num_classes : int
        Number of classes (>= 2); random labels are drawn from all of them.
    seed : int, default 0
        Seed of the choice of points and of their labels.

    Returns
    -------
    torch.Tensor
        A new label tensor (``y`` is not modified).

    Raises
    ------
    TypeError, ValueError
        If ``y`` is not a 1-D integer tensor, ``fraction`` is outside [0, 1] or ``num_classes`` < 2.

    References
    ----------
    Zhang, Bengio, Hardt, Recht and Vinyals (2017), "Understanding deep learning requires rethinking
    generalization" (its randomization tests).
    """
    if not isinstance(y, torch.Tensor) or y.ndim != 1 or y.is_floating_point():
        raise TypeError("y must be a 1-D integer torch.Tensor")
    fraction = check_fraction("fraction", fraction)
    num_classes = check_int("num_classes", num_classes, minimum=2)
    seed = check_seed("seed", seed)
    if y.numel() == 0:
        raise ValueError("y must hold at least one label, got an empty tensor")
    if int(y.min()) < 0 or int(y.max()) >= num_classes:
        raise ValueError(
            f"y must hold labels in [0, {num_classes}), got range "
            f"[{int(y.min())}, {int(y.max())}]"
        )
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(y), generator=g)
    random_labels = torch.randint(num_classes, (len(y),), generator=g)
    k = int(round(fraction * len(y)))
    out = y.clone().cpu()
    out[order[:k]] = random_labels[order[:k]].to(
        out.dtype
    )  # int32 labels stay int32
    return out.to(y.device)


def long_tail_indices(
    y: torch.Tensor, imbalance_ratio: float, num_classes: int, seed: int = 0
) -> torch.Tensor:
    """Indices of a long-tailed subsample of the labels ``y``.

    Indices of a long-tailed subsample: class k keeps ``n_max * ratio ** (-k / (C - 1))`` points.

    Class 0 is the head (keeps all of the smallest class count ``n_max``) and class ``C - 1`` the
    tail (keeps ``n_max / imbalance_ratio``), the exponential profile of the long-tailed CIFAR
    benchmarks. ``imbalance_ratio=1`` gives a balanced subsample.

    Parameters
    ----------
    y : torch.Tensor
        The labels, a 1-D integer tensor.
    imbalance_ratio : float
        Head-to-tail ratio of class sizes, a finite number >= 1.
    num_classes : int
        Number of classes ``C``.
    seed : int, default 0
        Seed of the choice of points within each class.

    Returns
    -------
    torch.Tensor
        The kept indices into ``y``, a 1-D int64 tensor.

    Raises
    ------
    TypeError, ValueError
        If ``imbalance_ratio`` is not a finite number >= 1, ``y`` not integer labels in
        ``[0, num_classes)``, or a class is missing from ``y``.
    """
    imbalance_ratio = float(
        Interval(float, 1).check("imbalance_ratio", imbalance_ratio)
    )
    num_classes = check_int("num_classes", num_classes, minimum=2)
    if not isinstance(y, torch.Tensor) or y.ndim != 1:
        raise TypeError("y must be a 1-D integer torch.Tensor")
    check_labels("y", y, num_classes)
    seed = check_seed("seed", seed)
    y_cpu = y.cpu()
    counts = torch.bincount(y_cpu, minlength=num_classes)
    if int(counts.min()) == 0:
        raise ValueError("every class must appear in y")
    n_max = int(counts.min())
    g = torch.Generator().manual_seed(seed)
    keep = []
    for k in range(num_classes):
        n_k = max(
            1, int(round(n_max * float(imbalance_ratio) ** (-k / (num_classes - 1))))
        )
        members = torch.nonzero(y_cpu == k).flatten()
        keep.append(members[torch.randperm(len(members), generator=g)[:n_k]])
    return torch.sort(torch.cat(keep)).values.to(y.device)


def long_tailed(ds: Dataset, imbalance_ratio: float, seed: int = 0) -> Dataset:
    """``ds`` with its training split subsampled to a long tail.

    ``ds`` with its training split subsampled by :func:`long_tail_indices` (test split kept balanced).

    Parameters
    ----------
    ds : Dataset
        The balanced dataset.
    imbalance_ratio : float
        Head-to-tail ratio of class sizes (>= 1).
    seed : int, default 0
        Seed of the subsample.

    Returns
    -------
    Dataset
        A new dataset with the long-tailed training split and the original test split.
    """
    if not isinstance(ds, Dataset):
        raise TypeError(f"ds must be a gtlib.data.Dataset, got {type(ds).__name__}")
    return ds.subset(long_tail_indices(ds.y, imbalance_ratio, ds.num_classes, seed))
