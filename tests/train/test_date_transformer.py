"""attnbook.train.date_transformer: the training's settings are checked
before it trains."""

import pytest

from _refusals import refused


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(steps="3"), "steps"),
        (dict(lr=None), "lr"),
        (dict(batch_size=0), "batch_size"),
        (dict(warmup=None), "warmup"),
        (dict(seed=None), "seed"),
    ],
)
def test_train_date_transformer_refuses_bad_settings(kwargs, match):
    from attnbook.train.date_transformer import train_date_transformer

    call = {"steps": 1, "batch_size": 2, "lr": 1e-3, "warmup": 1, "seed": 0}
    call.update(kwargs)
    refused(lambda: train_date_transformer(**call), ValueError, match)
