"""The one training loop: E models trained at once, each as if it were trained alone.

Every chapter trains through this module (the Preliminaries explain why it is fast: the E members'
parameters are stacked along a leading axis, one forward and one backward pass serve them all, and
because member ``e``'s loss depends only on member ``e``'s parameters, the gradient of the *sum* of
the members' losses gives each member exactly its own gradient). Read it top to bottom:

1. :class:`StackedOptimizer`: SGD (momentum, coupled weight decay), AdamW (decoupled weight decay)
   and Adam (L2 weight decay) applied member by member, with per-member hyperparameters, a
   learning-rate schedule and frozen members. Each member is updated as ``torch.optim.SGD``,
   ``torch.optim.AdamW`` or ``torch.optim.Adam`` would update it alone (the same arithmetic, in the
   parameters' own precision).
2. Minibatch orders, one row per member: :class:`EpochBatches` (a fresh permutation per epoch, the
   last batch short), :class:`StreamBatches` (permutations laid end to end, so a batch may straddle
   two epochs, or with the remainder of each epoch dropped) and :class:`ReplacementBatches` (draws
   with replacement).
3. :func:`fit`: the loop. At every step it draws each member's minibatch, asks the chapter for the
   members' losses, takes one optimizer step for the active members, and at the check steps hands
   the chapter the step number so that it can record what it measures and say which members have
   met their stop rule. :func:`stop_rule` builds the book's two data-dependent rules (a training
   accuracy, a fraction of margins).

A chapter composes these: its model (any module or plain tensors whose parameters carry the member
axis first), a loss function of the minibatch, an optimizer, a batch order and a check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import torch

from .checks import (
    Boolean,
    Device,
    Interval,
    Options,
    Tensor,
    boundary,
    check_int,
    check_labels,
    check_seed,
)

__all__ = [
    # the loop
    "Fit",
    "fit",
    "stop_rule",
    # its building blocks
    "EpochBatches",
    "ReplacementBatches",
    "StackedOptimizer",
    "StreamBatches",
    "member_margins",
]


OPTIMIZERS = ("sgd", "adamw", "adam")

_LR = Interval(float, 0, None, "neither")
_MOMENTUM = Interval(float, 0, 1, "left")
_DECAY = Interval(float, 0, None)
_BETA = Interval(float, 0, 1, "left")
_EPS = Interval(float, 0, None, "neither")
_SCALE = Interval(float, 0, None)  # a learning-rate factor


# ---------------------------------------------------------------------------------------------
# 1. The optimizer
# ---------------------------------------------------------------------------------------------
def _per_member(name: str, value, members: int | None, constraint) -> list:
    """``value`` as a list with one entry per member (a single value is shared)."""
    if isinstance(value, (list, tuple)):
        if members is None:
            raise ValueError(
                f"{name} may only be a sequence when members is given, got {value!r}"
            )
        if len(value) != members:
            raise ValueError(
                f"{name} must have one entry per member ({members}), got {len(value)}"
            )
        return [constraint.check(f"{name}[{i}]", v) for i, v in enumerate(value)]
    return [constraint.check(name, value)] * (members or 1)


class StackedOptimizer:
    """SGD, AdamW or Adam for parameters stacked along a leading member axis.

    Parameters
    ----------
    params : iterable of tensors
        The trainable tensors (``requires_grad``). With ``members`` given, each has the member axis
        first, ``(E, ...)``; without it they belong to one model and have any shape.
    optimizer : str or sequence of str
        ``"sgd"``, ``"adamw"`` or ``"adam"``, for all members or one per member.
    lr, momentum, weight_decay : float or sequence of float
        One value for all members or one per member. ``momentum`` is SGD's (ignored by Adam);
        ``weight_decay`` is coupled (added to the gradient) for SGD and Adam and decoupled (the
        weights shrink by ``lr * weight_decay``) for AdamW, as in PyTorch.
    betas : tuple of float
        Adam's decay rates of the first and second moments, each in [0, 1).
    eps : float
        Adam's constant added to the denominator.
    members : int, optional
        The number E of stacked models.

    Notes
    -----
    Member ``e`` follows the update rule of ``torch.optim.SGD(lr, momentum, weight_decay)``
    (``b <- momentum * b + g + wd * w``; ``w <- w - lr * b``), of ``torch.optim.AdamW``
    (Loshchilov and Hutter 2019, Algorithm 2) or of ``torch.optim.Adam`` (Kingma and Ba 2015,
    Algorithm 1), with its own step count for Adam's bias correction. A member that is not active
    at a step is left exactly as it is: no update, no weight decay, no change to its optimizer
    state. The tests compare every case with ``torch.optim`` run member by member in float64.

    References
    ----------
    Kingma, D. P. and Ba, J. (2015). Adam: a method for stochastic optimization. ICLR.
    Loshchilov, I. and Hutter, F. (2019). Decoupled weight decay regularization. ICLR.
    """

    def __init__(
        self,
        params,
        optimizer="sgd",
        lr=0.1,
        momentum=0.0,
        weight_decay=0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        members: int | None = None,
    ):
        if members is not None:
            members = check_int("members", members)
        if isinstance(params, (torch.Tensor, str)) or not hasattr(
            params, "__iter__"
        ):
            raise TypeError(
                f"params must be an iterable of tensors, got {type(params).__name__}"
            )
        self.params = list(params)
        if not self.params:
            raise ValueError("params must hold at least one tensor")
        for i, p in enumerate(self.params):
            if (
                not isinstance(p, torch.Tensor)
                or not p.is_floating_point()
                or not p.requires_grad
            ):
                raise TypeError(
                    f"params[{i}] must be a floating-point tensor that requires grad"
                )
            if members is not None and (p.ndim == 0 or p.shape[0] != members):
                raise ValueError(
                    f"params[{i}] must have the member axis first ({members}, ...), "
                    f"got {tuple(p.shape)}"
                )
        self.members = members
        E = members or 1
        self.kinds = _per_member(
            "optimizer", optimizer, members, Options(OPTIMIZERS)
        )
        self.lr = _per_member("lr", lr, members, _LR)
        self.momentum = _per_member("momentum", momentum, members, _MOMENTUM)
        self.weight_decay = _per_member(
            "weight_decay", weight_decay, members, _DECAY
        )
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(
                f"betas must be a pair of numbers in [0, 1), got {betas!r}"
            )
        self.betas = (
            _BETA.check("betas[0]", betas[0]),
            _BETA.check("betas[1]", betas[1]),
        )
        self.eps = _EPS.check("eps", eps)
        # members with identical settings are updated together; usually there is one group
        groups: dict[tuple, list[int]] = {}
        for e in range(E):
            key = (self.kinds[e], self.momentum[e], self.weight_decay[e])
            groups.setdefault(key, []).append(e)
        self.groups = [(key, torch.tensor(idx)) for key, idx in groups.items()]
        self.uniform_lr = len(set(self.lr)) == 1
        adam = any(k != "sgd" for k in self.kinds)
        sgd_momentum = any(
            k == "sgd" and m > 0 for k, m in zip(self.kinds, self.momentum)
        )
        self.state = [
            {
                "buf": torch.zeros_like(p) if sgd_momentum else None,
                "m": torch.zeros_like(p) if adam else None,
                "v": torch.zeros_like(p) if adam else None,
            }
            for p in self.params
        ]
        self.t = torch.zeros(
            E, dtype=torch.int64
        )  # each member's number of Adam steps
        self._t_all: int | None = (
            0  # their common value while every member has taken every step
        )

    def step(
        self,
        grads: Sequence[torch.Tensor | None],
        active: torch.Tensor | None = None,
        lr_scale: float = 1.0,
    ) -> None:
        """Update the parameters with ``grads`` (one per parameter; None skips it).

        ``active`` is a ``(E,)`` bool tensor (default: every member); ``lr_scale`` multiplies every
        member's learning rate (a schedule).
        """
        E = self.members or 1
        if isinstance(grads, (torch.Tensor, str)) or not isinstance(
            grads, (list, tuple)
        ):
            raise TypeError(
                f"grads must be a list or tuple of tensors (or None), one per "
                f"parameter, got {type(grads).__name__}"
            )
        if len(grads) != len(self.params):
            raise ValueError(
                f"grads must have one entry per parameter ({len(self.params)}), "
                f"got {len(grads)}"
            )
        for i, (g, p) in enumerate(zip(grads, self.params)):
            if g is None:
                continue
            Tensor("float", finite=True, empty=True).check(f"grads[{i}]", g)
            if g.shape != p.shape:
                raise ValueError(
                    f"grads[{i}] must have the shape of params[{i}] "
                    f"{tuple(p.shape)}, got {tuple(g.shape)}"
                )
        if active is not None:
            Tensor().check("active", active)
            if active.dtype != torch.bool or active.shape != (E,):
                raise ValueError(
                    f"active must be a bool tensor of shape ({E},), got "
                    f"{active.dtype} {tuple(active.shape)}"
                )
        _SCALE.check("lr_scale", lr_scale)
        self._step(grads, active, lr_scale)

    @torch.no_grad()
    def _step(self, grads, active, lr_scale: float) -> None:
        """:meth:`step` without the checks (the engine's loop made the gradients itself)."""
        E = self.members or 1
        if active is None and len(self.groups) == 1 and self.uniform_lr:
            # the usual step: every member, one setting: one foreach update over all parameters
            self.t += 1
            if self._t_all is not None:
                self._t_all += 1
            if self._t_all is not None or self.groups[0][0][0] == "sgd":
                self._update_all(self.groups[0][0], grads, self.lr[0] * lr_scale)
                return
            act = torch.ones(E, dtype=torch.bool)
        else:
            act = (
                torch.ones(E, dtype=torch.bool)
                if active is None
                else active.detach().cpu()
            )
            self.t += act.to(torch.int64)
            self._t_all = (
                int(self.t[0]) if bool((self.t == self.t[0]).all()) else None
            )
        for (kind, momentum, wd), idx in self.groups:
            live = idx[act[idx]]
            if len(live) == 0:
                continue
            # the live members form a contiguous range (often all E): update views in place
            lo, hi = int(live[0]), int(live[-1]) + 1
            block = slice(lo, hi) if hi - lo == len(live) else None
            lrs = (
                [self.lr[int(e)] * lr_scale for e in live]
                if not self.uniform_lr
                else None
            )
            lr = self.lr[0] * lr_scale if self.uniform_lr else None
            for p, g, st in zip(self.params, grads, self.state):
                if g is None:
                    continue
                if block == slice(0, E):
                    self._update(kind, momentum, wd, p, g, st, lr, lrs, live)
                elif block is not None:
                    sub = {
                        k: (None if v is None else v[block]) for k, v in st.items()
                    }
                    self._update(
                        kind, momentum, wd, p[block], g[block], sub, lr, lrs, live
                    )
                else:  # scattered members: gather, update, write back
                    sub = {
                        k: (None if v is None else v[live]) for k, v in st.items()
                    }
                    w = p[live]
                    self._update(kind, momentum, wd, w, g[live], sub, lr, lrs, live)
                    p.index_copy_(0, live.to(p.device), w)
                    for k, v in sub.items():
                        if v is not None:
                            st[k].index_copy_(0, live.to(p.device), v)

    def _update_all(self, key, grads, lr: float) -> None:
        """:meth:`_update` for every member and parameter at once (``torch._foreach_*``: the same
        formulas, one call per operation instead of one per parameter and operation)."""
        kind, momentum, wd = key
        live = [i for i, g in enumerate(grads) if g is not None]
        ps = [self.params[i] for i in live]
        gs = [grads[i] for i in live]
        if kind == "sgd":
            ds = torch._foreach_add(gs, ps, alpha=wd) if wd != 0 else gs
            if momentum != 0:
                bufs = [self.state[i]["buf"] for i in live]
                torch._foreach_mul_(bufs, momentum)
                torch._foreach_add_(bufs, ds)
                ds = bufs
            torch._foreach_add_(ps, ds, alpha=-lr)
            return
        b1, b2 = self.betas
        if kind == "adamw":
            torch._foreach_mul_(ps, 1 - lr * wd)
        elif wd != 0:  # adam: L2 weight decay
            gs = torch._foreach_add(gs, ps, alpha=wd)
        ms = [self.state[i]["m"] for i in live]
        vs = [self.state[i]["v"] for i in live]
        torch._foreach_lerp_(ms, gs, 1 - b1)
        torch._foreach_mul_(vs, b2)
        torch._foreach_addcmul_(vs, gs, gs, value=1 - b2)
        step = self._t_all
        bc1, bc2 = 1 - b1**step, 1 - b2**step
        denom = torch._foreach_sqrt(vs)
        torch._foreach_div_(denom, math.sqrt(bc2))
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(ps, ms, denom, value=-(lr / bc1))

    def _update(self, kind, momentum, wd, p, g, st, lr, lrs, live) -> None:
        """One member group's update, in place on ``p`` and its state ``st`` (PyTorch's formulas)."""
        shape = (-1,) + (1,) * (p.ndim - 1)
        lr_t = (
            None
            if lrs is None
            else torch.tensor(lrs, dtype=p.dtype, device=p.device).view(shape)
        )
        if kind == "sgd":
            d = g.add(p, alpha=wd) if wd != 0 else g
            if momentum != 0:
                d = st["buf"].mul_(momentum).add_(d)
            if lr_t is None:
                p.add_(d, alpha=-lr)
            else:
                p.sub_(lr_t * d)
            return
        b1, b2 = self.betas
        if kind == "adamw":
            if lr_t is None:
                p.mul_(1 - lr * wd)
            else:
                p.mul_(1 - lr_t * wd)
        elif wd != 0:  # adam: L2 weight decay
            g = g.add(p, alpha=wd)
        st["m"].lerp_(g, 1 - b1)
        st["v"].mul_(b2).addcmul_(g, g, value=1 - b2)
        t = self.t[live]
        if bool((t == t[0]).all()) and lr_t is None:
            step = int(t[0])
            bc1, bc2 = 1 - b1**step, 1 - b2**step
            denom = (st["v"].sqrt() / math.sqrt(bc2)).add_(self.eps)
            p.addcdiv_(st["m"], denom, value=-(lr / bc1))
            return
        tt = t.to(torch.float64)
        bc1 = (1 - b1**tt).tolist()
        bc2 = (1 - b2**tt).tolist()
        lrs = lrs if lrs is not None else [lr] * len(t)
        size = torch.tensor(
            [a / c for a, c in zip(lrs, bc1)], dtype=p.dtype, device=p.device
        )
        root = torch.tensor(
            [math.sqrt(c) for c in bc2], dtype=p.dtype, device=p.device
        )
        denom = (st["v"].sqrt() / root.view(shape)).add_(self.eps)
        p.sub_(size.view(shape) * (st["m"] / denom))


# ---------------------------------------------------------------------------------------------
# 2. Minibatch orders
# ---------------------------------------------------------------------------------------------
def _generators(seeds) -> list[torch.Generator]:
    """One CPU generator per member, from seeds or from generators the caller owns."""
    if isinstance(seeds, (torch.Generator, int)) or not hasattr(seeds, "__len__"):
        raise TypeError(
            f"seeds must be a sequence of seeds or torch.Generators, got {seeds!r}"
        )
    if len(seeds) == 0:
        raise ValueError(
            "seeds must hold one seed (or generator) per member, got none"
        )
    return [
        s
        if isinstance(s, torch.Generator)
        else torch.Generator().manual_seed(check_seed(f"seeds[{i}]", s))
        for i, s in enumerate(seeds)
    ]


class EpochBatches:
    """Per-member minibatches without replacement, a new permutation every epoch.

    Member ``e``'s minibatches: a fresh permutation of ``range(n)`` per epoch drawn from its own
    generator, cut into batches of ``batch_size`` (the last one of an epoch short). Each call of
    ``next`` gives a ``(E, b)`` index tensor on ``device``.

    Parameters
    ----------
    n : int
        The number of training points.
    batch_size : int
        The minibatch size.
    seeds : object
        One seed per member.
    device : object, default 'cpu'
        Device of the index tensors.
    """

    def __init__(self, n: int, batch_size: int, seeds, device="cpu"):
        self.n = check_int("n", n)
        self.batch_size = check_int("batch_size", batch_size)
        self.gens = _generators(seeds)
        self.device = Device().check("device", device)
        self.per_epoch = -(-self.n // self.batch_size)
        self.pos, self.order = 0, None

    def __iter__(self) -> Iterator[torch.Tensor]:
        return self

    def __next__(self) -> torch.Tensor:
        if self.pos == 0:
            self.order = torch.stack(
                [torch.randperm(self.n, generator=g) for g in self.gens]
            ).to(self.device)
        start = self.pos * self.batch_size
        self.pos = (self.pos + 1) % self.per_epoch
        return self.order[:, start : start + self.batch_size]


class StreamBatches:
    """Per-member minibatches from a stream of permutations, one training set size per member.

    Member ``e`` draws ``batch_size`` indices of ``range(sizes[e])`` at a time from permutations
    laid end to end (a batch may straddle two epochs), or, with ``drop_remainder=True``, starts a
    new permutation whenever fewer than ``batch_size`` indices are left in the current one. Members
    may have training sets of different sizes (nested subsets of one pool).

    Parameters
    ----------
    sizes : Sequence[int]
        Each member's training-set size.
    batch_size : int
        The minibatch size.
    seeds : object
        One seed per member.
    device : object, default 'cpu'
        Device of the index tensors.
    drop_remainder : bool, default False
        Whether a batch never straddles two permutations.
    """

    def __init__(
        self,
        sizes: Sequence[int],
        batch_size: int,
        seeds,
        device="cpu",
        drop_remainder: bool = False,
    ):
        if (
            isinstance(sizes, (str, torch.Tensor))
            or not isinstance(sizes, (list, tuple))
            or len(sizes) == 0
        ):
            raise TypeError(
                f"sizes must be a non-empty list of ints (one per member), got "
                f"{sizes!r}"
            )
        self.sizes = [check_int(f"sizes[{i}]", s) for i, s in enumerate(sizes)]
        self.batch_size = check_int("batch_size", batch_size)
        self.gens = _generators(seeds)
        if len(self.gens) != len(self.sizes):
            raise ValueError(
                f"seeds must have one entry per member ({len(self.sizes)}), "
                f"got {len(self.gens)}"
            )
        if drop_remainder and self.batch_size > min(self.sizes):
            raise ValueError(
                f"batch_size must be <= every size with drop_remainder, got "
                f"{self.batch_size} > {min(self.sizes)}"
            )
        self.device = Device().check("device", device)
        self.drop = Boolean().check("drop_remainder", drop_remainder)
        self.orders = [torch.empty(0, dtype=torch.int64) for _ in self.sizes]

    def __iter__(self) -> Iterator[torch.Tensor]:
        return self

    def _next(self, e: int) -> torch.Tensor:
        b = self.batch_size
        if self.drop and len(self.orders[e]) < b:
            self.orders[e] = torch.randperm(self.sizes[e], generator=self.gens[e])
        while len(self.orders[e]) < b:
            self.orders[e] = torch.cat(
                [
                    self.orders[e],
                    torch.randperm(self.sizes[e], generator=self.gens[e]),
                ]
            )
        out, self.orders[e] = self.orders[e][:b], self.orders[e][b:]
        return out

    def __next__(self) -> torch.Tensor:
        return torch.stack([self._next(e) for e in range(len(self.sizes))]).to(
            self.device
        )


class ReplacementBatches:
    """Member ``e`` draws ``batch_size`` indices of ``range(n)`` uniformly with replacement.

    Parameters
    ----------
    n : int
        The number of training points.
    batch_size : int
        The minibatch size.
    seeds : object
        One seed per member.
    device : object, default 'cpu'
        Device of the index tensors.
    """

    def __init__(self, n: int, batch_size: int, seeds, device="cpu"):
        self.n = check_int("n", n)
        self.batch_size = check_int("batch_size", batch_size)
        self.gens = _generators(seeds)
        self.device = Device().check("device", device)

    def __iter__(self) -> Iterator[torch.Tensor]:
        return self

    def __next__(self) -> torch.Tensor:
        return torch.stack(
            [
                torch.randint(0, self.n, (self.batch_size,), generator=g)
                for g in self.gens
            ]
        ).to(self.device)


def _member_batch(x, y, idx):
    """Each member's minibatch: ``x`` is ``(n, d)`` (shared) or ``(E, n, d)``, ``y`` is ``(n,)`` or
    ``(E, n)`` or None, ``idx`` is ``(E, b)``; returns ``(E, b, d)`` and ``(E, b)`` (or None).

    Unchecked: the training loops call it every step on data they checked once.
    """
    rows = torch.arange(idx.shape[0], device=idx.device).unsqueeze(1)
    xb = x[idx] if x.ndim == 2 else x[rows, idx]
    if y is None:
        return xb, None
    return xb, (y[idx] if y.ndim == 1 else y[rows, idx])


@boundary(logits=Tensor("float", (2, 3)), y=Tensor("int", (1, 2)))
def member_margins(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r"""Multiclass margins ``f_y(x) - max_{j != y} f_j(x)``.

    Multiclass margins ``f_y(x) - max_{j != y} f_j(x)`` of logits ``(..., n, C)`` and labels
    broadcastable to ``(..., n)``.

    .. math::

       \gamma(x, y) = f_y(x) - \max_{j \neq y} f_j(x)

    Parameters
    ----------
    logits : torch.Tensor
        The logits, ``(..., n, C)``.
    y : torch.Tensor
        The labels, broadcastable to ``(..., n)``.

    Returns
    -------
    torch.Tensor
        The margins, ``(..., n)``.
    """
    check_labels("y", y, logits.shape[-1], n=logits.shape[-2])
    return _margins(logits, y)


def _margins(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    yy = y.expand(logits.shape[:-1]).unsqueeze(-1)
    true = logits.gather(-1, yy).squeeze(-1)
    other = logits.scatter(-1, yy, float("-inf")).amax(-1)
    return true - other


def stop_rule(
    target_train_acc: float | None = None,
    margin_gamma: float | None = None,
    margin_fraction: float = 0.99,
) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The book's data-dependent stop rules as a function ``(logits, y) -> met``, per member.

    A member meets the rule once its training accuracy is at least ``target_train_acc``, or once a
    fraction of at least ``margin_fraction`` of its training points has margin at least
    ``margin_gamma`` (Nagarajan and Kolter 2019 stop at "at most 1% of points with margin below
    gamma"). ``logits`` are ``(E, n, C)`` (or ``(n, C)``), ``y`` is ``(n,)`` or ``(E, n)``; the
    result is a ``(E,)`` (or ``()``) bool tensor; with neither rule set it is all False.

    Parameters
    ----------
    target_train_acc : float | None, default None
        Training accuracy at which a member stops (None: no such rule).
    margin_gamma : float | None, default None
        Margin a fraction ``margin_fraction`` of the training points must reach (None: no such
        rule).
    margin_fraction : float, default 0.99
        See ``margin_gamma``.

    Returns
    -------
    callable
        ``rule(logits, y) -> met``, a bool tensor with one entry per member.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in deep
    learning" (its stopping criterion).
    """
    if target_train_acc is not None:
        target_train_acc = Interval(float, 0, 1).check(
            "target_train_acc", target_train_acc
        )
    if margin_gamma is not None:
        margin_gamma = Interval(float, 0, None, "neither").check(
            "margin_gamma", margin_gamma
        )
    margin_fraction = Interval(float, 0, 1).check("margin_fraction", margin_fraction)

    def met(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if (
            not isinstance(logits, torch.Tensor)
            or not isinstance(y, torch.Tensor)
            or logits.ndim < 2
            or y.shape[-1:] != logits.shape[-2:-1]
        ):
            raise ValueError(
                f"logits (..., n, C) and labels y (..., n) must match, got "
                f"{tuple(getattr(logits, 'shape', ()))} and "
                f"{tuple(getattr(y, 'shape', ()))}"
            )
        out = torch.zeros(logits.shape[:-2], dtype=torch.bool, device=logits.device)
        if target_train_acc is not None:
            out |= (logits.argmax(-1) == y).float().mean(-1) >= target_train_acc
        if margin_gamma is not None:
            frac = (_margins(logits, y) >= margin_gamma).float().mean(-1)
            out |= frac >= margin_fraction
        return out

    return met


# ---------------------------------------------------------------------------------------------
# 3. The loop
# ---------------------------------------------------------------------------------------------
@dataclass
class Fit:
    """How training ended for each member.

    How training ended for each member: the step it stopped at and whether a check stopped it
    (``met_rule``; otherwise it ran out of steps).

    Parameters
    ----------
    stop_step : list[int], optional
        Per member, the step it stopped at.
    met_rule : list[bool], optional
        Per member, whether a check stopped it (False: it ran out of steps).
    """

    stop_step: list[int] = field(default_factory=list)
    met_rule: list[bool] = field(default_factory=list)


def _per_member_steps(name: str, value, E: int, minimum: int) -> torch.Tensor:
    if isinstance(value, (list, tuple)):
        if len(value) != E:
            raise ValueError(
                f"{name} must have one entry per member ({E}), got {len(value)}"
            )
        return torch.tensor(
            [check_int(f"{name}[{i}]", v, minimum) for i, v in enumerate(value)]
        )
    return torch.full((E,), check_int(name, value, minimum), dtype=torch.int64)


def _lr_scale(schedule: Callable[[int], float] | None, step: int) -> float:
    """The schedule's learning-rate factor at update ``step`` (1 without a schedule), checked."""
    return (
        1.0 if schedule is None else _SCALE.check("schedule(step)", schedule(step))
    )


def _check_losses(
    losses, shape: torch.Size, active: torch.Tensor, step: int
) -> None:
    """One loss per member, finite for every member that trains: a NaN or infinite loss means
    training diverged, and is an error rather than a silent NaN result."""
    if not isinstance(losses, torch.Tensor) or losses.shape != shape:
        raise ValueError(
            f"loss must return a tensor of shape {tuple(shape)} (one loss per "
            f"member), got {getattr(losses, 'shape', type(losses).__name__)}"
        )
    bad = ~torch.isfinite(losses.detach()).reshape(-1).cpu() & active
    if bool(bad.any()):
        raise ValueError(
            f"loss is NaN or infinite for member(s) {bad.nonzero().view(-1).tolist()} "
            f"at update {step}: training diverged (a smaller learning rate, or "
            "finite data, would avoid it)"
        )


#: Off the CPU, the losses are looked at every this many steps (and before every check), not at
#: every step: looking waits for the device. A divergence is still reported at its first step.
_LOOK_EVERY = 32


def _check_pending(pending: list, shape: torch.Size) -> None:
    """:func:`_check_losses` for the steps in ``pending`` (emptied), with one wait for the device."""
    finite = torch.stack([torch.isfinite(l).all() for l, _, _ in pending]).cpu()
    steps = pending[:]
    pending.clear()
    for ok, (losses, active, step) in zip(finite.tolist(), steps):
        if not ok:
            _check_losses(losses, shape, active, step)


def fit(
    loss: Callable[[int, torch.Tensor | None], torch.Tensor],
    optimizer: StackedOptimizer,
    steps,
    batches: Iterator[torch.Tensor] | None = None,
    check: Callable[[int, torch.Tensor], torch.Tensor | None] | None = None,
    every=1,
    start=None,
    schedule: Callable[[int], float] | None = None,
    active_only: bool = False,
) -> Fit:
    """Train the optimizer's parameters: every member takes at most ``steps`` optimizer steps.

    Parameters
    ----------
    loss : function ``(step, batch) -> losses``
        The members' losses on this step's minibatches, a ``(E,)`` tensor (a scalar when the
        optimizer has no member axis). ``step`` counts the updates made so far (0, 1, ...);
        ``batch`` is the ``(E, b)`` index tensor drawn from ``batches``, or None.
    optimizer : StackedOptimizer
        The optimizer of the stacked parameters; its ``members`` is ``E``.
    steps : int or sequence of int
        The most updates a member makes (one value per member allowed).
    batches : iterator of ``(E, b)`` index tensors, optional
        Drawn once per step, for all members (None: full batch, or the loss draws its own data).
    check : function ``(step, due) -> stop``, optional
        Called before the first update (``step = 0``) and after update ``step`` whenever it is due
        for some member: ``step`` is a multiple of that member's ``every``, or its last step. ``due``
        is the ``(E,)`` bool mask of the active members it is due for; the function records what it
        measures and returns a bool mask of members that have met their stop rule (or None).
    every : int or sequence of int
        The check period, in updates.
    start : sequence of int, optional
        Member ``e`` is frozen until ``start[e]`` updates have been made (spawning a child later).
    schedule : function ``step -> factor``, optional
        Multiplies every learning rate at update ``step`` (0-based).
    active_only : bool
        Call ``loss(step, batch, active)`` with the ``(E,)`` bool mask of the members that update
        at this step, so that the loss can compute only theirs (and return 0 for the others):
        worth it when members stop at very different times.

    Returns
    -------
    Fit
        Each member's stopping step and whether a check stopped it. A stopped member is frozen:
        its parameters and optimizer state no longer change.
    """
    if not isinstance(optimizer, StackedOptimizer):
        raise TypeError(
            f"optimizer must be a StackedOptimizer, got {type(optimizer).__name__}"
        )
    if not callable(loss):
        raise TypeError("loss must be a function (step, batch) -> per-member losses")
    if batches is not None and not hasattr(batches, "__next__"):
        raise TypeError(
            f"batches must be an iterator of index tensors or None, got "
            f"{type(batches).__name__}"
        )
    for name, fn in (("check", check), ("schedule", schedule)):
        if fn is not None and not callable(fn):
            raise TypeError(
                f"{name} must be a function or None, got {type(fn).__name__}"
            )
    active_only = Boolean().check("active_only", active_only)
    if start is not None and not isinstance(start, (list, tuple)):
        raise TypeError(
            f"start must be a list of ints (one per member) or None, got {start!r}"
        )
    E = optimizer.members or 1
    steps_e = _per_member_steps("steps", steps, E, 0)
    every_e = _per_member_steps("every", every, E, 1)
    start_e = (
        torch.zeros(E, dtype=torch.int64)
        if start is None
        else _per_member_steps("start", list(start), E, 0)
    )
    done = torch.zeros(E, dtype=torch.bool)
    met = torch.zeros(E, dtype=torch.bool)
    stop_step = steps_e.clone()

    def stop(step: int, due: torch.Tensor) -> None:
        newly = check(step, due) if check is not None else None
        if newly is not None:
            newly = torch.as_tensor(newly, dtype=torch.bool).cpu().reshape(E) & due
            met.logical_or_(newly)
            stop_step[newly] = step
            done.logical_or_(newly)

    shape = torch.Size([]) if optimizer.members is None else torch.Size([E])
    params = optimizer.params
    pending: list = []  # off the CPU: losses not yet looked at (a look waits for the device)
    stop(0, ~done)
    done |= steps_e == 0
    step = 0
    never = torch.iinfo(torch.int64).max
    while not bool(done.all()):
        # Nothing changes before the next event: a member's start, a check due or a last step. Up
        # to it the active members are fixed, so the steps in between need no bookkeeping.
        active = ~done & (start_e <= step)
        upcoming = torch.minimum((step // every_e + 1) * every_e, steps_e)
        upcoming = torch.where(
            start_e > step, torch.minimum(upcoming, start_e), upcoming
        )
        horizon = int(torch.where(done, never, upcoming).min())
        train = bool(active.any())
        mask = None if bool(active.all()) else active
        while step < horizon:
            batch = next(batches) if batches is not None else None
            t = step  # this update's 0-based index: the loss and the schedule see it
            step += 1
            if not train:
                continue
            losses = loss(t, batch, active) if active_only else loss(t, batch)
            if not isinstance(losses, torch.Tensor) or losses.shape != shape:
                _check_losses(losses, shape, active, t)  # raises
            total = (
                losses.sum()
            )  # member e's gradient is the gradient of its own loss
            if total.device.type == "cpu":
                # one number to look at: the sum is finite when every loss is (else find which)
                if not math.isfinite(total.item()):
                    _check_losses(losses, shape, active, t)
            else:
                pending.append((losses.detach(), active, t))
                if len(pending) == _LOOK_EVERY:
                    _check_pending(pending, shape)
            grads = torch.autograd.grad(total, params, allow_unused=True)
            optimizer._step(grads, mask, _lr_scale(schedule, t))
        if pending:  # before a check reads the parameters, and at the end
            _check_pending(pending, shape)
        last = ~done & (step >= steps_e)
        due = ~done & ((step % every_e == 0) | last)
        if bool(due.any()):
            stop(step, due)
        done |= last
    return Fit(stop_step=stop_step.tolist(), met_rule=met.tolist())
