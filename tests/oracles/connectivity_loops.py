"""The training loops of gtlib.connectivity before the engine, kept as references.

``old_fit`` and ``old_fit_bezier`` are ``gtlib.connectivity.fit`` and ``fit_bezier`` as they stood
at commit 421960b (copied verbatim). The tests of gtlib.connectivity train tiny configurations
with them and with the engine-based versions and require the same numbers.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from gtlib.connectivity import Recipe, from_params, lerp, members, params
from gtlib.connectivity.repair import _bezier_params
from gtlib.connectivity.common import _check_same_shape
from gtlib.models import BatchedMLP, MLP


# --- gtlib.connectivity.fit ---
def old_fit(
    model: BatchedMLP,
    x: torch.Tensor,
    y: torch.Tensor,
    recipe: Recipe,
    seeds: Sequence[int],
    start_steps: Sequence[int] | None = None,
    stop_step: int | None = None,
    only_last_layer: bool = False,
    freeze_last_layer: bool = False,
    snapshot_steps: Sequence[int] = (),
) -> dict[int, list[MLP]]:
    """Train every member of a stack in place with its own minibatch order (its SGD noise).

    Parameters
    ----------
    model : BatchedMLP
        The stack; member ``i`` is trained as if alone (the summed loss gives each member its own
        gradient).
    x, y : tensors
        ``(n, d)`` and ``(n,)`` shared by all members; ``(n, d)`` and ``(E, n)``: shared inputs
        with one labelling per member (e.g. two tasks); or ``(E, n, d)`` and ``(E, n)``: one
        training set per member.
    recipe : Recipe
        Optimizer settings and learning-rate schedule (evaluated at the *global* step).
    seeds : sequence of int
        Member ``i`` draws its minibatches from a generator seeded with ``seeds[i]``.
    start_steps : sequence of int, optional
        Member ``i`` stays frozen until global step ``start_steps[i]`` (spawning: a child spawned
        at step ``k`` starts from the parent's weights at ``k`` and then follows the same schedule).
    stop_step : int, optional
        Stop after this many global steps (default: the recipe's full length); the schedule is
        still the one of the full run (used to train a parent up to the last spawn time).
    only_last_layer : bool
        Train only the output layer (a linear probe on frozen features).
    freeze_last_layer : bool
        Train every layer but the output layer (fine-tuning with a frozen head, as Ilharco et al.
        2023 do).
    snapshot_steps : sequence of int
        Global steps at which to copy the members (before that step's update).

    Returns
    -------
    dict
        ``{step: [member MLPs]}`` for every step of ``snapshot_steps`` that was reached.
    """
    if not isinstance(model, BatchedMLP):
        raise TypeError(f"model must be a BatchedMLP, got {type(model).__name__}")
    recipe.validate()
    E = model.size
    seeds = list(seeds)
    if len(seeds) != E:
        raise ValueError(
            f"seeds must have one entry per member ({E}), got {len(seeds)}"
        )
    if x.ndim == 2:
        n = x.shape[0]
        if y.shape not in ((n,), (E, n)):
            raise ValueError(
                f"y must have shape ({n},) or ({E}, {n}), got {tuple(y.shape)}"
            )
    elif x.ndim == 3 and x.shape[0] == E:
        n = x.shape[1]
        if y.shape != (E, n):
            raise ValueError(f"y must have shape ({E}, {n}), got {tuple(y.shape)}")
    else:
        raise ValueError(
            f"x must have shape (n, d) or ({E}, n, d), got {tuple(x.shape)}"
        )
    if n == 0:
        raise ValueError("x must hold at least one training signal, got n = 0")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x must be finite (it holds NaN or inf)")
    total = recipe.steps(n)
    last = total if stop_step is None else int(stop_step)
    if not 0 <= last <= total:
        raise ValueError(f"stop_step must lie in [0, {total}], got {stop_step}")
    start = (
        torch.zeros(E, dtype=torch.long)
        if start_steps is None
        else torch.as_tensor(list(start_steps), dtype=torch.long)
    )
    if start.shape != (E,) or bool((start < 0).any()):
        raise ValueError(f"start_steps must hold {E} non-negative ints")
    if only_last_layer and freeze_last_layer:
        raise ValueError("only_last_layer and freeze_last_layer exclude each other")
    head = [model.weights[-1]] + ([model.biases[-1]] if model.has_bias else [])
    if only_last_layer:
        trainable = head
    elif freeze_last_layer:
        trainable = [p for p in model.parameters() if all(p is not h for h in head)]
    else:
        trainable = list(model.parameters())
    # weight decay is added to the gradients by hand, so that frozen members are not decayed
    opt = torch.optim.SGD(trainable, lr=recipe.lr, momentum=recipe.momentum)
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
    per_epoch = -(-n // recipe.batch_size)
    rows = torch.arange(E, device=x.device).unsqueeze(1)
    perms = None
    snaps = {int(k) for k in snapshot_steps}
    out: dict[int, list[MLP]] = {}
    for step in range(last + 1):
        if step in snaps:
            out[step] = members(model)
        if step == last:
            break
        pos = step % per_epoch
        if pos == 0:
            perms = torch.stack([torch.randperm(n, generator=g) for g in gens]).to(
                x.device
            )
        idx = perms[:, pos * recipe.batch_size : (pos + 1) * recipe.batch_size]
        active = (start <= step).to(x.device)
        if not bool(active.any()):
            continue
        if x.ndim == 2:
            xb, yb = x[idx], (y[idx] if y.ndim == 1 else y[rows, idx])
        else:
            xb, yb = x[rows, idx], y[rows, idx]
        logits = model(xb)
        loss = (
            F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]),
                yb.reshape(-1),
                reduction="none",
            )
            .view(E, -1)
            .mean(1)
        )
        opt.zero_grad(set_to_none=True)
        (loss * active).sum().backward()
        for g in opt.param_groups:
            g["lr"] = recipe.lr_at(step, total)
        if recipe.weight_decay > 0:
            for p in trainable:
                p.grad.add_(p.detach(), alpha=recipe.weight_decay)
        if not bool(active.all()):  # frozen members: no gradient, no weight decay
            for p in trainable:
                p.grad.mul_(active.view((E,) + (1,) * (p.ndim - 1)))
        opt.step()
    return out


# --- gtlib.connectivity.fit_bezier ---
def old_fit_bezier(
    a: MLP,
    b: MLP,
    x: torch.Tensor,
    y: torch.Tensor,
    recipe: Recipe,
    seed: int = 0,
    samples: int = 4,
) -> MLP:
    """Train the control point of a quadratic Bezier curve from ``a`` to ``b`` (Garipov et al. 2018).

    The endpoints stay fixed; the control point starts at the midpoint of the straight line and
    minimizes the training loss averaged over the curve, ``E_{t ~ U(0,1)} L(theta(t))``, with
    ``samples`` values of ``t`` drawn afresh for every minibatch (Garipov et al. draw one; a few
    per step average the same objective with less noise). Returns the control point as an MLP.
    """
    _check_same_shape(a, b)
    recipe.validate()
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples must be a positive int, got {samples!r}")
    mid = lerp(a, b, 0.5)
    pa, pb = params(a), params(b)
    wm = [w.clone().requires_grad_(True) for w in params(mid)[0]]
    bm = (
        None
        if pa[1] is None
        else [v.clone().requires_grad_(True) for v in params(mid)[1]]
    )
    trainable = wm + (bm or [])
    opt = torch.optim.SGD(
        trainable,
        lr=recipe.lr,
        momentum=recipe.momentum,
        weight_decay=recipe.weight_decay,
    )
    gen = torch.Generator().manual_seed(int(seed))
    n = x.shape[0]
    total = recipe.steps(n)
    per_epoch = -(-n // recipe.batch_size)
    perm = None
    for step in range(total):
        pos = step % per_epoch
        if pos == 0:
            perm = torch.randperm(n, generator=gen).to(x.device)
        idx = perm[pos * recipe.batch_size : (pos + 1) * recipe.batch_size]
        t = torch.rand(samples, generator=gen).to(x.device)
        ws, bs = _bezier_params([pa, (wm, bm), pb], t)
        h = x[idx].unsqueeze(0)
        for l in range(len(ws)):
            h = torch.matmul(h, ws[l].transpose(1, 2))
            if bs is not None:
                h = h + bs[l].unsqueeze(1)
            if l < len(ws) - 1:
                h = a.act(h)
        loss = F.cross_entropy(h.reshape(-1, h.shape[-1]), y[idx].repeat(samples))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for g in opt.param_groups:
            g["lr"] = recipe.lr_at(step, total)
        opt.step()
    return from_params(
        [w.detach() for w in wm],
        None if bm is None else [v.detach() for v in bm],
        a.act_name,
    )


# --- gtlib.connectivity.Recipe.lr_at (now lr * Recipe.lr_factor) ---
def old_lr_at(self: Recipe, step: int, total: int) -> float:
    """Learning rate of update number ``step`` (0-based) out of ``total``."""
    w = int(round(self.warmup * total))
    if step < w:
        return self.lr * (self.start_factor + (1 - self.start_factor) * step / w)
    return self.lr * max(0.0, (total - step) / max(1, total - w))
