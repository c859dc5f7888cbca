"""Tests of gtlib.soft.compression, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import math
import numpy as np
import pytest
import struct
import torch
import torch.nn.functional as F
from scipy import optimize, special

from gtlib import soft
from gtlib.data import corrupt_labels
from gtlib.soft import kl_bernoulli

from tests.chapters.soft.helpers import (
    _close,
    _dataset,
    _differs,
    _raises,
    _tiny_dataset,
)
from tests.oracles import soft_loops as ref


def _ideal_bits(sym, A):
    counts, total, bits = [1] * A, A, 0.0
    for s in sym:
        bits -= math.log2(counts[s] / total)
        counts[s] += 1
        total += 1
    return bits


def _lloyd(z, levels, iters):
    c = np.quantile(z, (np.arange(levels) + 0.5) / levels)
    for _ in range(iters):
        a = np.argmin(np.abs(z[:, None] - c[None]), 1)
        c = np.array(
            [z[a == j].mean() if np.any(a == j) else c[j] for j in range(levels)]
        )
    c = np.sort(c).astype(np.float32)
    return c, np.argmin(np.abs(z[:, None] - c[None].astype(np.float64)), 1)


def _kl_inv(q, c):
    if q >= 1:
        return 1.0
    f = lambda p: special.rel_entr(q, p) + special.rel_entr(1 - q, 1 - p) - c  # noqa: E731
    return optimize.brentq(f, q, 1 - 1e-15, xtol=1e-15)


@pytest.fixture(scope="module")
def trained_subspace():
    g = torch.Generator().manual_seed(63)
    x, y = torch.randn(48, 16, generator=g), torch.randint(0, 3, (48,), generator=g)
    net = soft.SubspaceNet(16, 3, 12, channels=2, seed=4)
    soft.train_subspace(net, x, y, steps=30, lr=0.1, seed=1)
    return net, x, y


COMP = dict(
    n_train=40,
    channels=2,
    sizes=(2,),
    dim=8,
    levels=(3,),
    steps=5,
    batch_size=16,
    tune_steps=2,
    lr=0.05,
    delta=0.1,
)


def _ref_compression(cfg, ds, labels, seed, channels):
    ch = cfg.channels if channels is None else channels
    x, y = ds.x[: cfg.n_train], ds.y[: cfg.n_train]
    if labels == "random":
        y = corrupt_labels(y, 1.0, ds.num_classes, seed=seed + 1)
    net = soft.SubspaceNet(ds.dim, ds.num_classes, cfg.dim, ch, seed=seed)
    soft.train_subspace(net, x, y, cfg.steps, cfg.lr, cfg.batch_size, seed=seed)
    with torch.no_grad():
        train_err = float((net(x).argmax(1) != y).float().mean())
    best = soft.compress_and_bound(net, x, y, cfg.levels, cfg.delta, cfg.tune_steps)
    zq = torch.as_tensor(best["centres"][best["symbols"]])
    with torch.no_grad():
        test_err = float((net(ds.x_test, zq).argmax(1) != ds.y_test).float().mean())
    e, n = best["train_err_q"], cfg.n_train

    def hoeffding(K):
        return e + math.sqrt((K * math.log(2) + math.log(1 / cfg.delta)) / (2 * n))

    return dict(
        labels=labels,
        channels=ch,
        n=n,
        n_params=net.n_params,
        dim=cfg.dim,
        train_err=train_err,
        train_err_q=e,
        test_err_q=test_err,
        bits=best["bits"],
        levels=best["levels"],
        bound=hoeffding(best["bits"]),
        kl_bound=_kl_inv(
            e,
            (best["bits"] * math.log(2) + math.log(2 * math.sqrt(n) / cfg.delta))
            / n,
        ),
        counting_bound=hoeffding(32 * net.n_params),
        counting_bound_subspace=hoeffding(32 * cfg.dim),
        roundtrip=True,
        curve=[list(c) for c in best["curve"]],
    )


# train_subspace: the old loop took its learning rate from torch's CosineAnnealingLR, which updates
# it recursively (lr_t from lr_{t-1}); the engine's schedule is the closed form
# lr (1 + cos(pi t / T)) / 2. The two float64 learning rates differ at 33 of 40 steps, by at most
# 3e-16 relative (1.6e-15 over 1500 steps). Adam's update rounds its step size to float32 (z's
# precision), so the parameters differ only when that rounding falls between the two values
# (about 1e-8 per step): measured, z is bitwise equal here (and at 300 steps, d = 200). Should
# the rounding split, one float32 ulp of a step (lr 0.05) moves z by ~4e-9, hence rtol 1e-6 and
# atol 1e-7.
RTOL, ATOL = 1e-6, 1e-7


def _data(n=60, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 40, generator=g), torch.randint(0, 10, (n,), generator=g)


def _net():
    return soft.SubspaceNet(40, 10, 24, channels=4, seed=3)


# =================================================================================================
# soft.elias_gamma
# =================================================================================================
def test_elias_gamma_round_trip():
    assert soft.elias_gamma(1) == [1]
    assert soft.elias_gamma(5) == [0, 0, 1, 0, 1]
    bits = soft.elias_gamma(9) + soft.elias_gamma(1) + soft.elias_gamma(300)
    a, p = soft.elias_gamma_decode(bits, 0)
    b, p = soft.elias_gamma_decode(bits, p)
    c, p = soft.elias_gamma_decode(bits, p)
    assert (a, b, c, p) == (9, 1, 300, len(bits))
    with pytest.raises(ValueError):
        soft.elias_gamma(0)


# =================================================================================================
# soft.elias_gamma_decode
# =================================================================================================
@pytest.mark.reference
def test_elias_gamma_codes_by_hand_and_decoding_from_an_offset():
    table = {
        1: [1],
        2: [0, 1, 0],
        3: [0, 1, 1],
        4: [0, 0, 1, 0, 0],
        7: [0, 0, 1, 1, 1],
        8: [0, 0, 0, 1, 0, 0, 0],
        17: [0, 0, 0, 0, 1, 0, 0, 0, 1],
    }
    for n, code in table.items():
        assert soft.elias_gamma(n) == code, n
    for n in range(1, 70):
        assert len(soft.elias_gamma(n)) == 2 * math.floor(math.log2(n)) + 1
    bits = [1, 1] + soft.elias_gamma(6) + [0]
    assert soft.elias_gamma_decode(bits, 2) == (6, 7)
    assert soft.elias_gamma_decode([1, 0, 1, 1], 1) == (3, 4)  # the last bit is used
    with pytest.raises(ValueError, match="ends inside"):
        soft.elias_gamma_decode(soft.elias_gamma(6)[:-1])
    with pytest.raises(ValueError, match="pos"):
        soft.elias_gamma_decode([1, 1], 2)


@pytest.mark.boundary
def test_codes_refuse_bad_bits_positions_and_truncation():
    _raises(ValueError, "bits", soft.elias_gamma_decode, [2, 3, 4])
    _raises(ValueError, "bits", soft.elias_gamma_decode, [0, 0, 0])
    _raises(ValueError, "bits", soft.elias_gamma_decode, [])
    _raises(ValueError, "pos", soft.elias_gamma_decode, [1], -1)
    _raises(TypeError, "pos", soft.elias_gamma_decode, [1, 1], True)
    _raises(ValueError, "pos", soft.elias_gamma_decode, [1], 1)
    _raises(ValueError, "bits", soft.arithmetic_decode, [], 4, 3)
    _raises(TypeError, "bits", soft.arithmetic_decode, "0101", 4, 3)
    _raises(TypeError, "symbols", soft.arithmetic_encode, [0, 1.5], 3)
    _raises(TypeError, "symbols", soft.arithmetic_encode, None, 3)
    _raises(
        ValueError,
        "bits",
        soft.decode_quantized,
        soft.elias_gamma(5) + soft.elias_gamma(2),
    )
    _raises(ValueError, "symbols", soft.encode_quantized, [0.0, 1.0], [0, 2])
    _raises(ValueError, "centres", soft.encode_quantized, [], [0])


# =================================================================================================
# soft.arithmetic_encode
# =================================================================================================
def test_arithmetic_code_round_trip_and_length():
    rng = np.random.default_rng(3)
    sym = rng.choice(4, size=500, p=[0.7, 0.1, 0.1, 0.1]).tolist()
    bits = soft.arithmetic_encode(sym, 4)
    assert soft.arithmetic_decode(bits, 500, 4) == sym
    # adaptive Laplace code length = -log2 of the sequential probabilities, plus a few bits
    counts, total, ideal = [1] * 4, 4, 0.0
    for s in sym:
        ideal -= math.log2(counts[s] / total)
        counts[s] += 1
        total += 1
    assert ideal <= len(bits) <= ideal + 4
    assert soft.arithmetic_decode(soft.arithmetic_encode([], 3), 0, 3) == []
    with pytest.raises(ValueError, match="symbols"):
        soft.arithmetic_encode([0, 5], 3)


@pytest.mark.reference
def test_arithmetic_decode_needs_the_right_alphabet():
    sym = [0, 2, 1, 1, 0, 2, 2, 2]
    bits = soft.arithmetic_encode(sym, 3)
    assert soft.arithmetic_decode(bits, 8, 4) != sym
    assert soft.arithmetic_encode(sym, 4) != bits


# =================================================================================================
# soft.arithmetic_decode
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize(
    "A, sym",
    [
        (1, [0] * 50),
        (2, [1] * 300),  # a long run
        (2, [0, 1] * 200),  # balanced, underflow-prone
        (3, [2, 0, 0, 1, 0, 0, 0, 2, 0, 0] * 30),
        (7, list(np.random.default_rng(50).integers(0, 7, 400))),
        (40, list(np.random.default_rng(51).integers(0, 40, 60))),
    ],
)
def test_arithmetic_code_round_trips_within_two_bits_of_the_adaptive_laplace_length(
    A, sym
):
    sym = [int(s) for s in sym]
    bits = soft.arithmetic_encode(sym, A)
    assert soft.arithmetic_decode(bits, len(sym), A) == sym
    assert (
        soft.arithmetic_decode(bits, 10, A) == sym[:10]
    )  # a prefix decodes to a prefix
    ideal = _ideal_bits(sym, A)
    assert ideal <= len(bits) <= ideal + 2.5


# =================================================================================================
# soft.quantize
# =================================================================================================
def test_quantized_weights_decode_back():
    z = np.random.default_rng(4).normal(size=200)
    centres, sym = soft.quantize(z, 6)
    bits = soft.encode_quantized(centres, sym)
    c2, s2 = soft.decode_quantized(bits)
    assert np.array_equal(c2, centres) and np.array_equal(s2, sym)
    assert np.abs(centres[sym] - z).max() < np.abs(z).max()
    with pytest.raises(ValueError, match="levels"):
        soft.quantize(z, 0)


@pytest.mark.reference
def test_quantize_by_hand_and_against_a_lloyd_loop():
    # sorted z = 0, 0.1, 0.2, 5, 5.2, 9; start at the quantiles 1/12, 2.6, 35/6; first pass:
    # {0, 0.1, 0.2} -> 0.1, nothing -> 2.6 (an empty cluster keeps its centre), {5, 5.2, 9} -> 6.4,
    # and nothing moves after that
    z = np.array([5.2, 0.0, 9.0, 0.1, 5.0, 0.2])
    c, s = soft.quantize(z, 3)
    np.testing.assert_allclose(c, np.float32([0.1, 2.6, 6.4]), rtol=1e-6)
    np.testing.assert_array_equal(s, [2, 0, 2, 0, 2, 0])
    c, s = soft.quantize([0.0, 0.2, 4.0, 4.4, 4.2, 9.0], 3)
    np.testing.assert_allclose(c, np.float32([0.1, 4.2, 9.0]), rtol=1e-6)
    np.testing.assert_array_equal(s, [0, 0, 1, 1, 1, 2])
    assert c.dtype == np.float32
    zz = np.random.default_rng(52).standard_t(3, size=300)
    for levels, iters in ((4, 1), (5, 3), (6, 30)):
        c, s = soft.quantize(zz, levels, iters=iters)
        rc, rs = _lloyd(zz, levels, iters)
        np.testing.assert_allclose(c, rc, rtol=1e-6)
        np.testing.assert_array_equal(s, rs)
    assert not np.allclose(soft.quantize(zz, 5, iters=1)[0], soft.quantize(zz, 5)[0])


@pytest.mark.boundary
@pytest.mark.parametrize(
    "iters,error",
    [
        (0, ValueError),
        (-1, ValueError),
        (True, TypeError),
        (2.5, TypeError),
        (None, TypeError),
    ],
)
def test_quantize_refuses_a_bad_number_of_iterations(iters, error):
    _raises(error, "iters", soft.quantize, np.linspace(-1, 1, 20), 3, iters)


# =================================================================================================
# soft.encode_quantized
# =================================================================================================
@pytest.mark.reference
def test_encode_quantized_layout_is_gamma_gamma_float32_words_then_the_arithmetic_code():
    centres = np.float32([-0.75, 0.1, 2.5])
    sym = np.array([2, 0, 1, 1, 0, 0, 2])
    bits = soft.encode_quantized(centres, sym)
    head = soft.elias_gamma(7) + soft.elias_gamma(3)
    assert bits[: len(head)] == head
    pos = len(head)
    for c in centres:
        word = struct.unpack(">I", struct.pack(">f", float(c)))[0]
        assert bits[pos : pos + 32] == [int(b) for b in format(word, "032b")]
        pos += 32
    assert bits[pos:] == soft.arithmetic_encode(sym.tolist(), 3)
    c2, s2 = soft.decode_quantized(bits)
    np.testing.assert_array_equal(c2, centres)
    np.testing.assert_array_equal(s2, sym)
    with pytest.raises(ValueError, match="symbols"):
        soft.encode_quantized(centres, [0, 3])
    for cut in (
        len(head) + 40,
        len(head) + 96,
    ):  # inside the centres, or right after them
        with pytest.raises(ValueError, match="centres"):
            soft.decode_quantized(bits[:cut])


# =================================================================================================
# soft.countable_bound
# =================================================================================================
def test_countable_bound_hand_computation():
    got = soft.countable_bound(0.1, 1000, 5000, delta=0.05)
    assert got == pytest.approx(
        0.1 + math.sqrt((1000 * math.log(2) + math.log(20)) / 10000)
    )
    assert soft.counting_bound(0.1, 10, 5000, 32, 0.05) == pytest.approx(
        soft.countable_bound(0.1, 320, 5000)
    )
    with pytest.raises(ValueError, match="train_error"):
        soft.countable_bound(1.5, 10, 10)
    with pytest.raises(ValueError, match="delta"):
        soft.countable_bound(0.1, 10, 10, delta=1.0)
    with pytest.raises(TypeError, match="n"):
        soft.countable_bound(0.1, 10, 10.5)


@pytest.mark.reference
def test_countable_and_counting_bounds_by_hand():
    # bits = 0: only ln(1/delta) is paid
    assert soft.countable_bound(0.0, 0, 50, delta=0.1) == pytest.approx(
        math.sqrt(math.log(10) / 100), rel=1e-14
    )
    assert soft.countable_bound(0.25, 10, 1) == pytest.approx(
        0.25 + math.sqrt((10 * math.log(2) + math.log(20)) / 2), rel=1e-14
    )  # delta 0.05
    assert soft.countable_bound(1.0, 3, 7, 0.5) == pytest.approx(
        1 + math.sqrt((3 * math.log(2) + math.log(2)) / 14), rel=1e-14
    )
    # counting: K = bits_per_param * n_params; defaults 32 bits and delta 0.05
    assert soft.counting_bound(0.2, 7, 900) == pytest.approx(
        0.2 + math.sqrt((224 * math.log(2) + math.log(20)) / 1800), rel=1e-14
    )
    assert soft.counting_bound(
        0.2, 7, 900, bits_per_param=16, delta=0.1
    ) == pytest.approx(
        0.2 + math.sqrt((112 * math.log(2) + math.log(10)) / 1800), rel=1e-14
    )


@pytest.mark.boundary
@pytest.mark.parametrize(
    "fn,args,name",
    [
        (soft.countable_bound, (True, 100.0, 1000), "train_error"),
        (soft.counting_bound, (True, 100, 1000), "train_error"),
        (soft.pac_bayes_kl_bound, (True, 10.0, 1000), "train_error"),
        (soft.kl_bernoulli, (True, 0.2), "q"),
        (soft.kl_bernoulli, (0.1, True), "p"),
        (soft.kl_inverse, (True, 0.5), "q"),
        (soft.kl_inverse, (0.1, math.nan), "c"),
        (soft.countable_bound, (0.1, 100.0, 1000, 0.0), "delta"),
    ],
)
def test_bounds_refuse_bools_and_out_of_range_numbers(fn, args, name):
    _raises((TypeError, ValueError), name, fn, *args)


# =================================================================================================
# soft.kl_bernoulli
# =================================================================================================
@pytest.mark.reference
def test_kl_bernoulli_against_scipy_rel_entr_and_at_the_ends():
    for q, p in ((0.1, 0.4), (0.4, 0.1), (0.73, 0.2), (0.02, 0.999), (0.5, 0.5)):
        want = special.rel_entr(q, p) + special.rel_entr(1 - q, 1 - p)
        assert soft.kl_bernoulli(q, p) == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert soft.kl_bernoulli(0.1, 0.4) == pytest.approx(
        0.1 * math.log(0.25) + 0.9 * math.log(1.5), rel=1e-12
    )
    assert soft.kl_bernoulli(0.0, 0.0) == 0.0 and soft.kl_bernoulli(1.0, 1.0) == 0.0
    assert (
        soft.kl_bernoulli(0.3, 0.0) == math.inf
        and soft.kl_bernoulli(0.3, 1.0) == math.inf
    )
    assert (
        soft.kl_bernoulli(0.0, 1.0) == math.inf
        and soft.kl_bernoulli(1.0, 0.0) == math.inf
    )


@pytest.mark.mutation
def test_kl_bernoulli_at_the_ends_by_hand():
    """0 log 0 = 0: kl(0 || p) = -ln(1 - p) and kl(1 || p) = -ln p."""
    assert kl_bernoulli(0.0, 0.3) == pytest.approx(-math.log(0.7))
    assert kl_bernoulli(1.0, 0.3) == pytest.approx(-math.log(0.3))


# =================================================================================================
# soft.kl_inverse
# =================================================================================================
def test_pac_bayes_kl_bound_inverts_kl_and_beats_the_square_root_form():
    q, c = 0.1, 0.05
    p = soft.kl_inverse(q, c)
    assert p > q and soft.kl_bernoulli(q, p) == pytest.approx(c, abs=1e-9)
    assert soft.kl_inverse(0.3, 0.0) == pytest.approx(0.3)
    n, K = 8000, 3000
    kl = soft.pac_bayes_kl_bound(0.1, K * math.log(2), n)
    assert kl == pytest.approx(
        soft.kl_inverse(
            0.1, (K * math.log(2) + math.log(2 * math.sqrt(n) / 0.05)) / n
        )
    )
    assert 0.1 < kl < soft.countable_bound(0.1, K, n)
    with pytest.raises(ValueError, match="q"):
        soft.kl_bernoulli(1.5, 0.2)


@pytest.mark.reference
def test_kl_inverse_against_brentq_and_by_hand():
    for q in (0.0, 0.05, 0.3, 0.9):
        for c in (0.01, 0.2, 1.5):
            assert soft.kl_inverse(q, c) == pytest.approx(
                _kl_inv(q, c), abs=2e-12
            ), (q, c)
    # kl(0 || p) = -ln(1 - p): p = 1 - e^-c
    assert soft.kl_inverse(0.0, 0.4) == pytest.approx(1 - math.exp(-0.4), abs=2e-12)
    assert soft.kl_inverse(1.0, 0.3) == 1.0
    # tol is honoured and the answer errs on the safe (upper) side
    p = _kl_inv(0.2, 0.1)
    loose = soft.kl_inverse(0.2, 0.1, tol=0.05)
    assert p <= loose <= p + 0.05 and loose != soft.kl_inverse(0.2, 0.1)


@pytest.mark.boundary
@pytest.mark.parametrize(
    "tol", [0, 0.0, -1.0, math.nan, math.inf, True, "1e-6", None]
)
def test_kl_inverse_refuses_a_tolerance_that_is_not_positive(tol):
    _raises((TypeError, ValueError), "tol", soft.kl_inverse, 0.1, 0.5, tol)


@pytest.mark.boundary
def test_kl_inverse_with_a_tolerance_below_float_spacing_returns():
    p = soft.kl_inverse(0.1, 0.5, tol=1e-300)  # bisection stops at adjacent floats
    assert soft.kl_bernoulli(0.1, p) == pytest.approx(0.5, abs=1e-12)
    assert (
        p == soft.kl_inverse(0.1, 0.5, tol=1e-15)
        or abs(p - soft.kl_inverse(0.1, 0.5)) < 1e-11
    )


# =================================================================================================
# soft.pac_bayes_kl_bound
# =================================================================================================
@pytest.mark.reference
def test_pac_bayes_kl_bound_against_brentq():
    for err, kl, n, delta in (
        (0.07, 3.0, 500, 0.1),
        (0.0, 40.0, 2000, 0.05),
        (0.3, 0.0, 64, 0.01),
    ):
        c = (kl + math.log(2 * math.sqrt(n) / delta)) / n
        assert soft.pac_bayes_kl_bound(err, kl, n, delta) == pytest.approx(
            _kl_inv(err, c), abs=2e-12
        )
    assert soft.pac_bayes_kl_bound(0.07, 3.0, 500) == pytest.approx(
        _kl_inv(0.07, (3.0 + math.log(2 * math.sqrt(500) / 0.05)) / 500), abs=2e-12
    )


# =================================================================================================
# soft.ConvNet1D
# =================================================================================================
@pytest.mark.reference
def test_convnet1d_against_functional_convolutions():
    torch.manual_seed(60)
    net = soft.ConvNet1D(length=37, channels=3, out_dim=4)
    # 37 -> 19 -> 10 -> 5 positions after three stride-2 convolutions
    assert net.head.in_features == 15 and net.head.out_features == 4
    assert (net.c1.kernel_size, net.c2.kernel_size, net.c3.kernel_size) == (
        (5,),
        (3,),
        (3,),
    )
    x = torch.randn(6, 37, generator=torch.Generator().manual_seed(61))
    h = x[:, None]
    h = F.relu(F.conv1d(h, net.c1.weight, net.c1.bias, stride=2, padding=2))
    h = F.relu(F.conv1d(h, net.c2.weight, net.c2.bias, stride=2, padding=1))
    h = F.relu(F.conv1d(h, net.c3.weight, net.c3.bias, stride=2, padding=1))
    want = h.reshape(6, -1) @ net.head.weight.T + net.head.bias
    with torch.no_grad():
        _close(net(x), want, rtol=1e-5, atol=1e-6)
        _close(
            net._apply_params(x, dict(net.named_parameters())),
            want,
            rtol=1e-5,
            atol=1e-6,
        )
    assert soft.ConvNet1D(length=8, channels=2).head.in_features == 2


@pytest.mark.boundary
def test_networks_refuse_bad_sizes_seeds_and_inputs(subnet):
    _raises(ValueError, "out_dim", soft.ConvNet1D, 40, 4, 0)
    _raises(TypeError, "out_dim", soft.ConvNet1D, 40, 4, None)
    _raises(ValueError, "out_dim", soft.SubspaceNet, 40, 0, 8)
    _raises(ValueError, "seed", soft.SubspaceNet, 40, 10, 8, seed=-1)
    _raises(TypeError, "seed", soft.SubspaceNet, 40, 10, 8, seed=True)
    _raises(TypeError, "seed", soft.SubspaceNet, 40, 10, 8, seed=1.5)
    model, x, y = subnet
    _raises(ValueError, "x", model, x[:, :20])
    _raises(ValueError, "z", model, x, torch.zeros(3))
    _raises(ValueError, "x", soft.ConvNet1D(40, 4, 10), x[:, :39])
    _raises(TypeError, "x", soft.ConvNet1D(40, 4, 10), x.tolist())


# =================================================================================================
# soft.SubspaceNet
# =================================================================================================
@pytest.mark.reference
def test_subspace_net_is_theta0_plus_a_seeded_projection_and_keeps_the_global_rng():
    from gtlib.models import MLP  # noqa: F401

    torch.manual_seed(123)
    state = torch.get_rng_state()
    net = soft.SubspaceNet(16, 3, 5, channels=2, seed=7)
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(7)
    base = soft.ConvNet1D(16, 2, 3)
    theta0 = torch.nn.utils.parameters_to_vector(base.parameters()).detach()
    assert torch.equal(net.theta0, theta0) and net.n_params == theta0.numel()
    proj = torch.randn(
        theta0.numel(), 5, generator=torch.Generator().manual_seed(7)
    ) / math.sqrt(5)
    assert torch.equal(net.proj, proj)
    assert net.base.c1.out_channels == 2 and net.base.head.out_features == 3
    z = torch.tensor([0.3, -1.0, 0.0, 2.0, 0.5])
    torch.nn.utils.vector_to_parameters(theta0 + proj @ z, base.parameters())
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(62))
    with torch.no_grad():
        _close(net(x, z), base(x), rtol=1e-5, atol=1e-6)
        net.z.copy_(z)
        _close(net(x), base(x), rtol=1e-5, atol=1e-6)
    other = soft.SubspaceNet(16, 3, 5, channels=2, seed=8)
    assert not torch.equal(other.theta0, net.theta0) and not torch.equal(
        other.proj, net.proj
    )


@pytest.mark.boundary
def test_the_unchecked_training_path_is_the_checked_network_bitwise():
    # SubspaceNet's training loops skip the boundary checks (_forward, ConvNet1D._apply_params);
    # they compute what functional_call of the base network computes, values and gradients
    net = soft.SubspaceNet(40, 10, 16, channels=4, seed=3)
    with torch.no_grad():
        net.z.normal_(generator=torch.Generator().manual_seed(4))
    x = torch.randn(9, 40, generator=torch.Generator().manual_seed(5))
    theta = net.theta0 + net.proj @ net.z
    params = {
        n: t.view(s)
        for n, t, s in zip(net.names, torch.split(theta, net.sizes), net.shapes)
    }
    ref = torch.func.functional_call(net.base, params, (x,))
    out = net._forward(x)
    assert torch.equal(ref, out) and torch.equal(net(x), out)
    g_ref = torch.autograd.grad(ref.square().sum(), net.z)[0]
    assert torch.equal(
        g_ref, torch.autograd.grad(net._forward(x).square().sum(), net.z)[0]
    )


# =================================================================================================
# soft.CompressionConfig
# =================================================================================================
@pytest.mark.reference
def test_compression_config_defaults():
    c = soft.CompressionConfig()
    assert (
        c.n_train,
        c.channels,
        c.sizes,
        c.dim,
        c.levels,
        c.steps,
        c.batch_size,
        c.tune_steps,
        c.lr,
        c.delta,
    ) == (8000, 16, (8, 16), 1000, (3, 5, 7, 11, 15), 1500, 256, 30, 0.02, 0.05)


# =================================================================================================
# soft.train_subspace
# =================================================================================================
@pytest.mark.engine
@pytest.mark.parametrize("batch_size", [None, 16, 60, 100])
def test_train_subspace_matches_the_old_loop(batch_size):
    # 60 points in batches of 16: three batches, then a fresh permutation (12 left over)
    x, y = _data()
    old, new = _net(), _net()
    ref.old_train_subspace(
        old, x, y, steps=40, lr=0.05, batch_size=batch_size, seed=5
    )
    soft.train_subspace(new, x, y, steps=40, lr=0.05, batch_size=batch_size, seed=5)
    assert not torch.equal(new.z, torch.zeros_like(new.z))
    torch.testing.assert_close(new.z.detach(), old.z.detach(), rtol=RTOL, atol=ATOL)
    with torch.no_grad():
        assert torch.equal(new(x).argmax(1), old(x).argmax(1))


@pytest.mark.engine
def test_train_subspace_draws_the_old_minibatches():
    # at the first step the cosine factor is exactly 1 in both, so the arithmetic is the same and
    # the first minibatch (the first 16 of the seeded permutation) is checked bitwise
    x, y = _data()
    old, new = _net(), _net()
    ref.old_train_subspace(old, x, y, steps=1, lr=0.05, batch_size=16, seed=5)
    soft.train_subspace(new, x, y, steps=1, lr=0.05, batch_size=16, seed=5)
    assert torch.equal(new.z, old.z)


# =================================================================================================
# soft.tune_centres
# =================================================================================================
@pytest.mark.engine
def test_tune_centres_is_exactly_the_old_loop():
    # the same Adam arithmetic on the same full batch: bitwise equal
    x, y = _data()
    net = _net()
    soft.train_subspace(net, x, y, steps=10, lr=0.05, seed=1)
    centres, sym = soft.quantize(net.z.detach().numpy(), 5)
    kept = centres.copy()
    old = ref.old_tune_centres(net, x, y, centres.copy(), sym, steps=12, lr=0.01)
    new = soft.tune_centres(net, x, y, centres, sym, steps=12, lr=0.01)
    # the old loop moved the caller's array in place (torch.as_tensor shares its memory); the new
    # one works on a copy
    assert np.array_equal(centres, kept)
    assert new.dtype == old.dtype == np.float32
    assert not np.array_equal(new, centres)
    assert np.array_equal(new, old)
    assert np.array_equal(
        soft.tune_centres(net, x, y, centres, sym, steps=0), centres
    )


# =================================================================================================
# soft.compress_and_bound
# =================================================================================================
@pytest.mark.reference
def test_compress_and_bound_keeps_the_tightest_code(trained_subspace):
    net, x, y = trained_subspace
    levels, delta = (2, 3, 6), 0.2
    got = soft.compress_and_bound(net, x, y, levels, delta=delta, tune_steps=3)
    z = net.z.detach().numpy().astype(np.float64)
    rows = []
    for L in levels:
        c, s = soft.quantize(z, L)
        c = soft.tune_centres(net, x, y, c, s, 3)
        bits = soft.encode_quantized(c, s)
        with torch.no_grad():
            err = float(
                (net(x, torch.as_tensor(c[s])).argmax(1) != y).float().mean()
            )
        rows.append(
            (
                err
                + math.sqrt((len(bits) * math.log(2) + math.log(1 / delta)) / 96),
                L,
                len(bits),
                err,
                c,
                s,
            )
        )
    best = min(rows, key=lambda r: r[0])
    assert got["bound"] == pytest.approx(best[0], rel=1e-12)
    assert (got["levels"], got["bits"], got["train_err_q"]) == best[1:4]
    assert len(got["bits_list"]) == got["bits"]
    # the curve: every candidate's code length and quantized fit, in the order tried
    assert got["curve"] == [(r[1], r[2], r[3]) for r in rows]
    np.testing.assert_array_equal(got["centres"], best[4])
    np.testing.assert_array_equal(got["symbols"], best[5])
    # without tuning the centres are k-means'
    raw = soft.compress_and_bound(net, x, y, (3,), tune_steps=0)
    np.testing.assert_array_equal(raw["centres"], soft.quantize(z, 3)[0])
    assert (
        soft.compress_and_bound(net, x, y, (3,), delta=0.5, tune_steps=0)["bound"]
        < raw["bound"]
    )


@pytest.mark.boundary
def test_compression_refuses_bad_levels_steps_and_symbols(subnet):
    model, x, y = subnet
    _raises(
        TypeError,
        "tune_steps",
        soft.compress_and_bound,
        model,
        x,
        y,
        [3],
        tune_steps=None,
    )
    _raises(ValueError, "levels", soft.compress_and_bound, model, x, y, [])
    _raises(TypeError, "levels", soft.compress_and_bound, model, x, y, "abc")
    _raises(ValueError, "y", soft.compress_and_bound, model, x, y + 10, [3])
    _raises(
        ValueError, "symbols", soft.tune_centres, model, x, y, [-0.1, 0.1], [0, 1, 2]
    )
    _raises(
        ValueError,
        "symbols",
        soft.tune_centres,
        model,
        x,
        y,
        [-0.1, 0.1],
        [0, 1] * 4 + [5],
    )
    _raises(ValueError, "y", soft.train_subspace, model, x, y[:-1], 1, 0.1)
    _raises(
        TypeError,
        "batch_size",
        soft.train_subspace,
        model,
        x,
        y,
        1,
        0.1,
        batch_size=2.5,
    )


# =================================================================================================
# soft.bits_at_fit
# =================================================================================================
@pytest.mark.reference
def test_bits_at_fit_interpolates_between_the_points_around_the_target():
    curve = [(7, 3000, 0.30), (3, 1600, 0.70), (11, 3700, 0.20), (15, 4300, 0.15)]
    assert soft.bits_at_fit(curve, 0.70) == 1600  # the shortest code already fits
    assert soft.bits_at_fit(curve, 0.80) == 1600
    assert soft.bits_at_fit(curve, 0.20) == 3700  # a point exactly at the target
    # halfway in error between (3000, 0.30) and (3700, 0.20): halfway in bits
    assert soft.bits_at_fit(curve, 0.25) == pytest.approx(3350)
    assert soft.bits_at_fit(curve, 0.10) is None  # never reached
    # the order of the triples does not matter
    assert soft.bits_at_fit(curve[::-1], 0.25) == pytest.approx(3350)
    with pytest.raises(ValueError, match="curve"):
        soft.bits_at_fit([], 0.5)
    with pytest.raises((TypeError, ValueError), match="target"):
        soft.bits_at_fit(curve, 1.5)


@pytest.mark.boundary
@pytest.mark.parametrize("target", [-0.1, 1.5, math.nan, None, "0.2", True])
def test_bits_at_fit_refuses_a_bad_target(target):
    _raises(
        (TypeError, ValueError), "target", soft.bits_at_fit, [(3, 100, 0.5)], target
    )


# =================================================================================================
# soft.run_compression
# =================================================================================================
def test_subspace_net_starts_at_init_and_configs_construct():
    net = soft.SubspaceNet(40, 10, 8, seed=3)
    x = torch.randn(5, 40)
    with torch.no_grad():
        assert torch.allclose(net(x), net.base(x), atol=1e-6)
    for cls in (
        soft.PolyConfig,
        soft.GPConfig,
        soft.RFConfig,
        soft.MLPSweepConfig,
        soft.CompressionConfig,
    ):
        cls.quick(), cls.full()
    assert soft.MLPSweepConfig.full().widths[-1] == 300
    with pytest.raises(ValueError, match="labels"):
        soft.run_compression(
            soft.CompressionConfig.quick(), _tiny_dataset(), "noisy"
        )
    with pytest.raises(TypeError, match="ds"):
        soft.run_compression(soft.CompressionConfig.quick(), None, "true")


@pytest.mark.reference
@pytest.mark.parametrize(
    "labels, seed, channels", [("random", 2, None), ("true", 0, 3)]
)
def test_run_compression_against_its_steps(labels, seed, channels):
    ds = _dataset(n=44, n_test=20, seed=64, classes=3, length=16)
    cfg = soft.CompressionConfig.quick(**COMP)
    got = soft.run_compression(
        cfg, ds, labels, seed=seed, channels=channels
    ).to_dict()
    want = _ref_compression(cfg, ds, labels, seed, channels)
    assert list(got) == list(want)
    for k, v in want.items():
        if isinstance(v, float):
            assert got[k] == pytest.approx(v, rel=1e-9, abs=1e-12), k
        else:
            assert got[k] == v, k


@pytest.mark.reference
def test_run_compression_uses_every_setting_and_the_seed():
    ds = _dataset(n=44, n_test=20, seed=65, classes=3, length=16)

    def run(labels="true", seed=0, channels=None, **kw):
        return soft.run_compression(
            soft.CompressionConfig.quick(**{**COMP, **kw}),
            ds,
            labels,
            seed=seed,
            channels=channels,
        ).to_dict()

    base = run()
    changes = dict(
        n_train=41,
        channels=3,
        dim=9,
        levels=(4,),
        steps=6,
        batch_size=15,
        tune_steps=4,
        lr=0.2,
        delta=0.2,
    )
    for key, value in changes.items():
        assert _differs(run(**{key: value}), base), key
    assert _differs(run(seed=1), base) and _differs(run(labels="random"), base)
    assert _differs(run(channels=3), base)
