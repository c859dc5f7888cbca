"""Tests of gtlib.contrastive, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""
import math
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from dataclasses import replace
from types import SimpleNamespace

from gtlib import contrastive as C, contrastive as CL
from gtlib.contrastive import ContrastiveConfig, bias_schedule
import gtlib.contrastive as C_eng

from tests.oracles import contrastive_loops as ref


matplotlib.use("Agg")


DT = torch.float64


def rng(seed):
    return torch.Generator().manual_seed(seed)


def tiny_cfg(**kw):
    base = dict(dim=7, n_features=5, n_minority=2, neurons=6, batch=12, steps=4, log_every=2,
                bias_ramp=3, prune_every=2, replicates=1, probe_samples=30, n_tokens=3,
                n_signal=2)
    base.update(kw)
    return C.ContrastiveConfig.quick(**base)


def _gram_schmidt(a):
    """Classical Gram-Schmidt on the columns of ``a`` (numpy float64)."""
    q = np.zeros_like(a)
    for k in range(a.shape[1]):
        v = a[:, k] - q[:, :k] @ (q[:, :k].T @ a[:, k])
        q[:, k] = v / np.linalg.norm(v)
    return q


def _views_reference(M, z, L, Ls, noise, g):
    n, d = z.shape[0], M.shape[0]
    order = torch.rand(n, L, generator=g).argsort(-1)
    eps = torch.randn(n, L, d, generator=g) * (noise / math.sqrt(d))
    X = eps.to(M.dtype).clone()
    for i in range(n):
        for l in range(L):
            if order[i, l] < Ls:
                X[i, l] += M @ z[i]
    return X


def _encode_reference(X, W, A, beta, mask=None):
    """The docstring's formula with loops (float64): f_r = sum_l BReLU(<w_r, h_l>, beta||w_r||),
    h_l = sum_j softmax_j(x_l^T A x_j) x_j."""
    E, n, L, d = X.shape
    m = W.shape[1]
    out = torch.zeros(E, n, m, dtype=X.dtype)
    for e in range(E):
        for i in range(n):
            x = X[e, i]
            H = []
            for l in range(L):
                sc = torch.stack([x[l] @ A[e] @ x[j] for j in range(L)])
                p = torch.exp(sc - sc.max())
                p = p / p.sum()
                H.append(sum(p[j] * x[j] for j in range(L)))
            for r in range(m):
                b = beta * float(W[e, r].detach().norm())
                acc = 0.0
                for l in range(L):
                    s = W[e, r] @ H[l]
                    acc = acc + torch.relu(s - b) - torch.relu(-s - b)
                out[e, i, r] = acc
    if mask is not None:
        out = out * mask[:, None, :]
    return out


def _encoder_inputs(seed=0, E=2, n=3, L=4, d=5, m=6):
    g = rng(seed)
    X = torch.randn(E, n, L, d, generator=g, dtype=DT)
    W = torch.randn(E, m, d, generator=g, dtype=DT)
    A = torch.randn(E, d, d, generator=g, dtype=DT) * 0.7  # not symmetric
    return X, W, A


def _infonce_loop(f, g, tau):
    n = f.shape[0]
    total = 0.0
    for i in range(n):
        logits = [float(f[i] @ g[j]) / tau for j in range(n)]
        mx = max(logits)
        lse = mx + math.log(sum(math.exp(v - mx) for v in logits))
        total += lse - logits[i]
    return total / n


def _mask_reference(W, fraction):
    norms = np.linalg.norm(W, axis=-1)
    m = len(norms)
    k = int(round(fraction * m))
    order = sorted(range(m), key=lambda r: (norms[r], r))
    mask = np.ones(m)
    mask[order[:k]] = 0.0
    return mask


def _alignment_reference(W, M):
    W, M = W.double().numpy(), M.double().numpy()
    coef = W @ M
    proj = np.abs(coef)
    noise = np.linalg.norm(W - coef @ M.T, axis=-1)
    srt = np.sort(proj, axis=-1)
    top, second = srt[..., -1], srt[..., -2]
    return dict(proj=proj, noise=noise, dominant=proj.argmax(-1), top=top, second=second,
                ratio=top / second, purity=top ** 2 / (proj ** 2).sum(-1))


def _strong_reference(W, M, ratio, floor):
    a = _alignment_reference(W, M)
    K = M.shape[1]
    out = np.zeros(W.shape[:-2] + (K,))
    for idx in np.ndindex(*W.shape[:-2]):
        biggest = a["top"][idx].max()
        for r in range(W.shape[-2]):
            if a["ratio"][idx][r] >= ratio and a["top"][idx][r] >= floor * biggest:
                out[idx + (a["dominant"][idx][r],)] += 1
    return out


def _feature_summary_reference(W, M, n_min, sr, fl):
    a = _alignment_reference(W, M)
    K = M.shape[1]
    E, m = W.shape[:2]
    counts = _strong_reference(W, M, sr, fl)
    out = {k: [] for k in ("best_major", "best_minor", "spec_major", "spec_minor", "energy",
                           "single_fraction", "strong_purity", "mean_purity", "median_ratio",
                           "noise")}
    e_k = ((W.numpy() @ M.numpy()) ** 2).sum(-2)
    for e in range(E):
        best = a["proj"][e].max(0)
        out["best_major"].append(best[:K - n_min].mean())
        out["best_minor"].append(best[K - n_min:].mean())
        out["spec_major"].append(counts[e, :K - n_min].mean())
        out["spec_minor"].append(counts[e, K - n_min:].mean())
        out["energy"].append(e_k[e, K - n_min:].mean() / e_k[e, :K - n_min].mean())
        out["single_fraction"].append(np.mean(a["ratio"][e] >= sr))
        big = a["top"][e] >= fl * a["top"][e].max()
        out["strong_purity"].append(np.sum(big & (a["ratio"][e] >= sr)) / np.sum(big))
        out["mean_purity"].append(np.mean(a["proj"][e].max(1) ** 2 / (a["proj"][e] ** 2).sum(1)))
        out["median_ratio"].append(np.sort(a["ratio"][e])[(m - 1) // 2])  # torch: lower median
        out["noise"].append(a["noise"][e].mean())
    return {k: np.array(v) for k, v in out.items()}


def _stages_reference(step, top, ratio, level):
    i1 = next(i for i in range(len(top)) if top[i] >= level * max(top))
    later_max = max(ratio[i1:])
    i2 = next(i for i in range(i1, len(ratio)) if ratio[i] >= level * later_max)
    return step[i1], step[i2]


def _hand_run(cfg, ratios, fractions, seeds, seed=0):
    E = len(ratios)
    g = rng(100 + seed)
    M = C.feature_dictionary(cfg.dim, cfg.n_features, seed=seed)
    W = torch.randn(E, cfg.neurons, cfg.dim, generator=g)
    for e in range(E):  # neurons aligned with features, so that the probe has something to read
        W[e, :cfg.n_features] += (2.0 + e) * M.T
    A = torch.randn(E, cfg.dim, cfg.dim, generator=g) * 0.3
    return C.EncoderRun(config=cfg, M=M, W=W, A=A, ratios=list(ratios), fractions=list(fractions),
                        seeds=list(seeds))


def _ridge_reference(ftr, ytr, fte, C_, ridge):
    ftr, fte = ftr.astype(np.float64), fte.astype(np.float64)
    mu, sd = ftr.mean(0), np.maximum(ftr.std(0, ddof=1), 1e-6)
    a = np.hstack([(ftr - mu) / sd, np.ones((len(ftr), 1))])
    b = np.hstack([(fte - mu) / sd, np.ones((len(fte), 1))])
    Y = np.eye(C_)[ytr] * 2 - 1
    coef = np.linalg.solve(a.T @ a + ridge * len(a) * np.eye(a.shape[1]), a.T @ Y)
    return (b @ coef).argmax(-1)


def _one_step_reference(cfg, ratio, seed=0):
    """One SGD step (no pruning) written out from the docstring: W1 = W0 - lr (grad + wd W0)."""
    M = C.feature_dictionary(cfg.dim, cfg.n_features, seed=seed)
    W = (torch.randn(cfg.neurons, cfg.dim, generator=rng(seed * 1000)) * cfg.init_scale)[None]
    W = W.requires_grad_()
    A = torch.zeros(1, cfg.dim, cfg.dim, requires_grad=True)
    g = rng(seed * 1000 + 999)
    freqs = C.feature_frequencies(cfg.n_features, cfg.n_minority, cfg.base_freq, ratio)[None]
    z = C.sample_codes(freqs, cfg.batch, g)
    X1 = C.make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
    X2 = C.make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
    f1 = C.encode(X1, W, A, 0.0)
    f2 = C.encode(X2, W, A, 0.0).detach()
    logits = f1 @ f2.transpose(1, 2) / cfg.tau
    loss = torch.nn.functional.cross_entropy(logits[0], torch.arange(cfg.batch))
    gW, gA = torch.autograd.grad(loss, [W, A])
    with torch.no_grad():
        wd = cfg.weight_decay
        return W - cfg.lr * (gW + wd * W), A - cfg.lr * (gA + wd * A)


matplotlib.use("Agg")


NAN, INF = float("nan"), float("inf")


def gen():
    return torch.Generator().manual_seed(0)


def nanify(t):
    t = t.clone()
    t.view(-1)[0] = NAN
    return t


M = C.feature_dictionary(12, 6, seed=0)


FREQS = C.feature_frequencies(6, 3, 0.2, 2.0)


W = torch.randn(8, 12, generator=gen())


Z = C.sample_codes(FREQS, 10, gen())


X4 = torch.randn(1, 5, 4, 12, generator=gen())


A = torch.randn(1, 12, 12, generator=gen())


TINY = C.ContrastiveConfig(steps=2, neurons=8, batch=8, dim=12, n_features=6, n_minority=3,
                           bias_ramp=1, probe_samples=20, log_every=1)


# (call, the argument the error must name): each was silent (ran on, often returning NaN) before
SILENT = [
    (lambda: C.feature_dictionary(12, True), "n_features"),
    (lambda: C.feature_dictionary(12, 6, seed=-1), "seed"),
    (lambda: C.feature_dictionary(12, 6, seed=1.5), "seed"),
    (lambda: C.feature_frequencies(6, True, 0.2, 2.0), "n_minority"),
    (lambda: C.sample_codes(nanify(FREQS), 10, gen()), "freqs"),
    (lambda: C.sample_codes(FREQS, 0, gen()), "n"),
    (lambda: C.sample_codes(FREQS, 10, None), "generator"),
    (lambda: C.make_views(nanify(M), Z, 4, 2, 1.0, gen()), "M"),
    (lambda: C.make_views(M, Z[:0], 4, 2, 1.0, gen()), "z"),
    (lambda: C.make_views(M, Z, 4, 0, 1.0, gen()), "n_signal"),
    (lambda: C.make_views(M, Z, 4, 2.5, 1.0, gen()), "n_signal"),
    (lambda: C.make_views(M, Z, 4, 2, -0.5, gen()), "noise"),
    (lambda: C.make_views(M, Z, 4, 2, INF, gen()), "noise"),
    (lambda: C.single_feature_samples(M, 0, 4, 2, 1.0, gen()), "n"),
    (lambda: C.single_feature_samples(M, 10, 4, 2, NAN, gen()), "noise"),
    (lambda: C.brelu(nanify(torch.randn(5, 8)), 0.1), "s"),
    (lambda: C.brelu(torch.randn(5, 8), NAN), "b"),
    (lambda: C.straight_through_mask(torch.randn(5, 8), nanify(torch.ones(8))), "mask"),
    (lambda: C.encode(nanify(X4), W[None], A, 0.1), "X"),
    (lambda: C.encode(X4, W[None], A[:0], 0.1), "A"),
    (lambda: C.encode(X4, W[None], A, INF), "beta"),
    (lambda: C.infonce(torch.randn(5, 8), torch.randn(5, 8), INF), "tau"),
    (lambda: C.infonce(torch.randn(5, 8), torch.randn(5, 8), True), "tau"),
    (lambda: C.infonce_orthogonal_closed_form(-0.5, 5, 0.5), "sq_norm"),
    (lambda: C.infonce_orthogonal_closed_form(1.0, 0, 0.5), "n"),
    (lambda: C.infonce_orthogonal_closed_form(1.0, 5, -1.0), "tau"),
    (lambda: C.magnitude_mask(nanify(W), 0.5), "W"),
    (lambda: C.alignment(W[0], M), "W"),
    (lambda: C.alignment(W, nanify(M)), "M"),
    (lambda: C.strong_specialists(W, M, ratio=INF), "ratio"),
    (lambda: C.energy_ratio(W[:0], M, 3), "W"),
    (lambda: C.learning_margin(TINY, INF), "ratio"),
    (lambda: C.feature_summary(W[None], M, 3, specialist_ratio=True), "specialist_ratio"),
    (lambda: C.bias_schedule(-1, TINY), "step"),
    (lambda: C.bias_schedule(2.5, TINY), "step"),
    (lambda: C.train_encoders(TINY, [1.0], [NAN]), "fractions"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], seed=-1), "seed"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], replicates=2.5), "replicates"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], hard_mask="yes"), "hard_mask"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], stream=-1), "stream"),
    (lambda: C.stage_boundaries(np.arange(5), np.linspace(0, 1, 5), np.linspace(1, 3, 5),
                                level=1.5), "level"),
    (lambda: C.ridge_probe(torch.randn(30, 5), torch.arange(30) % 3, torch.randn(12, 5).long(),
                           3), "f_test"),
    (lambda: C.ridge_probe(torch.randn(30, 5), torch.arange(30) % 3, torch.randn(12, 5), -1),
     "n_classes"),
    (lambda: C.augment_1d(torch.zeros(3, 8).long(), gen(), 2, 0.1, 0.1), "x"),
    (lambda: C.augment_1d(torch.zeros(3, 8), None, 2, 0.1, 0.1), "generator"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6).tolist(), 3), "proj"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6), -1), "n_minority"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6), 3, vmax=NAN), "vmax"),
]


# a representative set of the errors that did not say what was wrong
UNCLEAR = [
    (lambda: C.feature_dictionary(12, 6, seed=2**64), ValueError, "seed"),
    (lambda: C.feature_frequencies(None, 3, 0.2, 2.0), TypeError, "n_features"),
    (lambda: C.sample_codes(FREQS[:0], 10, gen()), ValueError, "freqs"),
    (lambda: C.make_views(M[:0], Z, 4, 2, 1.0, gen()), ValueError, "M"),
    (lambda: C.make_views(M.long(), Z, 4, 2, 1.0, gen()), TypeError, "M"),
    (lambda: C.make_views(M, Z.double(), 4, 2, 1.0, gen()), ValueError, "z"),
    (lambda: C.make_views(M, Z[:, :5], 4, 2, 1.0, gen()), ValueError, "z"),
    (lambda: C.single_feature_samples(M[0], 10, 4, 2, 1.0, gen()), ValueError, "M"),
    (lambda: C.brelu(torch.randn(5, 8), None), TypeError, "b"),
    (lambda: C.straight_through_mask(torch.randn(5, 8), torch.ones(7)), ValueError, "mask"),
    (lambda: C.encode(X4.long(), W[None], A, 0.1), TypeError, "X"),
    (lambda: C.encode(X4, W[None, :, :5], A, 0.1), ValueError, "W"),
    (lambda: C.infonce(torch.randn(5, 8).long(), torch.randn(5, 8), 0.5), TypeError, "f"),
    (lambda: C.infonce(torch.randn(5, 8), None, 0.5), TypeError, "f_target"),
    (lambda: C.magnitude_mask(W.long(), 0.5), TypeError, "W"),
    (lambda: C.alignment(W.double(), M), ValueError, "W"),
    (lambda: C.strong_specialists(W[0], M), ValueError, "W"),
    (lambda: C.energy_ratio(W, M[0], 3), ValueError, "M"),
    (lambda: C.energy_ratio(W, M, 2.5), TypeError, "n_minority"),
    (lambda: C.learning_margin({}, 2.0), TypeError, "cfg"),
    (lambda: C.feature_summary(W[None], M, 3, strong_floor=-0.5), ValueError, "strong_floor"),
    (lambda: C.bias_schedule(3, None), TypeError, "cfg"),
    (lambda: C.train_encoders(None, [1.0], [0.0]), TypeError, "cfg"),
    (lambda: C.train_encoders(TINY, None, [0.0]), TypeError, "ratios"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], seed="0"), TypeError, "seed"),
    (lambda: C.ridge_probe(torch.randn(30, 5), torch.full((30,), 99), torch.randn(12, 5), 3),
     ValueError, "y_train"),
    (lambda: C.ridge_probe(torch.randn(30, 5), (torch.arange(30) % 3).float(),
                           torch.randn(12, 5), 3), TypeError, "y_train"),
    (lambda: C.ridge_probe(torch.randn(30, 5), torch.arange(29) % 3, torch.randn(12, 5), 3),
     ValueError, "y_train"),
    (lambda: C.ridge_probe(torch.randn(30, 5), torch.arange(30) % 3, torch.randn(12, 4), 3),
     ValueError, "f_test"),
    (lambda: C.train_longtail(C.LongTailConfig(), prune_fractions=()), ValueError,
     "prune_fractions"),
    (lambda: C.train_longtail({}), TypeError, "cfg"),
    (lambda: C.draw_alignment(None, torch.rand(8, 6), 3), TypeError, "ax"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(0, 6), 3), ValueError, "proj"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6), 6), ValueError, "n_minority"),
]


class _Refuse:
    """A checked public function's stand-in: calling it fails."""

    def __init__(self, func):
        self.name = func.__name__

    def __call__(self, *args, **kwargs):
        raise AssertionError(f"the per-step code called the checked {self.name}")


