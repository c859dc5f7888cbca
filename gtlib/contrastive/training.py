"""Contrastive imbalance: training encoders on the synthetic data."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import (
    InstanceOf,
    Interval,
    Tensor,
    boundary,
    check_labels,
    count,
    fraction,
    positive,
)
from ..config import Result
from ..engine import StackedOptimizer, fit
from .common import _Numbers, _PROBE_SEED, _RUN_SEED, ContrastiveConfig
from .data import (
    _make_views,
    _sample_codes,
    feature_dictionary,
    feature_frequencies,
    single_feature_samples,
)
from .encoder import _encode, _infonce, _magnitude_mask, _random_mask
from .alignment import _alignment

__all__ = [
    "best_alignment_curves",
    "continue_encoders",
    "energy_curves",
    "paired",
    "representations",
    "train_encoders",
]


MASKS = ("magnitude", "random")


@dataclass
class EncoderRun(Result):
    """The outcome of :func:`train_encoders`: E models trained side by side.

    ``ratios`` and ``fractions`` (length E) say each model's imbalance ratio and pruning fraction;
    ``history`` holds, at each logged ``step``, the mean noise norm, the mean top and second
    projections and the median top/second ratio of every model (arrays ``(T, E)``), and every
    neuron's feature projections ``proj`` ``(T, E, m, K)`` and noise norm ``neuron_noise`` ``(T, E, m)``.
    """

    config: ContrastiveConfig
    M: torch.Tensor
    W: torch.Tensor
    A: torch.Tensor
    ratios: list
    fractions: list
    seeds: list
    history: dict = field(default_factory=dict)
    #: each model's mask kind, "magnitude" or "random"
    masks: list = field(default_factory=list)

    @boundary(ratio=Interval(float, 1), fraction=fraction(), mask=InstanceOf(str))
    def select(
        self, ratio: float, fraction: float, mask: str = "magnitude"
    ) -> list[int]:
        """Indices of the models with this imbalance ratio and pruning fraction; for a fraction
        above zero, only those pruned with this ``mask`` kind ("magnitude" or "random")."""
        if mask not in MASKS:
            raise ValueError(f"mask must be one of {MASKS}, got {mask!r}")
        kinds = self.masks or ["magnitude"] * len(self.ratios)
        return [
            i
            for i, (r, f, k) in enumerate(zip(self.ratios, self.fractions, kinds))
            if r == ratio and f == fraction and (f == 0 or k == mask)
        ]


def _bias_schedule(step: int, cfg: ContrastiveConfig) -> float:
    """The relative BReLU threshold at ``step``: rises linearly from 0 to ``bias_max`` (Wen and Li
    also raise the bias during training), constant afterwards."""
    if cfg.bias_ramp == 0:
        return cfg.bias_max
    return cfg.bias_max * min(1.0, step / cfg.bias_ramp)


@boundary(
    ratios=_Numbers(Interval(float, 1)),
    fractions=_Numbers(fraction()),
    seed=_RUN_SEED,
    replicates=Interval(int, 1, 999, optional=True),
    stream=Interval(int, 0, 99),
    independent=InstanceOf(bool),
    quiet_minority=InstanceOf(bool),
)
def train_encoders(
    cfg: ContrastiveConfig,
    ratios,
    fractions,
    seed: int = 0,
    replicates: int | None = None,
    hard_mask: bool = False,
    masks=None,
    stream: int = 0,
    independent: bool = False,
    quiet_minority: bool = False,
) -> EncoderRun:
    """Train one encoder per (ratio, fraction) pair and replicate, all at once (batched).

    Each model sees fresh population samples every step (common random numbers across models);
    replicate ``j`` of every condition starts from the same initialization (seed ``seed*1000+j``),
    so a pruned and an unpruned model differ only in pruning. SGD with weight decay
    (:class:`gtlib.engine.StackedOptimizer`, trained by :func:`gtlib.engine.fit`); the target
    branch is the unpruned model under stop-gradient; the online branch is masked by
    ``_magnitude_mask`` every ``prune_every`` steps with the straight-through rule, the
    pruning remedy of Liao et al. (ICLR 2026). The history is recorded every ``log_every``
    updates and after the last one; the entry for step ``t`` holds the weights after ``t``
    updates.

    ``hard_mask=True`` is the ablation that the chapter argues against: the mask is applied to
    both branches and without the straight-through rule, so a masked neuron outputs zero in
    both views and receives no gradient at all while it is masked.

    ``masks`` (one entry per condition, default all "magnitude") chooses each pruned model's
    mask: "random" masks the same count of neurons drawn at random every ``prune_every`` steps
    (``_random_mask``, from a generator of its own, so the sample stream is unchanged): the
    control that tells what magnitude pruning adds to masking as such.

    ``stream`` chooses an independent draw of the same experiment (same dictionary ``M``):
    stream ``s`` starts replicate ``j`` from seed ``seed*1000 + s*R + j`` (``R`` replicates, as
    if the replicates of stream 0 continued) and draws its samples and random masks from
    generators of its own. Two streams of one condition are two independent sets of
    replicates: the chapter's measured null for a difference between conditions.

    ``independent=True`` gives every replicate samples of its own: codes, token positions and
    noise. The conditions of one replicate share all three (their codes differ only where
    their frequencies do), so pruned and unpruned stay paired, and the replicates are
    independent draws, as a standard error over replicates assumes. By default all models of
    the run share the codes (common random numbers) and each draws its own noise.

    ``quiet_minority=True`` removes from every token its component along the minority
    directions (signal and noise alike): those directions then receive no input at all, the
    measured null of a direction that carries neither signal nor noise.

    Parameters
    ----------
    cfg : ContrastiveConfig
        The experiment's settings; a ContrastiveConfig.
    ratios : array_like
        Imbalance ratios; a tuple (at least 1 item) of items each a finite number >= 1.
    fractions : array_like
        Pruning fraction of each model; a tuple (at least 1 item) of items each a finite number in
        [0, 1].
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    replicates : int | None, default None
        Independent repetitions; an int in [1, 999] or None.
    hard_mask : bool, default False
        Whether to mask both branches without the straight-through rule (the ablation); a bool.
    masks : object, default None
        One entry per condition, ``"magnitude"`` or ``"random"`` (default: all ``"magnitude"``).
    stream : int, default 0
        Which independent draw of initializations and samples; an int in [0, 99].
    independent : bool, default False
        Whether each replicate draws its own samples (shared by its conditions); a bool.
    quiet_minority : bool, default False
        Whether the inputs have no component along the minority directions; a bool.

    Returns
    -------
    EncoderRun
        The run: the trained weights and their history.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    """
    cfg.validate()
    ratios, fractions = list(ratios), list(fractions)
    if len(ratios) != len(fractions):
        raise ValueError(
            f"ratios and fractions must be of equal length, got {len(ratios)} and "
            f"{len(fractions)}"
        )
    kinds = ["magnitude"] * len(ratios) if masks is None else list(masks)
    if len(kinds) != len(ratios) or any(k not in MASKS for k in kinds):
        raise ValueError(
            f"masks must hold one of {MASKS} per condition ({len(ratios)}), got "
            f"{masks!r}"
        )
    R = cfg.replicates if replicates is None else int(replicates)
    if (stream + 1) * R > 998 - 2 * stream:
        raise ValueError(
            f"stream {stream} with {R} replicates runs out of seeds: need "
            f"(stream + 1) * replicates <= 998 - 2 * stream"
        )
    first = seed * 1000 + stream * R  # seed of this stream's replicate 0
    conds = [(r, f, j) for j in range(R) for r, f in zip(ratios, fractions)]
    kinds = kinds * R
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
        g0 = torch.Generator().manual_seed(first + j)
        inits.append(torch.randn(m, d, generator=g0) * cfg.init_scale)
    W = torch.stack([inits[j] for _, _, j in conds])
    A = torch.zeros(E, d, d)
    g = torch.Generator().manual_seed(seed * 1000 + 999 - 2 * stream)
    g_mask = torch.Generator().manual_seed(seed * 1000 + 998 - 2 * stream)
    fr = [f for _, f, _ in conds]
    rep = [c[2] for c in conds] if independent else None
    quiet = M[:, K - cfg.n_minority :] if quiet_minority else None
    W, A, history = _train(
        cfg,
        M,
        W,
        A,
        freqs,
        fr,
        kinds,
        g,
        g_mask,
        hard_mask,
        rep,
        0,
        cfg.steps,
        quiet,
    )
    return EncoderRun(
        config=cfg,
        M=M,
        W=W,
        A=A,
        ratios=[c[0] for c in conds],
        fractions=fr,
        seeds=[first + c[2] for c in conds],
        history=history,
        masks=kinds,
    )


def _train(
    cfg,
    M,
    W,
    A,
    freqs,
    fr,
    kinds,
    g,
    g_mask,
    hard_mask,
    rep,
    offset,
    steps,
    quiet=None,
):
    """The training loop of :func:`train_encoders` and :func:`continue_encoders`: ``steps``
    updates of the stacked models ``W``, ``A`` starting after ``offset`` updates (the threshold
    schedule and the pruning period count from the start of training). ``rep`` (one replicate
    index per model, or None) gives each replicate its own samples. ``quiet`` (``(d, k)``
    orthonormal columns, or None) is removed from every token."""
    W, A = W.clone().requires_grad_(), A.clone().requires_grad_()
    E = W.shape[0]
    rand = [e for e, k in enumerate(kinds) if k == "random" and fr[e] > 0]
    rep_idx = None if rep is None else torch.tensor(rep)
    hist = {
        k: []
        for k in ("step", "noise", "top", "second", "ratio", "proj", "neuron_noise")
    }
    opt = StackedOptimizer(
        [W, A], "sgd", cfg.lr, weight_decay=cfg.weight_decay, members=E
    )
    mask = None

    def loss(step: int, _batch) -> torch.Tensor:
        """This step's InfoNCE per model, on fresh samples drawn from ``g``."""
        nonlocal mask
        # per-step calls go to the unchecked building blocks: the inputs are built here from a
        # validated config
        t = offset + step
        beta = _bias_schedule(t, cfg)
        if (t % cfg.prune_every == 0 or mask is None) and max(fr) > 0:
            mask = _magnitude_mask(W, fr)
            if rand:
                mask[rand] = _random_mask(W[rand], [fr[e] for e in rand], g_mask)
        if rep_idx is None:
            z = _sample_codes(freqs, cfg.batch, g)
            X1 = _make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
            X2 = _make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
        else:
            z = _sample_codes_per_replicate(freqs, rep_idx, cfg.batch, g)
            X1, X2 = (
                _views_per_replicate(
                    M, z, rep_idx, cfg.n_tokens, cfg.n_signal, cfg.noise, g
                )
                for _ in range(2)
            )
        if quiet is not None:
            X1, X2 = (X - (X @ quiet) @ quiet.T for X in (X1, X2))
        if hard_mask and mask is not None:
            f1 = _encode(X1, W, A, beta) * mask[:, None, :]
            with torch.no_grad():
                f2 = _encode(X2, W, A, beta) * mask[:, None, :]
        else:
            f1 = _encode(X1, W, A, beta, mask)
            with torch.no_grad():
                f2 = _encode(X2, W, A, beta)
        return _infonce(f1, f2, cfg.tau)

    def record(step: int, _due) -> None:
        """The neuron metrics after ``offset + step`` updates (a continuation does not record
        its start again)."""
        if offset and step == 0:
            return
        with torch.no_grad():
            a = _alignment(W, M)
        hist["step"].append(offset + step)
        hist["noise"].append(a["noise"].mean(1).numpy())
        hist["top"].append(a["top"].mean(1).numpy())
        hist["second"].append(a["second"].mean(1).numpy())
        hist["ratio"].append(a["ratio"].median(1).values.numpy())
        hist["proj"].append(a["proj"].numpy())
        hist["neuron_noise"].append(a["noise"].numpy())

    fit(loss, opt, steps, check=record, every=cfg.log_every)
    return W.detach(), A.detach(), {k: np.array(v) for k, v in hist.items()}


