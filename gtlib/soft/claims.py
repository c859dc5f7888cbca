"""The claims table of *Soft inductive biases* (:class:`gtlib.claims.Claims`, ``declared=``)."""

from __future__ import annotations

__all__ = ["CLAIMS"]

#: The chapter's claims, by id: what the notebook checks (see the module docstring).
CLAIMS = {
    "sib.poly_fits_noise": dict(
        statement="The degree-150 interpolant fits pure noise (151 coefficients, 100 distinct "
        "points: a capacity fact, true by construction)",
        paper="Wilson (2025), Fig. 1(c): the same polynomial also fits pure noise",
        rule="train_mse_over_var <= 0.01",
        kind="sanity",
    ),
    "sib.poly_generalizes_structured": dict(
        statement="With the evidence's noise level, the same model generalizes on simple and "
        "complex data (excess risk below half the noise variance)",
        paper="Wilson (2025), Fig. 1(a, b): it describes simple and complex structured data "
        "well",
        rule="max(excess_over_var) <= 0.5",
        control="unpenalized min-norm degree-150 interpolant, same data",
    ),
    "sib.benign_overfitting": dict(
        statement="A min-norm interpolant with a high-effective-rank tail overfits benignly",
        paper="Bartlett et al. (2020): benign when the tail's effective ranks are large "
        "compared with n; Mallinar et al. (2022): benign, tempered, catastrophic",
        rule="train_mse_over_var <= 1e-6 and excess_over_var <= 0.25",
        control="isotropic features, d = 2n (tail effective rank 2n - 1)",
    ),
    "sib.gp_fits_random_labels": dict(
        statement="With observation noise fixed at 1/1000 of the signal variance, the GP's "
        "posterior mean fits random labels, and it predicts clean test labels at "
        "chance (true of any such near-interpolator: a property of the set-up)",
        paper="Wilson (2025), Fig. 1(d): a GP reproduces Zhang et al.'s random-label result on "
        "CIFAR-10",
        rule="train_acc >= 0.99 and abs(test_acc - chance) <= 0.03",
        kind="sanity",
    ),
    "sib.gp_evidence_falls_with_noise": dict(
        statement="The GP's marginal likelihood falls at every step of label corruption, and "
        "by more than 1000 nats from clean to random labels",
        paper="Wilson (2025), Fig. 1(e) shows this for a ResNet-20's marginal likelihood on "
        "CIFAR-10; the GP version is this chapter's",
        rule="len(steps) >= 4 and max(steps) < 0 and sum(steps) < -fall",
        control="the same GP on labels shuffled across the inputs (no input-label link)",
    ),
    "sib.rf_double_descent": dict(
        statement="Min-norm random features peak at p = n (twice the error at n/2 and 2n), and "
        "the best over-parameterized model beats the best under-parameterized one",
        paper="Belkin et al. (2019): random Fourier features on MNIST, the best p > n beats "
        "the best p < n; Wilson (2025), Fig. 1(g): linear random features",
        rule="peak_ratio > 2 and best_over < best_under",
        control="tuned ridge on the same features (no interpolation peak)",
    ),
    "sib.rf_ridge_removes_peak": dict(
        statement="With a tuned ridge penalty the test error has no peak (no step up of 25%)",
        paper="Nakkiran et al. (2021): optimally tuned l2 regularization removes the peak",
        rule="max_rise <= 0.25",
        control="minimum-norm fit (no penalty), same features",
    ),
    "sib.mlp_double_descent": dict(
        statement="MLP test error peaks at the interpolation threshold: there it is above the "
        "best smaller and the widest network by more than 2 held-out standard errors",
        paper="Nakkiran et al. (2020), Fig. 1: with label noise, test error peaks at the "
        "interpolation threshold and falls again with width",
        rule="gap_left > 2 * se_left and gap_right > 2 * se_right",
        control="the same networks at epoch {epoch}, before they interpolate",
        reason=(
            "no rise towards the threshold: the threshold width, which fits every noisy "
            "label, is no worse than the smallest width, which fits about half of them "
            "(all eight initializations; a rise under 2 standard errors)",
            "rise < 2 * se_rise",
        ),
    ),
    "sib.effdim_falls_past_threshold": dict(
        statement="At equal training loss, the widest network has at least 25% lower N_eff "
        "than the threshold-width network",
        paper="Wilson (2025), Fig. 1(f), after Maddox et al. (2020): effective dimensionality "
        "tracks the second descent in the low training loss regime",
        rule="rel_drop >= 0.25",
        control="width {wide}'s own trajectory: its N_eff at width {w_t}'s loss against its "
        "final one",
        reason=(
            "at equal loss the two widths' N_eff differ by less than the widest network's "
            "own N_eff changes as training lowers its loss",
            "abs(rel_drop) < traj_drop",
        ),
    ),
    "sib.compression_fewer_bits_at_equal_fit": dict(
        statement="At equal quantized training error, the 16-channel network needs no more "
        "bits than 7 levels cost where the 8-channel one needs 15",
        paper="Wilson (2025), on overparametrization, after Lotfi et al. (2022): larger models "
        "are more compressible for the same fit (no figure; unchecked)",
        rule="bits_ratio <= two_steps",
        control="two 8-channel networks of different seeds",
        reason=(
            "the code length is set by d and L, not by the width: at every L the two "
            "widths' codes differ by under 10%, so the wider net saves bits only by "
            "needing fewer levels for the same fit",
            "max(abs(r - 1) for r in same_L) < 0.1",
        ),
    ),
    "sib.compression_bound_nonvacuous": dict(
        statement="The quantized 16-channel network gets a valid bound below chance error",
        paper="Lotfi et al. (2022): non-vacuous compression bounds; Wilson (2025): they pass "
        "Zhang et al.'s random-label test",
        rule="test_err <= bound < chance_error",
        control="the same procedure on random labels",
    ),
    "sib.code_decodes": dict(
        statement="Every code decodes back to the same quantized weights",
        paper="prefix-free code: a requirement of the countable-hypothesis bound",
        rule="all(ok)",
        kind="sanity",
    ),
    "sib.counting_bound_vacuous": dict(
        statement="The counting bound's complexity term exceeds 1 for the smallest CNN (a "
        "calculation: true for any network of more than 721 weights at n = 8000)",
        paper="Wilson (2025): parameter-counting (VC-type) bounds are vacuous for such models",
        rule="complexity > 1",
        kind="sanity",
    ),
    "sib.evidence_is_fit_plus_occam": dict(
        statement="The log evidence equals data fit plus log Occam factor (to rounding)",
        paper="MacKay (1992): evidence = best-fit likelihood x Occam factor",
        rule="abs(split - direct) <= 1e-6 * abs(direct)",
        kind="sanity",
    ),
}
