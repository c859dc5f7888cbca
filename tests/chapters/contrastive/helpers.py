"""Networks, data and reference implementations that several test
modules of gtlib.contrastive use."""

import matplotlib
import numpy as np
import torch
from gtlib import contrastive as C
from gtlib.contrastive.data import _sample_codes


matplotlib.use("Agg")


DT = torch.float64


def rng(seed):
    return torch.Generator().manual_seed(seed)


def tiny_cfg(**kw):
    base = dict(
        dim=7,
        n_features=5,
        n_minority=2,
        neurons=6,
        batch=12,
        steps=4,
        log_every=2,
        bias_ramp=3,
        prune_every=2,
        replicates=1,
        probe_samples=30,
        n_tokens=3,
        n_signal=2,
    )
    base.update(kw)
    return C.ContrastiveConfig.quick(**base)


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


def _alignment_reference(W, M):
    W, M = W.double().numpy(), M.double().numpy()
    coef = W @ M
    proj = np.abs(coef)
    noise = np.linalg.norm(W - coef @ M.T, axis=-1)
    srt = np.sort(proj, axis=-1)
    top, second = srt[..., -1], srt[..., -2]
    return dict(
        proj=proj,
        noise=noise,
        dominant=proj.argmax(-1),
        top=top,
        second=second,
        ratio=top / second,
        purity=top**2 / (proj**2).sum(-1),
    )


def _hand_run(cfg, ratios, fractions, seeds, seed=0):
    E = len(ratios)
    g = rng(100 + seed)
    M = C.feature_dictionary(cfg.dim, cfg.n_features, seed=seed)
    W = torch.randn(E, cfg.neurons, cfg.dim, generator=g)
    for e in range(
        E
    ):  # neurons aligned with features, so that the probe has something to read
        W[e, : cfg.n_features] += (2.0 + e) * M.T
    A = torch.randn(E, cfg.dim, cfg.dim, generator=g) * 0.3
    return C.EncoderRun(
        config=cfg,
        M=M,
        W=W,
        A=A,
        ratios=list(ratios),
        fractions=list(fractions),
        seeds=list(seeds),
    )


matplotlib.use("Agg")


NAN, INF = float("nan"), float("inf")


def gen():
    return torch.Generator().manual_seed(0)


M = C.feature_dictionary(12, 6, seed=0)


FREQS = C.feature_frequencies(6, 3, 0.2, 2.0)


W = torch.randn(8, 12, generator=gen())


Z = _sample_codes(FREQS, 10, gen())


X4 = torch.randn(1, 5, 4, 12, generator=gen())


A = torch.randn(1, 12, 12, generator=gen())


TINY = C.ContrastiveConfig(
    steps=2,
    neurons=8,
    batch=8,
    dim=12,
    n_features=6,
    n_minority=3,
    bias_ramp=1,
    probe_samples=20,
    log_every=1,
)