def _sample_codes_per_replicate(
    freqs: torch.Tensor, rep: torch.Tensor, n: int, generator: torch.Generator
) -> torch.Tensor:
    """Codes ``(E, n, K)`` for the E profiles ``freqs``: model ``e`` uses the uniform numbers
    and signs of its replicate ``rep[e]``, so the models of one replicate share their codes and
    different replicates draw independent ones."""
    K, R = freqs.shape[-1], int(rep.max()) + 1
    u = torch.rand(R, n, K, generator=generator)
    sign = torch.randint(0, 2, (R, n, K), generator=generator) * 2 - 1
    return ((u[rep] < freqs[:, None, :]) * sign[rep]).float()


def _views_per_replicate(
    M: torch.Tensor,
    z: torch.Tensor,
    rep: torch.Tensor,
    n_tokens: int,
    n_signal: int,
    noise: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """One view ``(E, n, L, d)`` of the codes ``z`` ``(E, n, K)``, as ``_make_views``, except
    that the models of one replicate (``rep[e]``) share their token positions and noise: the
    conditions of a replicate differ only in their codes, and each replicate draws its own."""
    R, n, d = int(rep.max()) + 1, z.shape[1], M.shape[0]
    order = torch.rand(R, n, n_tokens, generator=generator).argsort(-1)
    carries = (order < n_signal).to(z.dtype)[
        rep
    ]  # exactly n_signal tokens per sample
    eps = (
        torch.randn(R, n, n_tokens, d, generator=generator) * (noise / math.sqrt(d))
    )[rep]
    return carries[..., None] * (z @ M.T)[..., None, :] + eps


@boundary(steps=count(), seed=_RUN_SEED, stream=Interval(int, 0, 99))
def continue_encoders(
    run: EncoderRun, models, steps: int, seed: int = 0, stream: int = 0
) -> EncoderRun:
    """Continue some models of a run for ``steps`` more updates, on samples of their own.

    The models keep their weights, attention, ratio, pruning fraction and mask kind, and the
    threshold schedule and pruning period go on counting from the run's last step, so the
    result is the same experiment run longer (not a retraining from step 0). Each replicate
    draws its own samples (the continued models of one replicate share theirs), from a
    generator fixed by ``seed`` and ``stream`` (pick a stream no other run of the seed uses).
    The history holds the run's records of these models followed by the new ones.

    Parameters
    ----------
    run : EncoderRun
        The training run to continue.
    models : array_like
        Indices of the models of ``run`` to continue; a list of ints.
    steps : int
        Further SGD steps; an int >= 1.
    seed : int, default 0
        Seed of the continuation's samples and random masks; an int in [0, 2**63 - 1].
    stream : int, default 0
        Which draw of samples for this seed; an int in [0, 99].

    Returns
    -------
    EncoderRun
        The continued models; ``config.steps`` counts all their updates.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    """
    if not isinstance(run, EncoderRun):
        raise TypeError(f"run must be an EncoderRun, got {type(run).__name__}")
    idx = list(models) if isinstance(models, (list, tuple, range)) else None
    if (
        not idx
        or any(
            isinstance(i, bool)
            or not isinstance(i, (int, np.integer))
            or not 0 <= i < len(run.ratios)
            for i in idx
        )
        or len(set(idx)) < len(idx)
    ):
        raise ValueError(
            f"models must be a list of distinct model indices in [0, "
            f"{len(run.ratios)}), got {models!r}"
        )
    cfg, done = run.config, int(run.history["step"][-1])
    K = cfg.n_features
    freqs = torch.stack(
        [
            feature_frequencies(K, cfg.n_minority, cfg.base_freq, run.ratios[i])
            for i in idx
        ]
    )
    kinds = [(run.masks or ["magnitude"] * len(run.ratios))[i] for i in idx]
    fr = [run.fractions[i] for i in idx]
    seeds = [run.seeds[i] for i in idx]
    rep = [sorted(set(seeds)).index(s) for s in seeds]
    g = torch.Generator().manual_seed(
        seed * 1000 + 799 - 2 * stream
    )  # not a training stream's
    g_mask = torch.Generator().manual_seed(seed * 1000 + 798 - 2 * stream)
    W, A, new = _train(
        cfg,
        run.M,
        run.W[idx],
        run.A[idx],
        freqs,
        fr,
        kinds,
        g,
        g_mask,
        False,
        rep,
        done,
        steps,
    )
    old = {
        k: np.asarray(v)[:, idx] if k != "step" else np.asarray(v)
        for k, v in run.history.items()
    }
    history = {k: np.concatenate([old[k], new[k]]) for k in new}
    return EncoderRun(
        config=replace(cfg, steps=done + steps),
        M=run.M,
        W=W,
        A=A,
        ratios=[run.ratios[i] for i in idx],
        fractions=fr,
        seeds=seeds,
        history=history,
        masks=kinds,
    )


def _stage_boundaries(step, top, ratio, level: float = 0.9) -> tuple[int, int]:
    """The ends of stages I and II, read off the measured curves of one model.

    Stage I (feature growth) ends at the first logged step where the mean top projection reaches
    ``level`` of its maximum over training; stage II (separation) ends at the first later step where
    the median top/second ratio reaches ``level`` of its maximum; stage III (convergence) follows.
    """
    step, top, ratio = map(np.asarray, (step, top, ratio))
    if (
        not (step.shape == top.shape == ratio.shape)
        or step.ndim != 1
        or len(step) < 3
    ):
        raise ValueError(
            "step, top and ratio must be 1-D arrays of equal length >= 3"
        )
    for name, v in (("step", step), ("top", top), ("ratio", ratio)):
        if v.dtype.kind not in "iuf":
            raise TypeError(f"{name} must hold numbers, got dtype {v.dtype}")
        if not np.isfinite(v).all():
            raise ValueError(f"{name} must hold finite numbers, got NaN or inf")
    i1 = int(np.argmax(top >= level * top.max()))
    later = ratio[i1:] >= level * ratio[i1:].max()
    i2 = i1 + int(np.argmax(later))
    return int(step[i1]), int(step[i2])


@boundary(X=Tensor("float", 3))
def representations(run: EncoderRun, X: torch.Tensor) -> torch.Tensor:
    """Unpruned representations of tokens ``X`` ``(n, L, d)`` under every model: ``(E, n, m)``.

    Parameters
    ----------
    run : EncoderRun
        The training run (:func:`train_encoders`); a training run, as returned by the chapter's
        training function; an EncoderRun.
    X : torch.Tensor
        Tokens, ``(n, L, d)``; a torch.Tensor (non-empty, floating-point, 3-dimensional, finite).

    Returns
    -------
    torch.Tensor
        The representations, ``(E, n, m)``.
    """
    E, d = run.W.shape[0], run.W.shape[-1]
    if X.shape[-1] != d or X.dtype != run.W.dtype:
        raise ValueError(
            f"X must be (n, L, d = {d}) tokens of {run.W.dtype}, got "
            f"{tuple(X.shape)} of {X.dtype}"
        )
    beta = _bias_schedule(run.config.steps, run.config)
    with torch.no_grad():
        return _encode(X[None].expand(E, *X.shape), run.W, run.A, beta)


@boundary(
    f_train=Tensor("float", (2, 3)),
    y_train=Tensor("int", 1),
    f_test=Tensor("float", (2, 3)),
    n_classes=count(),
    ridge=positive(),
)
def ridge_probe(
    f_train: torch.Tensor,
    y_train: torch.Tensor,
    f_test: torch.Tensor,
    n_classes: int,
    ridge: float = 1e-2,
) -> torch.Tensor:
    """A linear probe: one-vs-rest ridge regression on standardized features, closed form.

    Batched over a leading model axis: ``f_*`` of shape ``(E, n, m)`` or ``(n, m)``. Returns the
    predicted classes of ``f_test`` (``(E, n_test)`` or ``(n_test,)``).
    """
    squeeze = f_train.ndim == 2
    if (
        f_train.shape[:-2] + f_train.shape[-1:]
        != f_test.shape[:-2] + f_test.shape[-1:]
        or f_train.dtype != f_test.dtype
    ):
        raise ValueError(
            f"f_train and f_test must be (n, m) or (E, n, m) with the same E, m and "
            f"dtype, got {tuple(f_train.shape)} {f_train.dtype} and "
            f"{tuple(f_test.shape)} {f_test.dtype}"
        )
    check_labels("y_train", y_train, n_classes, n=f_train.shape[-2])
    if squeeze:
        f_train, f_test = f_train[None], f_test[None]
    mu = f_train.mean(1, keepdim=True)
    sd = f_train.std(1, keepdim=True).clamp_min(1e-6)
    a, b = (f_train - mu) / sd, (f_test - mu) / sd
    ones = torch.ones(*a.shape[:2], 1, dtype=a.dtype)
    a = torch.cat([a, ones], -1)
    b = torch.cat([b, torch.ones(*b.shape[:2], 1, dtype=b.dtype)], -1)
    Y = F.one_hot(y_train, n_classes).to(a.dtype) * 2 - 1
    gram = a.transpose(1, 2) @ a + ridge * a.shape[1] * torch.eye(
        a.shape[-1], dtype=a.dtype
    )
    coef = torch.linalg.solve(
        gram, a.transpose(1, 2) @ Y[None].expand(a.shape[0], *Y.shape)
    )
    pred = (b @ coef).argmax(-1)
    return pred[0] if squeeze else pred


@boundary(seed=_PROBE_SEED)
def feature_probe_accuracy(run: EncoderRun, seed: int = 0) -> np.ndarray:
    """Per-feature accuracy ``(E, K)`` of a linear probe that names the feature of a single-feature
    sample (balanced over features), trained and tested on fresh samples."""
    cfg = run.config
    g = torch.Generator().manual_seed(10_000 + seed)
    args = cfg.probe_samples, cfg.n_tokens, cfg.n_signal, cfg.noise, g
    Xtr, ytr = single_feature_samples(run.M, *args)
    Xte, yte = single_feature_samples(run.M, *args)
    pred = ridge_probe(
        representations(run, Xtr), ytr, representations(run, Xte), cfg.n_features
    )
    K = cfg.n_features
    correct = (pred == yte[None]).float()
    return np.stack(
        [
            [correct[e, yte == k].mean().item() for k in range(K)]
            for e in range(pred.shape[0])
        ]
    )


def energy_curves(run: EncoderRun) -> np.ndarray:
    """The minority/majority energy ratio of every model at every logged step, ``(T, E)``.

    The same quantity as :func:`energy_ratio`, computed from the logged projections
    ``run.history["proj"]`` (``|<w_r, M_k>|``, whose squares are the energies), so its last row
    is the energy ratio of the trained weights. The chapter reads the effect of pruning along a
    longer run from it: the paired gain at every step, not only at the end.

    Parameters
    ----------
    run : EncoderRun
        The training run.

    Returns
    -------
    np.ndarray
        The energy ratios, ``(T, E)``.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    """
    if not isinstance(run, EncoderRun):
        raise TypeError(f"run must be an EncoderRun, got {type(run).__name__}")
    P, k = (
        np.asarray(run.history["proj"]),
        run.config.n_features - run.config.n_minority,
    )
    e = (P.astype(np.float64) ** 2).sum(axis=2)  # energy per feature: (T, E, K)
    return e[..., k:].mean(-1) / np.maximum(e[..., :k].mean(-1), 1e-30)


def best_alignment_curves(run: EncoderRun) -> dict:
    """How strongly each group of features is carried, at every logged step.

    Returns ``major`` and ``minor``, each ``(T, E)``: the mean over the group's features of the
    feature's best alignment ``max_r |<w_r, M_k>|`` (from ``run.history["proj"]``), and
    ``growth`` ``(E,)``, the minority curve's last value over its first. A minority feature is
    *learned* when ``growth > 1``: it ends above its initialization, where weight decay alone
    would shrink it by ``(1 - lr * weight_decay) ** steps``.

    Parameters
    ----------
    run : EncoderRun
        The training run.

    Returns
    -------
    dict
        ``major``, ``minor`` and ``growth``, as described above.
    """
    if not isinstance(run, EncoderRun):
        raise TypeError(f"run must be an EncoderRun, got {type(run).__name__}")
    P, k = (
        np.asarray(run.history["proj"]),
        run.config.n_features - run.config.n_minority,
    )
    best = P.max(axis=2)  # (T, E, K)
    major, minor = best[..., :k].mean(-1), best[..., k:].mean(-1)
    return {"major": major, "minor": minor, "growth": minor[-1] / minor[0]}


@boundary(ratio=Interval(float, 1), fraction=fraction(), mask=InstanceOf(str))
def paired(
    run: EncoderRun, values, ratio: float, fraction: float, mask: str = "magnitude"
) -> tuple[np.ndarray, np.ndarray]:
    """Per-replicate values of the unpruned and the pruned models at one ratio, paired.

    ``values`` is a per-model array ``(E, ...)``; the result is ``(unpruned, pruned)``, each
    ``(R, ...)``, where row ``j`` of both comes from the same initialization and the same
    samples, so ``pruned - unpruned`` is the effect of pruning alone.

    Parameters
    ----------
    run : EncoderRun
        The training run.
    values : object
        A per-model array ``(E, ...)``.
    ratio : float
        Imbalance ratio; a finite number >= 1.
    fraction : float
        Fraction; a finite number in [0, 1].
    mask : str, default 'magnitude'
        The pruned models' mask (``"magnitude"`` or ``"random"``); a str.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        The unpruned and the pruned values, replicate by replicate.

    Raises
    ------
    ValueError
        If either condition was not trained or the replicates do not pair up.
    """
    a, b = run.select(ratio, 0.0), run.select(ratio, fraction, mask)
    if not a or not b:
        raise ValueError(
            f"no unpruned or no pruned ({fraction}) model at ratio {ratio}"
        )
    if [run.seeds[i] for i in a] != [run.seeds[i] for i in b]:
        raise ValueError(
            "the unpruned and pruned replicates do not share initializations"
        )
    v = np.asarray(values)
    if v.ndim == 0 or len(v) != len(run.ratios):
        raise ValueError(
            f"values must have one row per model ({len(run.ratios)}), got shape "
            f"{v.shape}"
        )
    return v[a], v[b]


@boundary(values=Tensor(numpy=True, finite=False))
def condition_means(run: EncoderRun, values: np.ndarray) -> dict:
    """Average a per-model array ``(E, ...)`` over replicates: ``{(ratio, fraction): mean}``
    (keys ``(ratio, fraction, "random")`` for random-mask conditions)."""
    if values.ndim == 0 or len(values) != len(run.ratios):
        raise ValueError(
            f"values must have one row per model ({len(run.ratios)}), got shape "
            f"{tuple(values.shape)}"
        )
    return {
        key: np.mean(values[run.select(*key)], axis=0)
        for key in _condition_keys(run)
    }


def _condition_keys(run: EncoderRun) -> list:
    """``(ratio, fraction)`` for unpruned and magnitude-pruned conditions, ``(ratio, fraction,
    "random")`` for random-mask ones, in training order."""
    kinds = run.masks or ["magnitude"] * len(run.ratios)
    return list(
        dict.fromkeys(
            (r, f) if f == 0 or k == "magnitude" else (r, f, k)
            for r, f, k in zip(run.ratios, run.fractions, kinds)
        )
    )
