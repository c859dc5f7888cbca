"""The training loops of gtlib.contamination before gtlib.engine replaced them.

Copied verbatim from commit 421960b (only the names changed: ``old_`` prefixed, and the private
``MemberOptimizer`` kept here as ``OldMemberOptimizer``), so that the tests of
gtlib.contamination can train one tiny configuration with both and require the same numbers.
Everything else they use (the networks, losses, metrics, data and result types of
:mod:`gtlib.contamination`) is unchanged and imported from gtlib.
"""

from __future__ import annotations

from typing import Sequence

import torch

from gtlib.contamination.metrics import _binary_loss as binary_loss
from gtlib.contamination import (
    DistillConfig,
    DistillResult,
    Embedding,
    NetSpec,
    ToyData,
    ToyHistory,
    TwoLayerNets,
    binary_accuracy,
    init_two_layer,
    linear_probe,
    mean_direction_components,
    projection_norms,
    random_embedding,
    relative_error,
    sample_toy,
    shift_background,
)
from gtlib.contamination.common import _device, _int, _tensor
from gtlib.contamination.training import _member_losses


# --- gtlib.contamination.MemberOptimizer ---
class OldMemberOptimizer:
    """SGD-with-momentum or AdamW *per member* of stacked parameters (leading axis E).

    Member ``e`` is updated exactly as ``torch.optim.SGD(lr, momentum, weight_decay)`` or
    ``torch.optim.AdamW(lr, weight_decay=...)`` would update it alone, so one stack can mix
    optimizers and learning rates.
    """

    def __init__(
        self,
        params: Sequence[torch.Tensor],
        specs: Sequence[NetSpec],
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ):
        self.params = [p for p in params if p.requires_grad]
        E = len(specs)
        for p in self.params:
            if p.shape[0] != E:
                raise ValueError(
                    f"every parameter must have leading size {E}, got {tuple(p.shape)}"
                )
        dev = self.params[0].device if self.params else "cpu"
        self.lr = torch.tensor([s.lr for s in specs], device=dev)
        self.momentum = torch.tensor([s.momentum for s in specs], device=dev)
        self.wd = torch.tensor([s.weight_decay for s in specs], device=dev)
        self.adam = torch.tensor([s.optimizer == "adamw" for s in specs], device=dev)
        self.betas, self.eps, self.t = betas, eps, 0
        self.state = [
            {k: torch.zeros_like(p) for k in ("buf", "m", "v")} for p in self.params
        ]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        b1, b2 = self.betas
        for p, st in zip(self.params, self.state):
            if p.grad is None:
                continue
            shape = (-1,) + (1,) * (p.ndim - 1)
            lr, mom, wd = (v.view(shape) for v in (self.lr, self.momentum, self.wd))
            adam = self.adam.view(shape)
            g = p.grad
            st["buf"].mul_(mom).add_(g + wd * p)  # SGD: coupled decay
            st["m"].mul_(b1).add_(g, alpha=1 - b1)  # AdamW moments
            st["v"].mul_(b2).addcmul_(g, g, value=1 - b2)
            m_hat = st["m"] / (1 - b1**self.t)
            v_hat = st["v"] / (1 - b2**self.t)
            adam_step = m_hat / (v_hat.sqrt() + self.eps) + wd * p  # decoupled decay
            p.sub_(lr * torch.where(adam, adam_step, st["buf"]))


# --- gtlib.contamination.train_two_layer ---
def old_train_two_layer(
    net: TwoLayerNets,
    specs: Sequence[NetSpec],
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int,
    emb: Embedding,
    x_test: torch.Tensor | None = None,
    y_test: torch.Tensor | None = None,
    shift: float = 1.0,
    record_every: int = 25,
) -> ToyHistory:
    """Train every member of ``net`` in place with full-batch steps; record the paper's curves.

    ``x`` (n, d) and ``y`` (n,) are shared by all members, or ``(E, n, d)`` and ``(E, n)`` give
    member ``e`` its own sample (independent replicates of an experiment); the same holds for the
    test set. Member ``e`` minimizes its own loss ``specs[e].loss`` with its own optimizer. Every
    ``record_every`` steps the history stores the mean core and background projection norms of the
    first-layer weights (:func:`projection_norms`), the mean absolute component of the background
    weights along the background mean direction and the mean norm of the rest
    (:func:`mean_direction_components`), the training loss and, when a test set is given,
    the loss and accuracy on it (ID) and on its background-shifted copy (OOD, ``shift``).
    """
    if not isinstance(net, TwoLayerNets):
        raise TypeError(f"net must be TwoLayerNets, got {type(net).__name__}")
    if len(specs) != net.size:
        raise ValueError(
            f"specs must have one entry per member ({net.size}), got {len(specs)}"
        )
    for e, s in enumerate(specs):
        s.validate()
        if s.act != net.acts[e]:
            raise ValueError(
                f"specs[{e}].act is {s.act!r} but the net's member {e} uses {net.acts[e]!r}"
            )
    steps = _int("steps", steps, 0)
    record_every = _int("record_every", record_every)
    _tensor("x", x, (2, 3))
    _tensor("y", y, (1, 2))
    if x.shape[:-1] != y.shape:
        raise ValueError(
            f"x (n, d) or (E, n, d) and y (n,) or (E, n) must match, got "
            f"{tuple(x.shape)} and {tuple(y.shape)}"
        )
    x_ood = None if x_test is None else shift_background(x_test, emb, shift)
    opt = OldMemberOptimizer(list(net.parameters()), specs)
    hist = ToyHistory()

    def record(step: int) -> None:
        with torch.no_grad():
            core, bg = projection_norms(net.W, emb)
            hist.step.append(step)
            hist.core_norm.append(core.mean(-1))
            hist.background_norm.append(bg.mean(-1))
            along, orth = mean_direction_components(net.W, emb)
            hist.background_mean.append(along.abs().mean(-1))
            hist.background_orth.append(orth.mean(-1))
            hist.train_loss.append(_member_losses(specs, net(x), y))
            if x_test is not None:
                f_id, f_ood = net(x_test), net(x_ood)
                hist.id_loss.append(_member_losses(specs, f_id, y_test))
                hist.ood_loss.append(_member_losses(specs, f_ood, y_test))
                hist.id_acc.append(binary_accuracy(f_id, y_test))
                hist.ood_acc.append(binary_accuracy(f_ood, y_test))

    record(0)
    for step in range(1, steps + 1):
        loss = _member_losses(specs, net(x), y).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % record_every == 0 or step == steps:
            record(step)
    return hist


