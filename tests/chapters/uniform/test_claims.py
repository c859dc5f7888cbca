"""Tests of gtlib.uniform.claims, the chapter's claims table."""

from gtlib.uniform import CLAIMS

from tests.conftest import check_claims_table


def test_the_table_is_valid_and_the_notebook_checks_exactly_its_claims(tmp_path):
    check_claims_table("uniform-convergence", CLAIMS, tmp_path)
