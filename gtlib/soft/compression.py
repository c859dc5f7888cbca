"""Compression bounds (Lotfi et al. 2022; gtlib.soft, section 6).

Training in a random subspace (Li et al. 2018), quantization, a real adaptive arithmetic coder,
prefix-free integer codes, and the countable-hypothesis bound
``R(h) <= R_hat(h) + sqrt((K(h) ln 2 + ln(1/delta)) / (2n))`` (Wilson's Eq. 1), next to a
parameter-counting bound and a PAC-Bayes kl bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import (
    SEED,
    Constraint,
    Options,
    Tensor,
    boundary,
    check_int,
    check_labels,
    count,
    fraction,
    nonnegative,
    positive,
    tuple_of,
)
from ..config import Config, Result, param
from ..data import Dataset, corrupt_labels
from ..engine import StackedOptimizer, StreamBatches, fit
from .common import _ARR, _Array, _XY, _fits, _pos, _vec

__all__ = [
    # configs and results
    "CompressionConfig",
    # functions
    "bits_at_fit",
    "countable_bound",
    "counting_bound",
    "kl_inverse",
    "pac_bayes_kl_bound",
    "run_compression",
]


class _Bits(Constraint):
    """A non-empty list/tuple/array of bits (ints 0 and 1)."""

    def describe(self) -> str:
        return "a non-empty list of bits (0s and 1s)"

    def check(self, name: str, value):
        if (
            value is None
            or isinstance(value, (str, bytes, dict, set))
            or not hasattr(value, "__len__")
        ):
            self._fail(name, value, TypeError)
        if len(value) == 0:
            self._fail(name, value)
        arr = np.asarray(value)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            self._fail(name, value, TypeError)
        if not np.all((arr == 0) | (arr == 1)):
            self._fail(name, value)
        return value


@boundary(n=count())
def elias_gamma(n: int) -> list[int]:
    """The Elias gamma code of a positive integer: a prefix-free code of ``2 floor(log2 n) + 1`` bits."""
    n = check_int("n", n, 1)
    b = bin(n)[2:]
    return [0] * (len(b) - 1) + [int(c) for c in b]


@boundary(bits=_Bits(), pos=count(0))
def elias_gamma_decode(bits, pos: int = 0) -> tuple[int, int]:
    """Decode one Elias gamma integer from ``bits`` at ``pos``; return ``(n, next_pos)``."""
    if pos >= len(bits):
        raise ValueError(f"pos must be < len(bits) = {len(bits)}, got {pos}")
    zeros = 0
    while pos + zeros < len(bits) and bits[pos + zeros] == 0:
        zeros += 1
    if pos + 2 * zeros + 1 > len(bits):
        raise ValueError(
            f"bits ends inside an Elias gamma code (it starts at {pos} with {zeros} "
            f"zeros and needs {2 * zeros + 1} bits; {len(bits) - pos} are left)"
        )
    val = 0
    for b in bits[pos + zeros : pos + 2 * zeros + 1]:
        val = 2 * val + int(b)
    return val, pos + 2 * zeros + 1


_PREC = 32
_FULL = (1 << _PREC) - 1
_HALF = 1 << (_PREC - 1)
_QUARTER = 1 << (_PREC - 2)


@boundary(symbols=_Array(integer=True, empty=True), alphabet_size=count())
def arithmetic_encode(symbols, alphabet_size: int) -> list[int]:
    """Adaptive arithmetic code (Witten, Neal and Cleary 1987) of a symbol sequence, as a bit list.

    The model is adaptive Laplace: symbol ``s`` has probability ``(count_s + 1) / (t + A)`` after
    ``t`` symbols, so the decoder needs no table, only ``alphabet_size`` and the number of symbols.
    Integer arithmetic with 32-bit registers; the code length is within a few bits of
    ``-sum log2 p(s_t)``.
    """
    A = check_int("alphabet_size", alphabet_size, 1)
    symbols = [int(s) for s in symbols]
    if any(s < 0 or s >= A for s in symbols):
        raise ValueError(f"symbols must lie in [0, {A})")
    counts = [1] * A
    total = A
    low, high, pending, out = 0, _FULL, 0, []

    def emit(bit):
        nonlocal pending
        out.append(bit)
        out.extend([1 - bit] * pending)
        pending = 0

    for s in symbols:
        rng = high - low + 1
        c_lo = sum(counts[:s])
        high = low + rng * (c_lo + counts[s]) // total - 1
        low = low + rng * c_lo // total
        while True:
            if high < _HALF:
                emit(0)
            elif low >= _HALF:
                emit(1)
                low -= _HALF
                high -= _HALF
            elif low >= _QUARTER and high < _HALF + _QUARTER:
                pending += 1
                low -= _QUARTER
                high -= _QUARTER
            else:
                break
            low, high = 2 * low, 2 * high + 1
        counts[s] += 1
        total += 1
    pending += 1
    emit(0 if low < _QUARTER else 1)
    return out


@boundary(bits=_Bits(), n_symbols=count(0), alphabet_size=count())
def arithmetic_decode(bits, n_symbols: int, alphabet_size: int) -> list[int]:
    """Invert :func:`arithmetic_encode` given the number of symbols and the alphabet size."""
    A = check_int("alphabet_size", alphabet_size, 1)
    n_symbols = check_int("n_symbols", n_symbols, 0)
    bits = list(bits)
    pos = 0

    def next_bit():
        nonlocal pos
        b = bits[pos] if pos < len(bits) else 0
        pos += 1
        return b

    counts = [1] * A
    total = A
    low, high, value = 0, _FULL, 0
    for _ in range(_PREC):
        value = 2 * value + next_bit()
    out = []
    for _ in range(n_symbols):
        rng = high - low + 1
        target = ((value - low + 1) * total - 1) // rng
        s, c_lo = 0, 0
        while c_lo + counts[s] <= target:
            c_lo += counts[s]
            s += 1
        high = low + rng * (c_lo + counts[s]) // total - 1
        low = low + rng * c_lo // total
        while True:
            if high < _HALF:
                pass
            elif low >= _HALF:
                low -= _HALF
                high -= _HALF
                value -= _HALF
            elif low >= _QUARTER and high < _HALF + _QUARTER:
                low -= _QUARTER
                high -= _QUARTER
                value -= _QUARTER
            else:
                break
            low, high, value = 2 * low, 2 * high + 1, 2 * value + next_bit()
        out.append(s)
        counts[s] += 1
        total += 1
    return out


@boundary(z=_ARR, levels=count(), iters=count())
def quantize(z, levels: int, iters: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """1-D k-means (Lloyd) quantization of ``z`` to ``levels`` float32 centres.

    Returns ``(centres, symbols)`` with ``centres[symbols]`` the quantized vector. Centres start at
    evenly spaced quantiles; empty clusters keep their previous centre.
    """
    z = _vec("z", z)
    levels = check_int("levels", levels, 1)
    c = np.quantile(z, (np.arange(levels) + 0.5) / levels)
    for _ in range(iters):
        sym = np.abs(z[:, None] - c[None, :]).argmin(1)
        for j in range(levels):
            if np.any(sym == j):
                c[j] = z[sym == j].mean()
    c = np.sort(c).astype(np.float32)
    sym = np.abs(z[:, None] - c[None, :].astype(np.float64)).argmin(1)
    return c, sym


@boundary(centres=_ARR, symbols=_Array(integer=True))
def encode_quantized(centres, symbols) -> list[int]:
    """A prefix-free description of a quantized vector: the whole message, as bits.

    Layout: Elias gamma of the length ``d``, Elias gamma of the number of levels ``L``, the ``L``
    centres as raw float32 (32 bits each), then the adaptive arithmetic code of the ``d`` symbols.
    Every field is prefix-free given the earlier ones, so the set of all messages satisfies Kraft's
    inequality, which is all the countable-hypothesis bound needs.
    """
    centres = np.asarray(centres, dtype=np.float32)
    symbols = np.asarray(symbols).astype(np.int64)
    L, d = len(centres), len(symbols)
    if symbols.min() < 0 or symbols.max() >= L:
        raise ValueError(
            f"symbols must index the {L} centres (lie in [0, {L})), got range "
            f"[{symbols.min()}, {symbols.max()}]"
        )
    bits = elias_gamma(d) + elias_gamma(L)
    for c in centres:
        word = int(np.frombuffer(np.float32(c).tobytes(), dtype=np.uint32)[0])
        bits += [(word >> (31 - i)) & 1 for i in range(32)]
    return bits + arithmetic_encode(symbols.tolist(), L)


@boundary(bits=_Bits())
def decode_quantized(bits) -> tuple[np.ndarray, np.ndarray]:
    """Invert :func:`encode_quantized`: return ``(centres, symbols)``."""
    d, pos = elias_gamma_decode(bits, 0)
    if pos >= len(bits):
        raise ValueError("bits ends after the length field (no number of levels)")
    L, pos = elias_gamma_decode(bits, pos)
    if pos + 32 * L >= len(bits):
        raise ValueError(f"bits ends inside the {L} float32 centres")
    centres = []
    for _ in range(L):
        word = 0
        for b in bits[pos : pos + 32]:
            word = 2 * word + int(b)
        centres.append(np.frombuffer(np.uint32(word).tobytes(), dtype=np.float32)[0])
        pos += 32
    return (
        np.array(centres, dtype=np.float32),
        np.array(arithmetic_decode(bits[pos:], d, L)),
    )


_BOUND = dict(train_error=fraction(), n=count(), delta=fraction("neither"))


def _bound_args(train_error: float, n: int, delta: float) -> tuple[int, float]:
    """The arguments every generalization bound shares: an error rate in [0, 1], the sample size
    and the confidence parameter in (0, 1)."""
    if not 0 <= train_error <= 1:
        raise ValueError(f"train_error must lie in [0, 1], got {train_error}")
    n = check_int("n", n, 1)
    delta = _pos("delta", delta)
    if delta >= 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    return n, delta


@boundary(**_BOUND, bits=nonnegative())
def countable_bound(
    train_error: float, bits: float, n: int, delta: float = 0.05
) -> float:
    r"""Wilson (2025), Eq. 1: ``R_hat + sqrt((K ln 2 + ln(1/delta)) / (2n))``.

    Holds with probability ``1 - delta`` simultaneously for every hypothesis with a
    prefix-free description of ``K`` bits (Occam / countable-hypothesis bound;
    Hoeffding plus a union bound weighted by ``2^-K``).

    .. math::

       R(h) \le \hat R(h) + \sqrt{\frac{K(h) \ln 2 + \ln(1/\delta)}{2n}}

    Parameters
    ----------
    train_error : float
        Training error of the hypothesis; a finite number in [0, 1].
    bits : float
        Code length of the hypothesis in bits; a finite number >= 0.
    n : int
        Number of training points; an int >= 1.
    delta : float, default 0.05
        Confidence parameter: the bound holds with probability at least
        ``1 - delta``; a finite number in (0, 1).

    Returns
    -------
    float
        The bound on the population error.

    References
    ----------
    Wilson (2025), "Deep Learning is Not So Mysterious or Different", ICML 2025, Eq.
    1. Lotfi et al. (2022), "PAC-Bayes Compression Bounds So Tight That They Can
    Explain Generalization".
    """
    bits = _pos("bits", bits, allow_zero=True)
    n, delta = _bound_args(train_error, n, delta)
    complexity = bits * math.log(2) + math.log(1 / delta)
    return float(train_error + math.sqrt(complexity / (2 * n)))


@boundary(**_BOUND, n_params=count(), bits_per_param=count())
def counting_bound(
    train_error: float,
    n_params: int,
    n: int,
    bits_per_param: int = 32,
    delta: float = 0.05,
) -> float:
    """The same bound with ``K = bits_per_param * n_params``: counting all float32 networks alike.

    Parameters
    ----------
    train_error : float
        Training error of the hypothesis; a finite number in [0, 1].
    n_params : int
        Number of parameters; an int >= 1.
    n : int
        Number of training points; an int >= 1.
    bits_per_param : int, default 32
        Bits counted per parameter; an int >= 1.
    delta : float, default 0.05
        Confidence parameter: the bound holds with probability at least ``1 - delta``; a finite
        number in (0, 1).

    Returns
    -------
    float
        The bound on the population error.
    """
    n_params = check_int("n_params", n_params, 1)
    bits_per_param = check_int("bits_per_param", bits_per_param, 1)
    return countable_bound(train_error, bits_per_param * n_params, n, delta)


@boundary(q=fraction(), p=fraction())
def kl_bernoulli(q: float, p: float) -> float:
    """``kl(q || p) = q ln(q/p) + (1-q) ln((1-q)/(1-p))`` between Bernoulli means (nats)."""
    out = 0.0
    for a, b in ((q, p), (1 - q, 1 - p)):
        if a > 0:
            out += math.inf if b == 0 else a * math.log(a / b)
    return out


@boundary(q=fraction(), c=nonnegative(), tol=positive())
def kl_inverse(q: float, c: float, tol: float = 1e-12) -> float:
    """The largest ``p`` in ``[q, 1]`` with ``kl(q || p) <= c``.

    Found by bisection to width ``tol``, or until the interval holds no float strictly inside.

    Parameters
    ----------
    q : float
        Empirical error; a finite number in [0, 1].
    c : float
        The bound on ``kl(q || p)``; a finite number >= 0.
    tol : float, default 1e-12
        Tolerance; a finite number > 0.

    Returns
    -------
    float
        ``p``.
    """
    lo, hi = float(q), 1.0
    if kl_bernoulli(q, hi) <= c:
        return 1.0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:  # adjacent floats: a tol below their spacing is met
            break
        lo, hi = (mid, hi) if kl_bernoulli(q, mid) <= c else (lo, mid)
    return hi


@boundary(**_BOUND, kl=nonnegative())
def pac_bayes_kl_bound(
    train_error: float, kl: float, n: int, delta: float = 0.05
) -> float:
    """The McAllester/Maurer PAC-Bayes bound in kl form (Maurer 2004; Seeger 2002).

    With probability ``1 - delta`` over the sample, for every posterior ``Q`` at
    once, ``kl(R_hat(Q) || R(Q)) <= (KL(Q || P) + ln(2 sqrt(n) / delta)) / n``; the
    bound is the largest ``R(Q)`` allowed. A point mass on ``h`` with a prior
    ``P(h) = 2^-K(h)`` has ``KL = K ln 2``: pass ``kl = K * ln 2`` for the
    countable-hypothesis bound in kl form.

    Parameters
    ----------
    train_error : float
        Training error of the hypothesis; a finite number in [0, 1].
    kl : float
        KL divergence of the posterior from the prior, in nats; a finite number >= 0.
    n : int
        Number of training points; an int >= 1.
    delta : float, default 0.05
        Confidence parameter: the bound holds with probability at least
        ``1 - delta``; a finite number in (0, 1).

    Returns
    -------
    float
        The bound on the population error.
    """
    kl = _pos("kl", kl, allow_zero=True)
    n, delta = _bound_args(train_error, n, delta)
    return kl_inverse(train_error, (kl + math.log(2 * math.sqrt(n) / delta)) / n)


class ConvNet1D(torch.nn.Module):
    """A small 1-D CNN for MNIST-1D: three stride-2 convolutions (ReLU) and a linear read-out.

    Convolutions suit MNIST-1D's translated templates (its CNN baseline reaches about 94% test
    accuracy where an MLP reaches about 68%; Greydanus and Kobak 2024).
    """

    @boundary(length=count(8), channels=count(), out_dim=count())
    def __init__(self, length: int = 40, channels: int = 16, out_dim: int = 10):
        super().__init__()
        self.length = length
        self.c1 = torch.nn.Conv1d(1, channels, 5, stride=2, padding=2)
        self.c2 = torch.nn.Conv1d(channels, channels, 3, stride=2, padding=1)
        self.c3 = torch.nn.Conv1d(channels, channels, 3, stride=2, padding=1)
        out_len = length
        for _ in range(3):
            out_len = (out_len + 1) // 2
        self.head = torch.nn.Linear(channels * out_len, out_dim)

    @boundary(x=Tensor("float", 2))
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] != self.length:
            raise ValueError(
                f"x must have {self.length} columns (the signal length), got "
                f"{tuple(x.shape)}"
            )
        h = x.unsqueeze(1)
        for conv in (self.c1, self.c2, self.c3):
            h = F.relu(conv(h))
        return self.head(h.flatten(1))

    def _apply_params(self, x: torch.Tensor, p: dict) -> torch.Tensor:
        """:meth:`forward` with the weights ``p`` (by parameter name) in place of the module's,
        unchecked: the same ``F.conv1d``/``F.linear`` calls the layers make (for training loops
        that must not pay :meth:`forward`'s argument checks every step)."""
        h = x.unsqueeze(1)
        for name in ("c1", "c2", "c3"):
            conv = getattr(self, name)
            h = F.relu(
                F.conv1d(
                    h,
                    p[f"{name}.weight"],
                    p[f"{name}.bias"],
                    conv.stride,
                    conv.padding,
                    conv.dilation,
                    conv.groups,
                )
            )
        return F.linear(h.flatten(1), p["head.weight"], p["head.bias"])


class SubspaceNet(torch.nn.Module):
    """A network whose weights are ``theta_0 + P z``, trained only through ``z`` in R^d (Li et al. 2018).

    ``theta_0`` (PyTorch's default initialization of ``ConvNet1D``) and the dense Gaussian projection
    ``P`` (entries ``N(0, 1/d)``, so each row has unit expected squared norm and a unit
    step in ``z`` moves every weight by about one unit of that coordinate's direction) are fixed by ``seed``, so a decoder that knows the seed
    and the architecture rebuilds the network from ``z`` alone: only ``z`` must be coded.
    """

    @boundary(
        length=count(8), out_dim=count(), dim=count(), channels=count(), seed=SEED
    )
    def __init__(
        self, length: int, out_dim: int, dim: int, channels: int = 16, seed: int = 0
    ):
        super().__init__()
        g = torch.Generator().manual_seed(int(seed))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.base = ConvNet1D(length, channels, out_dim)
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.names = [n for n, _ in self.base.named_parameters()]
        self.shapes = [p.shape for p in self.base.parameters()]
        self.sizes = [p.numel() for p in self.base.parameters()]
        self.register_buffer(
            "theta0", torch.cat([p.reshape(-1) for p in self.base.parameters()])
        )
        self.register_buffer(
            "proj",
            torch.randn(self.theta0.numel(), dim, generator=g) / math.sqrt(dim),
        )
        self.z = torch.nn.Parameter(torch.zeros(dim))

    @property
    def n_params(self) -> int:
        """Parameters of the underlying network (not of the subspace)."""
        return int(self.theta0.numel())

    @boundary(x=Tensor("float", 2), z=Tensor("float", 1, optional=True))
    def forward(
        self, x: torch.Tensor, z: torch.Tensor | None = None
    ) -> torch.Tensor:
        if x.shape[1] != self.base.length:
            raise ValueError(
                f"x must have {self.base.length} columns (the signal length), got "
                f"{tuple(x.shape)}"
            )
        if z is not None and z.shape != self.z.shape:
            raise ValueError(
                f"z must have shape {tuple(self.z.shape)}, got {tuple(z.shape)}"
            )
        return self._forward(x, z)

    def _forward(
        self, x: torch.Tensor, z: torch.Tensor | None = None
    ) -> torch.Tensor:
        """:meth:`forward` without its argument checks (for the training loops)."""
        theta = self.theta0 + self.proj @ (self.z if z is None else z)
        params = {
            n: t.view(s)
            for n, t, s in zip(
                self.names, torch.split(theta, self.sizes), self.shapes
            )
        }
        return self.base._apply_params(x, params)


@dataclass
class CompressionConfig(Config):
    """Subspace training, quantization and arithmetic coding, after Lotfi et al. (2022).

    ``FULL``: more data, channels, subspace dimensions and steps.

    Parameters
    ----------
    n_train : int, default 8000
        Number of training examples; an int >= 1.
    channels : int, default 16
        Channels of the network of the random-label control; an int >= 1.
    sizes : tuple, default (8, 16)
        Channels of the size sweep; a tuple (at least 1 item) of items each an int >= 1.
    dim : int, default 1000
        Dimension of the training subspace; an int >= 1.
    levels : tuple, default (3, 5, 7, 11, 15)
        Quantization levels tried; a tuple (at least 1 item) of items each an int >= 2.
    steps : int, default 1500
        Number of optimizer steps; an int >= 1.
    batch_size : int, default 256
        Minibatch size; an int >= 1.
    tune_steps : int, default 30
        Steps of tuning the quantization centres; an int >= 0.
    lr : float, default 0.02
        Learning rate; a finite number > 0.
    delta : float, default 0.05
        Confidence parameter: the bound holds with probability at least ``1 - delta``; a finite
        number in (0, 1).

    References
    ----------
    Lotfi et al. (2022), "PAC-Bayes Compression Bounds So Tight That They Can Explain Generalization".
    """

    FULL = dict(n_train=40000, channels=32, sizes=(8, 16, 32), dim=2000, steps=6000)

    n_train: int = param(8000, count())
    channels: int = param(16, count())  # the network of the random-label control
    sizes: tuple = param((8, 16), tuple_of(count()))  # channels of the size sweep
    dim: int = param(1000, count())
    levels: tuple = param((3, 5, 7, 11, 15), tuple_of(count(2)))
    steps: int = param(1500, count())
    batch_size: int = param(256, count())
    tune_steps: int = param(30, count(0))
    lr: float = param(0.02, positive())
    delta: float = param(0.05, fraction("neither"))


def _check_data(model: SubspaceNet, x: torch.Tensor, y: torch.Tensor) -> None:
    """Refuse inputs of the wrong length and labels outside the network's classes."""
    if x.shape[1] != model.base.length:
        raise ValueError(
            f"x must have {model.base.length} columns (the signal length), got "
            f"{tuple(x.shape)}"
        )
    check_labels("y", y, model.base.head.out_features, x.shape[0])


@boundary(
    **_XY, steps=count(), lr=positive(), batch_size=count(optional=True), seed=SEED
)
def train_subspace(
    model: SubspaceNet,
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int,
    lr: float,
    batch_size: int | None = None,
    seed: int = 0,
) -> None:
    """Train the subspace coordinates ``z`` of ``model`` in place (Li et al. 2018).

    Adam (Kingma and Ba 2015) on the cross-entropy, the learning rate decayed from ``lr`` to 0
    along a cosine over ``steps`` updates (Loshchilov and Hutter 2017): update ``t`` uses
    ``lr (1 + cos(pi t / steps)) / 2``. Full batch when ``batch_size`` is None or at least the
    number of points; otherwise minibatches drawn without replacement from a permutation seeded by
    ``seed``, a new permutation whenever fewer than ``batch_size`` points are left in the current
    one. A composition of :mod:`gtlib.engine` with one model (no member axis).
    """
    _check_data(model, x, y)
    n = x.shape[0]
    opt = StackedOptimizer([model.z], "adam", lr)
    batches = None
    if batch_size is not None and batch_size < n:
        batches = StreamBatches(
            [n], batch_size, [seed], device=x.device, drop_remainder=True
        )

    def loss(step, batch):
        if batch is None:
            return F.cross_entropy(model._forward(x), y)
        idx = batch[0]
        return F.cross_entropy(model._forward(x[idx]), y[idx])

    fit(
        loss,
        opt,
        steps,
        batches,
        schedule=lambda t: (1 + math.cos(math.pi * t / steps)) / 2,
    )


@boundary(
    **_XY, centres=_ARR, symbols=_Array(integer=True), steps=count(0), lr=positive()
)
def tune_centres(
    model: SubspaceNet,
    x: torch.Tensor,
    y: torch.Tensor,
    centres,
    symbols,
    steps: int = 30,
    lr: float = 0.01,
) -> np.ndarray:
    """Refit the ``L`` quantization centres to the training loss with the assignments held fixed.

    A learned codebook (as in Lotfi et al. 2022's quantization-aware training): only ``L`` numbers
    move, so the code length is unchanged while the quantized network's training error drops.
    ``steps`` full-batch Adam updates (Kingma and Ba 2015) of the centres, through
    :mod:`gtlib.engine`. Returns the new centres as float32.
    """
    _check_data(model, x, y)
    L, d = len(np.asarray(centres)), model.z.numel()
    sym = np.asarray(symbols)
    if sym.shape != (d,):
        raise ValueError(
            f"symbols must hold one symbol per subspace coordinate ({d}), got "
            f"shape {sym.shape}"
        )
    if sym.min() < 0 or sym.max() >= L:
        raise ValueError(
            f"symbols must index the {L} centres (lie in [0, {L})), got range "
            f"[{sym.min()}, {sym.max()}]"
        )
    # a copy: the caller's centres stay as they were
    c = torch.nn.Parameter(
        torch.tensor(np.asarray(centres, dtype=np.float32), device=x.device)
    )
    sym = torch.as_tensor(sym, dtype=torch.int64, device=x.device)
    opt = StackedOptimizer([c], "adam", lr)
    fit(
        lambda step, batch: F.cross_entropy(model._forward(x, c[sym]), y), opt, steps
    )
    return c.detach().cpu().numpy().astype(np.float32)


@boundary(
    **_XY, levels=tuple_of(count()), delta=fraction("neither"), tune_steps=count(0)
)
def compress_and_bound(
    model: SubspaceNet,
    x: torch.Tensor,
    y: torch.Tensor,
    levels,
    delta: float = 0.05,
    tune_steps: int = 30,
) -> dict:
    """Quantize ``z`` at each candidate number of levels, code it, and keep the tightest bound.

    For each ``L``: 1-D k-means, a short refit of the centres (:func:`tune_centres`), then the
    prefix-free code of :func:`encode_quantized`. The number of levels is inside the message, so
    choosing it after seeing the data is paid for by its Elias gamma code. Returns the bound, the
    bits, the quantized training error, the chosen levels, the bits themselves, the symbols and the
    centres, and ``curve``: one ``(levels, bits, quantized training error)`` triple per candidate,
    the code length each fit costs.
    """
    _check_data(model, x, y)
    z = model.z.detach().cpu().numpy().astype(np.float64)
    n = int(y.shape[0])
    best, curve = None, []
    for L in levels:
        centres, sym = quantize(z, int(L))
        if tune_steps:
            centres = tune_centres(model, x, y, centres, sym, tune_steps)
        bits = encode_quantized(centres, sym)
        with torch.no_grad():
            zq = torch.as_tensor(
                centres[sym], dtype=model.z.dtype, device=model.z.device
            )
            err = float((model._forward(x, zq).argmax(1) != y).float().mean())
        bound = countable_bound(err, len(bits), n, delta)
        curve.append((int(L), len(bits), err))
        if best is None or bound < best["bound"]:
            best = {
                "bound": bound,
                "bits": len(bits),
                "train_err_q": err,
                "levels": int(L),
                "bits_list": bits,
                "symbols": sym,
                "centres": centres,
            }
    best["curve"] = curve
    return best


@boundary(target=fraction())
def bits_at_fit(curve, target: float) -> float | None:
    """The code length at which a network's quantized training error first reaches ``target``.

    ``curve`` holds ``(levels, bits, quantized training error)`` triples (``CompressionResult.curve``).
    Taken in order of increasing bits, the first point with error at most ``target`` gives the
    answer; if an earlier (shorter) point misses it, the bits are interpolated linearly in the
    error between the two, so that two networks are compared at exactly the same fit. ``None``
    if no point reaches ``target``.

    Parameters
    ----------
    curve : object
        ``(levels, bits, quantized training error)`` triples (``CompressionResult.curve``).
    target : float
        The training error to reach; a finite number in [0, 1].

    Returns
    -------
    float | None
        The code length in bits, or None if no point reaches ``target``.
    """
    pts = sorted((float(b), float(e)) for _, b, e in curve)
    if not pts:
        raise ValueError("curve must hold at least one (levels, bits, error) point")
    for k, (b, e) in enumerate(pts):
        if e <= target:
            if k == 0:
                return b
            b0, e0 = pts[k - 1]
            return b0 + (e0 - target) / (e0 - e) * (b - b0) if e0 > e else b
    return None


@dataclass
class CompressionResult(Result):
    """What :func:`run_compression` measured for one network: its labels (``"true"`` or
    ``"random"``), channels, training-set size ``n``, weights ``n_params`` and subspace ``dim``;
    its training error before (``train_err``) and after quantization (``train_err_q``), the
    quantized network's test error, the code length in ``bits`` and the chosen ``levels``; the
    countable-hypothesis ``bound``, its ``kl_bound`` form, the parameter-counting bounds over all
    weights and over the subspace coordinates; whether the code decodes (``roundtrip``); and the
    ``curve`` of ``(levels, bits, quantized training error)`` over the candidate levels."""

    labels: str
    channels: int
    n: int
    n_params: int
    dim: int
    train_err: float
    train_err_q: float
    test_err_q: float
    bits: int
    levels: int
    bound: float
    kl_bound: float
    counting_bound: float
    counting_bound_subspace: float
    roundtrip: bool
    curve: list = field(default_factory=list)


@boundary(
    labels=Options(("true", "random")), seed=SEED, channels=count(optional=True)
)
def run_compression(
    cfg: CompressionConfig,
    ds: Dataset,
    labels: str,
    seed: int = 0,
    channels: int | None = None,
) -> CompressionResult:
    """Train a subspace CNN on true or random labels, compress it, and bound its error.

    ``labels`` is ``"true"`` or ``"random"`` (``corrupt_labels(..., 1.0)``); ``channels``
    (default ``cfg.channels``) sets the CNN's width. Training is minibatch Adam on the
    ``cfg.dim`` subspace coordinates (:func:`train_subspace`). Returns the training error before
    and after quantization, the quantized model's test error, the code length, the chosen
    number of levels, the countable-hypothesis bound (:func:`countable_bound`), its kl form
    (:func:`pac_bayes_kl_bound` with ``KL = bits ln 2``), the parameter-counting bounds (all
    ``n_params`` float32 weights, and the ``dim`` float32 subspace coordinates), and whether the
    code decodes back to the same quantized weights.

    Parameters
    ----------
    cfg : CompressionConfig
        The experiment's settings; a CompressionConfig.
    ds : Dataset
        The dataset; a Dataset.
    labels : str
        ``"true"`` or ``"random"`` labels; one of ('true', 'random').
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    channels : int | None, default None
        Channels of the network; an int >= 1 or None.

    Returns
    -------
    CompressionResult
        The measurements listed above.

    References
    ----------
    Lotfi et al. (2022), "PAC-Bayes Compression Bounds So Tight That They Can Explain
    Generalization".
    Wilson (2025), "Deep Learning is Not So Mysterious or Different", ICML 2025.
    """
    channels = cfg.channels if channels is None else channels
    _fits(ds, cfg.n_train)
    ds = ds.subset(torch.arange(cfg.n_train))
    y = (
        ds.y
        if labels == "true"
        else corrupt_labels(ds.y, 1.0, ds.num_classes, seed=seed + 1)
    )
    model = SubspaceNet(ds.dim, ds.num_classes, cfg.dim, channels, seed=seed).to(
        ds.x.device
    )
    train_subspace(model, ds.x, y, cfg.steps, cfg.lr, cfg.batch_size, seed=seed)
    with torch.no_grad():
        train_err = float((model(ds.x).argmax(1) != y).float().mean())
    best = compress_and_bound(model, ds.x, y, cfg.levels, cfg.delta, cfg.tune_steps)
    centres, sym = decode_quantized(best["bits_list"])
    roundtrip = bool(
        np.array_equal(sym, best["symbols"])
        and np.array_equal(centres, best["centres"])
    )
    with torch.no_grad():
        zq = torch.as_tensor(centres[sym], dtype=model.z.dtype, device=ds.x.device)
        test_err = float(
            (model(ds.x_test, zq).argmax(1) != ds.y_test).float().mean()
        )
    err_q = best["train_err_q"]
    return CompressionResult(
        labels=labels,
        channels=channels,
        n=cfg.n_train,
        n_params=model.n_params,
        dim=cfg.dim,
        train_err=train_err,
        train_err_q=err_q,
        test_err_q=test_err,
        bits=best["bits"],
        levels=best["levels"],
        bound=best["bound"],
        kl_bound=pac_bayes_kl_bound(
            err_q, best["bits"] * math.log(2), cfg.n_train, cfg.delta
        ),
        counting_bound=counting_bound(
            err_q, model.n_params, cfg.n_train, delta=cfg.delta
        ),
        counting_bound_subspace=counting_bound(
            err_q, cfg.dim, cfg.n_train, delta=cfg.delta
        ),
        roundtrip=roundtrip,
        curve=best["curve"],
    )
