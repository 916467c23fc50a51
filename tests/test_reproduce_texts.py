"""Reproduction texts tell a user without the data how to get it (issue 18)."""

import pytest

from sparsekm._fetch import FETCH_HINT
from sparsekm.reproduce import denoising, franc, randomized


@pytest.mark.parametrize("module", [denoising, franc, randomized])
def test_intro_names_data_fetch_and_data_option(module):
    intro = module.SECTION.intro
    assert "sparsekm data fetch" in intro and "--data" in intro


def test_data_not_found_hint_names_fetch_and_data_option():
    assert "sparsekm data fetch" in FETCH_HINT and "--data" in FETCH_HINT
