"""The chapter-5 explorer (attnbook.widgets.seq2seq): its view's arguments."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook.tasks.date_translator import pretrained_date_translator


@pytest.fixture(scope="module")
def date_translator():
    return pretrained_date_translator()


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


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(_BAD_VIEW_INTS), st.booleans())
def test_seq2seq_view_rejects_bad_steps(
    date_translator, value, with_translator
):
    from attnbook.widgets.seq2seq import seq2seq_view

    kwargs = {"translator": date_translator} if with_translator else {}
    with pytest.raises(ValueError, match="step"):
        seq2seq_view("3 May 1999", step=value, **kwargs)


def test_seq2seq_view_still_clamps_a_step_past_the_end(date_translator):
    from attnbook.widgets.seq2seq import seq2seq_view

    assert (
        seq2seq_view("3 May 1999", step=99, translator=date_translator)["step"]
        == 10
    )
