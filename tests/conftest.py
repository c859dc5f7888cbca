import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _isolated_results(tmp_path, monkeypatch):
    """Unit tests never write into the real results folder, and each starts from the same global
    random state: a test that draws unseeded data sees the same draw whatever ran before it on its
    worker."""
    torch.manual_seed(0)
    monkeypatch.setenv("GTLIB_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.delenv("GTLIB_SCALE", raising=False)
    monkeypatch.delenv("GTLIB_DEVICE", raising=False)
    monkeypatch.setenv("GTLIB_DEVICE", "cpu")
    # Unit tests see a failed claim as an exception (the strict mode); the non-strict behaviour a
    # reader's build relies on is tested by clearing it (tests/core/test_claims.py).
    monkeypatch.setenv("GTLIB_STRICT_CLAIMS", "1")
    monkeypatch.delenv("GTLIB_SWEEP_DIR", raising=False)


def checked_claim_ids(slug: str) -> list[str]:
    """The ids of the claims ``book/<slug>.ipynb`` checks (``claims.check("<id>", ...)``), in
    order: a chapter's claims table (``declared=``) must declare exactly these."""
    import ast
    import json
    from pathlib import Path

    nb = json.loads(
        (Path(__file__).resolve().parents[1] / "book" / f"{slug}.ipynb").read_text()
    )
    ids = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "check"
                and getattr(node.func.value, "id", "") == "claims"
            ):
                ids.append(ast.literal_eval(node.args[0]))
    return ids


def check_claims_table(slug: str, table: dict, tmp_path) -> None:
    """A chapter's claims table is valid (:class:`gtlib.claims.Claims` accepts it) and the
    chapter's notebook checks exactly the declared claims, in the table's order."""
    from gtlib.claims import Claims

    assert set(Claims(slug, results_dir=tmp_path, declared=table).declared) == set(
        table
    )
    assert checked_claim_ids(slug) == list(table)
