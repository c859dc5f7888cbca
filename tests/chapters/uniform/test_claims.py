"""Tests of gtlib.uniform.claims: the chapter's claims table is valid, and the notebook checks
exactly the claims it declares."""
from gtlib.claims import Claims
from gtlib.uniform import CLAIMS

from tests.conftest import checked_claim_ids


def test_the_table_is_a_valid_claims_table(tmp_path):
    assert set(Claims("uniform-convergence", results_dir=tmp_path, declared=CLAIMS).declared) \
        == set(CLAIMS)


def test_the_notebook_checks_exactly_the_declared_claims_in_their_order():
    assert checked_claim_ids("uniform-convergence") == list(CLAIMS)