PER_STEP = ["bias_schedule", "magnitude_mask", "random_mask", "sample_codes", "make_views",
            "encode", "infonce",
            "alignment", "brelu", "straight_through_mask", "augment_1d"]


# train_encoders: the old loop decayed by hand, W <- W * (1 - lr * wd) - lr * g; the engine's SGD
# (torch.optim.SGD's rule) computes W <- W - lr * (g + wd * W). The two round differently in
# float32 (a few ulps per step); over 40 steps the measured gap is below 3e-7 on weights of size
# ~0.3 (1e-6 on the top/second ratios), so 1e-5 relative and 1e-6 absolute is tight.
RTOL, ATOL = 1e-5, 1e-6


def _tiny_encoders():
    return replace(C_eng.ContrastiveConfig.quick(), dim=8, n_features=4, n_minority=2, neurons=6,
                   batch=16, steps=40, log_every=10, bias_ramp=20, prune_every=10,
                   replicates=2, probe_samples=40)


def _capture(monkeypatch, module, name):
    """Replace ``module.name`` (an optimizer class) by a subclass that keeps its parameters."""
    base = getattr(module, name)
    kept = []

    class Keeping(base):
        def __init__(self, params, *args, **kwargs):
            params = list(params)
            kept.append(params)
            super().__init__(params, *args, **kwargs)

    monkeypatch.setattr(module, name, Keeping)
    return kept


# =================================================================================================
# contrastive.ContrastiveConfig
# =================================================================================================
@pytest.mark.reference
def test_contrastive_config_cross_field_rules_at_their_edges():
    # equalities are allowed where the rule is <=, refused where it is <
    assert C.ContrastiveConfig.quick(dim=12, n_features=12, n_minority=11)  # K = d, K_min = K - 1
    assert C.ContrastiveConfig.quick(n_tokens=3, n_signal=3)
    with pytest.raises(ValueError, match="n_minority"):
        C.ContrastiveConfig.quick(n_features=6, n_minority=6)
    with pytest.raises(ValueError, match="n_features"):
        C.ContrastiveConfig.quick(dim=11, n_features=12)
    with pytest.raises(ValueError, match="n_signal"):
        C.ContrastiveConfig.quick(n_tokens=3, n_signal=4)


# =================================================================================================
# contrastive.feature_dictionary
# =================================================================================================
def test_dictionary_is_orthonormal_and_seeded():
    M = C.feature_dictionary(10, 4, seed=3)
    assert M.shape == (10, 4)
    assert torch.allclose(M.T @ M, torch.eye(4), atol=1e-5)
    assert torch.equal(M, C.feature_dictionary(10, 4, seed=3))
    with pytest.raises(ValueError, match="n_features"):
        C.feature_dictionary(3, 4)


@pytest.mark.reference
def test_feature_dictionary_is_gram_schmidt_of_its_seeded_gaussian_matrix():
    """QR with a positive diagonal of R is Gram-Schmidt of the columns: the first K columns of
    Q come from the first K columns of ``randn(dim, dim)`` drawn under ``seed``."""
    for dim, K, seed in ((9, 4, 5), (6, 6, 0)):
        a = torch.randn(dim, dim, generator=rng(seed)).double().numpy()
        M = C.feature_dictionary(dim, K, seed=seed)
        assert M.shape == (dim, K) and M.dtype == torch.float32 and M.is_contiguous()
        np.testing.assert_allclose(M.double().numpy(), _gram_schmidt(a)[:, :K], atol=2e-5)
    M5 = C.feature_dictionary(9, 4, seed=5)
    assert not torch.allclose(M5, C.feature_dictionary(9, 4, seed=6))
    # a prefix: fewer features are the first columns of more
    assert torch.equal(C.feature_dictionary(9, 2, seed=5), M5[:, :2])
    assert torch.equal(C.feature_dictionary(9, 4), C.feature_dictionary(9, 4, seed=0))


@pytest.mark.reference
def test_make_views_noise_has_the_stated_expected_norm_and_batches():
    M = C.feature_dictionary(10, 3, seed=0)
    z = torch.zeros(2, 400, 3)
    X = C.make_views(M, z, 3, 1, 2.5, rng(0))  # (E, n, K) codes -> (E, n, L, d)
    assert X.shape == (2, 400, 3, 10)
    # E ||eps||^2 = noise^2 (std noise / sqrt(d) per coordinate)
    assert float((X ** 2).sum(-1).mean()) == pytest.approx(2.5 ** 2, rel=0.03)
    assert float(X.std()) == pytest.approx(2.5 / math.sqrt(10), rel=0.03)


@pytest.mark.reference
def test_alignment_against_numpy_on_batched_random_weights():
    M = C.feature_dictionary(7, 4, seed=3).double()
    W = torch.randn(2, 5, 7, generator=rng(0), dtype=DT)
    got = C.alignment(W, M)
    ref = _alignment_reference(W, M)
    assert set(got) == set(ref)
    for k in ref:
        assert got[k].shape == ((2, 5, 4) if k == "proj" else (2, 5)), k
        if k == "dominant":
            np.testing.assert_array_equal(got[k].numpy(), ref[k])
        else:
            np.testing.assert_allclose(got[k].numpy(), ref[k], rtol=1e-10, err_msg=k)
    # second is the second largest, not the smallest: with K = 4 they differ
    assert not np.allclose(ref["second"], np.sort(ref["proj"], -1)[..., 0])


# =================================================================================================
# contrastive.feature_frequencies
# =================================================================================================
def test_frequencies_and_codes():
    p = C.feature_frequencies(6, 2, 0.3, 3.0)
    assert torch.allclose(p, torch.tensor([0.3, 0.3, 0.3, 0.3, 0.1, 0.1]))
    g = torch.Generator().manual_seed(0)
    z = C.sample_codes(p, 20000, g)
    assert set(torch.unique(z).tolist()) <= {-1.0, 0.0, 1.0}
    assert torch.allclose((z != 0).float().mean(0), p, atol=0.015)
    zz = C.sample_codes(torch.stack([p, p]), 50, g)
    assert zz.shape == (2, 50, 6) and torch.equal(zz[0], zz[1])  # common random numbers
    with pytest.raises(ValueError, match="ratio"):
        C.feature_frequencies(6, 2, 0.3, 0.5)
    with pytest.raises(ValueError, match="n_minority"):
        C.feature_frequencies(6, 6, 0.3, 2.0)
    with pytest.raises(TypeError, match="freqs"):
        C.sample_codes([0.1, 0.2], 5, g)


@pytest.mark.reference
def test_feature_frequencies_by_hand_at_the_edges():
    p = C.feature_frequencies(5, 2, 0.2, 4.0)
    assert p.tolist() == pytest.approx([0.2, 0.2, 0.2, 0.05, 0.05])
    assert p.dtype == torch.float32
    assert C.feature_frequencies(5, 4, 0.4, 8.0).tolist() == pytest.approx([0.4] + [0.05] * 4)
    assert C.feature_frequencies(3, 1, 0.3, 1.0).tolist() == pytest.approx([0.3, 0.3, 0.3])
    with pytest.raises(ValueError):
        C.feature_frequencies(5, 5, 0.2, 2.0)


@pytest.mark.boundary
@pytest.mark.parametrize("ratio", [float("nan"), float("inf"), 0.5])
def test_feature_frequencies_refuses_bad_ratio(ratio):
    with pytest.raises(ValueError, match="ratio"):
        CL.feature_frequencies(10, 2, 0.2, ratio)


# =================================================================================================
# contrastive.sample_codes
# =================================================================================================
@pytest.mark.reference
def test_sample_codes_is_threshold_of_shared_uniforms_times_a_random_sign():
    freqs = torch.tensor([0.9, 0.1, 0.5, 0.0, 1.0])
    z = C.sample_codes(freqs, 40, rng(3))
    g = rng(3)
    u = torch.rand(40, 5, generator=g)
    sign = torch.randint(0, 2, (40, 5), generator=g) * 2 - 1
    expect = torch.where(u < freqs, sign, 0).float()
    assert z.dtype == torch.float32 and torch.equal(z, expect)
    assert (z[:, 3] == 0).all() and (z[:, 4] != 0).all()  # p = 0 never, p = 1 always
    assert (z[:, 4] == 1).any() and (z[:, 4] == -1).any()  # both signs
    # batched: the E profiles share the uniforms and signs (common random numbers)
    fr2 = torch.stack([freqs, torch.tensor([0.2, 0.6, 0.5, 1.0, 0.3])])
    zz = C.sample_codes(fr2, 40, rng(3))
    assert zz.shape == (2, 40, 5) and torch.equal(zz[0], expect)
    assert torch.equal(zz[1], torch.where(u < fr2[1], sign, 0).float())
    assert not torch.equal(C.sample_codes(freqs, 40, rng(4)), z)
    # a probability exactly equal to a uniform draw is not activated (u < p, not u <= p)
    at = u[0].clone()
    z_at = C.sample_codes(at, 40, rng(3))
    assert (z_at[0] == 0).all()
    assert torch.equal(z_at[1:], torch.where(u[1:] < at, sign[1:], 0).float())
    with pytest.raises(ValueError, match="freqs"):
        C.sample_codes(torch.tensor([0.5, 1.5]), 3, rng(0))
    with pytest.raises(ValueError, match="freqs"):
        C.sample_codes(torch.tensor([-0.1, 0.5]), 3, rng(0))


@pytest.mark.reference
def test_sample_codes_empirical_rates_and_balanced_signs():
    freqs = torch.tensor([0.7, 0.05, 0.3])
    z = C.sample_codes(freqs, 20000, rng(11))
    np.testing.assert_allclose((z != 0).float().mean(0).numpy(), freqs.numpy(), atol=0.015)
    assert abs(float(z[:, 0].mean())) < 0.03  # signs are +-1 with probability 1/2


# =================================================================================================
# contrastive.make_views
# =================================================================================================
def test_views_share_the_signal():
    M = C.feature_dictionary(8, 3, seed=0)
    g = torch.Generator().manual_seed(1)
    z = torch.tensor([[1.0, 0.0, -1.0]])
    X = C.make_views(M, z, n_tokens=5, n_signal=2, noise=0.0, generator=g)
    signal = z @ M.T
    carriers = [l for l in range(5) if X[0, l].norm() > 0]
    assert len(carriers) == 2
    for l in carriers:
        assert torch.allclose(X[0, l], signal[0])
    with pytest.raises(ValueError, match="n_signal"):
        C.make_views(M, z, 2, 3, 0.1, g)


@pytest.mark.reference
def test_make_views_matches_a_loop_and_places_exactly_n_signal_tokens():
    M = C.feature_dictionary(6, 3, seed=2).double()
    z = torch.tensor([[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-1.0, -1.0, 1.0], [0.0, 0.0, 0.0]],
                     dtype=DT)
    X = C.make_views(M, z, 5, 2, 0.7, rng(8))
    assert X.shape == (4, 5, 6)
    torch.testing.assert_close(X, _views_reference(M, z, 5, 2, 0.7, rng(8)), rtol=1e-6, atol=1e-7)
    # noiseless: exactly n_signal tokens carry M z, the others are zero
    for Ls in (1, 3, 5):
        X0 = C.make_views(M, z[:3], 5, Ls, 0.0, rng(1))
        for i in range(3):
            carriers = [l for l in range(5) if X0[i, l].abs().sum() > 0]
            assert len(carriers) == Ls
            for l in carriers:
                torch.testing.assert_close(X0[i, l], M @ z[i])
    # two calls: same code, new positions and noise
    g = rng(9)
    a, b = C.make_views(M, z, 5, 2, 0.7, g), C.make_views(M, z, 5, 2, 0.7, g)
    assert not torch.allclose(a, b)


