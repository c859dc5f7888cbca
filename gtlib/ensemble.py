"""Train E networks of the same shape at once: the book's main performance lever.

A :class:`BatchedMLP` stores the weights of E MLPs as stacked tensors ``W_l`` of shape
``(E, out, in)`` and runs all of them with one batched matmul per layer. Training the stack with a
loss that is the *sum* of the members' losses gives every member exactly the gradient it would get
alone, and SGD, momentum, weight decay and AdamW act elementwise, so :func:`train_ensemble`
reproduces E calls of :func:`gtlib.train.train` (same seeds, same minibatch order) up to
floating-point rounding, while paying the Python and kernel-launch overhead once instead of E times.
(This is what ``torch.func.stack_module_state`` + ``vmap`` does for arbitrary modules; for MLPs the
explicit batched matmul is simpler and as fast.)

Members may differ in width through ``hidden_mask``: a ``(E, width)`` 0/1 mask applied after every
hidden activation turns a common maximum width into E narrower nets (a masked unit receives no
gradient and contributes nothing).
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .checks import (Device, Options, Tensor, check_finite, check_int, check_labels, check_seed,
                     check_seeds)
from .models import MLP, activation
from .engine import EpochBatches, StackedOptimizer, fit, stop_rule
from .train import (LOSSES, History, TrainConfig, _check_cfg, accuracy, batch_indices, check_data,
                    make_optimizer, total_steps)


def _transposed_layout(w: torch.Tensor) -> torch.Tensor:
    """A copy of the ``(E, out, in)`` tensor ``w`` stored as ``(E, in, out)`` (same shape, values)."""
    return w.transpose(1, 2).clone(memory_format=torch.contiguous_format).transpose(1, 2)


def make_mlp(seed: int, in_dim: int, width: int, depth: int, out_dim: int, bias: bool = True,
             act: str = "relu") -> MLP:
    """An :class:`~gtlib.models.MLP` whose initialization is fixed by ``seed`` alone."""
    seed = check_seed("seed", seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MLP(in_dim, width, depth, out_dim, bias=bias, activation=act)


class BatchedMLP(nn.Module):
    """E MLPs of one shape, evaluated together.

    Parameters
    ----------
    weights : list of tensors ``(E, out_l, in_l)``
    biases : list of tensors ``(E, out_l)`` or None (no biases)
    act : str
        Activation name (see :data:`gtlib.models.ACTIVATIONS`).
    hidden_mask : tensor ``(E, width)`` or None
        Optional 0/1 mask of hidden units (same for every hidden layer).
    """

    def __init__(self, weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor] | None,
                 act: str = "relu", hidden_mask: torch.Tensor | None = None):
        super().__init__()
        if isinstance(weights, (str, torch.Tensor)) or not isinstance(weights, (list, tuple)):
            raise TypeError(f"weights must be a list of (E, out, in) tensors, got "
                            f"{type(weights).__name__}")
        if len(weights) < 1:
            raise ValueError("weights must hold at least one layer")
        for l, w in enumerate(weights):
            Tensor("float", 3).check(f"weights[{l}]", w)
        E = weights[0].shape[0]
        for l, w in enumerate(weights):
            if w.shape[0] != E:
                raise ValueError(f"weights[{l}] must have shape (E, out, in) with E = {E}, got "
                                 f"{tuple(w.shape)}")
            if l and w.shape[2] != weights[l - 1].shape[1]:
                raise ValueError(f"weights[{l}] must take {weights[l - 1].shape[1]} inputs (the "
                                 f"outputs of weights[{l - 1}]), got shape {tuple(w.shape)}")
        if biases is not None:
            if isinstance(biases, (str, torch.Tensor)) or not isinstance(biases, (list, tuple)):
                raise TypeError(f"biases must be a list of (E, out) tensors or None, got "
                                f"{type(biases).__name__}")
            for l, b in enumerate(biases):
                Tensor("float", 2).check(f"biases[{l}]", b)
                if l < len(weights) and tuple(b.shape) != (E, weights[l].shape[1]):
                    raise ValueError(f"biases[{l}] must have shape ({E}, {weights[l].shape[1]}), "
                                     f"got {tuple(b.shape)}")
        if hidden_mask is not None:
            Tensor().check("hidden_mask", hidden_mask)
        # each W_l is (E, out, in) but laid out in memory as (E, in, out): the forward multiplies by
        # W_l^T, which is then contiguous, so autograd returns weight gradients with the weights'
        # own layout and the optimizer's elementwise updates run at memory speed
        self.weights = nn.ParameterList(nn.Parameter(_transposed_layout(w.detach()))
                                        for w in weights)
        self.has_bias = biases is not None
        if biases is not None:
            if len(biases) != len(weights):
                raise ValueError("biases must have one entry per layer")
            self.biases = nn.ParameterList(nn.Parameter(b.detach().clone()) for b in biases)
        self.act_name = act
        self.act = activation(act)
        if hidden_mask is not None:
            width = weights[0].shape[1]
            if hidden_mask.shape != (E, width):
                raise ValueError(f"hidden_mask must have shape ({E}, {width}), got "
                                 f"{tuple(hidden_mask.shape)}")
            if not bool(((hidden_mask == 0) | (hidden_mask == 1)).all()):
                raise ValueError("hidden_mask must hold only 0s and 1s")
            hidden_mask = hidden_mask.to(weights[0].dtype)
        self.register_buffer("hidden_mask", hidden_mask)

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_models(cls, models: Sequence[MLP], hidden_mask: torch.Tensor | None = None) -> "BatchedMLP":
        """Stack the weights of identically shaped :class:`MLP` s."""
        if isinstance(models, (str, MLP)) or not isinstance(models, (list, tuple)):
            raise TypeError(f"models must be a list of MLPs, got {type(models).__name__}")
        if len(models) == 0:
            raise ValueError("models must not be empty")
        for i, m in enumerate(models):
            if not isinstance(m, MLP):
                raise TypeError(f"models[{i}] must be a gtlib MLP, got {type(m).__name__}")
            shapes = [tuple(p.shape) for p in m.parameters()]
            if i and (shapes != first_shapes or m.act_name != models[0].act_name):
                raise ValueError(f"models[{i}] must have the shape and activation of models[0] "
                                 f"({first_shapes}, {models[0].act_name}), got {shapes}, "
                                 f"{m.act_name}")
            first_shapes = shapes if i == 0 else first_shapes
        first = models[0]
        ws = [torch.stack([m.layers[l].weight for m in models]) for l in range(len(first.layers))]
        bs = None
        if first.layers[0].bias is not None:
            bs = [torch.stack([m.layers[l].bias for m in models]) for l in range(len(first.layers))]
        return cls(ws, bs, act=first.act_name, hidden_mask=hidden_mask)

    @classmethod
    def init(cls, seeds: Sequence[int], in_dim: int, width: int, depth: int, out_dim: int,
             bias: bool = True, act: str = "relu", hidden_mask: torch.Tensor | None = None,
             device: str | torch.device = "cpu") -> "BatchedMLP":
        """E freshly initialized MLPs, member ``i`` initialized exactly as ``make_mlp(seeds[i], ...)``."""
        seeds = check_seeds("seeds", seeds)
        Device().check("device", device)
        models = [make_mlp(s, in_dim, width, depth, out_dim, bias, act) for s in seeds]
        return cls.from_models(models, hidden_mask=hidden_mask).to(device)

    @property
    def size(self) -> int:
        """Number of members E."""
        return int(self.weights[0].shape[0])

    def member(self, i: int) -> MLP:
        """Member ``i`` as a stand-alone :class:`MLP` (a copy)."""
        i = check_int("i", i, minimum=0)
        if i >= self.size:
            raise ValueError(f"i must lie in [0, {self.size}), got {i}")
        w0 = self.weights[0]
        depth = len(self.weights) - 1
        m = MLP(w0.shape[2], w0.shape[1] if depth else 1, depth, self.weights[-1].shape[1],
                bias=self.has_bias, activation=self.act_name).to(w0.device, w0.dtype)
        with torch.no_grad():
            for l, layer in enumerate(m.layers):
                w = self.weights[l][i]
                if self.hidden_mask is not None:  # bake the mask into the weights:
                    if l < depth:  # a masked unit gets no input...
                        w = w * self.hidden_mask[i][:, None]
                    if l > 0:  # ...and the next layer ignores it (act(0) need not be 0)
                        w = w * self.hidden_mask[i][None, :]
                layer.weight.copy_(w)
                if self.has_bias:
                    b = self.biases[l][i]
                    if self.hidden_mask is not None and l < depth:
                        b = b * self.hidden_mask[i]
                    layer.bias.copy_(b)
        return m

    # -- evaluation -----------------------------------------------------------------------------
    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Hidden features of every layer ``(E, n, width)``, then the logits ``(E, n, C)``.

        ``x`` is ``(n, d)`` (shared by all members) or ``(E, n, d)`` (one batch per member).
        """
        d = self.weights[0].shape[2]
        if isinstance(x, torch.Tensor) and x.ndim in (2, 3):
            if x.dtype != self.weights[0].dtype:
                raise TypeError(f"x must have the weights' dtype {self.weights[0].dtype}, got "
                                f"{x.dtype}")
            check_finite("x", x)
        if not isinstance(x, torch.Tensor) or x.shape[-1:] != (d,) or x.ndim not in (2, 3) \
                or (x.ndim == 3 and x.shape[0] != self.size):
            raise ValueError(f"x must have shape (n, {d}) or ({self.size}, n, {d}), got "
                             f"{tuple(getattr(x, 'shape', ()))}")
        return self._features(x)

    def _features(self, x: torch.Tensor, keep: bool = True) -> list[torch.Tensor]:
        """:meth:`features` without the checks (training: the data were checked once); with
        ``keep=False`` only the logits."""
        if x.ndim == 2:
            x = x.unsqueeze(0)
        out = []
        h = x
        last = len(self.weights) - 1
        for l, w in enumerate(self.weights):
            if self.has_bias:  # one fused kernel: b + h W^T
                h = torch.baddbmm(self.biases[l].unsqueeze(1), h.expand(w.shape[0], -1, -1),
                                  w.transpose(1, 2))
            else:
                h = torch.matmul(h, w.transpose(1, 2))
            if l < last:
                h = self.act(h)
                if self.hidden_mask is not None:
                    h = h * self.hidden_mask.unsqueeze(1)
            if keep or l == last:
                out.append(h)
        return out

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        """The logits ``(E, n, C)``, unchecked (the training loop's forward pass)."""
        return self._features(x, keep=False)[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x)[-1]


