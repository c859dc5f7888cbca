"""The training loops of gtlib.contrastive before gtlib.engine replaced them.

Copied verbatim from commit 421960b (only the names changed, ``old_`` prefixed), so that the
tests of gtlib.contrastive can train one tiny configuration with both and require the same
numbers. The helpers they call are unchanged in gtlib.contrastive and imported from it.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from gtlib.checks import check_fraction
from gtlib.contrastive import (
    ContrastiveConfig,
    EncoderRun,
    LongTailConfig,
    feature_dictionary,
    feature_frequencies,
    infonce,
)
from gtlib.contrastive.longtail import _probe_per_class
from gtlib.data import long_tailed, mnist1d
from gtlib.contrastive.alignment import _alignment as alignment
from gtlib.contrastive.data import (
    _make_views as make_views,
    _sample_codes as sample_codes,
)
from gtlib.contrastive.encoder import (
    _encode as encode,
    _magnitude_mask as magnitude_mask,
    _straight_through_mask as straight_through_mask,
)
from gtlib.contrastive.longtail import _augment_1d as augment_1d
from gtlib.contrastive.training import _bias_schedule as bias_schedule


# --- gtlib.contrastive.train_encoders ---
def old_train_encoders(
    cfg: ContrastiveConfig,
    ratios,
    fractions,
    seed: int = 0,
    replicates: int | None = None,
    hard_mask: bool = False,
) -> EncoderRun:
    """Train one encoder per (ratio, fraction) pair and replicate, all at once (batched).

    Each model sees fresh population samples every step (common random numbers across models);
    replicate ``j`` of every condition starts from the same initialization (seed ``seed*1000+j``),
    so a pruned and an unpruned model differ only in pruning. SGD with weight decay; the target
    branch is the unpruned model under stop-gradient; the online branch is masked by
    :func:`magnitude_mask` every ``prune_every`` steps with the straight-through rule.

    ``hard_mask=True`` is the ablation that the chapter argues against: the mask is applied to
    both branches and without the straight-through rule, so a masked neuron outputs zero in
    both views and receives no gradient at all while it is masked.
    """
    cfg.validate()
    ratios, fractions = list(ratios), list(fractions)
    if len(ratios) != len(fractions) or not ratios:
        raise ValueError(
            "ratios and fractions must be non-empty and of equal length"
        )
    R = cfg.replicates if replicates is None else int(replicates)
    if R < 1:
        raise ValueError(f"replicates must be >= 1, got {R}")
    conds = [(r, f, j) for j in range(R) for r, f in zip(ratios, fractions)]
    E = len(conds)
    d, K, m = cfg.dim, cfg.n_features, cfg.neurons
    M = feature_dictionary(d, K, seed=seed)
    freqs = torch.stack(
        [
            feature_frequencies(K, cfg.n_minority, cfg.base_freq, r)
            for r, _, _ in conds
        ]
    )
    inits = []
    for j in range(R):
        g0 = torch.Generator().manual_seed(seed * 1000 + j)
        inits.append(torch.randn(m, d, generator=g0) * cfg.init_scale)
    W = torch.stack([inits[j] for _, _, j in conds]).requires_grad_()
    A = torch.zeros(E, d, d, requires_grad=True)
    g = torch.Generator().manual_seed(seed * 1000 + 999)
    fr = [f for _, f, _ in conds]
    hist = {
        k: []
        for k in ("step", "noise", "top", "second", "ratio", "proj", "neuron_noise")
    }
    mask = None
    for t in range(cfg.steps + 1):
        if t % cfg.log_every == 0 or t == cfg.steps:
            with torch.no_grad():
                a = alignment(W, M)
            hist["step"].append(t)
            hist["noise"].append(a["noise"].mean(1).numpy())
            hist["top"].append(a["top"].mean(1).numpy())
            hist["second"].append(a["second"].mean(1).numpy())
            hist["ratio"].append(a["ratio"].median(1).values.numpy())
            hist["proj"].append(a["proj"].numpy())
            hist["neuron_noise"].append(a["noise"].numpy())
        if t == cfg.steps:
            break
        beta = bias_schedule(t, cfg)
        if t % cfg.prune_every == 0 and max(fr) > 0:
            mask = magnitude_mask(W, fr)
        z = sample_codes(freqs, cfg.batch, g)
        X1 = make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
        X2 = make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
        if hard_mask and mask is not None:
            f1 = encode(X1, W, A, beta) * mask[:, None, :]
            with torch.no_grad():
                f2 = encode(X2, W, A, beta) * mask[:, None, :]
        else:
            f1 = encode(X1, W, A, beta, mask)
            with torch.no_grad():
                f2 = encode(X2, W, A, beta)
        loss = infonce(f1, f2, cfg.tau).sum()
        gW, gA = torch.autograd.grad(loss, [W, A])
        with torch.no_grad():
            W.mul_(1 - cfg.lr * cfg.weight_decay).sub_(cfg.lr * gW)
            A.mul_(1 - cfg.lr * cfg.weight_decay).sub_(cfg.lr * gA)
    history = {k: np.array(v) for k, v in hist.items()}
    return EncoderRun(
        config=cfg,
        M=M,
        W=W.detach(),
        A=A.detach(),
        ratios=[c[0] for c in conds],
        fractions=fr,
        seeds=[seed * 1000 + c[2] for c in conds],
        history=history,
    )


# --- gtlib.contrastive.train_longtail ---
def old_train_longtail(
    cfg: LongTailConfig, prune_fractions=(0.0, 0.5), seed: int = 0
) -> dict:
    """Contrastive pretraining of MLP encoders (one per pruning fraction, batched, same init and
    same minibatches) on long-tailed MNIST-1D; then per-class linear-probe test accuracy.

    The probe (ridge, :func:`ridge_probe`) is fit on the *balanced* training split and scored on the
    balanced test split. Returns ``{"acc": (E, 10), "acc_random": (10,), "counts": per-class
    pretraining counts, "fractions"}``; ``acc_random`` is the same probe on the randomly
    initialized encoder (the shared starting point): the control that pretraining must beat.
    """
    ds = mnist1d(cfg.n_train, cfg.n_test, device="cpu")
    lt = long_tailed(ds, cfg.imbalance, seed=seed)
    fr = [check_fraction("prune_fraction", f) for f in prune_fractions]
    E, h, o = len(fr), cfg.width, cfg.out_dim
    g = torch.Generator().manual_seed(seed)
    W1 = (
        (torch.randn(h, ds.dim, generator=g) / math.sqrt(ds.dim))
        .expand(E, h, ds.dim)
        .clone()
    )
    W2 = (torch.randn(o, h, generator=g) / math.sqrt(h)).expand(E, o, h).clone()
    params = [
        W1.requires_grad_(),
        torch.zeros(E, h, requires_grad=True),
        W2.requires_grad_(),
    ]
    opt = torch.optim.SGD(
        params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
    )

    def hidden(x, mask=None):
        hid = F.relu(
            torch.einsum("end,ehd->enh", x, params[0]) + params[1][:, None, :]
        )
        return hid if mask is None else straight_through_mask(hid, mask[:, None, :])

    with torch.no_grad():
        acc_random = _probe_per_class(
            hidden(ds.x[None]), hidden(ds.x_test[None]), ds
        )[0]
    mask = None
    eye = torch.arange(cfg.batch)
    for t in range(cfg.steps):
        if t % cfg.prune_every == 0:
            mask = magnitude_mask(params[0], fr)
        xb = lt.x[torch.randint(0, lt.n, (cfg.batch,), generator=g)]
        x1 = augment_1d(xb, g, cfg.shift, cfg.scale, cfg.jitter)[None].expand(
            E, -1, -1
        )
        x2 = augment_1d(xb, g, cfg.shift, cfg.scale, cfg.jitter)[None].expand(
            E, -1, -1
        )
        z1 = F.normalize(hidden(x1, mask) @ params[2].transpose(1, 2), dim=-1)
        with torch.no_grad():
            z2 = F.normalize(hidden(x2) @ params[2].transpose(1, 2), dim=-1)
        logits = z1 @ z2.transpose(1, 2) / cfg.tau
        loss = (
            F.cross_entropy(
                logits.reshape(-1, cfg.batch), eye.repeat(E), reduction="sum"
            )
            / cfg.batch
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        ftr = hidden(ds.x[None].expand(E, -1, -1))
        fte = hidden(ds.x_test[None].expand(E, -1, -1))
    acc = _probe_per_class(ftr, fte, ds)
    return {
        "acc": acc,
        "acc_random": acc_random,
        "counts": torch.bincount(lt.y, minlength=ds.num_classes).numpy(),
        "fractions": fr,
    }