@pytest.mark.boundary
def test_valid_calls_are_unchanged_by_the_checks():
    # the checked function returns exactly what the unchecked one returns
    f, g = torch.randn(5, 8, generator=gen()), torch.randn(5, 8, generator=gen())
    assert torch.equal(C.infonce(f, g, 0.5), C._infonce(f, g, 0.5))
    assert torch.equal(C.make_views(M, Z, 4, 2, 1.0, gen()),
                       C._make_views(M, Z, 4, 2, 1.0, gen()))
    assert torch.equal(C.encode(X4, W[None], A, 0.1, torch.ones(1, 8)),
                       C._encode(X4, W[None], A, 0.1, torch.ones(1, 8)))
    assert math.isclose(C.infonce_orthogonal_closed_form(1.0, 5, 0.5), math.log1p(4 * math.exp(-2)))
    # declared optional None and zero noise stay accepted
    assert C.draw_alignment(plt.gca(), np.random.rand(8, 6), 3, title=None, vmax=None) is not None
    plt.close("all")
    assert C.make_views(M, Z, 4, 2, 0.0, gen()).shape == (10, 4, 12)


# =================================================================================================
# contrastive.single_feature_samples
# =================================================================================================
@pytest.mark.reference
def test_single_feature_samples_carry_one_positive_feature():
    M = C.feature_dictionary(8, 4, seed=1)
    X, y = C.single_feature_samples(M, 30, 4, 3, 0.0, rng(5))
    assert X.shape == (30, 4, 8) and y.shape == (30,) and y.dtype == torch.int64
    y_ref = torch.randint(0, 4, (30,), generator=rng(5))
    assert torch.equal(y, y_ref)
    assert set(y.tolist()) == {0, 1, 2, 3}  # every feature, including the last
    for i in range(30):
        carriers = X[i][X[i].abs().sum(-1) > 0]
        assert len(carriers) == 3
        torch.testing.assert_close(carriers, M[:, y[i]].expand(3, 8))  # sign +1
    # with noise: the same y, and the view drawn after y from the same generator
    g = rng(6)
    Xn, yn = C.single_feature_samples(M, 5, 4, 1, 0.5, g)
    g2 = rng(6)
    y2 = torch.randint(0, 4, (5,), generator=g2)
    Xr = C.make_views(M, torch.nn.functional.one_hot(y2, 4).float(), 4, 1, 0.5, g2)
    assert torch.equal(yn, y2) and torch.equal(Xn, Xr)
    with pytest.raises(ValueError, match="n_signal"):
        C.single_feature_samples(M, 5, 2, 3, 0.5, rng(0))


# =================================================================================================
# contrastive.brelu
# =================================================================================================
def test_brelu_is_odd_with_a_dead_zone():
    s = torch.linspace(-3, 3, 13)
    out = C.brelu(s, 1.0)
    assert torch.allclose(out, -C.brelu(-s, 1.0))
    assert torch.all(out[s.abs() <= 1] == 0)
    assert torch.allclose(out[s > 1], s[s > 1] - 1)


def test_brelu_clamp_form_equals_the_relu_form():
    g = torch.Generator().manual_seed(3)
    s = torch.randn(4, 7, 5, generator=g)
    b = torch.rand(1, 1, 5, generator=g)
    relu_form = torch.relu(s - b) - torch.relu(-s - b)
    assert torch.equal(C.brelu(s, b), relu_form)  # exact, not just close
    assert torch.equal(C.brelu(s, 0.4), torch.relu(s - 0.4) - torch.relu(-s - 0.4))
    neg = torch.full((1, 1, 5), -0.3)  # a negative threshold keeps the defining formula
    assert torch.equal(C.brelu(s, neg), torch.relu(s + 0.3) - torch.relu(-s + 0.3))
    s.requires_grad_()
    C.brelu(s, b).sum().backward()
    assert torch.equal(s.grad, (s.detach().abs() > b).float())  # slope 1 outside the dead zone


@pytest.mark.reference
def test_brelu_by_hand_with_per_column_thresholds():
    s = torch.tensor([[-3.0, -0.5, 0.25, 2.0], [1.0, -1.0, 0.5, -0.75]])
    b = torch.tensor([0.5, 1.0, 0.25, 0.0])
    expect = torch.tensor([[-2.5, 0.0, 0.0, 2.0], [0.5, 0.0, 0.25, -0.75]])
    assert torch.equal(C.brelu(s, b), expect)
    # exactly at +-b: zero (dead zone closed); b = 0 is the identity
    assert C.brelu(torch.tensor([0.75, -0.75]), 0.75).tolist() == [0.0, 0.0]
    assert C.brelu(torch.tensor([-2.0, 3.0]), 0.0).tolist() == [-2.0, 3.0]


# =================================================================================================
# contrastive.straight_through_mask
# =================================================================================================
@pytest.mark.reference
def test_straight_through_mask_forward_is_masked_backward_is_identity():
    f = torch.tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], requires_grad=True)
    mask = torch.tensor([1.0, 0.0, 1.0])
    out = C.straight_through_mask(f, mask)
    assert out.tolist() == [[1.5, 0.0, 3.0], [0.5, 0.0, -1.0]]
    c = torch.tensor([[2.0, 3.0, 5.0], [7.0, 11.0, 13.0]])
    (out * c).sum().backward()
    assert torch.equal(f.grad, c)  # every entry, masked or not, gets its own gradient
    out2 = C.straight_through_mask(f.detach(), torch.ones(2, 1))
    assert torch.equal(out2, f.detach())
    with pytest.raises(ValueError, match="broadcast"):
        C.straight_through_mask(f, torch.ones(2))


# =================================================================================================
# contrastive.encode
# =================================================================================================
def test_pruned_forward_but_gradients_reach_masked_neurons():
    torch.manual_seed(0)
    X = torch.randn(1, 8, 3, 5)
    W = torch.randn(1, 4, 5, requires_grad=True)
    A = torch.zeros(1, 5, 5)
    mask = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
    f = C.encode(X, W, A, beta=0.0, mask=mask)
    assert torch.all(f[..., 1] == 0) and torch.all(f[..., 3] == 0)
    W2 = W.detach().clone().requires_grad_()
    C.encode(X, W2, A, beta=0.0, mask=mask).sum().backward()
    assert W2.grad[0, 1].abs().sum() > 0 and W2.grad[0, 3].abs().sum() > 0
    W3 = W.detach().clone().requires_grad_()
    loss = C.encode(X, W3, A, beta=0.0).sum()
    loss.backward()
    assert torch.allclose(W2.grad, W3.grad)  # straight-through: same gradient as unmasked


@pytest.mark.reference
def test_encode_matches_the_loop_formula_with_asymmetric_attention():
    X, W, A = _encoder_inputs()
    for beta in (0.0, 0.35):
        got = C.encode(X, W, A, beta)
        assert got.shape == (2, 3, 6)
        torch.testing.assert_close(got, _encode_reference(X, W, A, beta), rtol=1e-10, atol=1e-10)
    # the threshold bites: beta changes the output; the mask zeroes its neurons
    assert not torch.allclose(C.encode(X, W, A, 0.0), C.encode(X, W, A, 0.35))
    mask = torch.tensor([[1.0, 0.0, 1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]], dtype=DT)
    torch.testing.assert_close(C.encode(X, W, A, 0.35, mask),
                               _encode_reference(X, W, A, 0.35, mask), rtol=1e-10, atol=1e-10)
    # zero attention is the uniform average of the tokens
    Z = torch.zeros_like(A)
    H = X.mean(2, keepdim=True).expand_as(X)
    S = torch.einsum("enld,emd->enlm", H, W)
    b = 0.2 * W.norm(dim=-1)[:, None, None, :]
    torch.testing.assert_close(C.encode(X, W, Z, 0.2),
                               (torch.relu(S - b) - torch.relu(-S - b)).sum(2))


@pytest.mark.reference
def test_encode_gradient_treats_the_threshold_as_a_constant():
    X, W, A = _encoder_inputs(seed=1, E=1, n=2, L=3, d=4, m=3)
    mask = torch.tensor([[1.0, 0.0, 1.0]], dtype=DT)
    c = torch.randn(1, 2, 3, generator=rng(2), dtype=DT)
    W1, A1 = W.clone().requires_grad_(), A.clone().requires_grad_()
    (C.encode(X, W1, A1, 0.3, mask) * c).sum().backward()
    W2, A2 = W.clone().requires_grad_(), A.clone().requires_grad_()
    (_encode_reference(X, W2, A2, 0.3) * c).sum().backward()  # no mask: straight-through
    torch.testing.assert_close(W1.grad, W2.grad, rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(A1.grad, A2.grad, rtol=1e-9, atol=1e-10)


@pytest.mark.reference
def test_encode_is_odd_in_the_tokens():
    X, W, A = _encoder_inputs(seed=3)
    torch.testing.assert_close(C.encode(-X, W, A, 0.25), -C.encode(X, W, A, 0.25))


@pytest.mark.reference
def test_pruning_masks_the_online_branch_only():
    """With the mask of step 0 known, one step of an unpruned and a pruned model trained side by
    side equals a hand step whose online encoder is masked (straight-through, pruned model only)
    and whose target is not."""
    cfg = tiny_cfg(steps=1, prune_every=5)
    run = C.train_encoders(cfg, [2.0, 2.0], [0.0, 0.5], seed=0)
    M = C.feature_dictionary(cfg.dim, cfg.n_features, seed=0)
    W = (torch.randn(cfg.neurons, cfg.dim, generator=rng(0)) * cfg.init_scale).expand(2, -1, -1)
    mask = C.magnitude_mask(W, [0.0, 0.5])
    assert mask[0].tolist() == [1.0] * 6 and mask[1].sum() == 3
    W = W.clone().requires_grad_()
    A = torch.zeros(2, cfg.dim, cfg.dim, requires_grad=True)
    g = rng(999)
    freqs = C.feature_frequencies(cfg.n_features, cfg.n_minority, cfg.base_freq, 2.0)
    z = C.sample_codes(freqs.expand(2, -1).contiguous(), cfg.batch, g)
    X1 = C.make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
    X2 = C.make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
    f1 = C.encode(X1, W, A, 0.0, mask)
    f2 = C.encode(X2, W, A, 0.0).detach()
    loss = C.infonce(f1, f2, cfg.tau).sum()
    gW, gA = torch.autograd.grad(loss, [W, A])
    with torch.no_grad():
        W1 = W - cfg.lr * (gW + cfg.weight_decay * W)
    torch.testing.assert_close(run.W, W1, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(run.W[0], run.W[1], rtol=1e-5, atol=1e-7)


@pytest.mark.reference
def test_encoder_threshold_is_not_differentiated():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(1, 3, 4, 5, generator=g, dtype=torch.float64)
    W = torch.randn(1, 6, 5, generator=g, dtype=torch.float64, requires_grad=True)
    A = torch.randn(1, 5, 5, generator=g, dtype=torch.float64) * 0.1
    CL.encode(X, W, A, beta=0.3).sum().backward()
    # reference: the same encoder written out, with the threshold a constant
    b = (0.3 * W.detach().norm(dim=-1))[:, None, None, :]
    W2 = W.detach().clone().requires_grad_(True)
    H = torch.softmax(torch.einsum("enld,edf,enkf->enlk", X, A, X), dim=-1) @ X
    S = torch.einsum("enld,emd->enlm", H, W2)
    (F.relu(S - b) - F.relu(-S - b)).sum().backward()
    assert torch.allclose(W.grad, W2.grad, atol=1e-10)


# cases that the probe could not build (its good value is None, or it lacked a helper)
@pytest.mark.boundary
@pytest.mark.parametrize("mask,kind", [(torch.tensor([[1.0, NAN] + [1.0] * 6]), ValueError),
                                       (torch.ones(1, 0), ValueError),
                                       (torch.full((1, 8), 0.5), ValueError),
                                       (torch.ones(1, 7), ValueError),
                                       ([[1.0] * 8], TypeError)])
def test_encode_refuses_a_bad_mask(mask, kind):
    with pytest.raises(kind, match="mask"):
        C.encode(X4, W[None], A, 0.1, mask)


# =================================================================================================
# contrastive.infonce
# =================================================================================================
def test_infonce_matches_direct_formula():
    torch.manual_seed(0)
    f, g = torch.randn(5, 3), torch.randn(5, 3)
    tau = 0.7
    direct = 0.0
    for i in range(5):
        num = math.exp(float(f[i] @ g[i]) / tau)
        den = sum(math.exp(float(f[i] @ g[j]) / tau) for j in range(5))
        direct += -math.log(num / den) / 5
    assert math.isclose(float(C.infonce(f, g, tau)), direct, rel_tol=1e-5)
    batched = C.infonce(torch.stack([f, g]), torch.stack([g, f]), tau)
    assert batched.shape == (2,)
    with pytest.raises(ValueError, match="tau"):
        C.infonce(f, g, 0.0)
    with pytest.raises(ValueError, match="same shape"):
        C.infonce(f, g[:4], 1.0)


def test_infonce_stops_gradient_on_target():
    f = torch.randn(4, 3, requires_grad=True)
    g = torch.randn(4, 3, requires_grad=True)
    C.infonce(f, g, 1.0).backward()
    assert f.grad is not None and g.grad is None


@pytest.mark.reference
def test_infonce_batched_is_one_direct_loss_per_model_on_rectangular_batches():
    g = rng(4)
    f = torch.randn(3, 5, 2, generator=g, dtype=DT)
    t = torch.randn(3, 5, 2, generator=g, dtype=DT)
    got = C.infonce(f, t, 0.45)
    assert got.shape == (3,)
    for e in range(3):
        assert float(got[e]) == pytest.approx(_infonce_loop(f[e], t[e], 0.45), rel=1e-12)
    # not symmetric in its two arguments (row-wise softmax over the targets)
    assert float(C.infonce(t[0], f[0], 0.45)) == pytest.approx(_infonce_loop(t[0], f[0], 0.45),
                                                                rel=1e-12)
    assert float(C.infonce(t[0], f[0], 0.45)) != pytest.approx(float(got[0]), rel=1e-6)
    # one pair: log 1 = 0
    assert float(C.infonce(f[0, :1], t[0, :1], 0.3)) == 0.0
    with pytest.raises(ValueError, match="same shape"):
        C.infonce(f, t.float(), 1.0)


@pytest.mark.reference
def test_infonce_gradient_against_the_closed_form():
    """d L / d f_i = (1/n tau) (sum_j softmax_ij g_j - g_i)."""
    g = rng(5)
    f = torch.randn(4, 3, generator=g, dtype=DT, requires_grad=True)
    t = torch.randn(4, 3, generator=g, dtype=DT)
    tau = 0.8
    C.infonce(f, t, tau).backward()
    p = torch.softmax(f.detach() @ t.T / tau, -1)
    torch.testing.assert_close(f.grad, (p @ t - t) / (4 * tau))


# =================================================================================================
# contrastive.infonce_orthogonal_closed_form
# =================================================================================================
def test_infonce_identical_orthogonal_views_closed_form():
    n, a, tau = 6, 2.5, 0.8
    f = math.sqrt(a) * torch.eye(n)[:, :n]
    assert math.isclose(float(C.infonce(f, f.clone(), tau)),
                        C.infonce_orthogonal_closed_form(a, n, tau), rel_tol=1e-6)


@pytest.mark.reference
def test_infonce_orthogonal_closed_form_by_hand():
    assert C.infonce_orthogonal_closed_form(2.0, 3, 1.0) == pytest.approx(
        math.log(1 + 2 * math.exp(-2.0)), rel=1e-14)
    assert C.infonce_orthogonal_closed_form(1.5, 7, 0.5) == pytest.approx(
        math.log(1 + 6 * math.exp(-3.0)), rel=1e-14)
    assert C.infonce_orthogonal_closed_form(0.0, 5, 2.0) == pytest.approx(math.log(5))  # chance
    assert C.infonce_orthogonal_closed_form(3.0, 1, 2.0) == 0.0
    # and it is what infonce computes on such a batch (n = 4 in dimension 6)
    v = math.sqrt(1.3) * torch.eye(6, dtype=DT)[:4]
    assert float(C.infonce(v, v, 0.6)) == pytest.approx(
        C.infonce_orthogonal_closed_form(1.3, 4, 0.6), rel=1e-12)


# =================================================================================================
# contrastive.magnitude_mask
# =================================================================================================
def test_magnitude_mask_removes_exact_fraction_of_smallest():
    W = torch.tensor([[[3.0, 0.0], [0.1, 0.0], [2.0, 0.0], [0.5, 0.0]]])
    mask = C.magnitude_mask(W, 0.5)
    assert mask.tolist() == [[1.0, 0.0, 1.0, 0.0]]
    W2 = torch.randn(3, 10, 4)
    masks = C.magnitude_mask(W2, [0.0, 0.3, 1.0])
    assert masks.sum(1).tolist() == [10.0, 7.0, 0.0]
    with pytest.raises(ValueError, match="fraction"):
        C.magnitude_mask(W2, 1.5)
    with pytest.raises(ValueError, match="one entry per model"):
        C.magnitude_mask(W2, [0.1, 0.2])


@pytest.mark.reference
def test_magnitude_mask_rounds_the_count_and_breaks_ties_by_index():
    # norms 2, 1, 1, 3, 1, 0.5, 4  (three ties at 1)
    W = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 3.0], [0.6, 0.8], [0.5, 0.0],
                      [0.0, -4.0]])
    # round(0.27 * 7) = round(1.89) = 2: the two smallest (0.5 at 5, then the first 1 at 1)
    assert C.magnitude_mask(W, 0.27).tolist() == [1, 0, 1, 1, 1, 0, 1]
    # round(0.36 * 7) = round(2.52) = 3 (not floor 2); ties: index 1 before index 2
    assert C.magnitude_mask(W, 0.36).tolist() == [1, 0, 0, 1, 1, 0, 1]
    # round(0.3 * 7) = round(2.1) = 2 (not ceil 3)
    assert C.magnitude_mask(W, 0.3).tolist() == [1, 0, 1, 1, 1, 0, 1]
    assert C.magnitude_mask(W, 0.0).tolist() == [1] * 7
    assert C.magnitude_mask(W, 1.0).tolist() == [0] * 7
    assert C.magnitude_mask(W, 6 / 7).tolist() == [0, 0, 0, 0, 0, 0, 1]  # only the largest stays
    assert C.magnitude_mask(W.double(), 0.5).dtype == DT