def ensemble_loss(name: str, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-member mean loss, shape ``(E,)``. ``y`` is ``(n,)`` or ``(E, n)``.

    Member ``e``'s entry equals :func:`gtlib.train.loss_fn` on ``logits[e]`` (MSE sums the squared
    error over the classes and averages over the points).
    """
    Options(LOSSES).check("name", name)
    Tensor("float", 3).check("logits", logits)
    check_labels("y", y, logits.shape[-1], n=logits.shape[1])
    return _ensemble_loss(name, logits, y)


def _ensemble_loss(name: str, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """:func:`ensemble_loss` without the checks (the training loop checked its data once)."""
    E, n, C = logits.shape
    y = y.expand(E, n)
    if name == "cross_entropy":
        return F.cross_entropy(logits.reshape(-1, C), y.reshape(-1), reduction="none").view(E, n).mean(1)
    if name == "mse":
        return ((logits - F.one_hot(y, C).to(logits.dtype)) ** 2).sum(-1).mean(1)
    raise ValueError(f"loss must be one of {LOSSES}, got {name!r}")


def train_ensemble(model: BatchedMLP, x: torch.Tensor, y: torch.Tensor, cfg: TrainConfig,
                   seeds: Sequence[int] | None = None,
                   probes: dict[str, Callable[[BatchedMLP], object]] | None = None) -> History:
    """Train every member of ``model`` in place, as :func:`gtlib.train.train` would train each alone.

    Member ``i`` draws its minibatches from a generator seeded with ``seeds[i]`` (default
    ``cfg.seed + i``). ``y`` is ``(n,)`` (shared labels) or ``(E, n)`` (one labelling per member,
    e.g. different corruption levels). The stop rules apply per member: a member that meets one is
    frozen at that step (later updates to it are discarded) and the others go on. The history
    stores per-member values: ``loss`` and ``train_acc`` rows are ``(E,)`` tensors, and
    ``history.probes['stop_step']`` holds each member's stopping step.
    """
    _check_cfg(cfg)
    if not isinstance(model, BatchedMLP):
        raise TypeError(f"model must be a BatchedMLP, got {type(model).__name__}")
    Tensor("float", 2).check("x", x)
    if probes is not None and (not isinstance(probes, dict) or not all(
            isinstance(k, str) and callable(f) for k, f in probes.items())):
        raise TypeError("probes must map names (str) to functions of the model")
    E = model.size
    seeds = [cfg.seed + i for i in range(E)] if seeds is None else check_seeds("seeds", seeds)
    if len(seeds) != E:
        raise ValueError(f"seeds must have one entry per member ({E}), got {len(seeds)}")
    if isinstance(x, torch.Tensor) and x.ndim != 2:
        raise ValueError(f"x must have shape (n, d), got {tuple(x.shape)}")
    n = x.shape[0] if isinstance(x, torch.Tensor) else 0
    if isinstance(y, torch.Tensor) and y.shape not in ((n,), (E, n)):
        raise ValueError(f"y must have shape ({n},) or ({E}, {n}), got {tuple(y.shape)}")
    check_data(x, y, int(model.weights[-1].shape[1]), per_member=E)
    y_full = y.expand(E, n)
    probes = probes or {}
    hist = History(probes={k: [] for k in probes})
    opt = StackedOptimizer(model.parameters(), cfg.optimizer, cfg.lr, cfg.momentum,
                           cfg.weight_decay, members=E)
    # the same draws as gtlib.train.train makes for each member alone
    batches = None if cfg.batch_size is None else EpochBatches(n, cfg.batch_size, seeds, x.device)

    def loss(step: int, idx: torch.Tensor | None) -> torch.Tensor:
        if idx is None:
            return _ensemble_loss(cfg.loss, model._logits(x), y_full)
        return _ensemble_loss(cfg.loss, model._logits(x[idx]), y_full.gather(1, idx))

    def check(step: int, due: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            logits = model(x)
            hist.step.append(step)
            hist.loss.append(_ensemble_loss(cfg.loss, logits, y_full).cpu())
            acc = accuracy(logits, y_full)
            hist.train_acc.append(acc.cpu())
            for name, fn in probes.items():
                hist.probes[name].append(fn(model))
            return stop_rule(cfg.target_train_acc, cfg.margin_gamma, cfg.margin_fraction)(
                logits, y_full)

    done = fit(loss, opt, total_steps(n, cfg), batches, check, every=cfg.check_every)
    hist.probes["stop_step"] = done.stop_step
    if cfg.target_train_acc is not None or cfg.margin_gamma is not None:
        hist.stopped_by = "all members met the stop rule" if all(done.met_rule) else "epochs"
    return hist


def train_sequentially(seeds: Sequence[int], x: torch.Tensor, y: torch.Tensor, cfg: TrainConfig,
                       in_dim: int, width: int, depth: int, out_dim: int, bias: bool = True,
                       act: str = "relu") -> list[MLP]:
    """The reference the engine is checked against: the loop a reader would write with PyTorch
    alone, one model after another (``torch.optim``, ``loss.backward()``).

    Model ``i`` is ``make_mlp(seeds[i], ...)`` trained for the full length of ``cfg`` on the
    minibatches :func:`gtlib.train.batch_indices` draws from seed ``seeds[i]``: the
    initialization and the order :func:`train_ensemble` gives member ``i``. It shares no code with
    :mod:`gtlib.engine`, so the two agreeing is evidence for both. Stop rules are not applied
    (``cfg`` must not set them).
    """
    _check_cfg(cfg)
    out_dim = check_int("out_dim", out_dim)
    if cfg.target_train_acc is not None or cfg.margin_gamma is not None:
        raise ValueError("cfg must not set a stop rule (target_train_acc, margin_gamma): "
                         "train_sequentially is the fixed-length reference")
    check_data(x, y, out_dim)
    models = []
    for s in check_seeds("seeds", seeds):
        m = make_mlp(int(s), in_dim, width, depth, out_dim, bias, act).to(x.device, x.dtype)
        opt = make_optimizer(m.parameters(), cfg)
        batches = batch_indices(len(y), cfg, torch.Generator().manual_seed(int(s)), x.device)
        for _ in range(total_steps(len(y), cfg)):
            idx = next(batches)
            loss = F.cross_entropy(m(x[idx]), y[idx]) if cfg.loss == "cross_entropy" else \
                ((m(x[idx]) - F.one_hot(y[idx], out_dim).to(x.dtype)) ** 2).sum(-1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        models.append(m)
    return models
