"""Contrastive imbalance: the summaries the chapter's claims read."""

from __future__ import annotations

import numpy as np

from ..checks import boundary, fraction
from .common import _PROBE_SEED
from .alignment import _feature_summary
from .training import (
    _condition_keys,
    _stage_boundaries,
    EncoderRun,
    feature_probe_accuracy,
)

__all__ = ["condition_table", "stage_curves"]


@boundary(seed=_PROBE_SEED)
def condition_table(run: EncoderRun, seed: int = 0) -> dict:
    """Every condition's replicate-averaged metrics: ``{(ratio, fraction): {name: value}}``.

    Names: those of :func:`feature_summary`, plus ``probe_major`` / ``probe_minor`` (mean linear-probe
    accuracy on single-feature samples of majority / minority features, :func:`feature_probe_accuracy`).

    Parameters
    ----------
    run : EncoderRun
        The training run (:func:`train_encoders`); a training run, as returned by the chapter's
        training function; an EncoderRun.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    dict
        ``{(ratio, fraction): {name: value}}``.
    """
    cfg = run.config
    summ = _feature_summary(
        run.W, run.M, cfg.n_minority, cfg.specialist_ratio, cfg.strong_floor
    )
    acc = feature_probe_accuracy(run, seed)
    K, n_min = cfg.n_features, cfg.n_minority
    summ["probe_major"] = acc[:, : K - n_min].mean(1)
    summ["probe_minor"] = acc[:, K - n_min :].mean(1)
    table = {}
    for key in _condition_keys(run):
        idx = run.select(*key)
        table[key] = {name: float(np.mean(v[idx])) for name, v in summ.items()}
    return table


@boundary(fraction=fraction())
def stage_curves(run: EncoderRun, fraction: float = 0.0) -> dict:
    """Mean curves over the unpruned (``fraction``) models of all ratios, and the stage boundaries.

    Returns ``step``, ``noise``, ``top``, ``second``, ``ratio`` (each ``(T,)``), the stage ends
    ``t1``, ``t2`` from :func:`stage_boundaries`, and ``noise_at_t1_rel`` (noise norm at ``t1``
    over its initial value) with ``ratio_init`` / ``ratio_final`` (min and max over those models).

    Parameters
    ----------
    run : EncoderRun
        The training run (:func:`train_encoders`); a training run, as returned by the chapter's
        training function; an EncoderRun.
    fraction : float, default 0.0
        Fraction; a finite number in [0, 1].

    Returns
    -------
    dict
        The keys listed above.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    """
    idx = [i for i, f in enumerate(run.fractions) if f == fraction]
    if not idx:
        raise ValueError(f"no model was trained with pruning fraction {fraction}")
    h = run.history
    c = {k: h[k][:, idx].mean(1) for k in ("noise", "top", "second", "ratio")}
    c["step"] = h["step"]
    t1, t2 = _stage_boundaries(h["step"], c["top"], c["ratio"])
    i1 = int(np.searchsorted(h["step"], t1))
    c.update(
        t1=t1,
        t2=t2,
        noise_at_t1_rel=float(c["noise"][i1] / c["noise"][0]),
        ratio_init_max=float(h["ratio"][0, idx].max()),
        ratio_final_min=float(h["ratio"][-1, idx].min()),
    )
    return c
