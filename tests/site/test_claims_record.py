"""The claims this build recorded can be re-checked from the files alone.

For every chapter in the table of contents: a results file exists; every claim carries its rule and
values; re-evaluating each stored rule on its stored values gives the stored outcome; every
reproduced effect has a measured control on which its rule is false and which is not refused; every
documented non-reproduction carries a reason rule that holds; and no notebook types an outcome by
hand (``holds=``). Whether a FAILED claim fails `make test` is the claims gate's decision
(``book/_tools/claims_gate.py``, run before these checks).
"""

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from gtlib.claims import evaluate_rule, reevaluate

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(os.environ.get("GTLIB_RESULTS_DIR") or ROOT / "_build" / "results")


def chapters() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [
        c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])
    ]
    return [Path(f).name for f in files if (ROOT / f"{f}.ipynb").exists()]


@pytest.mark.parametrize("slug", chapters())
def test_no_outcome_is_typed_by_hand(slug):
    nb = json.loads((ROOT / "book" / f"{slug}.ipynb").read_text())
    code = "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
    )
    assert not re.search(r"\bholds\s*=", code), f"{slug} passes holds= by hand"


@pytest.mark.parametrize("slug", chapters())
def test_every_stored_claim_re_evaluates_to_its_stored_outcome(slug):
    path = RESULTS / f"{slug}.json"
    if not path.exists():
        pytest.fail(f"{path} is missing: build the book first (make book)")
    data = json.loads(path.read_text())
    assert data["claims"], f"{slug} recorded no claims"
    for c in data["claims"]:
        holds, control_holds = reevaluate(c)
        assert (holds, control_holds) == (c["holds"], c["control_holds"]), c["id"]
        if c["kind"] == "effect":
            assert c["control"] and c["control"]["name"].strip(), (
                f"{c['id']} has no control"
            )
            if c["status"] == "reproduced":
                assert control_holds is False, (
                    f"{c['id']}: the rule is true on the control"
                )
                assert not c.get("refused"), f"{c['id']}: its control is refused"
            elif c["status"] == "documented non-reproduction":
                r = c.get("reason") or {}
                assert r.get("holds") is True and r.get("text", "").strip(), c["id"]
                assert evaluate_rule(
                    r["rule"],
                    {**c.get("given", {}), **c["values"], **r.get("values", {})},
                ), c["id"]
        else:
            assert c["kind"] == "sanity" and c["control"] is None
