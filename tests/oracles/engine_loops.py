"""The training loops gtlib had before its one engine, kept as references.

Each function is the chapter's or the core's own loop as it stood before :mod:`gtlib.engine`
replaced it (argument checks trimmed). The equality tests train a tiny configuration with both and
require the same numbers, so the engine provably preserves what the chapters measured.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import nn

from gtlib.models import BatchedMLP
from gtlib.train import (
    History,
    TrainConfig,
    accuracy,
    batch_indices,
    _ensemble_loss,
    _loss,
    make_optimizer,
    margins,
    _stop_reason,
    total_steps,
)


# --- gtlib.train.train ---
def old_train(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainConfig,
    probes: dict[str, Callable[[nn.Module], object]] | None = None,
) -> History:
    """Train ``model`` on ``(x, y)`` in place and return its :class:`History`.

    ``probes`` maps a name to a function of the model evaluated at every check (e.g. test accuracy
    or a weight norm); its values are stored in ``history.probes[name]``.

    Raises
    ------
    TypeError, ValueError
        If ``x`` is not a non-empty finite float ``(n, d)`` tensor, ``y`` not ``n`` integer labels
        in ``[0, C)`` for the model's ``C`` outputs, or ``cfg`` not a :class:`TrainConfig`.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"model must be a torch.nn.Module, got {type(model).__name__}"
        )
    if probes is not None and (
        not isinstance(probes, dict)
        or not all(isinstance(k, str) and callable(f) for k, f in probes.items())
    ):
        raise TypeError("probes must map names (str) to functions of the model")
    if (
        isinstance(x, torch.Tensor)
        and isinstance(y, torch.Tensor)
        and x.ndim == 2
        and y.ndim == 1
        and x.shape[0] != y.shape[0]
    ):
        raise ValueError(
            f"x must be (n, d) and y (n,) with the same n; got {tuple(x.shape)}, "
            f"{tuple(y.shape)}"
        )
    probes = probes or {}
    hist = History(probes={k: [] for k in probes})
    opt = make_optimizer(model.parameters(), cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    batches = batch_indices(len(y), cfg, gen, x.device)
    n_steps = total_steps(len(y), cfg)

    def check(step: int) -> str | None:
        with torch.no_grad():
            logits = model(x)
            hist.step.append(step)
            hist.loss.append(_loss(cfg.loss, logits, y).item())
            hist.train_acc.append(accuracy(logits, y))
            for name, fn in probes.items():
                hist.probes[name].append(fn(model))
            return _stop_reason(logits, y, cfg)

    if (reason := check(0)) is not None:
        hist.stopped_by = reason
        return hist
    for step in range(1, n_steps + 1):
        idx = next(batches)
        loss = _loss(cfg.loss, model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % cfg.check_every == 0 or step == n_steps:
            if (reason := check(step)) is not None:
                hist.stopped_by = reason
                return hist
    return hist


# --- gtlib.train.train_ensemble ---
def old_train_ensemble(
    model: BatchedMLP,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainConfig,
    seeds: Sequence[int] | None = None,
    probes: dict[str, Callable[[BatchedMLP], object]] | None = None,
) -> History:
    """Train every member of ``model`` in place, as :func:`gtlib.train.train` would train each alone.

    Member ``i`` draws its minibatches from a generator seeded with ``seeds[i]`` (default
    ``cfg.seed + i``). ``y`` is ``(n,)`` (shared labels) or ``(E, n)`` (one labelling per member,
    e.g. different corruption levels). The stop rules apply per member: a member that meets one is
    frozen at that step (later updates to it are discarded) and the others go on. The history
    stores per-member values: ``loss`` and ``train_acc`` rows are ``(E,)`` tensors, and
    ``history.probes['stop_step']`` holds each member's stopping step.
    """
    if not isinstance(model, BatchedMLP):
        raise TypeError(f"model must be a BatchedMLP, got {type(model).__name__}")
    E = model.size
    seeds = [cfg.seed + i for i in range(E)] if seeds is None else list(seeds)
    if len(seeds) != E:
        raise ValueError(
            f"seeds must have one entry per member ({E}), got {len(seeds)}"
        )
    if isinstance(x, torch.Tensor) and x.ndim != 2:
        raise ValueError(f"x must have shape (n, d), got {tuple(x.shape)}")
    n = x.shape[0] if isinstance(x, torch.Tensor) else 0
    if isinstance(y, torch.Tensor) and y.shape not in ((n,), (E, n)):
        raise ValueError(
            f"y must have shape ({n},) or ({E}, {n}), got {tuple(y.shape)}"
        )
    y_full = y.expand(E, n)
    probes = probes or {}
    hist = History(probes={k: [] for k in probes})
    opt = make_optimizer(model.parameters(), cfg)
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
    epoch_order: torch.Tensor | None = (
        None  # (E, n): this epoch's permutation for every member
    )
    n_steps = total_steps(n, cfg)
    done = torch.zeros(E, dtype=torch.bool, device=x.device)
    stop_step = torch.full((E,), n_steps, dtype=torch.int64)
    frozen = [p.detach().clone() for p in model.parameters()]

    def check(step: int) -> bool:
        with torch.no_grad():
            logits = model(x)
            losses = _ensemble_loss(cfg.loss, logits, y_full)
            acc = accuracy(logits, y_full)
            hist.step.append(step)
            hist.loss.append(losses.cpu())
            hist.train_acc.append(acc.cpu())
            for name, fn in probes.items():
                hist.probes[name].append(fn(model))
            newly = torch.zeros(E, dtype=torch.bool, device=x.device)
            if cfg.target_train_acc is not None:
                newly |= acc >= cfg.target_train_acc
            if cfg.margin_gamma is not None:
                frac = (margins(logits, y_full) >= cfg.margin_gamma).float().mean(-1)
                newly |= frac >= cfg.margin_fraction
            newly &= ~done
            if newly.any():
                for p, f in zip(model.parameters(), frozen):
                    f[newly] = p.detach()[newly]
                stop_step[newly.cpu()] = step
                done.logical_or_(newly)
            return bool(done.all())

    if not check(0):
        for step in range(1, n_steps + 1):
            if cfg.batch_size is None:
                xb, yb = x, y_full
            else:  # the same draws as gtlib.train.batch_indices makes for each member alone
                start = ((step - 1) * cfg.batch_size) % (
                    -(-n // cfg.batch_size) * cfg.batch_size
                )
                if start == 0:
                    epoch_order = torch.stack(
                        [torch.randperm(n, generator=g) for g in gens]
                    ).to(x.device)
                idx = epoch_order[:, start : start + cfg.batch_size]  # (E, b)
                xb, yb = x[idx], y_full.gather(1, idx)
            loss = _ensemble_loss(cfg.loss, model(xb), yb).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if step % cfg.check_every == 0 or step == n_steps:
                if check(step):
                    break
    with torch.no_grad():  # members that stopped early get their frozen weights back
        for p, f in zip(model.parameters(), frozen):
            shape = (E,) + (1,) * (p.ndim - 1)
            p.copy_(torch.where(done.view(shape), f, p))
    hist.probes["stop_step"] = stop_step.tolist()
    if cfg.target_train_acc is not None or cfg.margin_gamma is not None:
        hist.stopped_by = (
            "all members met the stop rule" if bool(done.all()) else "epochs"
        )
    return hist