# --- gtlib.contamination.run_distillation ---
def old_run_distillation(
    cfg: DistillConfig, seed: int = 0, device=None
) -> DistillResult:
    """Train the teacher, distill its representation into the student, probe both (see
    :class:`DistillConfig`). Errors and probe accuracies are measured on a held-out ID sample
    and on its background-shifted copy."""
    if not isinstance(cfg, DistillConfig):
        raise TypeError(f"cfg must be a DistillConfig, got {type(cfg).__name__}")
    seed = _int("seed", seed, 0)
    dev = _device(device)
    emb = random_embedding(cfg.d_core, cfg.d_background, cfg.dim, seed=seed)
    train = sample_toy(
        cfg.n, emb, "default", seed=1000 * seed + 5, centred=cfg.centred
    )
    test = sample_toy(
        cfg.n_test, emb, "default", seed=1000 * seed + 6, centred=cfg.centred
    )
    emb, train, test = (
        emb.to(dev),
        ToyData(
            *(t.to(dev) for t in (train.x, train.y, train.core, train.background))
        ),
        ToyData(*(t.to(dev) for t in (test.x, test.y, test.core, test.background))),
    )
    x_ood = shift_background(test.x, emb, 1.0)

    # teacher: trained on the core coordinates, then embedded (first layer inside the core subspace)
    tspec = NetSpec(
        act="relu",
        loss="logistic",
        optimizer="adamw",
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
    )
    core_net = init_two_layer(
        ["relu"],
        cfg.d_core,
        cfg.width,
        [1000 * seed + 70],
        frozen_output=False,
        bias=True,
    ).to(dev)
    opt = OldMemberOptimizer(list(core_net.parameters()), [tspec])
    for _ in range(_int("teacher_steps", cfg.teacher_steps)):
        loss = binary_loss("logistic", core_net(train.core), train.y).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    teacher = TwoLayerNets(
        core_net.W.detach() @ emb.core.T,
        ["relu"],
        core_net.a.detach(),
        b=core_net.b.detach(),
        c=core_net.c.detach(),
    ).to(dev)

    # student: same architecture, fits the teacher's representation on ID inputs by MSE
    student = init_two_layer(
        ["relu"],
        cfg.dim,
        cfg.width,
        [1000 * seed + 71],
        frozen_output=False,
        bias=True,
    ).to(dev)
    sspec = NetSpec(act="relu", optimizer="adamw", lr=cfg.lr, weight_decay=0.0)
    opt = OldMemberOptimizer([student.W, student.b], [sspec])
    with torch.no_grad():
        target, t_test, t_ood = (
            teacher.hidden(z)[0] for z in (train.x, test.x, x_ood)
        )
        scale = (target**2).sum(-1).mean()
    bg0 = float(projection_norms(student.W.detach(), emb)[1].mean())
    mean0 = float(mean_direction_components(student.W.detach(), emb)[0].abs().mean())
    steps, cid, cood = [], [], []
    for step in range(_int("student_steps", cfg.student_steps) + 1):
        if step % cfg.record_every == 0 or step == cfg.student_steps:
            with torch.no_grad():
                steps.append(step)
                cid.append(relative_error(student.hidden(test.x)[0], t_test))
                cood.append(relative_error(student.hidden(x_ood)[0], t_ood))
        if step == cfg.student_steps:
            break
        loss = ((student.hidden(train.x)[0] - target) ** 2).sum(-1).mean() / scale
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        s_train, s_test, s_ood = (
            student.hidden(z)[0] for z in (train.x, test.x, x_ood)
        )
        t_acc = {
            k: float(binary_accuracy(teacher(z)[0], test.y))
            for k, z in (("ID", test.x), ("OOD", x_ood))
        }
    pt = linear_probe(target, train.y, [(t_test, test.y), (t_ood, test.y)])
    ps = linear_probe(s_train, train.y, [(s_test, test.y), (s_ood, test.y)])
    return DistillResult(
        teacher_acc=t_acc,
        probe_teacher={"ID": pt[0], "OOD": pt[1]},
        probe_student={"ID": ps[0], "OOD": ps[1]},
        error_id=cid[-1],
        error_ood=cood[-1],
        curve_step=steps,
        curve_id=cid,
        curve_ood=cood,
        student_background_norm=(
            bg0,
            float(projection_norms(student.W.detach(), emb)[1].mean()),
        ),
        student_background_mean=(
            mean0,
            float(
                mean_direction_components(student.W.detach(), emb)[0].abs().mean()
            ),
        ),
    )
