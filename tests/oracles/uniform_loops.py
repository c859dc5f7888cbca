"""The training loops of gtlib.uniform before gtlib.engine replaced them.

Copied verbatim from commit 421960b (only the names changed, ``old_`` prefixed; the private
``_int`` and ``_pos`` input checks they call are copied too, since gtlib.uniform now calls
gtlib.checks directly), so that tests/chapters/uniform/test_randomization.py and test_margin.py can
train one tiny configuration with both and require the same numbers. The other helpers they call
are unchanged in gtlib.uniform and imported from it.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F

from gtlib.checks import check_int, check_positive
from gtlib.data import corrupt_labels, mnist1d
from gtlib.models import BatchedMLP
from gtlib.train import TrainConfig, accuracy, _ensemble_loss, margins
from gtlib.uniform import (
    BatchedCNN1d,
    CNNRandomizationConfig,
    CNNRandomizationResult,
    SubsetTraining,
)
from gtlib.uniform.margin import _forward


def _int(name: str, value, minimum: int = 1) -> int:
    return check_int(name, value, minimum)


_pos = check_positive


def _sizes(name: str, values, minimum: int = 1) -> list[int]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of ints")
    if len(values) == 0:
        raise ValueError(f"{name} must not be empty")
    return [_int(f"{name}[{i}]", v, minimum) for i, v in enumerate(values)]


# --- gtlib.uniform.cnn_randomization ---
def old_cnn_randomization(
    cfg: CNNRandomizationConfig, seed: int = 0, device: str | None = None
) -> CNNRandomizationResult:
    """Zhang et al.'s randomization test (2017, Fig. 1a) with :class:`BatchedCNN1d` on MNIST-1D.

    Trains ``cfg.true_runs`` members on the true labels and ``cfg.random_runs`` on fully random
    labels (:func:`gtlib.data.corrupt_labels` at fraction 1, one labelling each) in one batched
    loop, each on its own minibatches. (Since the copy, only the member layout and the seeds have
    been brought up to date with the replicated design; the loop is the old one.) Every ``check_every`` steps each member's accuracy on its whole
    training set is measured; a member that reached ``target_train_acc`` stops (its weights no
    longer change).
    """
    seed = _int("seed", seed, minimum=0)
    ds = mnist1d(cfg.n_train, cfg.n_test, device=device)
    dev = ds.x.device
    K, R = cfg.true_runs, cfg.random_runs
    ys = torch.stack(
        [ds.y] * K
        + [
            corrupt_labels(ds.y, 1.0, ds.num_classes, seed=seed + 1000 + r)
            for r in range(R)
        ]
    )
    E = K + R
    model = BatchedCNN1d(
        [seed * 100 + 40 + e for e in range(E)],
        cfg.channels,
        cfg.hidden,
        ds.num_classes,
    ).to(dev)
    params = list(model.parameters())
    with torch.no_grad():
        init_err = (1 - accuracy(model(ds.x_test), ds.y_test)).tolist()
    gens = [torch.Generator().manual_seed(seed * 100 + 70 + e) for e in range(E)]
    active = torch.ones(E, dtype=torch.bool)
    stop = [cfg.max_steps] * E

    def full_acc() -> torch.Tensor:
        with torch.no_grad():
            return accuracy(model(ds.x), ys)

    for step in range(cfg.max_steps + 1):
        if step % cfg.check_every == 0 or step == cfg.max_steps:
            acc = full_acc()
            for e in range(E):
                if active[e] and acc[e] >= cfg.target_train_acc:
                    active[e], stop[e] = False, step
            if not bool(active.any()) or step == cfg.max_steps:
                break
        idx = torch.stack(
            [
                torch.randint(0, cfg.n_train, (cfg.batch_size,), generator=g)
                for g in gens
            ]
        ).to(dev)  # (E, b)
        logits = model(ds.x[idx])
        yb = torch.gather(ys, 1, idx)
        loss = (
            F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]),
                yb.reshape(-1),
                reduction="none",
            )
            .reshape(E, -1)
            .mean(1)
        )
        grads = torch.autograd.grad((loss * active.to(dev)).sum(), params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(cfg.lr * g)
    with torch.no_grad():
        test_err = (1 - accuracy(model(ds.x_test), ds.y_test)).tolist()
    train_acc = full_acc()
    names = [f"true labels, run {k + 1}" for k in range(K)] + [
        f"random labels, run {r + 1}" for r in range(R)
    ]
    return CNNRandomizationResult(
        names=names,
        labels=["true"] * K + ["random"] * R,
        train_acc=train_acc.tolist(),
        test_error=test_err,
        init_test_error=init_err,
        stop_step=stop,
        reached_target=[bool(a >= cfg.target_train_acc) for a in train_acc],
    )


# --- gtlib.uniform.train_on_subsets ---
def old_train_on_subsets(
    model: BatchedMLP,
    x: torch.Tensor,
    y: torch.Tensor,
    sizes: Sequence[int],
    cfg: TrainConfig,
    seeds: Sequence[int] | None = None,
    check_every_epochs: float = 1.0,
    max_epochs: float = 1000.0,
) -> SubsetTraining:
    """Train member ``i`` of ``model`` by minibatch SGD on ``(x[:sizes[i]], y[:sizes[i]])``, in place.

    This batches Nagarajan and Kolter's sweep over the training-set size: the training sets are
    nested prefixes of one pool, every member takes one minibatch of ``cfg.batch_size`` points of
    its own set per step (its own shuffled order, reshuffled every epoch; a batch may straddle two
    epochs), and all active members share one batched forward and backward pass. Member ``i`` is
    checked on its whole training set every ``check_every_epochs`` of its epochs; once it meets the
    stop rule of ``cfg`` (``target_train_acc`` or ``margin_gamma``/``margin_fraction``), or after
    ``max_epochs`` epochs, it is frozen and removed from the batch, so later steps cost only what
    the remaining members need.

    Only plain SGD is supported (``cfg.optimizer='sgd'``, no momentum, no weight decay);
    ``cfg.epochs``, ``cfg.steps`` and ``cfg.check_every`` are ignored in favour of the per-member
    ``max_epochs`` and ``check_every_epochs``.

    Raises
    ------
    ValueError
        On a size larger than ``len(x)``, an unsupported optimizer, or mismatched shapes.
    """
    cfg.validate()
    if cfg.optimizer != "sgd" or cfg.momentum != 0 or cfg.weight_decay != 0:
        raise ValueError(
            "train_on_subsets supports plain SGD only (optimizer='sgd', momentum=0, "
            "weight_decay=0)"
        )
    if cfg.batch_size is None:
        raise ValueError(
            "cfg.batch_size must be set (full-batch training would not need this)"
        )
    if cfg.target_train_acc is None and cfg.margin_gamma is None:
        raise ValueError(
            "cfg must set a stop rule (target_train_acc or margin_gamma)"
        )
    E = model.size
    sizes = _sizes("sizes", sizes)
    if len(sizes) != E:
        raise ValueError(
            f"sizes must have one entry per member ({E}), got {len(sizes)}"
        )
    if x.ndim != 2 or y.ndim != 1 or x.shape[0] != y.shape[0]:
        raise ValueError(
            f"x must be (n, d) and y (n,); got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    if max(sizes) > x.shape[0]:
        raise ValueError(
            f"sizes must not exceed len(x) = {x.shape[0]}, got {max(sizes)}"
        )
    _pos("check_every_epochs", check_every_epochs)
    _pos("max_epochs", max_epochs)
    seeds = (
        [cfg.seed + i for i in range(E)]
        if seeds is None
        else [int(s) for s in seeds]
    )
    if len(seeds) != E:
        raise ValueError(
            f"seeds must have one entry per member ({E}), got {len(seeds)}"
        )
    b = cfg.batch_size
    act = model.act
    if model.hidden_mask is not None:
        raise ValueError("train_on_subsets does not support hidden_mask")

    gens = [torch.Generator().manual_seed(s) for s in seeds]
    orders = [torch.empty(0, dtype=torch.int64) for _ in range(E)]

    def next_batch(i: int) -> torch.Tensor:
        while len(orders[i]) < b:
            orders[i] = torch.cat(
                [orders[i], torch.randperm(sizes[i], generator=gens[i])]
            )
        out, orders[i] = orders[i][:b], orders[i][b:]
        return out

    check_period = [max(1, int(round(check_every_epochs * s / b))) for s in sizes]
    max_steps = [max(1, int(math.ceil(max_epochs * s / b))) for s in sizes]
    ids = list(range(E))
    ws = [w.detach().clone().requires_grad_(True) for w in model.weights]
    bs = (
        [p.detach().clone().requires_grad_(True) for p in model.biases]
        if model.has_bias
        else None
    )
    final_w = [w.detach().clone() for w in model.weights]
    final_b = [p.detach().clone() for p in model.biases] if model.has_bias else None
    stop_step = [0] * E
    met = [False] * E

    def meets_rule(i: int, k: int) -> bool:
        with torch.no_grad():
            xi, yi = x[: sizes[i]], y[: sizes[i]]
            logits = _forward(
                [w[k] for w in ws],
                None if bs is None else [p[k] for p in bs],
                xi,
                act,
            )
            if (
                cfg.target_train_acc is not None
                and accuracy(logits, yi) >= cfg.target_train_acc
            ):
                return True
            if cfg.margin_gamma is not None:
                frac = (
                    (margins(logits, yi) >= cfg.margin_gamma).float().mean().item()
                )
                return frac >= cfg.margin_fraction
            return False

    step = 0
    while ids:
        # stop checks (at step 0 too) for the members whose check is due
        finished = []
        for k, i in enumerate(ids):
            if step % check_period[i] == 0 or step >= max_steps[i]:
                if meets_rule(i, k):
                    met[i] = True
                    finished.append(k)
                elif step >= max_steps[i]:
                    finished.append(k)
        if finished:
            keep = [k for k in range(len(ids)) if k not in finished]
            for k in finished:
                i = ids[k]
                stop_step[i] = step
                for l in range(len(ws)):
                    final_w[l][i] = ws[l][k].detach()
                    if bs is not None:
                        final_b[l][i] = bs[l][k].detach()
            ids = [ids[k] for k in keep]
            if not ids:
                break
            ws = [w.detach()[keep].clone().requires_grad_(True) for w in ws]
            if bs is not None:
                bs = [p.detach()[keep].clone().requires_grad_(True) for p in bs]
        step += 1
        idx = torch.stack([next_batch(i) for i in ids]).to(x.device)  # (A, b)
        logits = _forward(ws, bs, x[idx], act)
        loss = _ensemble_loss(cfg.loss, logits, y[idx]).sum()
        params = ws + (bs or [])
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(cfg.lr * g)
    with torch.no_grad():
        for l, w in enumerate(model.weights):
            w.copy_(final_w[l])
            if final_b is not None:
                model.biases[l].copy_(final_b[l])
    return SubsetTraining(
        stop_step=stop_step,
        met_rule=met,
        epochs=[s * b / n for s, n in zip(stop_step, sizes)],
    )
