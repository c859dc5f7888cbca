"""Tests of gtlib.uniform.power_law, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import math
import numpy as np
import pytest
import torch
from scipy import stats

from gtlib import uniform as U
from gtlib.uniform import power_law_fit

from tests.chapters.uniform.helpers import NAN, _raises


# =================================================================================================
# uniform.power_law_fit
# =================================================================================================
def test_power_law_fit_exact_and_noisy():
    x = np.array([100, 200, 400, 800, 1600])
    fit = U.power_law_fit(x, 3.0 * x**-0.35)
    assert fit.slope == pytest.approx(-0.35)
    assert fit.slope_se == pytest.approx(0.0, abs=1e-9)
    assert fit(50) == pytest.approx(3.0 * 50**-0.35)
    rng = np.random.default_rng(0)
    slopes = []
    for _ in range(200):
        y = 2.0 * x**0.6 * np.exp(rng.normal(0, 0.05, len(x)))
        f = U.power_law_fit(x, y)
        slopes.append(f.slope)
        assert abs(f.slope - 0.6) < 6 * 0.05 / np.sqrt(
            ((np.log(x) - np.log(x).mean()) ** 2).sum()
        )
    assert np.mean(slopes) == pytest.approx(0.6, abs=0.01)
    assert math.isnan(U.power_law_fit([1, 2], [1, 4]).slope_se)


def test_power_law_fit_bad_input():
    with pytest.raises(ValueError):
        U.power_law_fit([1], [1])
    with pytest.raises(ValueError):
        U.power_law_fit([1, 2, 3], [1, 2])
    with pytest.raises(ValueError):
        U.power_law_fit([1, 2, 3], [1, 0, 2])
    with pytest.raises(ValueError):
        U.power_law_fit([2, 2, 2], [1, 2, 3])


@pytest.mark.reference
def test_power_law_fit_against_linregress_and_its_prediction():
    x = np.array([3.0, 7.0, 20.0, 45.0, 150.0, 400.0])
    y = np.array([2.1, 1.2, 0.95, 0.51, 0.33, 0.12])
    fit = U.power_law_fit(list(x), tuple(y))
    ref = stats.linregress(np.log(x), np.log(y))
    assert fit.slope == pytest.approx(ref.slope, rel=1e-12)
    assert fit.intercept == pytest.approx(ref.intercept, rel=1e-12)
    assert fit.slope_se == pytest.approx(ref.stderr, rel=1e-10)
    pred = fit(np.array([5.0, 100.0]))
    np.testing.assert_allclose(
        pred, np.exp(ref.intercept) * np.array([5.0, 100.0]) ** ref.slope, rtol=1e-12
    )
    # two points: the line through them, no standard error; the intercept is the natural log of C
    two = U.power_law_fit([2.0, 8.0], [5.0 * 2.0**1.5, 5.0 * 8.0**1.5])
    assert two.slope == pytest.approx(1.5, rel=1e-12)
    assert two.intercept == pytest.approx(math.log(5.0), rel=1e-12)
    assert math.isnan(two.slope_se)
    assert two(4.0) == pytest.approx(5.0 * 4.0**1.5, rel=1e-12)
    # three points: k - 2 = 1 degree of freedom
    three = U.power_law_fit(x[:3], y[:3])
    assert three.slope_se == pytest.approx(
        stats.linregress(np.log(x[:3]), np.log(y[:3])).stderr, rel=1e-10
    )
    for bad in ([1.0, -2.0, 3.0], [1.0, float("inf"), 3.0]):
        with pytest.raises(ValueError):
            U.power_law_fit(bad, [1.0, 2.0, 3.0])
        with pytest.raises(ValueError):
            U.power_law_fit([1.0, 2.0, 3.0], bad)
    with pytest.raises(ValueError):
        U.power_law_fit(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(TypeError):
        U.power_law_fit("abc", [1, 2, 3])


@pytest.mark.reference
def test_power_law_fit_matches_scipy():
    from scipy.stats import linregress

    rng = np.random.default_rng(0)
    x = np.array([500, 1000, 2000, 4000, 8000], dtype=float)
    y = 3.0 * x**-0.4 * np.exp(0.05 * rng.normal(size=5))
    fit = U.power_law_fit(x, y)
    ref = linregress(np.log(x), np.log(y))
    assert fit.slope == pytest.approx(ref.slope, rel=1e-12)
    assert fit.intercept == pytest.approx(ref.intercept, rel=1e-12)
    assert fit.slope_se == pytest.approx(ref.stderr, rel=1e-10)


@pytest.mark.boundary
def test_power_law_fit_names_non_numeric_input():
    _raises(TypeError, "x", U.power_law_fit, "abc", [1.0, 2.0, 3.0])
    _raises(TypeError, "y", U.power_law_fit, [1.0, 2.0, 3.0], ["a", "b", "c"])
    _raises(
        ValueError,
        "x must be positive",
        U.power_law_fit,
        [1.0, NAN, 2.0],
        [1.0, 2.0, 3.0],
    )
    _raises(
        ValueError,
        "y must be positive",
        U.power_law_fit,
        [1.0, 2.0, 3.0],
        [1.0, NAN, 2.0],
    )


@pytest.mark.mutation
def test_power_law_slope_standard_error_is_scipys():
    """The OLS slope and its standard error (k - 2 degrees of freedom) equal scipy's linregress
    on log y against log x."""
    stats = pytest.importorskip("scipy.stats")
    g = np.random.default_rng(0)
    for k in (3, 5, 12):
        x = np.geomspace(10, 1000, k)
        y = 2.0 * x**-0.4 * np.exp(0.1 * g.standard_normal(k))
        fit, ref = power_law_fit(x, y), stats.linregress(np.log(x), np.log(y))
        assert fit.slope == pytest.approx(ref.slope, rel=1e-10)
        assert fit.intercept == pytest.approx(ref.intercept, rel=1e-10)
        assert fit.slope_se == pytest.approx(ref.stderr, rel=1e-10)


# =================================================================================================
# uniform.nearest_neighbour_predict
# =================================================================================================
def test_nearest_neighbour_predict_known_answers():
    xt = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0]])
    yt = torch.tensor([5, 7, 9])
    x = torch.tensor([[0.1, 0.1], [0.9, -0.2], [0.2, 2.0], [0.5, 0.0]])
    # the last point is equidistant from the first two: the earlier training point wins
    assert U.nearest_neighbour_predict(xt, yt, x).tolist() == [5, 7, 9, 5]
    # every training point is its own nearest neighbour; block size does not matter
    assert torch.equal(U.nearest_neighbour_predict(xt, yt, xt, chunk=1), yt)
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(50, 4, generator=g), torch.randn(30, 4, generator=g)
    lab = torch.randint(0, 3, (50,), generator=g)
    brute = lab[torch.cdist(b, a).argmin(1)]
    assert torch.equal(U.nearest_neighbour_predict(a, lab, b, chunk=7), brute)
    # a rotation and a shift of every point leave the prediction unchanged
    q, _ = torch.linalg.qr(torch.randn(4, 4, generator=g))
    assert torch.equal(U.nearest_neighbour_predict(a @ q + 3, lab, b @ q + 3), brute)
