"""attnbook.core.errata: source 002's deliberately wrong positional
encoding refuses what it cannot compute, with clear errors."""

import pytest
import torch

from attnbook.core.errata import (
    Source002PositionalEncoding,
    source_002_encoding,
)

from _refusals import refused


def test_source_002_encoding_too_large_is_refused():
    with pytest.raises(ValueError, match=r"the encoding of shape"):
        source_002_encoding(10**12, 8)


@pytest.mark.parametrize("dropout", [-1.0, None, float("inf")])
def test_source_002_module_refuses_a_bad_dropout(dropout):
    refused(
        lambda: Source002PositionalEncoding(8, dropout=dropout),
        ValueError,
        "dropout",
    )


@pytest.mark.parametrize(
    "x",
    [None, torch.randn(80), torch.randn(10, 2, 0)],
    ids=["None", "shape (80,)", "shape (10, 2, 0)"],
)
def test_source_002_forward_refuses_what_it_cannot_add(x):
    module = Source002PositionalEncoding(8)
    with pytest.raises((TypeError, ValueError), match="x"):
        module(x)
