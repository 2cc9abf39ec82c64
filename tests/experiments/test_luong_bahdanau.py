"""attnbook.experiments.luong_bahdanau: the experiment's scoring helpers."""

import pytest
import torch


@pytest.mark.parametrize(
    "model, sources, targets, match",
    [
        (None, None, None, "model must be a Seq2Seq"),
        (torch.nn.Linear(2, 2), None, None, "model must be a Seq2Seq"),
        ("m", [], None, "sources and targets must be as many"),
        ("m", None, [], "sources and targets must be as many"),
        ("m", None, "abc", "targets must be a list of str"),
        ("m", [3], None, "sources must be a list of str"),
    ],
)
def test_exact_match_names_bad_arguments(model, sources, targets, match):
    from attnbook.experiments.luong_bahdanau import build_decoder, exact_match

    good = ["3 May 1999", "1999-5-3"]
    model = build_decoder("luong", 0) if model == "m" else model
    sources = good if sources is None else sources
    targets = ["1999-05-03"] * 2 if targets is None else targets
    with pytest.raises((TypeError, ValueError), match=match):
        exact_match(model, sources, targets)
