"""The claims table of *Uniform convergence* (:class:`gtlib.claims.Claims`, ``declared=``)."""

from __future__ import annotations

__all__ = ["CLAIMS"]

#: The chapter's claims, by id: what the notebook checks (see the module docstring).
CLAIMS = {
    "uc.random_labels_memorized": dict(
        statement="A CNN that generalizes on true labels fits random ones (test: chance)",
        paper="Zhang et al. 2017, Fig. 1a and Table 1: near-perfect training accuracy on "
        "random labels, test accuracy at chance",
        rule="reached and max(test_acc) <= chance + 10 * se "
        "and min(true_test_acc) >= chance + 10 * se",
        control="a linear softmax model in the CNN's place (same labels, SGD, steps)",
    ),
    "uc.random_labels_fit_slower": dict(
        statement="Random labels take longer to fit, by a small constant factor (CNN)",
        paper="Zhang et al. 2017, Sec. 1.1 and Fig. 1b: a small constant factor slower",
        rule="reached and min(steps) >= 1.25 * ref_max and max(steps) <= 10 * ref_min",
        control="two more runs of the same CNN on the true labels",
    ),
    "uc.test_error_falls_with_n": dict(
        statement="Trained to a fixed margin, test error falls with n",
        paper="Nagarajan and Kolter 2019, Fig. 1 (MNIST, depth 5): test error falls with n",
        rule="slope <= -0.2",
        control="the same sweep with the training set fixed at the smallest n",
    ),
    "uc.distance_from_init_grows": dict(
        statement="The distance from initialization grows with n",
        paper="Nagarajan and Kolter 2019, Fig. 1: distance from init grows with n",
        rule="slope >= 0.1",
        control="the same sweep with the training set fixed at the smallest n",
    ),
    "uc.spectral_product_grows": dict(
        statement="The product of spectral norms grows with n",
        paper="Nagarajan and Kolter 2019, Fig. 1: the spectral norms grow with n",
        rule="slope >= 0.2",
        control="the same sweep with the training set fixed at the smallest n",
    ),
    "uc.norm_bounds_grow": dict(
        statement="Both norm-based bounds grow with n",
        paper="Nagarajan and Kolter 2019, Fig. 1: both bounds grow with n",
        rule="min(slopes) >= 0.1",
        control="the same sweep with the training set fixed at the smallest n",
    ),
    "uc.linear_construction_defeats_uc": dict(
        statement="The linear learner generalizes yet errs on all of S' (floor near 1)",
        paper="Nagarajan and Kolter 2019, Thm 3.1: test error <= eps while eps_unif-alg >= 1 - "
        "eps",
        rule="max(test) <= eps and min(floor) >= 1 - 2 * eps",
        control="the same learner, noise variance 4 (the signal part) instead of 32",
    ),
    "uc.spheres_floor_large": dict(
        statement="On the hyperspheres the floor under two-sided bounds is large (its rise "
        "with n is the falling test error, claimed next)",
        paper="Nagarajan and Kolter 2019, Fig. 2 (left): error 1 on S' at every n while the "
        "test error falls",
        rule="min(floor) >= half + 6 * se",
        control="the same networks, S' replaced by the projected test points",
    ),
    "uc.spheres_test_error_falls": dict(
        statement="On the hyperspheres test error falls with n",
        paper="Nagarajan and Kolter 2019, Fig. 2 (left): test error falls with n",
        rule="min(small) >= max(large) + 6 * se",
        control="the same network with n fixed: three more draws at the smallest n",
    ),
    "uc.every_network_met_its_stop_rule": dict(
        statement="Every network of Experiments 2 and 4 (nulls included) reached its margin "
        "target",
        paper="the paper's stop rule: margin gamma on 99% of the training points",
        rule="all(met)",
        kind="sanity",
    ),
    "uc.margin_reached_is_gamma": dict(
        statement="Every network of Experiment 2 (null included) stopped within 5% above its "
        "margin target",
        paper="the paper's comparison of bounds at one margin gamma",
        rule="all([g >= gamma for g in reached]) and max(reached) <= 1.05 * gamma",
        kind="sanity",
    ),
}
