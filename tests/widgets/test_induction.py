"""The chapter-14 explorer: the checkpoint view, its figure and builder."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnbook.experiments.head_circuits import (  # noqa: E402
    induction_model_scores,
)
from attnbook.tasks.induction import (  # noqa: E402
    CHECKPOINTS,
    pretrained_induction_models,
)
from attnbook.widgets.induction import (  # noqa: E402
    EXAMPLE,
    example_tokens,
    induction_training_explorer,
    induction_training_view,
    plot_induction_training,
)


@pytest.fixture(scope="module")
def shipped():
    return pretrained_induction_models()


def test_the_example_repeats_its_segment():
    tokens = example_tokens()
    period = EXAMPLE["period"]
    assert tokens.shape == (64,)
    assert torch.equal(tokens[-period:], tokens[-2 * period : -period])


def test_view_follows_the_finished_models_heads(shipped):
    models, history = shipped
    early = induction_training_view(models, history, 0)
    late = induction_training_view(models, history, 3000)
    assert early["heads"] == late["heads"]
    (pl, ph), (il, ih) = late["heads"]
    previous, induction = induction_model_scores(models["two_layer"][3000])
    assert late["scores"] == (
        pytest.approx(float(previous[pl, ph])),
        pytest.approx(float(induction[il, ih])),
    )
    assert late["scores"][1] > 0.7 > early["scores"][1]
    # maps are attention weights: rows sum to one, nothing after the query
    assert torch.allclose(late["maps"].sum(-1), torch.ones(2, 64))
    assert not late["maps"].triu(1).any()


def test_curve_grows_with_the_step(shipped):
    models, history = shipped
    lengths = [
        len(induction_training_view(models, history, s)["curve"][1])
        for s in CHECKPOINTS
    ]
    assert lengths == sorted(lengths) and lengths[0] == 0
    last = induction_training_view(models, history, 3000)
    assert last["curve"][1][0] == pytest.approx(
        sum(history["two_layer"][:25]) / 25
    )


def test_bad_arguments_are_named(shipped):
    models, history = shipped
    with pytest.raises(ValueError, match="step"):
        induction_training_view(models, history, 650)
    with pytest.raises(TypeError, match="models"):
        induction_training_view({}, history, 700)
    with pytest.raises(TypeError, match="history"):
        induction_training_view(models, None, 700)


def test_plot_shows_the_view(shipped):
    models, history = shipped
    view = induction_training_view(models, history, 700)
    fig = plot_induction_training(view)
    loss_ax, previous_ax, induction_ax = fig.axes
    x, y = loss_ax.lines[1].get_data()
    assert list(y) == view["curve"][1]
    assert (previous_ax.images[0].get_array() == view["maps"][0].numpy()).all()
    assert f"{view['scores'][1]:.2f}" in induction_ax.get_title()
    assert "700" in fig._suptitle.get_text()
    plt.close(fig)


def test_builder_redraws_when_the_slider_moves(shipped):
    models, history = shipped
    box = induction_training_explorer(models, history, step=700)
    controls, output = box.children
    slider = controls.children[0]
    before = output.outputs
    slider.value = 3000
    assert output.outputs != before
