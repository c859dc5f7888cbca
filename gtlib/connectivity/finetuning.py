"""Mode connectivity: fine-tuning, weight averaging and task vectors."""

from __future__ import annotations

from typing import Sequence

import torch

from ..checks import SEED, Interval, InstanceOf, Options, Tensor, boundary
from ..models import MLP
from .common import _check_data, _check_same_shape, INPUTS, LABELS
from .training import from_params, params

__all__ = [
    "accuracy",
    "addition_gains",
    "apply_task_vectors",
    "task_vector",
    "weight_distance",
]


@boundary()
def average(models: Sequence[MLP]) -> MLP:
    """The uniform weight average of identically shaped MLPs (a "uniform soup", Wortsman et al. 2022)."""
    for i, m in enumerate(models):
        _check_same_shape(models[0], m, names=("models[0]", f"models[{i}]"))
    ps = [params(m) for m in models]
    ws = [torch.stack([p[0][l] for p in ps]).mean(0) for l in range(len(ps[0][0]))]
    bs = (
        None
        if ps[0][1] is None
        else [
            torch.stack([p[1][l] for p in ps]).mean(0) for l in range(len(ps[0][1]))
        ]
    )
    return from_params(ws, bs, models[0].act_name)


@boundary(a=InstanceOf(MLP), b=InstanceOf(MLP))
def weight_distance(a: MLP, b: MLP) -> float:
    """The Euclidean distance ``||theta_A - theta_B||`` over all weights and biases.

    Parameters
    ----------
    a : MLP
        The first network; an MLP.
    b : MLP
        The second network, of the same shape; an MLP.

    Returns
    -------
    float
        The distance between the two parameter vectors.

    References
    ----------
    Zhou et al. (2024), "On the Emergence of Cross-Task Linearity in the Pretraining-Finetuning
    Paradigm" (they relate linearity to how far apart the weights are).
    """
    _check_same_shape(a, b)
    return float(
        torch.sqrt(
            sum(
                ((p - q).detach() ** 2).sum()
                for p, q in zip(a.parameters(), b.parameters())
            )
        )
    )


@boundary()
def task_vector(pretrained: MLP, finetuned: MLP) -> list[torch.Tensor]:
    """``theta_ft - theta_pre`` for every hidden layer's weights and biases (Ilharco et al. 2023).

    The output layer is not part of the vector: each task keeps its own head. The list holds
    ``W_1, b_1, W_2, b_2, ...`` for the hidden layers (weights only without biases).

    Parameters
    ----------
    pretrained : MLP
        The pretrained network; an MLP.
    finetuned : MLP
        The fine-tuned network; an MLP.

    Returns
    -------
    list[torch.Tensor]
        ``theta_ft - theta_pre`` for every hidden layer's weights and biases (Ilharco et al. 2023).

    References
    ----------
    Ilharco et al. (2023), "Editing Models with Task Arithmetic".
    """
    _check_same_shape(
        pretrained, finetuned, body_only=True, names=("pretrained", "finetuned")
    )
    out = []
    for lp, lf in zip(pretrained.layers[:-1], finetuned.layers[:-1]):
        out.append((lf.weight - lp.weight).detach())
        if lp.bias is not None:
            out.append((lf.bias - lp.bias).detach())
    return out


@boundary()
def apply_task_vectors(
    pretrained: MLP,
    vectors: Sequence[Sequence[torch.Tensor]],
    scale: float,
    head: MLP,
) -> MLP:
    """``theta_pre + scale * sum_t tau_t`` on the hidden layers, with the output layer of ``head``.

    Parameters
    ----------
    pretrained : MLP
        The pretrained network; an MLP.
    vectors : Sequence[Sequence[torch.Tensor]]
        Task vectors, as :func:`task_vector` returns them; a non-empty list or tuple whose items
        are each a non-empty list or tuple whose items are each a torch.Tensor (non-empty, finite).
    scale : float
        Scale of the summed task vectors; a finite number.
    head : MLP
        The network whose output layer the result uses; an MLP.

    Returns
    -------
    MLP
        The edited network.

    References
    ----------
    Ilharco et al. (2023), "Editing Models with Task Arithmetic".
    """
    _check_same_shape(pretrained, head, body_only=True, names=("pretrained", "head"))
    ws, bs = params(pretrained)
    ws, bs = [w.clone() for w in ws], None if bs is None else [b.clone() for b in bs]
    per = 2 if bs is not None else 1
    want = [
        p.shape
        for l in range(len(ws) - 1)
        for p in ([ws[l]] + ([bs[l]] if bs else []))
    ]
    for i, tau in enumerate(vectors):
        got = [t.shape for t in tau]
        if got != want:
            raise ValueError(
                f"vectors[{i}] must match pretrained's hidden layers (shapes "
                f"{[tuple(w) for w in want]}), got {[tuple(g) for g in got]}"
            )
    for tau in vectors:
        for l in range(len(ws) - 1):
            ws[l] += scale * tau[per * l]
            if bs is not None:
                bs[l] += scale * tau[per * l + 1]
    hw, hb = params(head)
    ws[-1] = hw[-1].clone()
    if bs is not None:
        bs[-1] = hb[-1].clone()
    return from_params(ws, bs, pretrained.act_name)


