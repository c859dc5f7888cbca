import json

import pytest

from gtlib.claims import ClaimFailed, Claims, claims_table_html, load_results


def test_holding_claim_is_written(tmp_path):
    c = Claims("demo-chapter", results_dir=tmp_path)
    c.check("demo.works", "It works", "paper says so", "measured 1.0", True, values={"x": 1.0})
    data = json.loads((tmp_path / "demo-chapter.json").read_text())
    assert data["chapter"] == "demo-chapter" and data["scale"] in ("quick", "full")
    assert isinstance(data["seed"], int)
    (claim,) = data["claims"]
    assert {"id", "statement", "paper", "measured", "holds"} <= set(claim)
    assert claim["holds"] is True and claim["status"] == "reproduced"
    assert "demo.works" in c._repr_html_()


def test_failing_claim_raises_but_is_recorded(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    with pytest.raises(ClaimFailed, match="demo.fails"):
        c.check("demo.fails", "s", "p", "m", False)
    assert load_results(tmp_path)[0]["claims"][0]["status"] == "FAILED"


def test_documented_nonreproduction(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    claim = c.check("demo.nr", "s", "p", "m", False, nonreproduction="too small a scale")
    assert claim.status == "documented non-reproduction" and claim.explanation == "too small a scale"
    html = claims_table_html(c.as_dict()["claims"])
    assert "not reproduced" in html and "too small a scale" in html


def test_numpy_bools_are_accepted(tmp_path):
    import numpy as np
    c = Claims("demo", results_dir=tmp_path)
    assert c.check("demo.np", "s", "p", "m", np.bool_(True), values={"a": np.float64(2.0)}).holds


@pytest.mark.parametrize("kw,err,match", [({"id": "Bad Id"}, ValueError, "id"),
                                          ({"statement": ""}, TypeError, "statement"),
                                          ({"holds": "yes"}, TypeError, "holds")])
def test_bad_claims(tmp_path, kw, err, match):
    c = Claims("demo", results_dir=tmp_path)
    args = {"id": "demo.ok", "statement": "s", "paper": "p", "measured": "m", "holds": True, **kw}
    with pytest.raises(err, match=match):
        c.check(**args)


def test_duplicate_and_bad_slug(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    c.check("demo.a", "s", "p", "m", True)
    with pytest.raises(ValueError, match="already"):
        c.check("demo.a", "s", "p", "m", True)
    with pytest.raises(ValueError, match="chapter"):
        Claims("Not A Slug", results_dir=tmp_path)
