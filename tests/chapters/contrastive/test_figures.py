"""Tests of gtlib.contrastive.figures, one section per public function."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from gtlib import contrastive as C


# =================================================================================================
# contrastive.draw_alignment
# =================================================================================================
@pytest.mark.reference
def test_draw_alignment_sorts_neurons_by_dominant_feature_then_strength():
    proj = np.array(
        [
            [0.1, 0.9, 0.0],  # dominant 1, top 0.9
            [0.8, 0.2, 0.1],  # dominant 0, top 0.8
            [0.0, 0.3, 0.1],  # dominant 1, top 0.3
            [0.2, 0.0, 0.6],  # dominant 2
            [0.5, 0.1, 0.0],
        ]
    )  # dominant 0, top 0.5
    fig, ax = plt.subplots()
    try:
        im = C.draw_alignment(ax, proj, 1, title="before")
        np.testing.assert_array_equal(
            np.asarray(im.get_array()), proj[[1, 4, 0, 2, 3]]
        )
        assert im.get_clim() == (0.0, 0.9)
        assert ax.lines[0].get_xdata()[0] == pytest.approx(
            1.5
        )  # K - n_minority - 0.5
        assert ax.get_title() == "before" and ax.title.get_fontsize() == 9
        assert ax.get_xlabel().startswith(
            "feature k"
        ) and ax.get_ylabel().startswith("neuron r")
        ax2 = fig.add_subplot(2, 1, 2)
        im2 = C.draw_alignment(ax2, torch.tensor(proj), 2, vmax=2.0)
        assert im2.get_clim() == (0.0, 2.0) and ax2.lines[0].get_xdata()[
            0
        ] == pytest.approx(0.5)
        assert ax2.get_title() == ""
        with pytest.raises(ValueError, match="n_minority"):
            C.draw_alignment(ax2, proj, 3)
    finally:
        plt.close(fig)