@pytest.mark.reference
def test_magnitude_mask_batched_against_a_sorting_reference():
    W = torch.randn(3, 9, 4, generator=rng(7))
    fr = [0.2, 0.55, 0.8]
    got = C.magnitude_mask(W, fr)
    assert got.shape == (3, 9)
    for e in range(3):
        np.testing.assert_array_equal(got[e].numpy(), _mask_reference(W[e].numpy(), fr[e]))
    one = C.magnitude_mask(W, 0.55)  # a number applies to every model
    for e in range(3):
        np.testing.assert_array_equal(one[e].numpy(), _mask_reference(W[e].numpy(), 0.55))
    # only the norm over d counts: permuting coordinates of a row changes nothing
    assert torch.equal(C.magnitude_mask(W.flip(-1), fr), got)
    Wg = W.clone().requires_grad_()
    assert torch.equal(C.magnitude_mask(Wg, fr), got)


# =================================================================================================
# contrastive.random_mask
# =================================================================================================
def test_random_mask_counts_and_ignores_the_weights():
    W = torch.randn(3, 10, 4, generator=torch.Generator().manual_seed(0))
    m1 = C.random_mask(W, [0.5, 0.2, 0.0], torch.Generator().manual_seed(1))
    assert m1.shape == (3, 10) and (1 - m1).sum(1).tolist() == [5.0, 2.0, 0.0]
    m2 = C.random_mask(7 * W + 1, [0.5, 0.2, 0.0], torch.Generator().manual_seed(1))
    assert torch.equal(m1, m2)  # only the shape of W is read
    assert C.random_mask(W[0], 0.3, torch.Generator().manual_seed(1)).shape == (10,)
    draws = torch.stack([C.random_mask(W[:1], 0.5, torch.Generator().manual_seed(s))[0]
                         for s in range(200)])
    assert torch.allclose(draws.mean(0), torch.full((10,), 0.5), atol=0.12)  # uniform
    with pytest.raises(ValueError, match="fraction"):
        C.random_mask(W, 1.5, torch.Generator())
    with pytest.raises(ValueError, match="fraction"):
        C.random_mask(W, [0.5, 0.5], torch.Generator())
    with pytest.raises(TypeError, match="generator"):
        C.random_mask(W, 0.5, None)


# =================================================================================================
# contrastive.alignment
# =================================================================================================
def test_alignment_recovers_known_neurons():
    M = C.feature_dictionary(10, 4, seed=0)
    noise_dir = torch.linalg.qr(torch.cat([M, torch.randn(10, 1)], 1))[0][:, 4]
    W = torch.stack([3 * M[:, 2] + 0.5 * M[:, 0] + 0.2 * noise_dir,  # specialist of feature 2
                     M[:, 1] + M[:, 3]])                               # an even mixture
    a = C.alignment(W, M)
    assert a["dominant"][0] == 2
    assert torch.allclose(a["proj"][0], torch.tensor([0.5, 0.0, 3.0, 0.0]), atol=1e-5)
    assert math.isclose(float(a["noise"][0]), 0.2, rel_tol=1e-4)
    assert math.isclose(float(a["ratio"][0]), 6.0, rel_tol=1e-4)
    assert math.isclose(float(a["purity"][0]), 9 / 9.25, rel_tol=1e-4)
    assert math.isclose(float(a["ratio"][1]), 1.0, rel_tol=1e-4)
    s = C.feature_summary(W[None], M, n_minority=2)
    assert s["single_fraction"][0] == 0.5
    assert s["spec_major"][0] == 0.0 and s["spec_minor"][0] == 0.5  # feature 2 is a minority one
    with pytest.raises(ValueError, match="last dimension"):
        C.alignment(W[:, :5], M)


@pytest.mark.reference
def test_alignment_negative_coefficients_and_zero_second():
    M = torch.eye(3, dtype=DT)
    W = torch.tensor([[-3.0, 1.0, 0.0], [0.0, 0.0, 2.0]], dtype=DT)
    a = C.alignment(W, M)
    assert a["proj"].tolist() == [[3.0, 1.0, 0.0], [0.0, 0.0, 2.0]]
    assert a["dominant"].tolist() == [0, 2] and a["top"].tolist() == [3.0, 2.0]
    assert a["ratio"][0] == 3.0 and a["ratio"][1] == 2.0 / 1e-30  # clamped, not inf
    assert a["purity"].tolist() == pytest.approx([0.9, 1.0])
    assert a["noise"].tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="two features"):
        C.alignment(W, M[:, :1])


# =================================================================================================
# contrastive.strong_specialists
# =================================================================================================
def test_strong_specialists_need_a_magnitude_floor():
    M = torch.eye(4)
    W = torch.tensor([[4.0, 0.5, 0.0, 0.0],    # strong specialist of feature 0
                      [0.0, 0.0, 2.0, 0.1],    # strong specialist of feature 2 (2 >= 0.25 * 4)
                      [0.0, 0.0, 0.0, 0.3],    # pure but tiny: top 0.3 < 0.25 * 4
                      [1.5, 1.5, 0.0, 0.0]])   # strong but mixed (ratio 1)
    counts = C.strong_specialists(W, M, ratio=2.0, floor=0.25)
    assert counts.tolist() == [1.0, 0.0, 1.0, 0.0]
    assert C.strong_specialists(W, M, ratio=2.0, floor=0.0).tolist() == [1.0, 0.0, 1.0, 1.0]
    batched = C.strong_specialists(torch.stack([W, 2 * W]), M)
    assert torch.equal(batched[0], batched[1])  # invariant to a common scale
    s = C.feature_summary(W[None], M, n_minority=2)
    assert s["spec_major"][0] == 0.5 and s["spec_minor"][0] == 0.5
    assert math.isclose(s["strong_purity"][0], 2 / 3, rel_tol=1e-6)  # 3 strong neurons, 1 of them mixed
    purities = [16 / 16.25, 4 / 4.01, 1.0, 0.5]  # top^2 / sum of squares, every neuron
    assert math.isclose(s["mean_purity"][0], sum(purities) / 4, rel_tol=1e-5)
    with pytest.raises(ValueError, match="floor"):
        C.strong_specialists(W, M, floor=1.5)
    with pytest.raises(ValueError, match="ratio"):
        C.strong_specialists(W, M, ratio=0.5)


@pytest.mark.reference
def test_strong_specialists_exactly_at_both_thresholds():
    M = torch.eye(4, dtype=DT)
    W = torch.tensor([[4.0, 0.5, 0.0, 0.0],    # biggest; ratio 8
                      [0.0, 0.5, 1.0, 0.0],    # ratio exactly 2, top exactly 0.25 * 4: counted
                      [0.0, 0.0, 0.99, 0.5],   # ratio 1.98: not a specialist
                      [0.0, 0.0, 0.0, 0.96],   # pure, but 0.96 < 1: below the floor
                      [0.0, 3.0, 0.0, -1.0]], dtype=DT)  # ratio 3
    assert C.strong_specialists(W, M, 2.0, 0.25).tolist() == [1.0, 1.0, 1.0, 0.0]
    assert C.strong_specialists(W, M, 2.0, 0.24).tolist() == [1.0, 1.0, 1.0, 1.0]
    assert C.strong_specialists(W, M, 2.5, 0.25).tolist() == [1.0, 1.0, 0.0, 0.0]
    assert C.strong_specialists(W, M, 1.5, 0.25).tolist() == [1.0, 1.0, 1.0, 0.0]
    assert C.strong_specialists(W, M, 1.5, 0.24).tolist() == [1.0, 1.0, 2.0, 1.0]
    assert C.strong_specialists(W, M).tolist() == [1.0, 1.0, 1.0, 0.0]  # defaults 2.0, 0.25


@pytest.mark.reference
def test_strong_specialists_floor_is_per_model_against_a_loop():
    M = C.feature_dictionary(6, 4, seed=4).double()
    W = torch.randn(3, 8, 6, generator=rng(1), dtype=DT)
    W[1] *= 0.1  # a model whose neurons are all small: its own largest sets its floor
    W[2, 0] = 5 * M[:, 1]
    for ratio, floor in ((1.2, 0.3), (1.5, 0.1), (1.0, 0.0)):
        got = C.strong_specialists(W, M, ratio, floor)
        np.testing.assert_array_equal(got.numpy(), _strong_reference(W, M, ratio, floor))
    assert float(C.strong_specialists(W, M, 1.0, 0.0).sum(-1).max()) == 8  # all neurons count


# =================================================================================================
# contrastive.energy_ratio
# =================================================================================================
def test_energy_ratio_closed_form_and_scale_invariance():
    M = C.feature_dictionary(6, 4, seed=1)
    W = torch.stack([3 * M[:, 0], 1 * M[:, 1] + 2 * M[:, 3], 1 * M[:, 2]])
    # majority energy per feature (9 + 1) / 2 = 5, minority (1 + 4) / 2 = 2.5
    assert math.isclose(float(C.energy_ratio(W, M, 2)), 0.5, rel_tol=1e-5)
    E = C.energy_ratio(torch.stack([W, 7 * W]), M, 2)
    assert E.shape == (2,) and torch.allclose(E[0], E[1])
    noise_dir = torch.linalg.qr(torch.cat([M, torch.randn(6, 1)], 1))[0][:, 4]
    assert torch.allclose(C.energy_ratio(W + 5 * noise_dir, M, 2), E[0], atol=1e-5)
    with pytest.raises(ValueError, match="n_minority"):
        C.energy_ratio(W, M, 4)


