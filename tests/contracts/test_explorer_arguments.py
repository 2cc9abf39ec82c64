"""Every explorer's view refuses bad arguments with a ValueError that names
them, and a model of another kind."""

import pytest
import torch

pytest.importorskip("ipywidgets")

from attnbook.tasks.date_transformer import pretrained_date_transformer
from attnbook.widgets import (
    basics,
    chunked,
    multihead,
    positional,
    scoring,
    self_attention,
    soft_hard,
)
from attnbook.widgets import pointer as pointer_widget

NOT_INTS = [True, False, 1.5, float("nan"), float("inf"), "3", None]


VIEW_ARGUMENTS = {
    "kernel_regression_view": (
        basics.kernel_regression_view,
        {
            "n_train": NOT_INTS + [0, -1],
            "seed": NOT_INTS + [-1],
            "bandwidth": [0.0, -1.0, float("nan"), float("inf"), True, None],
        },
    ),
    "chunked_view": (
        chunked.chunked_view,
        {
            "n": NOT_INTS + [0, 10**9],
            "chunk_size": NOT_INTS + [0],
            "d": NOT_INTS + [0, -1],
            "seed": NOT_INTS + [-1],
        },
    ),
    "multihead_view": (
        multihead.multihead_view,
        {"num_heads": NOT_INTS + [3, 0], "head": NOT_INTS + [0, 3]},
    ),
    "positional_view": (
        positional.positional_view,
        {
            "position": NOT_INTS + [-1, 64],
            "delta": NOT_INTS + [60],
            "dim": NOT_INTS + [0, 3],
            "base": [0.0, float("nan"), True, None],
            "num_positions": NOT_INTS + [0],
        },
    ),
    "scoring_view": (
        scoring.scoring_view,
        {
            "dim": NOT_INTS + [0],
            "scaled": [1, None, "yes"],
            "temperature": [0.0, -1.0, float("nan"), float("inf"), True],
        },
    ),
    "self_attention_view": (
        self_attention.self_attention_view,
        {
            "token": NOT_INTS + [-1, 6],
            "positions": [1, None, "yes"],
            "dim": NOT_INTS + [0],
            "seed": NOT_INTS + [-1],
            "sentence": [None, 3, ""],
        },
    ),
    "soft_hard_view": (
        soft_hard.soft_hard_view,
        {
            "angle": [float("nan"), float("inf"), True, None],
            "length": [0.0, -1.0, float("nan"), True],
            "n_samples": NOT_INTS + [0],
            "seed": NOT_INTS + [-1],
        },
    ),
    "pointer_view": (
        pointer_widget.pointer_view,
        {"text": [None, 3, "", "1e39, 2", "nan", "a, b"]},
    ),
}


VIEW_CASES = [
    (view, name, value)
    for view, (_, arguments) in VIEW_ARGUMENTS.items()
    for name, values in arguments.items()
    for value in values
]


@pytest.mark.parametrize(
    "view, name, value",
    VIEW_CASES,
    ids=[f"{v}-{n}-{x!r}" for v, n, x in VIEW_CASES],
)
def test_views_refuse_bad_arguments_with_a_value_error(view, name, value):
    function = VIEW_ARGUMENTS[view][0]
    with pytest.raises(ValueError):
        function(**{name: value})


def test_views_refuse_a_model_of_another_kind():
    from attnbook.widgets.transformer import cls_attention_view

    for bad in (None, object(), torch.nn.Linear(2, 2)):
        with pytest.raises(ValueError, match="model must be"):
            cls_attention_view(bad)
        with pytest.raises(ValueError, match="model must be"):
            pointer_widget.pointer_view(
                model=bad if bad is not None else object()
            )


@pytest.fixture(scope="module")
def date_transformer():
    return pretrained_date_transformer()


@pytest.mark.parametrize(
    "text", ["", "1" * 200, "3 Mai 1999\u20ac", None, 3, ["3 May 1999"]]
)
def test_views_reject_bad_text(date_transformer, text):
    from attnbook.widgets.decoder import decoder_view
    from attnbook.widgets.seq2seq import seq2seq_view

    with pytest.raises((ValueError, TypeError)):
        seq2seq_view(text)
    with pytest.raises((ValueError, TypeError)):
        decoder_view(date_transformer, text)
