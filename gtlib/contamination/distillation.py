"""Feature contamination, experiment 3: distillation from a background-blind teacher."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..checks import Boolean, Interval, Options, boundary, count, positive
from ..config import Result, param
from ..engine import fit
from .common import _device, _int, _RUN_SEED
from .data import random_embedding, sample_toy, shift_background, ToyConfig, ToyData
from .networks import init_two_layer, NetSpec, TwoLayerNets
from .metrics import (
    _binary_loss,
    relative_error,
    binary_accuracy,
    mean_direction_components,
    projection_norms,
)
from .training import _optimizer, linear_probe

__all__ = ["DistillConfig", "run_distillation"]


@dataclass
class DistillConfig(ToyConfig):
    """A toy analogue of the paper's motivating CLIP experiment (Section 3).

    The teacher is a two-layer ReLU net of the default configuration whose first layer lives in
    the core subspace (it is trained on the core coordinates and then embedded), so its
    representation ignores the background by construction. The student has the same architecture
    with an unconstrained first layer and is trained by MSE to reproduce the teacher's hidden
    representation on ID inputs. Linear probes are then fitted on each representation.
    ``centred`` draws the background from ``U[-1/2, 1/2]`` for teacher and student alike (the
    control: same shift, no background mean). ``target="preactivation"`` gives the *gate-free*
    student: the same initialization, optimizer and steps, but the loss compares the student's
    pre-activations ``W x + b`` with the teacher's (a linear regression, no ReLU gate in the
    gradient); its representation is still read out through the ReLU.

    Parameters
    ----------
    n : int, default 1000
        Training points; an int >= 1.
    d_core : int, default 32
        Label-carrying core coordinates; an int >= 1.
    d_background : int, default 32
        Background coordinates (independent of the label); an int >= 1.
    dim : int, default 256
        Ambient dimension (``d_core + d_background <= dim``); an int >= 1.
    width : int, default 256
        Hidden width; an int >= 1.
    weight_decay : float, default 0.001
        Weight decay; a finite number >= 0.
    centred : bool, default False
        Whether the background is drawn from ``U[-1/2, 1/2]`` instead of ``U[0, 1]``; a bool.
    n_test : int, default 1000
        Number of test examples; an int >= 1.
    teacher_steps : int, default 1000
        Training steps of the teacher; an int >= 1.
    student_steps : int, default 1000
        Distillation steps of the student; an int >= 1.
    lr : float, default 0.001
        Learning rate; a finite number > 0.
    record_every : int, default 25
        Steps between two recorded measurements; an int >= 1.
    target : str, default 'hidden'
        What the student matches: the teacher's ``"hidden"`` representation or its
        ``"preactivation"``; one of ('hidden', 'preactivation').
    longer_steps : int, default 0
        Further distillation steps after the student is probed at ``student_steps`` (same
        optimizer, continued), after which it is probed again (``DistillResult.longer``); 0 for
        none; an int >= 0.
    zeroed_student : bool, default False
        Whether to distil a second student, from the same initialization with each neuron's
        weight along the background mean direction ``P_b e`` projected out (no weight along
        ``e`` to start from), with the same target, optimizer and ``student_steps``
        (``DistillResult.zeroed``); a bool.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize", Section 3.
    """

    FULL = dict(teacher_steps=5000, student_steps=5000, record_every=100)

    n_test: int = param(1000, count())
    teacher_steps: int = param(1000, count())
    student_steps: int = param(1000, count())
    lr: float = param(1e-3, positive())
    record_every: int = param(25, count())
    target: str = param("hidden", Options(("hidden", "preactivation")))
    longer_steps: int = param(0, Interval(int, 0, None))
    zeroed_student: bool = param(False, Boolean())


@dataclass
class DistillResult(Result):
    """Outcome of :func:`run_distillation` (errors are relative, see :func:`relative_error`).

    ``student_background_norm`` is the paper's metric, the mean of ``||P_b^T w_j||`` over the
    student's neurons, and ``student_background_mean`` the mean of ``|u . P_b^T w_j|`` along the
    background mean direction (:func:`mean_direction_components`), each (before, after).
    ``probe_initial`` is the linear probe's accuracy (``"ID"``, ``"OOD"``) on the student's
    representation *before* distillation (at its initialization), and ``curve_id[0]`` its
    relative error then: the never-distilled student. ``longer`` (with ``cfg.longer_steps > 0``)
    holds the student's measurements after ``student_steps + longer_steps`` steps: ``"steps"``,
    ``"error_id"``, ``"probe_ID"``, ``"probe_OOD"`` and ``"background_mean"``. ``zeroed``
    (with ``cfg.zeroed_student``) holds the zeroed student's ``"probe_initial_OOD"`` (before
    distillation), ``"error_id"``, ``"probe_ID"``, ``"probe_OOD"`` and ``"background_mean"``
    (after ``student_steps``).
    """

    teacher_acc: dict[str, float]
    probe_teacher: dict[str, float]
    probe_student: dict[str, float]
    error_id: float
    error_ood: float
    curve_step: list[int]
    curve_id: list[float]
    curve_ood: list[float]
    student_background_norm: tuple[float, float]
    student_background_mean: tuple[float, float] = (0.0, 0.0)
    probe_initial: dict[str, float] = field(default_factory=dict)
    longer: dict[str, float] = field(default_factory=dict)
    zeroed: dict[str, float] = field(default_factory=dict)


@boundary(seed=_RUN_SEED)
def run_distillation(
    cfg: DistillConfig, seed: int = 0, device=None
) -> DistillResult:
    """Train the teacher, distill its representation into the student, probe both.

    Train the teacher, distill its representation into the student, probe both (see
    :class:`DistillConfig`). Errors and probe accuracies are measured on a held-out ID sample
    and on its background-shifted copy.

    Parameters
    ----------
    cfg : DistillConfig
        The experiment's settings; a DistillConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**32 - 1].
    device : object, default None
        Torch device of the run (default: ``GTLIB_DEVICE``).

    Returns
    -------
    DistillResult
        Errors and probe accuracies, in and out of distribution.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize", Section 3.
    """
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
    fit(
        lambda step, batch: _binary_loss(
            "logistic", core_net._forward(train.core), train.y
        ),
        _optimizer(core_net.parameters(), [tspec]),
        _int("teacher_steps", cfg.teacher_steps),
    )
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
    with torch.no_grad():
        target, t_test, t_ood = (
            teacher._hidden(z)[0] for z in (train.x, test.x, x_ood)
        )
        scale = (target**2).sum(-1).mean()
        if cfg.target == "preactivation":
            t_pre = teacher._preactivations(train.x)[0]
            scale_pre = (t_pre**2).sum(-1).mean()
    with torch.no_grad():  # the never-distilled student, probed as the others
        s0 = [student._hidden(z)[0] for z in (train.x, test.x, x_ood)]
    p0 = linear_probe(s0[0], train.y, [(s0[1], test.y), (s0[2], test.y)])
    bg0 = float(projection_norms(student.W.detach(), emb)[1].mean())
    mean0 = float(mean_direction_components(student.W.detach(), emb)[0].abs().mean())
    steps, cid, cood = [], [], []
    rel = relative_error

    def record(step: int, due: torch.Tensor) -> None:
        with torch.no_grad():
            steps.append(step)
            cid.append(rel(student._hidden(test.x)[0], t_test))
            cood.append(rel(student._hidden(x_ood)[0], t_ood))

    # the student's output layer is not trained: only W and b go to the optimizer
    def loss_of(net):
        if (
            cfg.target == "preactivation"
        ):  # gate-free: a linear regression on pre-activations
            return lambda step, batch: (
                ((net._preactivations(train.x) - t_pre) ** 2).sum(-1).mean(-1)
                / scale_pre
            )
        return lambda step, batch: (
            ((net._hidden(train.x) - target) ** 2).sum(-1).mean(-1) / scale
        )

    loss = loss_of(student)
    opt = _optimizer([student.W, student.b], [sspec])
    student_steps = _int("student_steps", cfg.student_steps)
    fit(loss, opt, student_steps, check=record, every=cfg.record_every)
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
    bg1 = float(projection_norms(student.W.detach(), emb)[1].mean())
    mean1 = float(mean_direction_components(student.W.detach(), emb)[0].abs().mean())
    longer = {}
    if _int("longer_steps", cfg.longer_steps, minimum=0):  # the same run, continued
        fit(loss, opt, cfg.longer_steps)
        with torch.no_grad():
            l_train, l_test, l_ood = (
                student.hidden(z)[0] for z in (train.x, test.x, x_ood)
            )
            pl = linear_probe(l_train, train.y, [(l_test, test.y), (l_ood, test.y)])
            longer = {
                "steps": cfg.student_steps + cfg.longer_steps,
                "error_id": rel(l_test, t_test),
                "probe_ID": pl[0],
                "probe_OOD": pl[1],
                "background_mean": float(
                    mean_direction_components(student.W.detach(), emb)[0]
                    .abs()
                    .mean()
                ),
            }
    zeroed = {}
    if cfg.zeroed_student:  # the intervention: no weight along e at initialization
        z = init_two_layer(
            ["relu"],
            cfg.dim,
            cfg.width,
            [1000 * seed + 71],
            frozen_output=False,
            bias=True,
        ).to(dev)
        u = emb.background.sum(1) / cfg.d_background**0.5  # P_b e, a unit vector
        with torch.no_grad():
            z.W -= (z.W @ u)[..., None] * u
            z0 = [z._hidden(v)[0] for v in (train.x, test.x, x_ood)]
        pz0 = linear_probe(z0[0], train.y, [(z0[1], test.y), (z0[2], test.y)])
        fit(loss_of(z), _optimizer([z.W, z.b], [sspec]), student_steps)
        with torch.no_grad():
            z_train, z_test, z_ood = (
                z._hidden(v)[0] for v in (train.x, test.x, x_ood)
            )
        pz = linear_probe(z_train, train.y, [(z_test, test.y), (z_ood, test.y)])
        zeroed = {
            "probe_initial_OOD": pz0[1],
            "error_id": rel(z_test, t_test),
            "probe_ID": pz[0],
            "probe_OOD": pz[1],
            "background_mean": float(
                mean_direction_components(z.W.detach(), emb)[0].abs().mean()
            ),
        }
    return DistillResult(
        teacher_acc=t_acc,
        probe_teacher={"ID": pt[0], "OOD": pt[1]},
        probe_student={"ID": ps[0], "OOD": ps[1]},
        probe_initial={"ID": p0[0], "OOD": p0[1]},
        error_id=cid[-1],
        error_ood=cood[-1],
        curve_step=steps,
        curve_id=cid,
        curve_ood=cood,
        student_background_norm=(bg0, bg1),
        student_background_mean=(mean0, mean1),
        longer=longer,
        zeroed=zeroed,
    )
