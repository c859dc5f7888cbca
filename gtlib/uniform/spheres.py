"""Two concentric hyperspheres (Nagarajan and Kolter 2019, Section 3.2; gtlib.uniform, section 6).

The data, the set S' (each training point projected onto the other sphere, label flipped), the
sweep over n and the 2-D decision-boundary slices (Figure 2): :func:`sphere_data`,
:func:`sphere_sprime`, :class:`SpheresConfig`, :func:`spheres_sweep`, :func:`boundary_slice`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ..checks import (
    SEED,
    Constraint,
    InstanceOf,
    Interval,
    Options,
    Tensor,
    boundary,
    check_int,
    count,
    fraction,
    positive,
    tuple_of,
)
from ..config import Config, Result, param
from ..models import BatchedMLP
from ..train import TrainConfig, accuracy
from .common import _DEVICE, _pos
from .power_law import _float_array, nearest_neighbour_predict
from .margin import _member_logits, train_on_subsets

__all__ = [
    # configs and results
    "SpheresConfig",
    # functions
    "boundary_slice",
    "bulge_width",
    "cap_fraction",
    "log_ticks",
    "plot_slice",
    "slice_points",
    "spheres_sweep",
]


class _Axes(Constraint):
    """A matplotlib Axes (anything with the plotting methods used here)."""

    def describe(self) -> str:
        return "a matplotlib Axes"

    def check(self, name, value):
        if not all(
            hasattr(value, a) for a in ("contourf", "plot", "xaxis", "yaxis")
        ):
            self._fail(name, value, TypeError)
        return value


_RADII = tuple_of(positive(), min_len=2, increasing="strict")


@boundary(n=count(), d=count(2), radii=_RADII)
def sphere_data(
    n: int,
    d: int,
    radii: tuple = (1.0, 1.2),
    generator: torch.Generator | None = None,
):
    """``n`` points, label 0 uniform on the sphere of radius ``radii[0]``, label 1 on ``radii[1]``.

    Labels are fair coin flips; directions are uniform on the unit sphere of R^d.
    """
    n, d = check_int("n", n, minimum=1), check_int("d", d, minimum=2)
    if n * d > 10**9:
        raise ValueError(f"n * d must be at most 1e9 values, got n={n}, d={d}")
    r0, r1 = _radii(radii)
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    y = torch.randint(0, 2, (n,), generator=g)
    z = torch.randn(n, d, generator=g)
    z = z / z.norm(dim=1, keepdim=True)
    r = torch.where(y == 1, torch.tensor(r1), torch.tensor(r0))
    return z * r[:, None], y


def _radii(radii) -> tuple[float, float]:
    if not isinstance(radii, (tuple, list)) or len(radii) != 2:
        raise TypeError("radii must be a pair (inner, outer)")
    r0, r1 = _pos("radii[0]", radii[0]), _pos("radii[1]", radii[1])
    if r0 >= r1:
        raise ValueError(f"radii must satisfy inner < outer, got {radii}")
    return r0, r1


@boundary(x=Tensor("float", 2), y=Tensor("int", 1), radii=_RADII, atol=positive())
def sphere_sprime(
    x: torch.Tensor, y: torch.Tensor, radii: tuple = (1.0, 1.2), atol: float = 1e-4
):
    """S' for the spheres: each point projected onto the *other* sphere, its label flipped.

    A point ``x`` with label 0 (radius ``r0``) becomes ``x * r1 / r0`` with label 1, and vice versa,
    so every S' point is correctly labelled for where it lies: its true label is the flipped one.

    Raises
    ------
    ValueError
        If a point does not lie (within ``atol``) on the sphere its label names.
    """
    r0, r1 = _radii(radii)
    if (
        not isinstance(x, torch.Tensor)
        or x.ndim != 2
        or not isinstance(y, torch.Tensor)
        or y.shape != (x.shape[0],)
    ):
        raise ValueError("x must be (n, d) and y (n,) tensors")
    if not bool(((y == 0) | (y == 1)).all()):
        raise ValueError("y must hold labels 0 and 1")
    own = torch.where(
        y == 1, torch.tensor(r1, dtype=x.dtype), torch.tensor(r0, dtype=x.dtype)
    )
    if not torch.allclose(x.norm(dim=1), own.to(x.device), atol=atol):
        raise ValueError("every x must lie on the sphere of its label's radius")
    other = torch.where(
        y == 1, torch.tensor(r0, dtype=x.dtype), torch.tensor(r1, dtype=x.dtype)
    )
    return x * (other / own).to(x.device)[:, None], 1 - y


@dataclass
class SpheresConfig(Config):
    """Hyperspheres experiment: a wide one-hidden-layer ReLU net per n, trained to a margin.

    ``FULL`` is the paper's setting (Nagarajan and Kolter 2019, Sec. 3.2): d = 1000, radii 1 and
    1.1, 100 000 hidden units, margin 10 on 99% of the points; the learning rate and batch size,
    which the paper does not state, stay those of the authors' public notebook (0.5, 64).

    Parameters
    ----------
    d : int, default 200
        Input dimension; an int >= 2.
    radii : tuple, default (1.0, 1.2)
        (inner, outer). a tuple (at least 2 items, strictly increasing) of items each a finite
        number > 0.
    sizes : tuple, default (256, 512, 1024, 2048)
        Training-set sizes; a tuple (at least 2 items, strictly increasing) of items each an int >=
        1.
    n_test : int, default 4000
        Number of test examples; an int >= 1.
    width : int, default 2000
        Hidden width; an int >= 1.
    lr : float, default 0.5
        Learning rate; a finite number > 0.
    batch_size : int, default 64
        Minibatch size; an int >= 1.
    gamma : float, default 4.0
        The margin; a finite number > 0.
    margin_fraction : float, default 0.99
        Fraction of training points that must reach the margin; a finite number in [0, 1].
    max_epochs : float, default 3000.0
        Most training epochs; a finite number > 0.
    """

    FULL = dict(
        d=1000,
        radii=(1.0, 1.1),
        sizes=(1024, 2048, 4096, 8192),
        width=100_000,
        lr=0.5,
        gamma=10.0,
        n_test=4000,
    )

    d: int = param(200, count(2))
    radii: tuple = param(
        (1.0, 1.2),
        tuple_of(positive(), min_len=2, increasing="strict"),
        doc="(inner, outer)",
    )
    sizes: tuple = param(
        (256, 512, 1024, 2048), tuple_of(count(), min_len=1, increasing="strict")
    )
    n_test: int = param(4000, count())
    width: int = param(2000, count())
    lr: float = param(0.5, positive())
    batch_size: int = param(64, count())
    gamma: float = param(4.0, positive())
    margin_fraction: float = param(0.99, fraction())
    max_epochs: float = param(3000.0, positive())

    def _check_together(self) -> None:
        if len(self.radii) != 2:
            self._refuse("radii", "a pair (inner, outer) with inner < outer")


@dataclass
class SpheresResult(Result):
    sizes: list[int]
    test_error: list[float]
    sprime_error: list[float]
    train_error: list[float]
    met_margin: list[bool]
    epochs: list[float]
    model: BatchedMLP  # member i was trained on x_train[:sizes[i]]
    x_train: torch.Tensor
    y_train: torch.Tensor
    init_test_error: list[float] = field(default_factory=list)  # before training
    projected_test_error: list[float] = field(
        default_factory=list
    )  # fresh points, projected
    nn_test_error: list[float] = field(
        default_factory=list
    )  # 1-NN on the same training set
    nn_sprime_error: list[float] = field(default_factory=list)  # 1-NN on the same S'


@boundary(cfg=InstanceOf(SpheresConfig), seed=SEED, device=_DEVICE)
def spheres_sweep(
    cfg: SpheresConfig, seed: int = 0, device: str | None = None
) -> SpheresResult:
    """Nagarajan and Kolter's hypersphere experiment: test error and S' error against n.

    One network per size (nested prefixes of one sample), all trained in one batched loop by
    :func:`train_on_subsets` until ``margin_fraction`` of their training points have margin
    ``gamma``. S' error is each member's error on the S' of its own training set;
    ``projected_test_error`` is its error on the test points projected the same way (a set with
    the same law as S' that was not built from the training set). ``nn_test_error`` and
    ``nn_sprime_error`` are the test and S' errors of a 1-nearest-neighbour classifier on the same
    training prefix (:func:`nearest_neighbour_predict`), the chapter's measured null.

    Parameters
    ----------
    cfg : SpheresConfig
        The experiment's settings; a SpheresConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    device : str | None, default None
        Torch device of the run (default: ``GTLIB_DEVICE``); an available torch device ('cpu',
        'cuda', 'cuda:<k>', 'mps' or a torch.device) or None.

    Returns
    -------
    SpheresResult
        Test error and S' error, per training-set size.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in
    deep learning".
    Gilmer et al. (2018), "Adversarial Spheres".
    """
    cfg.validate()
    seed = check_int("seed", seed, minimum=0)
    dev = device or "cpu"
    g = torch.Generator().manual_seed(seed * 7919 + 13)
    x, y = sphere_data(max(cfg.sizes), cfg.d, cfg.radii, g)
    xt, yt = sphere_data(cfg.n_test, cfg.d, cfg.radii, g)
    xp, yp = sphere_sprime(
        xt, yt, cfg.radii
    )  # fresh points projected: S' 's control
    x, y, xt, yt, xp, yp = (t.to(dev) for t in (x, y, xt, yt, xp, yp))
    E = len(cfg.sizes)
    seeds = [seed * 100 + 70 + i for i in range(E)]
    model = BatchedMLP.init(seeds, cfg.d, cfg.width, 1, 2, bias=True, device=dev)
    with torch.no_grad():
        init_err = (1 - accuracy(model(xt), yt)).tolist()
    tcfg = TrainConfig(
        lr=cfg.lr,
        batch_size=cfg.batch_size,
        margin_gamma=cfg.gamma,
        margin_fraction=cfg.margin_fraction,
        seed=seed,
    )
    run = train_on_subsets(
        model, x, y, list(cfg.sizes), tcfg, seeds=seeds, max_epochs=cfg.max_epochs
    )
    with torch.no_grad():
        test_err = (1 - accuracy(model(xt), yt)).tolist()
        proj_err = (1 - accuracy(model(xp), yp)).tolist()
        sp_err, tr_err, nn_te, nn_sp = [], [], [], []
        for i, n in enumerate(cfg.sizes):
            xs, ys = sphere_sprime(x[:n], y[:n], cfg.radii)
            sp_err.append(1 - accuracy(_member_logits(model, i, xs), ys))
            tr_err.append(1 - accuracy(_member_logits(model, i, x[:n]), y[:n]))
            nn_te.append(
                float(
                    (nearest_neighbour_predict(x[:n], y[:n], xt) != yt)
                    .float()
                    .mean()
                )
            )
            nn_sp.append(
                float(
                    (nearest_neighbour_predict(x[:n], y[:n], xs) != ys)
                    .float()
                    .mean()
                )
            )
    return SpheresResult(
        sizes=list(cfg.sizes),
        test_error=test_err,
        sprime_error=sp_err,
        train_error=tr_err,
        met_margin=run.met_rule,
        epochs=run.epochs,
        model=model,
        x_train=x,
        y_train=y,
        init_test_error=init_err,
        projected_test_error=proj_err,
        nn_test_error=nn_te,
        nn_sprime_error=nn_sp,
    )


@boundary(
    model=InstanceOf(BatchedMLP),
    member=count(0),
    point=Tensor("float", 1),
    radii=_RADII,
    half_width=positive(),
    resolution=count(2),
    seed=SEED,
)
def boundary_slice(
    model: BatchedMLP,
    member: int,
    point: torch.Tensor,
    radii: tuple = (1.0, 1.2),
    half_width: float = 0.6,
    resolution: int = 161,
    seed: int = 0,
):
    """The decision function of one member on a 2-D slice through ``point`` (Figure 2 analogue).

    The plane is spanned by the radial direction ``e1 = point/||point||`` and a random unit
    direction ``e2`` orthogonal to it. Returns ``(a, b, f)``: grid coordinates ``a`` (along
    ``e1``, from ``radii[0] - 0.3`` to ``radii[1] + 0.3``) and ``b`` (along ``e2``, in
    ``[-half_width, half_width]``), and ``f = logit_1 - logit_0`` of shape ``(len(b), len(a))``:
    positive means "outer sphere". In this plane the two spheres are the circles
    ``a^2 + b^2 = r^2``.

    Parameters
    ----------
    model : BatchedMLP
        The stack of networks; a BatchedMLP.
    member : int
        Which member of the stack; an int >= 0.
    point : torch.Tensor
        The point the slice goes through; a torch.Tensor (non-empty, floating-point, 1-dimensional,
        finite).
    radii : tuple, default (1.0, 1.2)
        Radii of the two spheres; a tuple (at least 2 items, strictly increasing) of items each a
        finite number > 0.
    half_width : float, default 0.6
        Half-width of the slice; a finite number > 0.
    resolution : int, default 161
        Grid points per axis; an int >= 2.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    tuple of numpy.ndarray
        ``(a, b, f)``, as described above.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in
    deep learning", Figure 2.
    """
    if not isinstance(model, BatchedMLP):
        raise TypeError("model must be a BatchedMLP")
    if not 0 <= member < model.size:
        raise ValueError(f"member must lie in [0, {model.size}), got {member}")
    if not isinstance(point, torch.Tensor) or point.ndim != 1 or point.norm() == 0:
        raise ValueError("point must be a non-zero 1-D tensor")
    r0, r1 = _radii(radii)
    _pos("half_width", half_width)
    resolution = check_int("resolution", resolution, minimum=2)
    e1 = point / point.norm()
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(point.shape[0], generator=g, dtype=point.dtype).to(point.device)
    v = v - (v @ e1) * e1
    e2 = v / v.norm()
    a = torch.linspace(r0 - 0.3, r1 + 0.3, resolution, dtype=point.dtype)
    b = torch.linspace(-half_width, half_width, resolution, dtype=point.dtype)
    B, A = torch.meshgrid(b, a, indexing="ij")
    pts = (
        A.reshape(-1, 1).to(point.device) * e1
        + B.reshape(-1, 1).to(point.device) * e2
    )
    with torch.no_grad():
        m = model.member(member)
        logits = m(pts)
    f = (logits[:, 1] - logits[:, 0]).reshape(resolution, resolution)
    return a.cpu().numpy(), b.cpu().numpy(), f.cpu().numpy()


@boundary(
    res=InstanceOf(SpheresResult),
    member=count(0),
    radii=_RADII,
    seed=SEED,
    candidates=count(),
)
def slice_points(
    res: SpheresResult,
    member: int,
    radii: tuple = (1.0, 1.2),
    seed: int = 0,
    candidates: int = 200,
):
    """Two points to slice through (Figure 2 analogue).

    Two points to slice through (Figure 2 analogue): a training point of ``member`` whose S' image
    the member misclassifies, and a fresh point that it classifies correctly together with its
    projection onto the other sphere. Returns ``(train_point, fresh_point)``; either is ``None`` if
    none of the first ``candidates`` qualifies (with S' error near 1 and a small test error, the
    first candidate almost always does).

    Parameters
    ----------
    res : SpheresResult
        The result of :func:`spheres_sweep`; a SpheresResult.
    member : int
        Which member of the stack; an int >= 0.
    radii : tuple, default (1.0, 1.2)
        Radii of the two spheres; a tuple (at least 2 items, strictly increasing) of items each a
        finite number > 0.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    candidates : int, default 200
        Training points tried, in order; an int >= 1.

    Returns
    -------
    tuple
        ``(train_point, fresh_point)``, as described above.
    """
    if not 0 <= member < len(res.sizes):
        raise ValueError(f"member must lie in [0, {len(res.sizes)}), got {member}")
    k = min(candidates, res.sizes[member])
    with torch.no_grad():
        xs, ys = sphere_sprime(res.x_train[:k], res.y_train[:k], radii)
        bad = (
            (_member_logits(res.model, member, xs).argmax(1) != ys)
            .nonzero()
            .flatten()
        )
        xf, yf = sphere_data(
            candidates,
            res.x_train.shape[1],
            radii,
            torch.Generator().manual_seed(seed + 4242),
        )
        xf, yf = xf.to(res.x_train.device), yf.to(res.x_train.device)
        xp, yp = sphere_sprime(xf, yf, radii)
        good = (
            (
                (_member_logits(res.model, member, xf).argmax(1) == yf)
                & (_member_logits(res.model, member, xp).argmax(1) == yp)
            )
            .nonzero()
            .flatten()
        )
    return (
        res.x_train[int(bad[0])] if len(bad) else None,
        xf[int(good[0])] if len(good) else None,
    )


@boundary(
    model=InstanceOf(BatchedMLP),
    member=count(0),
    point=Tensor("float", 1),
    label=count(0),
    radii=_RADII,
    seed=SEED,
    resolution=count(3),
)
def bulge_width(
    model: BatchedMLP,
    member: int,
    point: torch.Tensor,
    label: int,
    radii: tuple = (1.0, 1.2),
    seed: int = 0,
    resolution: int = 721,
) -> float:
    """Angular width (degrees) around a training point where the member keeps its label.

    Angular width (degrees) of the region around a training point where the member still
    predicts the point's own ``label`` on the *other* sphere, in the plane of
    :func:`boundary_slice` (same ``seed``, so the same random direction ``e2``).

    Walks the circle of the other sphere's radius in that plane, at angles ``phi`` from the point's
    direction in ``[-90, 90]`` degrees, and returns the width of the connected run of angles
    around ``phi = 0`` where the prediction equals ``label`` (0 if the projection itself is
    classified correctly). This is the "bulge" of Nagarajan and Kolter's Figure 2.

    Parameters
    ----------
    model : BatchedMLP
        The stack of networks; a BatchedMLP.
    member : int
        Which member of the stack; an int >= 0.
    point : torch.Tensor
        The point the slice goes through; a torch.Tensor (non-empty, floating-point, 1-dimensional,
        finite).
    label : int
        The point's label; an int >= 0.
    radii : tuple, default (1.0, 1.2)
        Radii of the two spheres; a tuple (at least 2 items, strictly increasing) of items each a
        finite number > 0.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    resolution : int, default 721
        Grid points per axis; an int >= 3.

    Returns
    -------
    float
        The width in degrees (see above).
    """
    if not isinstance(model, BatchedMLP):
        raise TypeError("model must be a BatchedMLP")
    if not 0 <= member < model.size:
        raise ValueError(f"member must lie in [0, {model.size}), got {member}")
    if label not in (0, 1):
        raise ValueError(f"label must be 0 or 1, got {label!r}")
    r0, r1 = _radii(radii)
    resolution = check_int("resolution", resolution, minimum=3)
    if point.shape[0] != model.weights[0].shape[-1] or float(point.norm()) == 0:
        raise ValueError(
            f"point must be a non-zero vector of {model.weights[0].shape[-1]} "
            "entries (the input size)"
        )
    e1 = point / point.norm()
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(point.shape[0], generator=g, dtype=point.dtype).to(point.device)
    v = v - (v @ e1) * e1
    e2 = v / v.norm()
    r = r1 if label == 0 else r0
    phi = torch.linspace(-math.pi / 2, math.pi / 2, resolution, dtype=point.dtype)
    pts = r * (
        torch.cos(phi)[:, None].to(point.device) * e1
        + torch.sin(phi)[:, None].to(point.device) * e2
    )
    with torch.no_grad():
        same = (_member_logits(model, member, pts).argmax(1) == label).cpu().numpy()
    c = resolution // 2
    if not same[c]:
        return 0.0
    lo, hi = c, c
    while lo > 0 and same[lo - 1]:
        lo -= 1
    while hi < resolution - 1 and same[hi + 1]:
        hi += 1
    return float(math.degrees(float(phi[hi] - phi[lo])))


@boundary(d=count(2), half_angle_deg=Interval(float, 0, 90))
def cap_fraction(d: int, half_angle_deg: float) -> float:
    """Fraction of the unit sphere in R^d within ``half_angle_deg`` of a fixed direction.

    Equals ``I_{sin^2 theta}((d - 1)/2, 1/2) / 2`` (regularized incomplete beta) for
    ``theta <= 90`` degrees; in R^3 it is ``(1 - cos theta) / 2``.

    Parameters
    ----------
    d : int
        Dimension; an int >= 2.
    half_angle_deg : float
        Half-angle of the cap, in degrees; a finite number in [0, 90].

    Returns
    -------
    float
        The fraction, in [0, 1].
    """
    from scipy.special import betainc

    d = check_int("d", d, minimum=2)
    if not isinstance(half_angle_deg, (int, float)) or not 0 <= half_angle_deg <= 90:
        raise ValueError(
            f"half_angle_deg must be a number in [0, 90], got {half_angle_deg!r}"
        )
    theta = math.radians(half_angle_deg)
    return float(0.5 * betainc((d - 1) / 2, 0.5, math.sin(theta) ** 2))


@boundary(
    ax=_Axes(),
    a=Tensor("float", 1, numpy=True),
    b=Tensor("float", 1, numpy=True),
    f=Tensor("float", 2, numpy=True),
    radii=_RADII,
    point_radius=positive(),
)
def plot_slice(
    ax, a, b, f, radii: tuple, point_radius: float, colors=("#56B4E9", "#E69F00")
) -> None:
    """Draw one :func:`boundary_slice`.

    Draw one :func:`boundary_slice`: predicted class (shading), boundary (black), the two spheres
    (dashed arcs), the point (dot) and its projection onto the other sphere (cross).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The matplotlib axes to draw on; a matplotlib Axes.
    a : torch.Tensor
        Slice coordinates along the first axis; a torch.Tensor or numpy array (non-empty,
        floating-point, 1-dimensional, finite).
    b : torch.Tensor
        Slice coordinates along the second axis; a torch.Tensor or numpy array (non-empty,
        floating-point, 1-dimensional, finite).
    f : torch.Tensor
        The decision function on the grid; a torch.Tensor or numpy array (non-empty,
        floating-point, 2-dimensional, finite).
    radii : tuple
        Radii of the two spheres; a tuple (at least 2 items, strictly increasing) of items each a
        finite number > 0.
    point_radius : float
        Radius of the drawn point; a finite number > 0.
    colors : object, default ('#56B4E9', '#E69F00')
        Colours of the two classes.
    """
    r0, r1 = _radii(radii)
    if tuple(f.shape) != (len(b), len(a)):
        raise ValueError(
            f"f must have shape (len(b), len(a)) = {(len(b), len(a))}, got "
            f"{tuple(f.shape)}"
        )
    ax.contourf(a, b, f > 0, levels=[-0.5, 0.5, 1.5], colors=list(colors), alpha=0.4)
    ax.contour(a, b, f, levels=[0], colors="k", linewidths=1.5)
    for r in (r0, r1):
        ax.plot(np.sqrt(np.clip(r**2 - b**2, 0, None)), b, "--", color="grey", lw=1)
    ax.plot([point_radius], [0], "ko")
    ax.plot([r0 + r1 - point_radius], [0], "kx", ms=9, mew=2)


@boundary(ax=_Axes(), axis=Options(("x", "y")))
def log_ticks(ax, values, axis: str = "x") -> None:
    """Label a log axis at ``values`` with plain numbers.

    Label a log axis at ``values`` with plain numbers (no minor-tick clutter), and write the
    other axis's labels as plain numbers too (``0.3`` rather than ``3 x 10^-1``).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The matplotlib axes to draw on; a matplotlib Axes.
    values : object
        The tick positions.
    axis : str, default 'x'
        The log axis, ``"x"`` or ``"y"``; one of ('x', 'y').
    """
    from matplotlib.ticker import (
        FixedFormatter,
        FixedLocator,
        FuncFormatter,
        NullFormatter,
        NullLocator,
    )

    arr = _float_array("values", values)
    if (
        arr.ndim != 1
        or arr.size == 0
        or not np.all(np.isfinite(arr))
        or not np.all(arr > 0)
    ):
        raise ValueError(
            f"values must be a non-empty 1-D sequence of positive finite numbers "
            f"(ticks of a log axis), got {values!r}"
        )
    target, other = (ax.xaxis, ax.yaxis) if axis == "x" else (ax.yaxis, ax.xaxis)
    target.set_major_locator(FixedLocator(list(values)))
    target.set_major_formatter(FixedFormatter([f"{v:g}" for v in values]))
    target.set_minor_locator(NullLocator())
    target.set_minor_formatter(NullFormatter())
    plain = FuncFormatter(lambda v, _: f"{v:.2g}")
    other.set_major_formatter(plain)
    other.set_minor_formatter(plain)