@pytest.mark.reference
def test_energy_ratio_against_numpy_with_unequal_groups():
    M = C.feature_dictionary(8, 5, seed=6).double()
    W = torch.randn(3, 4, 8, generator=rng(2), dtype=DT)
    got = C.energy_ratio(W, M, 2)
    e = ((W.numpy() @ M.numpy()) ** 2).sum(-2)  # (E, K)
    ref = e[:, 3:].mean(-1) / e[:, :3].mean(-1)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
    # hand: majority features 0, 1 with energies 4 and 0 (mean 2); minority feature 2: 9 + 1
    Mi = torch.eye(3, dtype=DT)
    Wi = torch.tensor([[2.0, 0.0, 3.0], [0.0, 0.0, -1.0]], dtype=DT)
    assert float(C.energy_ratio(Wi, Mi, 1)) == pytest.approx(10 / 2)
    assert float(C.energy_ratio(Wi, Mi, 2)) == pytest.approx(5 / 4)  # minority 1, 2: (0 + 10) / 2
    with pytest.raises(ValueError, match="n_minority"):
        C.energy_ratio(Wi, Mi, 3)


# =================================================================================================
# contrastive.learning_margin
# =================================================================================================
def test_learning_margin_matches_the_formula():
    cfg = C.ContrastiveConfig.quick()
    mu = C.learning_margin(cfg, 10.0)
    p_min = cfg.base_freq / 10
    assert math.isclose(mu, cfg.n_signal ** 2 * p_min / (cfg.tau * cfg.weight_decay))
    assert math.isclose(C.learning_margin(cfg, 2.0) / C.learning_margin(cfg, 4.0), 2.0)
    with pytest.raises(ValueError, match="ratio"):
        C.learning_margin(cfg, 0.5)
    with pytest.raises(ValueError, match="weight_decay"):
        C.learning_margin(replace(cfg, weight_decay=0.0), 2.0)


@pytest.mark.reference
def test_quick_and_full_constants_are_the_ones_the_chapter_states():
    """The chapter's scale table and margin derivation: quick d=48, K=12 (6 minority), 4 tokens,
    144 neurons, 1200 steps of 128, mu = 10/kappa, beta L / L_s = 0.6; full d=128, K=32 (16
    minority), 8 tokens, 256 neurons, 4000 steps of 512, mu = 9/kappa, beta L / L_s = 0.8."""
    q, f = C.ContrastiveConfig.quick(), C.ContrastiveConfig.full()
    assert (q.dim, q.n_features, q.n_minority, q.n_tokens, q.neurons, q.steps, q.batch) == \
        (48, 12, 6, 4, 144, 1200, 128)
    assert (f.dim, f.n_features, f.n_minority, f.n_tokens, f.neurons, f.steps, f.batch) == \
        (128, 32, 16, 8, 256, 4000, 512)
    for cfg, num in ((q, 10.0), (f, 9.0)):
        for kappa in (1.0, 3.0, 5.0, 10.0):
            assert C.learning_margin(cfg, kappa) == pytest.approx(num / kappa, rel=1e-12)
    assert q.bias_max * q.n_tokens / q.n_signal == pytest.approx(0.6)
    assert f.bias_max * f.n_tokens / f.n_signal == pytest.approx(0.8)
    assert q.ratios == f.ratios == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert (q.replicates, f.replicates, q.edge_replicates, f.edge_replicates) == (6, 6, 3, 3)
    assert (q.bias_ramp, f.bias_ramp) == (600, 2000)
    assert (q.probe_samples, f.probe_samples) == (1200, 4000)
    # the documented defaults of the rest
    assert (q.noise, q.init_scale, q.lr, q.prune_fraction, q.prune_every) == \
        (1.0, 0.1, 0.1, 0.5, 50)
    assert (q.specialist_ratio, q.strong_floor, q.log_every) == (2.0, 0.25, 50)


@pytest.mark.reference
def test_learning_margin_each_constant_enters_once():
    cfg = C.ContrastiveConfig.quick(n_tokens=5, n_signal=3, base_freq=0.2, tau=1.6,
                                    weight_decay=0.05)
    # 3^2 * (0.2 / 4) / (1.6 * 0.05) = 0.45 / 0.08 = 5.625
    assert C.learning_margin(cfg, 4.0) == pytest.approx(5.625, rel=1e-12)
    assert C.learning_margin(replace(cfg, n_signal=2), 4.0) == pytest.approx(2.5, rel=1e-12)
    assert C.learning_margin(cfg, 1.0) == pytest.approx(22.5, rel=1e-12)
    with pytest.raises(ValueError, match="weight_decay"):
        C.learning_margin(replace(cfg, weight_decay=0.0), 4.0)


# =================================================================================================
# contrastive.feature_summary
# =================================================================================================
@pytest.mark.reference
def test_feature_summary_by_hand_with_a_ratio_exactly_at_the_threshold():
    M = torch.eye(4, dtype=DT)  # feature 3 is the minority one
    W = torch.tensor([[[4.0, 2.0, 0.0, 0.0],    # ratio exactly 2: a specialist (>=)
                       [0.0, 3.0, 0.0, 1.0],    # ratio 3
                       [1.0, 1.0, 0.0, 0.0],    # ratio 1, top exactly at the floor 0.25 * 4
                       [0.0, 0.0, 0.0, 2.0],    # a minority specialist
                       [0.0, 0.0, 0.5, 0.0]]], dtype=DT)  # pure but below the floor
    s = C.feature_summary(W, M, 1, 2.0, 0.25)
    assert s["single_fraction"][0] == pytest.approx(4 / 5)
    assert s["strong_purity"][0] == pytest.approx(3 / 4)  # 4 strong neurons, 3 of them pure
    assert s["spec_major"][0] == pytest.approx(2 / 3) and s["spec_minor"][0] == 1.0
    assert s["best_major"][0] == pytest.approx((4 + 3 + 0.5) / 3) and s["best_minor"][0] == 2.0
    assert s["energy"][0] == pytest.approx(5 / ((17 + 14 + 0.25) / 3))
    assert s["median_ratio"][0] == 3.0 and s["noise"][0] == 0.0


@pytest.mark.reference
@pytest.mark.parametrize("m", [7, 8])
def test_feature_summary_against_a_per_model_loop(m):
    M = C.feature_dictionary(9, 5, seed=8).double()
    W = torch.randn(2, m, 9, generator=rng(m), dtype=DT)
    W[0, :3] += 3 * M[:, [0, 3, 4]].T  # some specialists, of a majority and two minority features
    W[1, 0] += 4 * M[:, 1]
    for n_min, sr, fl in ((2, 1.3, 0.2), (1, 1.6, 0.45)):
        got = C.feature_summary(W, M, n_min, sr, fl)
        ref = _feature_summary_reference(W, M, n_min, sr, fl)
        assert set(got) == set(ref)
        for k, v in ref.items():
            assert isinstance(got[k], np.ndarray) and got[k].shape == (2,), k
            np.testing.assert_allclose(got[k], v, rtol=1e-6, err_msg=f"{k} {n_min} {sr} {fl}")
    d = C.feature_summary(W, M, 2)  # defaults specialist_ratio 2.0, strong_floor 0.25
    for k, v in _feature_summary_reference(W, M, 2, 2.0, 0.25).items():
        np.testing.assert_allclose(d[k], v, rtol=1e-6, err_msg=k)
    with pytest.raises(ValueError, match="n_minority"):
        C.feature_summary(W, M, 5)


# =================================================================================================
# contrastive.bias_schedule
# =================================================================================================
@pytest.mark.reference
def test_bias_schedule_by_hand_at_non_default_settings():
    cfg = C.ContrastiveConfig.quick(bias_ramp=8, bias_max=0.4)
    got = [C.bias_schedule(s, cfg) for s in (0, 1, 3, 7, 8, 9, 1000)]
    assert got == pytest.approx([0.0, 0.05, 0.15, 0.35, 0.4, 0.4, 0.4], rel=1e-12)
    flat = C.ContrastiveConfig.quick(bias_ramp=0, bias_max=0.7)
    assert [C.bias_schedule(s, flat) for s in (0, 5)] == [0.7, 0.7]
    assert C.bias_schedule(3, C.ContrastiveConfig.quick(bias_ramp=8, bias_max=0.0)) == 0.0


@pytest.mark.mutation
def test_bias_schedule_by_hand():
    cfg = ContrastiveConfig.quick(bias_ramp=10, bias_max=0.3)
    assert [bias_schedule(s, cfg) for s in (0, 5, 10, 20)] == pytest.approx([0.0, 0.15, 0.3, 0.3])


# =================================================================================================
# contrastive.train_encoders
# =================================================================================================
def test_tiny_training_run_and_config_validation():
    cfg = replace(C.ContrastiveConfig.quick(), dim=8, n_features=4, n_minority=2, neurons=6,
                  batch=16, steps=20, log_every=10, bias_ramp=10, replicates=1, probe_samples=40)
    run = C.train_encoders(cfg, [1.0, 4.0], [0.0, 0.5], seed=0)
    assert run.W.shape == (2, 6, 8) and run.history["proj"].shape == (3, 2, 6, 4)
    tab = C.condition_table(run)
    assert set(tab) == {(1.0, 0.0), (4.0, 0.5)}
    assert 0 <= tab[(4.0, 0.5)]["probe_minor"] <= 1
    curves = C.stage_curves(run)
    assert curves["t1"] <= curves["t2"]
    run2 = C.train_encoders(cfg, [4.0, 4.0], [0.0, 0.5], seed=0, replicates=2)
    base, pruned = C.paired(run2, np.arange(4.0), 4.0, 0.5)
    assert base.tolist() == [0.0, 2.0] and pruned.tolist() == [1.0, 3.0]
    assert torch.equal(torch.tensor(run2.history["proj"][0, 0]), torch.tensor(run2.history["proj"][0, 1]))
    with pytest.raises(ValueError, match="no unpruned"):
        C.paired(run2, np.arange(4.0), 2.0, 0.5)
    with pytest.raises(ValueError, match="n_minority"):
        replace(cfg, n_minority=4).validate()
    with pytest.raises(ValueError, match="ratios"):
        replace(cfg, ratios=(0.5,)).validate()
    with pytest.raises(ValueError, match="equal length"):
        C.train_encoders(cfg, [1.0], [0.0, 0.5])
    assert C.ContrastiveConfig.full().validate().neurons > cfg.neurons
    assert C.LongTailConfig.full().width > C.LongTailConfig.quick().width


def test_hard_mask_starves_masked_neurons():
    cfg = replace(C.ContrastiveConfig.quick(), dim=8, n_features=4, n_minority=2, neurons=6,
                  batch=16, steps=3, log_every=1, bias_ramp=2, replicates=1, prune_every=100,
                  weight_decay=0.0)
    soft = C.train_encoders(cfg, [2.0], [0.5], seed=0)
    hard = C.train_encoders(cfg, [2.0], [0.5], seed=0, hard_mask=True)
    start = torch.tensor(soft.history["proj"][0, 0])
    assert torch.equal(start, torch.tensor(hard.history["proj"][0, 0]))  # same initialization
    moved_hard = (torch.tensor(hard.history["proj"][-1, 0]) - start).abs().sum(-1)
    moved_soft = (torch.tensor(soft.history["proj"][-1, 0]) - start).abs().sum(-1)
    assert int((moved_hard == 0).sum()) == 3  # the 3 masked neurons: no gradient, no decay
    assert int((moved_soft == 0).sum()) == 0  # straight-through: every neuron is trained


def test_random_mask_runs_pair_with_their_unpruned_partner():
    cfg = replace(C.ContrastiveConfig.quick(), dim=8, n_features=4, n_minority=2, neurons=6,
                  batch=16, steps=6, log_every=3, bias_ramp=3, replicates=2, prune_every=2,
                  probe_samples=40)
    run = C.train_encoders(cfg, [3.0, 3.0, 3.0], [0.0, 0.5, 0.5], seed=0,
                           masks=["magnitude", "magnitude", "random"])
    assert run.masks == ["magnitude", "magnitude", "random"] * 2
    assert run.select(3.0, 0.5) == [1, 4] and run.select(3.0, 0.5, "random") == [2, 5]
    assert run.select(3.0, 0.0, "random") == [0, 3]  # the unpruned partner of either mask
    base, rand = C.paired(run, np.arange(6.0), 3.0, 0.5, "random")
    assert base.tolist() == [0.0, 3.0] and rand.tolist() == [2.0, 5.0]
    assert not torch.equal(run.W[1], run.W[2])  # the two masks train differently
    assert set(C.condition_table(run)) == {(3.0, 0.0), (3.0, 0.5), (3.0, 0.5, "random")}
    plain = C.train_encoders(cfg, [3.0, 3.0, 3.0], [0.0, 0.5, 0.5], seed=0)
    assert torch.equal(plain.W[[0, 1]], run.W[[0, 1]])  # the random mask leaves the samples alone
    with pytest.raises(ValueError, match="masks"):
        C.train_encoders(cfg, [3.0], [0.5], masks=["random", "random"])
    with pytest.raises(ValueError, match="masks"):
        C.train_encoders(cfg, [3.0], [0.5], masks=["weights"])
    with pytest.raises(ValueError, match="mask"):
        run.select(3.0, 0.5, "weights")


