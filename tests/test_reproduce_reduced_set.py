"""The USPS reduced-set reproductions are registered; a quick run works end to end."""

import pytest

from sparsekm.reproduce import Context, discover

from .conftest import requires_usps

NAMES = ["usps-rs-construct", "usps-rs-select-kpca", "usps-rs-select-l1", "usps-rs-shared"]


def test_registered():
    registry = discover()
    for name in NAMES:
        assert name in registry and registry[name].slow


@requires_usps
@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_quick_run(tmp_path, name):
    res = discover()[name].func(Context(out_dir=tmp_path, quick=True, progress=False))
    assert res.table.count("\n") >= 3
    assert "SV (baseline)" in res.table
    for fig in res.figures:
        assert (tmp_path / fig.split("/")[-1]).exists()
