"""Chapter 4's head ablation (tasks.card_lookup.without_heads) and the
shipped head-count sweep (experiments.head_count)."""

import pytest
import torch

from attnbook._weights import weights_digest
from attnbook.experiments.head_count import (
    HEAD_COUNTS,
    SEEDS,
    head_sweep_results,
    sweep_table,
)
from attnbook.tasks.card_lookup import (
    CardLookup,
    lookup_batch,
    lookup_report,
    trained_card_lookup,
    without_heads,
)


def _outputs(model, batch):
    return model(
        batch["card_colours"],
        batch["card_digits"],
        batch["ask_colour"],
        batch["ask_digit"],
    )


def _small_model(num_heads=4):
    torch.manual_seed(0)
    return CardLookup(num_heads, embed_dim=8).double().eval()


def test_removing_no_head_changes_nothing():
    model = _small_model()
    batch = lookup_batch(5, 3, torch.Generator().manual_seed(0))
    for got, expected in zip(
        _outputs(without_heads(model, []), batch), _outputs(model, batch)
    ):
        assert torch.equal(got, expected)


def test_removing_a_head_drops_exactly_its_term():
    """The attention output without head i is the full output minus head
    i's term head_i W^O_i, computed here from the weights and values."""
    model = _small_model()
    batch = lookup_batch(5, 3, torch.Generator().manual_seed(1))
    layer = model.attention
    cards = model.card_colour(batch["card_colours"]) + model.card_digit(
        batch["card_digits"]
    )
    questions = model.ask_colour(batch["ask_colour"]) + model.ask_digit(
        batch["ask_digit"]
    )
    with torch.no_grad():
        full, weights = layer(questions, cards, cards)
        _, _, values = layer.project(questions, cards, cards)
        values = values.unflatten(-1, (layer.num_heads, -1)).transpose(1, 2)
        head_out = weights @ values  # (B, h, n_q, d_k)
        size = layer.head_dim
        for head in range(layer.num_heads):
            block = layer.out_proj.weight[:, head * size : (head + 1) * size]
            expected = full - head_out[:, head] @ block.T
            ablated = without_heads(model, [head]).attention
            got, got_weights = ablated(questions, cards, cards)
            assert torch.allclose(got, expected, atol=1e-12)
            assert torch.equal(got_weights, weights)


def test_without_heads_leaves_the_model_and_the_global_rng_alone():
    model = _small_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    state = torch.get_rng_state()
    without_heads(model, [0, 2])
    assert torch.equal(torch.get_rng_state(), state)
    for key, value in model.state_dict().items():
        assert torch.equal(value, before[key])


@pytest.mark.parametrize(
    "heads, error",
    [([4], ValueError), ([-1], ValueError), ([True], ValueError),
     (0, TypeError), ("0", TypeError), (torch.tensor([0]), TypeError)],
)  # fmt: skip
def test_without_heads_refuses_bad_heads(heads, error):
    with pytest.raises(error, match="head"):
        without_heads(_small_model(), heads)


def test_without_heads_refuses_other_models():
    with pytest.raises(TypeError, match="CardLookup"):
        without_heads(torch.nn.Linear(2, 2), [0])


def test_removing_both_heads_of_the_two_head_model_leaves_chance():
    report = lookup_report(without_heads(trained_card_lookup(2), [0, 1]))
    assert report["digit_accuracy"] < 0.3
    assert report["colour_accuracy"] < 0.3


def test_the_shipped_sweep_covers_every_run_and_matches_the_models():
    results = head_sweep_results()
    runs = {(r["num_heads"], r["seed"]): r for r in results["runs"]}
    assert set(runs) == {(h, s) for h in HEAD_COUNTS for s in SEEDS}
    for (h, _), run in runs.items():
        assert run["head_dim"] * h == results["embed_dim"]
        assert len(run["ablated"]) == h
    # seed 0 with 1, 2 and 4 heads is the chapter's shipped model, bit for bit
    for h in (1, 2, 4):
        assert runs[(h, 0)]["weights_digest"] == weights_digest(
            trained_card_lookup(h)
        )
        report = lookup_report(trained_card_lookup(h))
        assert runs[(h, 0)]["digit_accuracy"] == report["digit_accuracy"]


def test_sweep_table_takes_the_worst_single_removal():
    results = {
        "runs": [
            {
                "num_heads": 2,
                "seed": 0,
                "digit_accuracy": 1.0,
                "colour_accuracy": 0.5,
                "ablated": [[1.0, 0.2], [0.4, 0.5]],
            }
        ]
    }
    assert sweep_table(results) == {2: [(0.75, 0.45)]}
    with pytest.raises(TypeError, match="runs"):
        sweep_table([])


def test_draw_head_sweep_checks_embed_dim():
    from attnbook.display.head_sweep import draw_head_sweep

    for embed_dim in (None, "3", 0):
        with pytest.raises(ValueError, match="embed_dim"):
            draw_head_sweep({1: [(0.5, 0.1)]}, embed_dim=embed_dim)


def test_card_lookup_checks_its_inputs_on_forwards_first_line():
    # no forward pre-hook: forward itself refuses bad ids, also when it is
    # called directly rather than through model(...)
    model = _small_model()
    assert not model._forward_pre_hooks
    batch = lookup_batch(2, 3, torch.Generator().manual_seed(0))
    cards = batch["card_colours"], batch["card_digits"]
    with pytest.raises(ValueError, match="ask_digit"):
        model.forward(*cards, batch["ask_colour"], batch["ask_digit"] + 10)
    with pytest.raises(ValueError, match="match in pairs"):
        model.forward(*cards, batch["ask_colour"], batch["ask_digit"][:, :2])
