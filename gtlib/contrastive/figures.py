"""Contrastive imbalance: the chapter's figures."""

from __future__ import annotations

import numpy as np
import torch

from ..checks import Tensor, boundary, count, positive
from .common import _Axes

__all__ = ["draw_alignment"]


@boundary(
    ax=_Axes(),
    proj=Tensor("float", 2, numpy=True),
    n_minority=count(0),
    vmax=positive(optional=True),
)
def draw_alignment(
    ax, proj, n_minority: int, title: str | None = None, vmax: float | None = None
):
    """Heatmap of ``|<w_r, M_k>|`` (neurons x features), neurons sorted by dominant feature.

    Minority features (the last ``n_minority`` columns) sit right of a dashed line.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The matplotlib axes to draw on; a matplotlib Axes.
    proj : torch.Tensor
        Projections ``|<w_r, M_k>|``, ``(m, K)``; a torch.Tensor or numpy array (non-empty,
        floating-point, 2-dimensional, finite).
    n_minority : int
        Number of minority (rare) features; an int >= 0.
    title : str | None, default None
        Title of the axes; a str or None.
    vmax : float | None, default None
        Top of the colour scale (default: the largest projection); a finite number > 0 or None.

    Returns
    -------
    matplotlib.image.AxesImage
        The heatmap (for a colour bar).
    """
    proj = proj.detach().cpu().numpy() if isinstance(proj, torch.Tensor) else proj
    if n_minority >= proj.shape[1]:
        raise ValueError(
            f"n_minority must be < the number of features ({proj.shape[1]}), got "
            f"{n_minority}"
        )
    order = np.lexsort((-proj.max(1), proj.argmax(1)))
    im = ax.imshow(
        proj[order],
        aspect="auto",
        cmap="viridis",
        vmin=0,
        vmax=vmax if vmax is not None else proj.max(),
        interpolation="nearest",
    )
    from matplotlib.ticker import MaxNLocator

    K = proj.shape[1]
    ax.axvline(K - n_minority - 0.5, color="white", ls="--", lw=1.2)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("feature k (minority right of dashes)")
    ax.set_ylabel("neuron r (sorted)")
    ax.grid(False)
    if title:
        ax.set_title(title, fontsize=9)
    return im
