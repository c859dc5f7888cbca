"""Tests of gtlib.connectivity.claims, the chapter's claims table."""

from gtlib.connectivity import CLAIMS

from tests.conftest import check_claims_table


def test_the_table_is_valid_and_the_notebook_checks_exactly_its_claims(tmp_path):
    check_claims_table("mode-connectivity", CLAIMS, tmp_path)