@pytest.mark.reference
def test_train_encoders_initialization_seeds_and_pairing():
    cfg = tiny_cfg(steps=2, log_every=1, init_scale=0.3)
    run = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=2, replicates=2)
    assert run.ratios == [1.0, 3.0, 1.0, 3.0] and run.fractions == [0.0, 0.5, 0.0, 0.5]
    assert run.seeds == [2000, 2000, 2001, 2001]
    assert torch.equal(run.M, C.feature_dictionary(cfg.dim, cfg.n_features, seed=2))
    # the logged weights at step 0 are the initial ones: randn(m, d) * init_scale from seed*1000+j
    for e, j in enumerate([0, 0, 1, 1]):
        W0 = torch.randn(cfg.neurons, cfg.dim, generator=rng(2000 + j)) * 0.3
        a = C.alignment(W0, run.M)
        np.testing.assert_allclose(run.history["proj"][0, e], a["proj"].numpy(), rtol=1e-6)
        np.testing.assert_allclose(run.history["neuron_noise"][0, e], a["noise"].numpy(),
                                   rtol=1e-6)
    assert run.history["step"].tolist() == [0, 1, 2]
    assert run.history["proj"].shape == (3, 4, 6, 5) and run.history["noise"].shape == (3, 4)
    a = C.alignment(run.W, run.M)
    np.testing.assert_allclose(run.history["top"][-1], a["top"].mean(1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(run.history["second"][-1], a["second"].mean(1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(run.history["ratio"][-1], a["ratio"].median(1).values.numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(run.history["noise"][-1], a["noise"].mean(1).numpy(), rtol=1e-6)
    # default replicates come from the config
    assert len(C.train_encoders(replace(cfg, replicates=3), [2.0], [0.0]).seeds) == 3
    # same seed, same numbers; another seed, other numbers
    again = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=2, replicates=2)
    assert torch.equal(again.W, run.W) and torch.equal(again.A, run.A)
    other = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=3, replicates=2)
    assert not torch.allclose(other.W, run.W)


def test_energy_curves_end_at_the_energy_ratio_and_start_at_the_initial_one():
    cfg = tiny_cfg(steps=3, log_every=1)
    run = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=1, replicates=2)
    e = C.energy_curves(run)
    assert e.shape == (4, 4)
    np.testing.assert_allclose(e[-1], C.energy_ratio(run.W, run.M, 2).numpy(), rtol=1e-5)
    W0 = torch.randn(cfg.neurons, cfg.dim, generator=rng(1000)) * cfg.init_scale
    np.testing.assert_allclose(e[0, 0], float(C.energy_ratio(W0, run.M, 2)), rtol=1e-5)
    with pytest.raises(TypeError, match="EncoderRun"):
        C.energy_curves({"proj": e})


def test_train_encoders_stream_is_an_independent_draw_with_the_same_dictionary():
    cfg = tiny_cfg(steps=3, log_every=1, init_scale=0.3)
    base = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=2, replicates=2)
    zero = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=2, replicates=2, stream=0)
    assert torch.equal(zero.W, base.W)  # stream 0 is the default draw
    one = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=2, replicates=2, stream=1)
    assert one.seeds == [2002, 2002, 2003, 2003] and torch.equal(one.M, base.M)
    for e, j in enumerate([0, 0, 1, 1]):  # stream 1 starts where stream 0's replicates end
        W0 = torch.randn(cfg.neurons, cfg.dim, generator=rng(2002 + j)) * 0.3
        np.testing.assert_allclose(one.history["proj"][0, e],
                                   C.alignment(W0, one.M)["proj"].numpy(), rtol=1e-6)
    # replicates 2 and 3 of stream 0 start from the same weights but see other samples
    more = C.train_encoders(cfg, [1.0], [0.0], seed=2, replicates=4)
    same_start = C.train_encoders(cfg, [1.0], [0.0], seed=2, replicates=2, stream=1)
    np.testing.assert_array_equal(more.history["proj"][0, 2:], same_start.history["proj"][0])
    assert not torch.allclose(more.W[2:], same_start.W)
    with pytest.raises(ValueError, match="runs out of seeds"):
        C.train_encoders(cfg, [1.0], [0.0], replicates=500, stream=1)