@boundary(
    head_weight=Tensor("float", 2), head_bias=Tensor("float", 1, optional=True)
)
def with_head(
    body: MLP, head_weight: torch.Tensor, head_bias: torch.Tensor | None
) -> MLP:
    """A copy of ``body`` whose output layer is replaced (its size may change)."""
    width = body.layers[-1].in_features
    if head_weight.shape[1] != width:
        raise ValueError(
            f"head_weight must have shape (classes, {width}), got "
            f"{tuple(head_weight.shape)}"
        )
    if (head_bias is None) != (body.layers[0].bias is None):
        raise ValueError(
            "head_bias must be given exactly when body has biases, got "
            + ("None" if head_bias is None else "a tensor for a body without biases")
        )
    if head_bias is not None and head_bias.shape != head_weight.shape[:1]:
        raise ValueError(
            f"head_bias must have shape ({head_weight.shape[0]},), got "
            f"{tuple(head_bias.shape)}"
        )
    ws, bs = params(body)
    ws = [w.clone() for w in ws[:-1]] + [head_weight.detach().clone()]
    bs = (
        None
        if bs is None
        else [b.clone() for b in bs[:-1]] + [head_bias.detach().clone()]
    )
    return from_params(ws, bs, body.act_name)


@boundary(x=INPUTS, y=LABELS)
@torch.no_grad()
def accuracy(model: MLP, x: torch.Tensor, y: torch.Tensor) -> float:
    """Test accuracy of one MLP.

    Parameters
    ----------
    model : MLP
        The network; an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).

    Returns
    -------
    float
        Test accuracy of one MLP.
    """
    _check_data(model, x, y)
    return float((model(x).argmax(-1) == y).float().mean())


#: What :func:`addition_gains` adds to the body for task ``t``.
ADDITION_MODES = ("both", "own", "other", "random")


@boundary(
    body=InstanceOf(MLP),
    x=INPUTS,
    scale=Interval(float),
    mode=Options(ADDITION_MODES),
    seed=SEED,
)
@torch.no_grad()
def addition_gains(
    body: MLP,
    ends: Sequence[MLP],
    x: torch.Tensor,
    labels: Sequence[torch.Tensor],
    scale: float = 1.0,
    mode: str = "both",
    seed: int = 0,
) -> list[float]:
    """Per task, the fraction of its fine-tuning gain that an edited body keeps.

    For task ``t`` (0 or 1) with task vectors ``tau_t = ends[t] - body`` (:func:`task_vector`),
    the edited body is ``body + scale * sum(vectors)`` with the output layer of ``ends[t]``
    (:func:`apply_task_vectors`), where the vectors are

    * ``"both"``: ``tau_t`` and ``tau_{1-t}`` (task addition);
    * ``"own"``: ``tau_t`` alone;
    * ``"other"``: ``tau_{1-t}`` alone (the other task's vector, scored on task ``t``);
    * ``"random"``: ``tau_t`` and a Gaussian vector with ``tau_{1-t}``'s norm, tensor by
      tensor (drawn from ``seed``).

    The gain kept is ``(acc(edited) - acc(start)) / (acc(ends[t]) - acc(start))`` on
    ``(x, labels[t])``, where ``start`` is ``body`` with the output layer of ``ends[t]``.

    Parameters
    ----------
    body : MLP
        The common starting body of the two fine-tunings; an MLP.
    ends : Sequence[MLP]
        The fine-tuned network of task 0 and of task 1; two MLPs shaped like ``body``.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    labels : Sequence[torch.Tensor]
        The labels of ``x`` for task 0 and for task 1; two integer tensors.
    scale : float, default 1.0
        Scale of the summed vectors (lambda); a finite number.
    mode : str, default "both"
        Which vectors are added; one of ``ADDITION_MODES``.
    seed : int, default 0
        Seed of the random vector (``mode="random"``); an int in [0, 2**63 - 1].

    Returns
    -------
    list[float]
        The gain kept on task 0 and on task 1 (nan where fine-tuning gained nothing).

    References
    ----------
    Ilharco et al. (2023), "Editing Models with Task Arithmetic".
    """
    for name, seq in (("ends", ends), ("labels", labels)):
        if not isinstance(seq, (list, tuple)) or len(seq) != 2:
            raise ValueError(
                f"{name} must be a list of two items (task 0, task 1), got "
                f"{seq!r:.60}"
            )
    for t in (0, 1):
        if not isinstance(ends[t], MLP):
            raise TypeError(
                f"ends[{t}] must be an MLP, got {type(ends[t]).__name__}"
            )
        _check_same_shape(
            body, ends[t], body_only=True, names=("body", f"ends[{t}]")
        )
        LABELS.check(f"labels[{t}]", labels[t])
        _check_data(ends[t], x, labels[t], yname=f"labels[{t}]")
    gen = torch.Generator().manual_seed(int(seed))
    taus = [task_vector(body, m) for m in ends]
    out = []
    for t in (0, 1):
        other = taus[1 - t]
        if mode == "random":
            other = []
            for v in taus[1 - t]:
                z = torch.randn(v.shape, generator=gen).to(v.device, v.dtype)
                other.append(z * (v.norm() / z.norm().clamp_min(1e-12)))
        vecs = {
            "both": [taus[t], other],
            "own": [taus[t]],
            "other": [other],
            "random": [taus[t], other],
        }[mode]
        head = ends[t].layers[-1]
        lo = accuracy(with_head(body, head.weight, head.bias), x, labels[t])
        hi = accuracy(ends[t], x, labels[t])
        got = accuracy(
            apply_task_vectors(body, vecs, float(scale), ends[t]), x, labels[t]
        )
        out.append(float((got - lo) / (hi - lo)) if hi != lo else float("nan"))
    return out
