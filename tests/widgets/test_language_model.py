"""The chapter-12 explorer: the decoding view, its figure and its builder."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnbook.tasks.language_model import pretrained_language_model  # noqa: E402
from attnbook.tasks.text import VOCAB  # noqa: E402
from attnbook.widgets.language_model import (  # noqa: E402
    PROMPTS,
    SAMPLE_LENGTH,
    SHOWN,
    decoding_explorer,
    decoding_view,
    plot_decoding,
    visible,
)


@pytest.fixture(scope="module")
def lm():
    return pretrained_language_model()


def test_view_shows_the_models_most_likely_characters(lm):
    view = decoding_view(lm, PROMPTS[1])
    probs = lm.next_char_distribution(PROMPTS[1])
    best = [VOCAB[i] for i in probs.topk(SHOWN).indices.tolist()]
    assert view["chars"] == best
    assert view["model"] == pytest.approx(sorted(view["model"], reverse=True))
    # temperature 1 and no filter: the sampled distribution is the model's
    assert view["sampled"] == pytest.approx(view["model"])
    assert view["kept"] == len(VOCAB)


@pytest.mark.parametrize(
    "setting, kept",
    [
        (dict(temperature=0), 1),
        (dict(top_k=3), 3),
        (dict(temperature=0.5, top_k=10), 10),
    ],
)
def test_view_counts_what_the_setting_keeps(lm, setting, kept):
    view = decoding_view(lm, PROMPTS[0], **setting)
    assert view["kept"] == kept
    shown = sum(p > 0 for p in view["sampled"])
    assert shown == kept  # the kept characters are among the most likely
    assert sum(view["sampled"]) == pytest.approx(1.0, abs=1e-5)


def test_top_p_keeps_the_smallest_set_that_reaches_p(lm):
    view = decoding_view(lm, PROMPTS[1], top_p=0.5)
    model = torch.tensor(view["model"])
    k = view["kept"]
    assert model[:k].sum() >= 0.5 > model[: k - 1].sum()


def test_view_writes_the_same_text_for_the_same_seed(lm):
    a = decoding_view(lm, PROMPTS[2], temperature=1.0, seed=3)
    b = decoding_view(lm, PROMPTS[2], temperature=1.0, seed=3)
    assert a["continuation"] == b["continuation"]
    assert len(a["continuation"]) == SAMPLE_LENGTH
    greedy = decoding_view(lm, PROMPTS[2], temperature=0)
    assert greedy["continuation"] == lm.generate(
        PROMPTS[2], SAMPLE_LENGTH, temperature=0
    )


def test_view_leaves_the_global_rng_alone(lm):
    before = torch.get_rng_state()
    decoding_view(lm, PROMPTS[0], temperature=1.5, top_p=0.9, seed=5)
    assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(prompt=""), ValueError, "prompt"),
        (dict(prompt=3), ValueError, "prompt"),
        (dict(temperature=-1.0), ValueError, "temperature"),
        (dict(top_k=0), ValueError, "top_k"),
        (dict(top_p=1.5), ValueError, "top_p"),
        (dict(seed=-1), ValueError, "seed"),
    ],
)
def test_view_refuses_bad_settings(lm, kwargs, error, name):
    with pytest.raises(error, match=name):
        decoding_view(lm, **kwargs)


def test_plot_shows_the_view(lm):
    view = decoding_view(lm, PROMPTS[1], top_k=3)
    fig = plot_decoding(view)
    (ax,) = fig.axes
    model_bars, sampled_bars = ax.containers
    heights = [bar.get_height() for bar in sampled_bars]
    assert heights == pytest.approx(view["sampled"])
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == [visible(c) for c in view["chars"]]
    assert "3 of 96" in ax.get_title()
    plt.close(fig)


def test_visible_marks_spaces_and_newlines():
    assert visible("a b\nc") == "a\u2423b\u23cec"


def test_builder_redraws_when_a_control_moves(lm):
    box = decoding_explorer(lm, prompt=PROMPTS[1])
    controls, output = box.children
    prompt, temperature, top_k, top_p = controls.children
    assert prompt.value == PROMPTS[1] and top_k.value == 0
    before = output.outputs
    top_k.value = 3
    assert output.outputs != before
