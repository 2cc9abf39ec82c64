"""The chapter-10 explorer (attnbook.widgets.decoder): its view's arguments."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook.tasks.date_transformer import pretrained_date_transformer


@pytest.fixture(scope="module")
def date_transformer():
    return pretrained_date_transformer()


_BAD_VIEW_INTS = [
    True,
    False,
    1.5,
    2.0,
    float("nan"),
    float("inf"),
    -1,
    0,
    "3",
    None,
]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["step", "layer", "width"]),
    st.sampled_from(_BAD_VIEW_INTS + [10**6]),
    st.booleans(),
)
def test_decoder_view_rejects_bad_ints(date_transformer, name, value, clamp):
    from attnbook.widgets.decoder import decoder_view

    legal = (
        (name == "layer" and value == 0 and value is not False)
        or (name == "width" and value == 0 and value is not False)
        or (name == "step" and clamp and value == 10**6)
    )
    if legal:
        decoder_view(
            date_transformer, "3 May 1999", **{name: value, "clamp": clamp}
        )
        return
    with pytest.raises(ValueError, match=name):
        decoder_view(
            date_transformer, "3 May 1999", **{name: value, "clamp": clamp}
        )


@pytest.mark.parametrize("value", ["yes", 1, None, 0.0])
def test_decoder_view_clamp_must_be_a_bool(date_transformer, value):
    from attnbook.widgets.decoder import decoder_view

    with pytest.raises(ValueError, match="clamp"):
        decoder_view(date_transformer, clamp=value)