@pytest.mark.reference
def test_train_encoders_one_step_is_sgd_on_infonce_with_weight_decay():
    cfg = tiny_cfg(steps=1, lr=0.3, weight_decay=0.07, tau=0.9)
    run = C.train_encoders(cfg, [2.5], [0.0], seed=1)
    W1, A1 = _one_step_reference(cfg, 2.5, seed=1)
    torch.testing.assert_close(run.W, W1, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(run.A, A1, rtol=1e-5, atol=1e-7)
    assert run.A.abs().max() > 0  # the attention is trained too


@pytest.mark.reference
@pytest.mark.parametrize("field, value", [
    ("lr", 0.05), ("weight_decay", 0.2), ("tau", 1.1), ("init_scale", 0.2), ("noise", 0.4),
    ("batch", 9), ("n_signal", 1), ("n_tokens", 4), ("base_freq", 0.4), ("bias_max", 0.05),
    ("bias_ramp", 1), ("prune_fraction", 0.25), ("prune_every", 3), ("n_minority", 3),
])
def test_every_training_parameter_changes_the_trained_weights(field, value):
    """Each field the training reads, changed alone, changes the weights after 4 steps.
    prune_fraction is passed as the pruned condition's fraction (the config's own is a default
    the chapter reads); prune_every is seen only with pruning on."""
    cfg = tiny_cfg(bias_max=0.3, bias_ramp=3, prune_every=1)
    fr = [0.5] if field in ("prune_every", "prune_fraction") else [0.0]
    if field == "prune_every":  # the norm ranking must change between refreshes: a large step
        cfg = replace(cfg, lr=1.0)
    base = C.train_encoders(cfg, [3.0], fr, seed=0)
    if field == "prune_fraction":
        changed = C.train_encoders(cfg, [3.0], [value], seed=0)
    else:
        changed = C.train_encoders(replace(cfg, **{field: value}), [3.0], fr, seed=0)
    assert not torch.allclose(base.W, changed.W, rtol=1e-5, atol=1e-7), field


@pytest.mark.reference
def test_ratio_and_log_every_change_what_is_recorded():
    cfg = tiny_cfg()
    a = C.train_encoders(cfg, [1.0, 8.0], [0.0, 0.0])
    assert not torch.allclose(a.W[0], a.W[1])  # same init, different minority frequency
    b = C.train_encoders(replace(cfg, log_every=3), [1.0], [0.0])
    assert b.seeds == [0]  # default seed 0
    assert b.history["step"].tolist() == [0, 3, 4]


@pytest.mark.boundary
def test_training_steps_skip_the_boundary_checks(monkeypatch):
    for name in PER_STEP:
        monkeypatch.setattr(C, name, _Refuse(getattr(C, name)))
    cfg = replace(TINY, steps=4, prune_every=2)
    run = C.train_encoders(cfg, [1.0, 2.0], [0.0, 0.5], seed=0, replicates=1)
    hard = C.train_encoders(cfg, [2.0], [0.5], seed=0, replicates=1, hard_mask=True)
    rand = C.train_encoders(cfg, [2.0], [0.5], seed=0, replicates=1, masks=["random"])
    assert np.isfinite(run.history["proj"]).all() and np.isfinite(hard.history["proj"]).all()
    assert np.isfinite(rand.history["proj"]).all()
    lcfg = replace(C.LongTailConfig(), n_train=300, n_test=100, width=8, out_dim=4, batch=8,
                   steps=3, prune_every=2)
    out = C.train_longtail(lcfg, (0.0, 0.5), seed=0)
    assert out["acc"].shape == (2, 10)


@pytest.mark.boundary
def test_conditions_may_be_arrays_but_not_strings_or_nan():
    a = C.train_encoders(TINY, np.array([1.0, 2.0]), np.array([0.0, 0.5]), seed=0, replicates=1)
    b = C.train_encoders(TINY, [1.0, 2.0], (0.0, 0.5), seed=0, replicates=1)
    assert torch.equal(a.W, b.W) and a.ratios == b.ratios
    for bad, kind in (("abc", TypeError), (np.array([1.0, NAN]), ValueError),
                      (np.array([[1.0, 2.0]]), TypeError), ([True, 2.0], TypeError)):
        with pytest.raises(kind, match="ratios"):
            C.train_encoders(TINY, bad, [0.0, 0.5])
    with pytest.raises(ValueError, match=r"prune_fractions\[1\]"):
        C.train_longtail(C.LongTailConfig(), prune_fractions=np.array([0.0, 1.5]))


@pytest.mark.engine
@pytest.mark.parametrize("hard_mask", [False, True])
def test_train_encoders_matches_the_old_loop(hard_mask):
    cfg = _tiny_encoders()
    old = ref.old_train_encoders(cfg, [1.0, 4.0], [0.0, 0.5], seed=0, hard_mask=hard_mask)
    new = C_eng.train_encoders(cfg, [1.0, 4.0], [0.0, 0.5], seed=0, hard_mask=hard_mask)
    torch.testing.assert_close(new.W, old.W, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(new.A, old.A, rtol=RTOL, atol=ATOL)
    assert torch.equal(new.M, old.M)
    assert (new.ratios, new.fractions, new.seeds) == (old.ratios, old.fractions, old.seeds)
    assert set(new.history) == set(old.history)
    # a check at step t sees the weights after t updates, as the old loop logged before update t
    assert new.history["step"].tolist() == old.history["step"].tolist() == [0, 10, 20, 30, 40]
    for k, v in old.history.items():
        assert new.history[k].shape == v.shape, k
        np.testing.assert_allclose(new.history[k], v, rtol=RTOL, atol=ATOL, err_msg=k)
    # before any update the two are the same numbers
    for k, v in old.history.items():
        assert np.array_equal(new.history[k][0], v[0]), k


@pytest.mark.engine
def test_train_encoders_logs_the_last_step_off_the_grid():
    cfg = replace(_tiny_encoders(), steps=25, replicates=1)
    old = ref.old_train_encoders(cfg, [2.0], [0.5], seed=3)
    new = C_eng.train_encoders(cfg, [2.0], [0.5], seed=3)
    assert new.history["step"].tolist() == old.history["step"].tolist() == [0, 10, 20, 25]
    np.testing.assert_allclose(new.history["proj"], old.history["proj"], rtol=RTOL, atol=ATOL)


# =================================================================================================
# contrastive.stage_boundaries
# =================================================================================================
def test_stage_boundaries_on_synthetic_curves():
    step = np.arange(0, 100, 10)
    top = np.array([0.1, 0.5, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    ratio = np.array([1.2, 1.2, 1.3, 2.0, 3.0, 4.0, 4.5, 5.0, 5.0, 5.0])
    assert C.stage_boundaries(step, top, ratio) == (20, 60)  # 4.5 >= 0.9 * 5
    with pytest.raises(ValueError):
        C.stage_boundaries(step[:2], top[:2], ratio[:2])


@pytest.mark.reference
def test_stage_boundaries_exact_thresholds_and_the_later_maximum():
    step = [0, 5, 10, 15, 20, 25, 30]
    top = [0.2, 0.5, 0.9, 0.95, 1.0, 0.97, 1.0]
    # an early spike of the ratio (9) before stage I ends must not set stage II's target
    ratio = [9.0, 1.0, 2.0, 3.6, 4.0, 3.9, 3.0]
    assert C.stage_boundaries(step, top, ratio) == (10, 15)  # 0.9 >= 0.9 * 1.0; 3.6 >= 0.9 * 4
    assert C.stage_boundaries(step, top, ratio, level=0.5) == (5, 10)  # 0.5 = 0.5 * 1; 2 = 0.5 * 4
    assert C.stage_boundaries(step, top, ratio, level=1.0) == (20, 20)
    assert C.stage_boundaries(np.array(step) * 3, top, ratio) == (30, 45)  # steps, not indices
    r = np.random.default_rng(0)
    for _ in range(20):
        t, q = r.random(9), r.random(9) * 5
        for level in (0.3, 0.75, 0.9):
            assert C.stage_boundaries(np.arange(9) * 7, t, q, level) == \
                _stages_reference(list(np.arange(9) * 7), list(t), list(q), level)


@pytest.mark.boundary
@pytest.mark.parametrize("name", ["step", "top", "ratio"])
def test_stage_boundaries_refuses_nan_curves(name):
    args = {"step": np.arange(5.0), "top": np.linspace(0, 1, 5), "ratio": np.linspace(1, 3, 5)}
    args[name][1] = NAN
    with pytest.raises(ValueError, match=name):
        C.stage_boundaries(**args)


# =================================================================================================
# contrastive.representations
# =================================================================================================
@pytest.mark.reference
def test_representations_use_the_final_threshold_and_no_mask():
    cfg = tiny_cfg(neurons=9, steps=10, bias_ramp=40, bias_max=0.4)  # beta = 0.4 * 10 / 40 = 0.1
    run = _hand_run(cfg, [1.0, 3.0], [0.0, 0.5], [0, 0])
    X = torch.randn(4, cfg.n_tokens, cfg.dim, generator=rng(3))
    got = C.representations(run, X)
    assert got.shape == (2, 4, 9)
    ref = _encode_reference(X.double()[None].expand(2, -1, -1, -1), run.W.double(), run.A.double(),
                            0.1)
    torch.testing.assert_close(got.double(), ref, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(got, C.encode(X[None].expand(2, -1, -1, -1), run.W, run.A, 0.4))
    with pytest.raises(ValueError, match="tokens"):
        C.representations(run, X.double())


# =================================================================================================
# contrastive.ridge_probe
# =================================================================================================
def test_ridge_probe_separates_separable_data():
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (300,), generator=g)
    f = torch.nn.functional.one_hot(y, 3).float() * 3 + 0.1 * torch.randn(300, 3, generator=g)
    pred = C.ridge_probe(f[:200], y[:200], f[200:], 3)
    assert (pred == y[200:]).float().mean() == 1.0
    with pytest.raises(ValueError, match="ridge"):
        C.ridge_probe(f[:200], y[:200], f[200:], 3, ridge=0)


@pytest.mark.reference
def test_ridge_probe_against_numpy_normal_equations():
    r = np.random.default_rng(3)
    for ridge in (0.5, 3.0, 1e-2):
        # features on very different scales and offsets, labels unbalanced
        ftr = r.normal(size=(25, 4)) * [1.0, 10.0, 0.1, 3.0] + [5.0, -2.0, 0.0, 1.0]
        fte = r.normal(size=(400, 4)) * [1.0, 10.0, 0.1, 3.0] + [5.0, -2.0, 0.0, 1.0]
        ytr = r.choice(3, size=25, p=[0.6, 0.3, 0.1])
        ytr[:3] = [0, 1, 2]
        got = C.ridge_probe(torch.tensor(ftr), torch.tensor(ytr), torch.tensor(fte), 3, ridge)
        ref = _ridge_reference(ftr, ytr, fte, 3, ridge)
        assert got.shape == (400,)
        np.testing.assert_array_equal(got.numpy(), ref)
    assert len(set(ref.tolist())) >= 2  # not a constant predictor
    # batched: each model its own probe
    f2 = r.normal(size=(2, 25, 4))
    t2 = r.normal(size=(2, 60, 4))
    got = C.ridge_probe(torch.tensor(f2), torch.tensor(ytr), torch.tensor(t2), 4, 0.2)
    assert got.shape == (2, 60)
    for e in range(2):
        np.testing.assert_array_equal(got[e].numpy(), _ridge_reference(f2[e], ytr, t2[e], 4, 0.2))
    # default ridge is 1e-2
    np.testing.assert_array_equal(
        C.ridge_probe(torch.tensor(f2[0]), torch.tensor(ytr), torch.tensor(t2[0]), 4).numpy(),
        _ridge_reference(f2[0], ytr, t2[0], 4, 1e-2))


@pytest.mark.reference
def test_ridge_probe_constant_feature_does_not_blow_up():
    ftr = torch.tensor([[1.0, 2.0], [1.0, -1.0], [1.0, 3.0], [1.0, -2.0]], dtype=DT)
    y = torch.tensor([1, 0, 1, 0])
    pred = C.ridge_probe(ftr, y, torch.tensor([[1.0, 5.0], [1.0, -5.0]], dtype=DT), 2)
    assert pred.tolist() == [1, 0]
    # a feature with a tiny spread is standardized like any other (the floor is 1e-6): it
    # outweighs the intercept of the unbalanced labels
    x = torch.tensor([3e-4, -1e-4, -2e-4, -1e-4, -2e-4, -1.5e-4, 2.5e-4], dtype=DT)
    ftr = torch.stack([torch.ones(7, dtype=DT), x], 1)
    y = torch.tensor([1, 0, 0, 0, 0, 0, 1])
    fte = torch.tensor([[1.0, 3e-4], [1.0, -2e-4], [1.0, 2e-4]], dtype=DT)
    assert C.ridge_probe(ftr, y, fte, 2).tolist() == [1, 0, 1]


# =================================================================================================
# contrastive.feature_probe_accuracy
# =================================================================================================
@pytest.mark.reference
def test_feature_probe_accuracy_is_per_feature_recall_on_seeded_fresh_samples():
    cfg = tiny_cfg(neurons=8, probe_samples=40, noise=1.5)
    run = _hand_run(cfg, [1.0, 2.0], [0.0, 0.0], [0, 0])
    got = C.feature_probe_accuracy(run, seed=3)
    assert got.shape == (2, 5)
    g = rng(10_003)
    args = (40, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
    Xtr, ytr = C.single_feature_samples(run.M, *args)
    Xte, yte = C.single_feature_samples(run.M, *args)
    pred = C.ridge_probe(C.representations(run, Xtr), ytr, C.representations(run, Xte), 5)
    ref = np.zeros((2, 5))
    for e in range(2):
        for k in range(5):
            sel = [i for i in range(40) if yte[i] == k]
            ref[e, k] = sum(int(pred[e, i]) == k for i in sel) / len(sel)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    assert 0 < got.max() <= 1 and got.min() < 1  # informative, not saturated
    assert not np.array_equal(C.feature_probe_accuracy(run, seed=4), got)
    np.testing.assert_array_equal(C.feature_probe_accuracy(run), C.feature_probe_accuracy(run, 0))


# =================================================================================================
# contrastive.best_alignment_curves
# =================================================================================================
def test_best_alignment_curves_by_hand():
    cfg = replace(C.ContrastiveConfig.quick(), dim=8, n_features=4, n_minority=2, neurons=3,
                  batch=8, steps=4, log_every=2, bias_ramp=2, replicates=1)
    run = C.train_encoders(cfg, [2.0], [0.0], seed=0)
    proj = np.zeros((2, 1, 3, 4))
    proj[0, 0] = [[1, 0, 0.2, 0.0], [0, 3, 0.0, 0.4]]  + [[0, 0, 0, 0]]
    proj[1, 0] = [[2, 0, 0.1, 0.0], [0, 1, 0.0, 1.2]] + [[0, 0, 0, 0]]
    run.history["proj"] = proj
    c = C.best_alignment_curves(run)
    assert np.allclose(c["major"][:, 0], [2.0, 1.5]) and np.allclose(c["minor"][:, 0], [0.3, 0.65])
    assert np.allclose(c["growth"], [0.65 / 0.3])
    with pytest.raises(TypeError, match="run"):
        C.best_alignment_curves({"proj": proj})


# =================================================================================================
# contrastive.paired
# =================================================================================================
@pytest.mark.reference
def test_encoder_run_select_paired_and_condition_means():
    cfg = tiny_cfg()
    ratios = [1.0, 3.0, 3.0, 1.0, 3.0, 3.0]
    fractions = [0.0, 0.0, 0.5, 0.0, 0.0, 0.5]
    seeds = [0, 0, 0, 1, 1, 1]
    run = _hand_run(cfg, ratios, fractions, seeds)
    assert run.select(3.0, 0.5) == [2, 5] and run.select(1.0, 0.0) == [0, 3]
    assert run.select(3.0, 0.0) == [1, 4] and run.select(1.0, 0.5) == []
    v = np.arange(12.0).reshape(6, 2) ** 2
    base, pruned = C.paired(run, v, 3.0, 0.5)
    assert base.tolist() == [[4.0, 9.0], [64.0, 81.0]] and pruned.tolist() == [[16.0, 25.0],
                                                                                [100.0, 121.0]]
    means = C.condition_means(run, v)
    assert list(means) == [(1.0, 0.0), (3.0, 0.0), (3.0, 0.5)]  # first-seen order
    assert means[(1.0, 0.0)].tolist() == [(0 + 36) / 2, (1 + 49) / 2]
    assert means[(3.0, 0.5)].tolist() == [(16 + 100) / 2, (25 + 121) / 2]
    three = _hand_run(cfg, [2.0, 2.0, 2.0], [0.0, 0.0, 0.0], [0, 1, 2])
    assert C.condition_means(three, np.array([0.0, 1.0, 8.0])) == {(2.0, 0.0): 3.0}  # mean
    bad = _hand_run(cfg, [3.0, 3.0, 3.0, 3.0], [0.0, 0.5, 0.0, 0.5], [0, 0, 1, 2])
    with pytest.raises(ValueError, match="initializations"):
        C.paired(bad, np.zeros(4), 3.0, 0.5)
    with pytest.raises(ValueError, match="one row per model"):
        C.paired(run, np.zeros(5), 3.0, 0.5)
    with pytest.raises(ValueError, match="no unpruned"):
        C.paired(run, v, 1.0, 0.5)
    with pytest.raises(ValueError, match="one row per model"):
        C.condition_means(run, np.zeros(7))


@pytest.mark.boundary
def test_results_helpers_check_their_arguments():
    run = C.train_encoders(TINY, [2.0, 2.0], [0.0, 0.5], seed=0, replicates=1)
    with pytest.raises(ValueError, match="values"):
        C.paired(run, np.arange(3.0), 2.0, 0.5)
    with pytest.raises(ValueError, match="fraction"):
        C.paired(run, np.arange(2.0), 2.0, 1.5)
    with pytest.raises(ValueError, match="values"):
        C.condition_means(run, np.arange(5.0))
    with pytest.raises(ValueError, match="fraction"):
        C.stage_curves(run, fraction=NAN)
    with pytest.raises(ValueError, match="X"):
        C.representations(run, torch.randn(3, 4, 5))
    with pytest.raises(ValueError, match="seed"):
        C.condition_table(run, seed=-1)
    with pytest.raises(ValueError, match="ratio"):
        run.select(0.5, 0.0)
    # valid calls still work and give the same numbers as the unchecked functions
    assert run.select(2.0, 0.5) == [1]
    assert C.condition_means(run, np.arange(2.0)) == {(2.0, 0.0): 0.0, (2.0, 0.5): 1.0}
    assert [v.tolist() for v in C.paired(run, np.arange(2.0), 2.0, 0.5)] == [[0.0], [1.0]]


# =================================================================================================
# contrastive.LongTailConfig
# =================================================================================================
@pytest.mark.reference
def test_longtail_config_defaults_and_class_budget():
    q, f = C.LongTailConfig.quick(), C.LongTailConfig.full()
    assert (q.n_train, q.n_test, q.width, q.out_dim, q.steps, q.batch) == (4000, 1000, 256, 64,
                                                                            4000, 256)
    assert (f.n_train, f.n_test, f.width, f.out_dim, f.steps, f.batch) == (10000, 4000, 1024, 128,
                                                                            8000, 512)
    assert (q.imbalance, q.lr, q.momentum, q.weight_decay, q.tau) == (20.0, 0.05, 0.9, 5e-4, 0.2)
    assert (q.shift, q.scale, q.jitter, q.head_classes, q.tail_classes) == (8, 0.15, 0.2, 3, 3)
    assert C.LongTailConfig.quick(head_classes=4, tail_classes=6)  # exactly 10 classes
    with pytest.raises(ValueError, match="tail_classes"):
        C.LongTailConfig.quick(head_classes=5, tail_classes=6)


# =================================================================================================
# contrastive.augment_1d
# =================================================================================================
def test_augment_1d_shift_is_circular():
    g = torch.Generator().manual_seed(0)
    x = torch.arange(10.0)[None].repeat(4, 1)
    out = C.augment_1d(x, g, shift=3, scale=0.0, jitter=0.0)
    for row in out:
        assert sorted(row.tolist()) == list(range(10))
    with pytest.raises(ValueError):
        C.augment_1d(torch.zeros(3), g, 1, 0.0, 0.0)


@pytest.mark.reference
def test_augment_1d_matches_a_roll_scale_and_noise_reference():
    x = torch.randn(6, 11, generator=rng(0))
    got = C.augment_1d(x, rng(4), shift=3, scale=0.2, jitter=0.3)
    g = rng(4)
    s = torch.randint(-3, 4, (6,), generator=g)
    fac = 1 + 0.2 * (2 * torch.rand(6, 1, generator=g) - 1)
    noise = torch.randn(6, 11, generator=g)
    ref = torch.stack([torch.roll(x[i], int(s[i])) for i in range(6)]) * fac + 0.3 * noise
    torch.testing.assert_close(got, ref)
    # the shift: x[i] moves to position i + s (mod L), both extremes +-shift occur
    x0 = torch.arange(7.0)[None].repeat(300, 1)
    out = C.augment_1d(x0, rng(1), shift=2, scale=0.0, jitter=0.0)
    shifts = ((out[:, 0] * -1) % 7).long()  # out[:, 0] = x[-s] = -s mod 7
    shifts = torch.where(shifts > 3, shifts - 7, shifts)
    assert set(shifts.tolist()) == {-2, -1, 0, 1, 2}
    for row, sh in zip(out, shifts):
        assert torch.equal(row, torch.roll(torch.arange(7.0), int(sh)))
    # amplitude factors lie in [1 - scale, 1 + scale] and use most of it
    ones = torch.ones(400, 5)
    fac = C.augment_1d(ones, rng(2), shift=0, scale=0.3, jitter=0.0)[:, 0]
    assert 0.7 <= float(fac.min()) < 0.72 and 1.28 < float(fac.max()) <= 1.3
    # jitter is the noise's standard deviation
    noisy = C.augment_1d(torch.zeros(200, 50), rng(3), shift=0, scale=0.0, jitter=0.25)
    assert float(noisy.std()) == pytest.approx(0.25, rel=0.03)


@pytest.mark.boundary
@pytest.mark.parametrize("kw,name", [({"shift": -1}, "shift"), ({"scale": float("nan")}, "scale"),
                                     ({"jitter": -0.1}, "jitter")])
def test_augment_refuses_bad_settings(kw, name):
    args = {"shift": 2, "scale": 0.1, "jitter": 0.1, **kw}
    with pytest.raises((ValueError, TypeError), match=name):
        CL.augment_1d(torch.zeros(3, 8), torch.Generator().manual_seed(0), **args)
    with pytest.raises(ValueError, match="finite"):
        CL.augment_1d(torch.full((3, 8), np.nan), torch.Generator().manual_seed(0), 2, 0.1, 0.1)


# =================================================================================================
# contrastive.random_encoder_accuracy
# =================================================================================================
def test_random_encoder_accuracy_is_train_longtails_starting_encoder():
    """The untrained encoder's probe equals train_longtail's acc_random at the same seed; another
    seed draws another encoder (the null of pretraining)."""
    import numpy as np

    import gtlib
    from gtlib import contrastive as C

    cfg = gtlib.preset(C.LongTailConfig, n_train=600, n_test=200, width=32, out_dim=8,
                       batch=16, steps=2, prune_every=1)
    ref = C.train_longtail(cfg, (0.0,), seed=3)["acc_random"]
    assert np.array_equal(C.random_encoder_accuracy(cfg, seed=3), ref)
    assert not np.array_equal(C.random_encoder_accuracy(cfg, seed=4), ref)
    with pytest.raises(TypeError, match="cfg"):
        C.random_encoder_accuracy("quick", seed=0)


# =================================================================================================
# contrastive.train_longtail
# =================================================================================================
def test_longtail_reports_the_random_encoder_control():
    cfg = replace(C.LongTailConfig.quick(), n_train=600, n_test=200, width=16, out_dim=8,
                  batch=32, steps=3, prune_every=2)
    out = C.train_longtail(cfg, prune_fractions=(0.0, 0.5), seed=0)
    assert out["acc"].shape == (2, 10) and out["acc_random"].shape == (10,)
    assert np.all((0 <= out["acc_random"]) & (out["acc_random"] <= 1))
    assert out["counts"][0] > out["counts"][9]  # the long tail


def test_longtail_balanced_reference_has_the_same_size():
    cfg = replace(C.LongTailConfig.quick(), n_train=600, n_test=200, width=16, out_dim=8,
                  batch=32, steps=3, prune_every=2)
    lt = C.train_longtail(cfg, (0.0,), seed=0)
    bal = C.train_longtail(cfg, (0.0,), seed=0, balanced=True)
    assert len(set(bal["counts"].tolist())) == 1  # every class alike
    assert bal["counts"].sum() == 10 * (lt["counts"].sum() // 10)
    assert np.array_equal(bal["acc_random"], lt["acc_random"])  # same random encoder
    with pytest.raises(TypeError, match="balanced"):
        C.train_longtail(cfg, (0.0,), seed=0, balanced=1)


def test_longtail_random_mask_is_a_separate_member():
    cfg = replace(C.LongTailConfig.quick(), n_train=600, n_test=200, width=16, out_dim=8,
                  batch=32, steps=4, prune_every=2)
    two = C.train_longtail(cfg, (0.0, 0.5), seed=0)
    three = C.train_longtail(cfg, (0.0, 0.5, 0.5), seed=0,
                             masks=["magnitude", "magnitude", "random"])
    assert three["masks"] == ["magnitude", "magnitude", "random"]
    assert np.array_equal(three["acc"][:2], two["acc"])  # same minibatches for the others
    with pytest.raises(ValueError, match="masks"):
        C.train_longtail(cfg, (0.0, 0.5), seed=0, masks=["random"])


@pytest.mark.reference
def test_train_longtail_counts_and_its_seed():
    cfg = C.LongTailConfig.quick(n_train=500, n_test=200, width=12, out_dim=6, batch=16, steps=2,
                                 prune_every=1, imbalance=10.0)
    out = C.train_longtail(cfg, prune_fractions=np.array([0.25, 0.0, 0.75]), seed=1)
    assert out["fractions"] == [0.25, 0.0, 0.75] and out["acc"].shape == (3, 10)
    from gtlib.data import long_tailed, mnist1d

    lt = long_tailed(mnist1d(500, 200, device="cpu"), 10.0, seed=1)
    np.testing.assert_array_equal(out["counts"], np.bincount(lt.y.numpy(), minlength=10))
    assert out["counts"][0] == pytest.approx(10 * out["counts"][9], rel=0.3)
    other = C.train_longtail(replace(cfg, lr=0.5), prune_fractions=np.array([0.25, 0.0, 0.75]),
                             seed=1)
    np.testing.assert_array_equal(other["acc_random"], out["acc_random"])  # same init
    assert out["acc_random"].min() >= 0 and out["acc_random"].max() <= 1
    assert C.train_longtail(replace(cfg, steps=1), seed=1)["fractions"] == [0.0, 0.5]  # default


@pytest.mark.engine
def test_train_longtail_is_exactly_the_old_loop(monkeypatch):
    # same draw order from one generator (minibatch, then the two augmentations) and the same
    # arithmetic (torch.optim.SGD with momentum and coupled weight decay): bitwise equal
    cfg = replace(C_eng.LongTailConfig.quick(), n_train=600, n_test=200, width=16, out_dim=8,
                  batch=24, steps=7, prune_every=3)
    old_params = _capture(monkeypatch, torch.optim, "SGD")
    old = ref.old_train_longtail(cfg, (0.0, 0.5), seed=1)
    new_params = _capture(monkeypatch, C_eng, "StackedOptimizer")
    new = C_eng.train_longtail(cfg, (0.0, 0.5), seed=1)
    assert len(old_params) == len(new_params) == 1
    for p, q in zip(new_params[0], old_params[0]):
        assert torch.equal(p.detach(), q.detach())
    assert set(new) == set(old) | {"masks"}  # the mask kinds are new; all else as before
    assert new["masks"] == ["magnitude", "magnitude"]
    for k, v in old.items():
        assert np.array_equal(np.asarray(new[k]), np.asarray(v)), k


# =================================================================================================
# contrastive.condition_table
# =================================================================================================
@pytest.mark.reference
def test_condition_table_averages_feature_summary_and_probe_groups():
    cfg = tiny_cfg(neurons=8, probe_samples=30, specialist_ratio=1.4, strong_floor=0.3)
    run = _hand_run(cfg, [1.0, 4.0, 1.0, 4.0], [0.0, 0.5, 0.0, 0.5], [0, 0, 1, 1])
    tab = C.condition_table(run, seed=2)
    assert list(tab) == [(1.0, 0.0), (4.0, 0.5)]
    summ = C.feature_summary(run.W, run.M, 2, 1.4, 0.3)
    acc = C.feature_probe_accuracy(run, 2)
    for key, idx in (((1.0, 0.0), [0, 2]), ((4.0, 0.5), [1, 3])):
        row = tab[key]
        assert set(row) == set(summ) | {"probe_major", "probe_minor"}
        for k, v in summ.items():
            assert row[k] == pytest.approx(float(np.mean(v[idx])), rel=1e-6), k
        assert row["probe_major"] == pytest.approx(float(acc[idx][:, :3].mean()), rel=1e-6)
        assert row["probe_minor"] == pytest.approx(float(acc[idx][:, 3:].mean()), rel=1e-6)
    assert C.condition_table(run) == C.condition_table(run, seed=0)  # default seed 0
    assert C.condition_table(run, seed=1) != tab
    # the config's specialist settings are the ones used (defaults would differ here)
    dflt = C.feature_summary(run.W, run.M, 2)
    assert not all(np.allclose(dflt[k], summ[k]) for k in ("spec_major", "spec_minor",
                                                            "single_fraction", "strong_purity"))


# =================================================================================================
# contrastive.stage_curves
# =================================================================================================
@pytest.mark.reference
def test_stage_curves_average_the_chosen_models_by_hand():
    cfg = tiny_cfg()
    run = _hand_run(cfg, [1.0, 3.0, 1.0], [0.0, 0.0, 0.5], [0, 0, 0])
    steps = np.array([0, 10, 20, 30, 40])
    noise = np.array([[4.0, 2.0, 9.0], [5.0, 3.0, 9.0], [2.0, 1.0, 9.0], [1.0, 0.5, 9.0],
                      [1.0, 0.5, 9.0]])  # the mean noise peaks after step 0
    top = np.array([[0.1, 0.3, 5.0], [0.5, 0.7, 5.0], [0.9, 0.9, 5.0], [1.0, 1.0, 0.0],
                    [1.0, 1.0, 0.0]])
    ratio = np.array([[1.0, 1.2, 7.0], [1.0, 1.4, 7.0], [2.0, 2.0, 7.0], [3.0, 2.4, 7.0],
                      [4.0, 3.0, 0.5]])
    run.history = dict(step=steps, noise=noise, top=top, second=top / 2, ratio=ratio)
    c = C.stage_curves(run)
    np.testing.assert_allclose(c["noise"], [3.0, 4.0, 1.5, 0.75, 0.75])
    np.testing.assert_allclose(c["top"], [0.2, 0.6, 0.9, 1.0, 1.0])
    np.testing.assert_allclose(c["ratio"], [1.1, 1.2, 2.0, 2.7, 3.5])
    np.testing.assert_array_equal(c["step"], steps)
    # top mean reaches 0.9 * 1.0 at step 20; ratio mean reaches 0.9 * 3.5 = 3.15 at step 40
    assert (c["t1"], c["t2"]) == (20, 40)
    assert c["noise_at_t1_rel"] == pytest.approx(1.5 / 3.0)
    assert c["ratio_init_max"] == 1.2 and c["ratio_final_min"] == 3.0
    p = C.stage_curves(run, fraction=0.5)  # the single pruned model
    np.testing.assert_allclose(p["top"], top[:, 2])
    assert (p["t1"], p["t2"]) == (0, 0) and p["noise_at_t1_rel"] == 1.0
    assert p["ratio_init_max"] == 7.0 and p["ratio_final_min"] == 0.5
    with pytest.raises(ValueError, match="pruning fraction"):
        C.stage_curves(run, fraction=0.25)


# =================================================================================================
# contrastive.draw_alignment
# =================================================================================================
@pytest.mark.reference
def test_draw_alignment_sorts_neurons_by_dominant_feature_then_strength():
    proj = np.array([[0.1, 0.9, 0.0],    # dominant 1, top 0.9
                     [0.8, 0.2, 0.1],    # dominant 0, top 0.8
                     [0.0, 0.3, 0.1],    # dominant 1, top 0.3
                     [0.2, 0.0, 0.6],    # dominant 2
                     [0.5, 0.1, 0.0]])   # dominant 0, top 0.5
    fig, ax = plt.subplots()
    try:
        im = C.draw_alignment(ax, proj, 1, title="before")
        np.testing.assert_array_equal(np.asarray(im.get_array()), proj[[1, 4, 0, 2, 3]])
        assert im.get_clim() == (0.0, 0.9)
        assert ax.lines[0].get_xdata()[0] == pytest.approx(1.5)  # K - n_minority - 0.5
        assert ax.get_title() == "before" and ax.title.get_fontsize() == 9
        assert ax.get_xlabel().startswith("feature k") and ax.get_ylabel().startswith("neuron r")
        ax2 = fig.add_subplot(2, 1, 2)
        im2 = C.draw_alignment(ax2, torch.tensor(proj), 2, vmax=2.0)
        assert im2.get_clim() == (0.0, 2.0) and ax2.lines[0].get_xdata()[0] == pytest.approx(0.5)
        assert ax2.get_title() == ""
        with pytest.raises(ValueError, match="n_minority"):
            C.draw_alignment(ax2, proj, 3)
    finally:
        plt.close(fig)


# =================================================================================================
# contrastive._probe_per_class
# =================================================================================================
@pytest.mark.reference
def test_probe_per_class_is_per_class_recall():
    ds = SimpleNamespace(y=torch.tensor([0, 1, 2, 0, 1, 2, 2, 2]),
                         y_test=torch.tensor([0, 0, 1, 2, 2, 2, 1]), num_classes=3)
    eye = torch.eye(3, dtype=DT)
    ftr = (eye[ds.y] * 5)[None]
    # test features: the first class-0 sample looks like class 1, one class-2 sample like 0
    looks = torch.tensor([1, 0, 1, 2, 0, 2, 1])
    fte = (eye[looks] * 5)[None]
    acc = C._probe_per_class(ftr, fte, ds)
    assert acc.shape == (1, 3)
    np.testing.assert_allclose(acc[0], [1 / 2, 2 / 2, 2 / 3])


# =================================================================================================
# gtlib.contrastive as a whole
# =================================================================================================
@pytest.mark.boundary
@pytest.mark.parametrize("i", range(len(SILENT)))
def test_silent_input_is_refused_naming_the_argument(i):
    call, name = SILENT[i]
    with pytest.raises((TypeError, ValueError), match=rf"\b{name}\b"):
        call()
    plt.close("all")


@pytest.mark.boundary
@pytest.mark.parametrize("i", range(len(UNCLEAR)))
def test_unclear_errors_now_name_the_argument(i):
    call, kind, name = UNCLEAR[i]
    with pytest.raises(kind, match=rf"\b{name}\b"):
        call()
    plt.close("all")


def test_train_encoders_independent_replicates_draw_their_own_samples():
    cfg = tiny_cfg(steps=3, log_every=1, init_scale=0.3)
    # two copies of one condition in a replicate see the same samples: they stay identical;
    # the other replicate draws its own
    two = C.train_encoders(cfg, [3.0, 3.0], [0.0, 0.0], seed=2, replicates=2, independent=True)
    torch.testing.assert_close(two.W[0], two.W[1], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(two.W[2], two.W[3], rtol=1e-5, atol=1e-6)
    same_init = C.train_encoders(cfg, [3.0], [0.0], seed=2, replicates=1, stream=1,
                                 independent=True)
    assert not torch.allclose(two.W[2], same_init.W[0])  # same start, other samples
    # the models of one replicate share their codes; other replicates draw their own
    freqs = torch.full((4, 6), 0.5)
    z = C._sample_codes_per_replicate(freqs, torch.tensor([0, 0, 1, 1]), 40, rng(0))
    assert torch.equal(z[0], z[1]) and torch.equal(z[2], z[3]) and not torch.equal(z[0], z[2])
    X = C._views_per_replicate(M, z, torch.tensor([0, 0, 1, 1]), 4, 2,
                               1.0, rng(1))
    assert torch.equal(X[0], X[1]) and not torch.equal(X[0], X[2])
    assert ((X - X.mean()).abs().sum(-1) > 0).all()
    # the default couples the codes of every model and draws each model's own noise
    shared = C.sample_codes(freqs, 40, rng(0))
    assert torch.equal(shared[0], shared[2])
    plain = C.train_encoders(cfg, [3.0, 3.0], [0.0, 0.0], seed=2, replicates=1)
    assert (plain.W[0] - plain.W[1]).abs().max() > 1e-3


# =================================================================================================
# contrastive.continue_encoders
# =================================================================================================
def test_continue_encoders_goes_on_from_the_run_and_keeps_its_history():
    cfg = tiny_cfg(steps=4, log_every=2, init_scale=0.3)
    run = C.train_encoders(cfg, [1.0, 3.0, 3.0], [0.0, 0.0, 0.5], seed=1, replicates=2)
    keep = run.select(3.0, 0.0) + run.select(3.0, 0.5)
    more = C.continue_encoders(run, keep, 4, seed=1)
    assert more.config.steps == 8 and more.history["step"].tolist() == [0, 2, 4, 6, 8]
    np.testing.assert_array_equal(more.history["proj"][:3], run.history["proj"][:, keep])
    assert more.ratios == [3.0] * 4 and more.fractions == [0.0, 0.0, 0.5, 0.5]
    assert more.seeds == [run.seeds[i] for i in keep]
    C.paired(more, more.history["proj"][-1], 3.0, 0.5)  # the pairs survive the continuation
    assert not torch.equal(more.W, run.W[keep])  # it trained
    again = C.continue_encoders(run, keep, 4, seed=1)
    assert torch.equal(again.W, more.W)  # deterministic
    other = C.continue_encoders(run, keep, 4, seed=1, stream=1)
    assert not torch.equal(other.W, more.W)  # another stream, other samples
    # it starts from the run's weights: with a vanishing step size they stay where they were
    frozen = C.continue_encoders(replace(run, config=replace(cfg, lr=1e-30)), keep, 2, seed=1)
    torch.testing.assert_close(frozen.W, run.W[keep])


def test_continue_encoders_rejects_bad_input():
    cfg = tiny_cfg(steps=2)
    run = C.train_encoders(cfg, [1.0], [0.0], seed=0, replicates=2)
    for bad in ([], [0, 0], [5], [True], "0", None):
        with pytest.raises(ValueError, match="models"):
            C.continue_encoders(run, bad, 2)
    with pytest.raises(TypeError, match="run"):
        C.continue_encoders({"W": run.W}, [0], 2)
    with pytest.raises((TypeError, ValueError), match="steps"):
        C.continue_encoders(run, [0], 0)


def test_random_encoder_accuracy_random_biases_change_the_encoder():
    """bias_scale > 0 draws per-neuron biases (deterministic per seed); 0 is the zero-bias start."""
    import gtlib

    cfg = gtlib.preset(C.LongTailConfig, n_train=600, n_test=200, width=32, out_dim=8,
                       batch=16, steps=2, prune_every=1)
    plain = C.random_encoder_accuracy(cfg, seed=3)
    biased = C.random_encoder_accuracy(cfg, seed=3, bias_scale=1.0)
    assert biased.shape == (10,) and np.all((biased >= 0) & (biased <= 1))
    assert not np.array_equal(plain, biased)   # the biases are drawn and used
    assert np.array_equal(biased, C.random_encoder_accuracy(cfg, seed=3, bias_scale=1.0))
    assert np.array_equal(plain, C.random_encoder_accuracy(cfg, seed=3, bias_scale=0.0))
    with pytest.raises(ValueError, match="bias_scale"):
        C.random_encoder_accuracy(cfg, seed=3, bias_scale=-1.0)
