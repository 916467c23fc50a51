"""docs/api.md is generated from the docstrings and must be up to date."""

import importlib
from pathlib import Path

from sparsekm import _apidoc

API_MD = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def test_api_md_is_up_to_date():
    text = _apidoc.render()
    assert API_MD.exists(), "docs/api.md is missing: run python -m sparsekm._apidoc"
    assert API_MD.read_text(encoding="utf-8") == text, (
        "docs/api.md is out of date with the docstrings: run python -m sparsekm._apidoc")


def test_every_public_name_is_covered():
    text = _apidoc.render()
    for name in _apidoc.MODULES:
        mod = importlib.import_module(name)
        assert f"## `{name}`" in text
        for attr in mod.__all__:
            assert f"### `{name}.{attr}`" in text or f"- `{attr}`: see [" in text, (name, attr)


def test_issue_26_names_are_documented():
    """ExpansionClassifier, CompressCurve and register_skl2onnx_converters (missing from
    docs/api.md before issue 26) have full entries, under the modules defining them."""
    text = _apidoc.render()
    for qual in ("sparsekm.multiclass.ExpansionClassifier", "sparsekm.compression.CompressCurve",
                 "sparsekm.onnx_export.register_skl2onnx_converters",
                 "sparsekm.onnx_export.to_onnx", "sparsekm.compression.compress"):
        assert f"### `{qual}`" in text, qual
    # names re-exported by the package point to those entries
    assert "- `to_onnx`: see [`sparsekm.onnx_export.to_onnx`]" in text
    assert "- `compress`: see [`sparsekm.compression.compress`]" in text


def test_numpydoc_sections_are_rendered():
    lines = ["Summary line.", "", "More text.", "", "Parameters", "----------",
             "x : array-like of shape (n, d)", "    The data,", "    on two lines.",
             "k : int, default=3", "", "Returns", "-------", "float", "    The value."]
    summary, sections = _apidoc._split_sections("\n".join(lines))
    assert summary == "Summary line."
    assert _apidoc._param_list(sections["Parameters"]) == [
        "- `x` (array-like of shape (n, d)): The data, on two lines.", "- `k` (int, default=3)"]
    assert _apidoc._param_list(sections["Returns"]) == ["- `float`: The value."]


def test_anchor_matches_github_slugs():
    assert _apidoc._anchor("sparsekm.reduced_set.construct") == "sparsekmreduced_setconstruct"


def test_check_mode(tmp_path, capsys):
    out = tmp_path / "api.md"
    assert _apidoc.main(["--output", str(out), "--check"]) == 1
    assert _apidoc.main(["--output", str(out)]) == 0
    assert _apidoc.main(["--output", str(out), "--check"]) == 0
