"""Chapter 5's Luong decoder, the Luong-Bahdanau experiment's helpers, the
intervention on attention maps and train_seq2seq's after_step hook."""

import pytest
import torch

from attnbook.experiments import luong_bahdanau
from attnbook.measure.intervention import (
    attention_intervention,
    swap_character,
)
from attnbook.nn.luong import LuongSeq2Seq
from attnbook.nn.seq2seq import Seq2Seq, train_seq2seq
from attnbook.tasks.copying import copy_batch
from attnbook.tasks.date_translator import pretrained_date_translator
from attnbook.tasks.dates import date_batch, random_date_pairs


def tiny_luong():
    torch.manual_seed(0)
    return LuongSeq2Seq(13, 13, embed_dim=4, hidden_dim=3).eval()


def test_luong_step_is_rnn_first_then_general_attention():
    """s_t = GRU(y_{t-1}, s_{t-1}); alpha = softmax(s_t^T W_a e_j) over real
    tokens; logits = W_o tanh(W_c [c_t; s_t])."""
    model = tiny_luong()
    src, lengths, tgt_in, _ = copy_batch(
        2, torch.tensor([5, 3]), torch.Generator().manual_seed(1)
    )
    with torch.no_grad():
        logits, weights = model(src, lengths, tgt_in)
        E, summary, keep = model.encode(src, lengths)
        s = torch.tanh(model.init_state(summary))
        W_a = model.score.weight.T  # (H, 2H)
        for t in range(tgt_in.shape[1]):
            s = model.cell(model.tgt_embed(tgt_in[:, t]), s)
            scores = torch.einsum("bh,hk,bnk->bn", s, W_a, E)
            scores = scores.masked_fill(~keep, float("-inf"))
            alpha = scores.softmax(-1)
            torch.testing.assert_close(weights[:, t], alpha)
            c = torch.einsum("bn,bnd->bd", alpha, E)
            h = torch.tanh(model.combine(torch.cat([c, s], -1)))
            torch.testing.assert_close(logits[:, t], model.out(h))


def test_luong_is_a_seq2seq_that_trains_and_decodes():
    model = tiny_luong()
    assert isinstance(model, Seq2Seq) and model.uses_attention
    assert model.config["decoder"] == "luong"

    def batch(g):
        return copy_batch(8, 4, g)

    losses = train_seq2seq(model, batch, steps=30, lr=1e-2, seed=0)
    assert losses[-1] < losses[0]
    src, lengths, _, _ = copy_batch(3, 4, torch.Generator().manual_seed(2))
    tokens, weights = model.greedy_decode(src, lengths, max_steps=5)
    assert tokens.shape[0] == 3 and weights.shape[:2] == tokens.shape
    rows = weights.sum(-1)
    assert torch.allclose(rows[rows > 0], torch.ones(()))


def test_luong_step_refuses_a_state_of_the_wrong_size():
    model = tiny_luong()
    src, lengths, _, _ = copy_batch(2, 4, torch.Generator().manual_seed(1))
    E, summary, keep = model.encode(src, lengths)
    with pytest.raises(ValueError, match="state"):
        model.step(
            torch.ones(2, dtype=torch.long),
            torch.zeros(2, 5),
            E,
            summary,
            keep,
        )


def test_after_step_sees_every_step_and_a_bad_hook_is_refused():
    torch.manual_seed(0)
    model = Seq2Seq(13, 13, embed_dim=4, hidden_dim=3, attn_dim=5)
    seen = []
    train_seq2seq(
        model,
        lambda g: copy_batch(4, 3, g),
        steps=5,
        after_step=lambda step, m: seen.append((step, m is model)),
    )
    assert seen == [(i, True) for i in range(1, 6)]
    with pytest.raises(TypeError, match="after_step"):
        train_seq2seq(
            model, lambda g: copy_batch(4, 3, g), steps=2, after_step=3
        )


def test_training_targets_are_the_batches_train_seq2seq_draws():
    drawn = []

    def batch(g):
        state = g.get_state()
        sources, targets = random_date_pairs(16, g)
        drawn.extend(targets)
        g.set_state(state)
        return date_batch(16, g)

    torch.manual_seed(0)
    model = Seq2Seq(98, 14, embed_dim=4, hidden_dim=3, attn_dim=3)
    train_seq2seq(model, batch, steps=3, seed=7)
    assert luong_bahdanau.training_targets(7, 3, 16) == set(drawn)


def test_unseen_dates_avoid_the_seen_ones():
    seen = luong_bahdanau.training_targets(0, 20, 64)
    sources, targets = luong_bahdanau.unseen_dates(300, 5, seen)
    assert len(sources) == len(targets) == 300
    assert not set(targets) & seen
    again = luong_bahdanau.unseen_dates(300, 5, seen)
    assert again == (sources, targets)


def test_the_held_out_dates_are_disjoint_from_every_training_run():
    recipe = dict(luong_bahdanau.RECIPE, steps=30, eval_size=200)
    _, targets = luong_bahdanau.held_out_dates(recipe)
    for seed in recipe["seeds"]:
        seen = luong_bahdanau.training_targets(seed, 30, recipe["batch_size"])
        assert not set(targets) & seen


def test_build_decoder_matches_parameters_and_keeps_the_global_rng():
    state = torch.get_rng_state()
    bahdanau = luong_bahdanau.build_decoder("bahdanau", 0)
    luong = luong_bahdanau.build_decoder("luong", 0)
    assert torch.equal(state, torch.get_rng_state())
    count = [sum(p.numel() for p in m.parameters()) for m in (bahdanau, luong)]
    assert abs(count[1] - count[0]) / count[0] < 0.015
    with pytest.raises(ValueError, match="unknown decoder"):
        luong_bahdanau.build_decoder("concat", 0)


def test_a_short_run_records_its_curve():
    recipe = dict(luong_bahdanau.RECIPE, steps=4, eval_every=2, batch_size=8)
    held_out = (["3 May 1999", "1999-5-3"], ["1999-05-03", "1999-05-03"])
    record = luong_bahdanau.run("luong", 1, held_out, recipe)
    assert record["steps"] == [2, 4]
    assert all(0 <= a <= 1 for a in record["exact_match"])
    text = luong_bahdanau.results_json([record], recipe)
    assert '"decoder": "luong"' in text


def test_swap_character_changes_digits_and_letters_only():
    assert swap_character("3 May 1999", 0) == "8 May 1999"
    assert swap_character("3 May 1999", 2) == "3 Zay 1999"
    assert swap_character("3 May 1999", 3) == "3 Mny 1999"
    assert swap_character("3 May 1999", 1) is None
    assert swap_character("1999-5-3", 4) is None
    with pytest.raises(ValueError, match="outside"):
        swap_character("abc", 3)
    with pytest.raises(TypeError, match="text"):
        swap_character(123, 0)


@pytest.fixture(scope="module")
def translator():
    return pretrained_date_translator()


def test_intervention_on_the_translator_reads_the_year(translator):
    texts = ["3 May 1999", "Monday, May 3, 1999", "03.05.2041"]
    records = attention_intervention(translator, texts, [2, 3])
    assert len(records) == 6
    for r in records:
        assert r["weight_attended"] >= r["weight_ignored"]
        assert r["text"][r["attended"]].isdigit()
        # the third and fourth year digits are copied: swapping the digit
        # they read changes them, swapping what they ignore does not
        assert r["changed_attended"] and not r["changed_ignored"]


def test_intervention_skips_rows_that_read_punctuation():
    class Fixed:
        def translate(self, texts, return_weights=False):
            outs = ["ab" for _ in texts]
            if not return_weights:
                return outs
            w = torch.tensor([[0.1, 0.8, 0.1], [0.7, 0.1, 0.2]])
            return outs, [w for _ in texts]

    records = attention_intervention(Fixed(), ["a-b"], [0, 1])
    assert [r["row"] for r in records] == [1]
    assert records[0]["attended"] == 0 and records[0]["ignored"] == 2


def test_the_shipped_comparison_matches_its_recipe():
    results = luong_bahdanau.luong_bahdanau_results()
    recipe = dict(results["recipe"], seeds=tuple(results["recipe"]["seeds"]))
    assert recipe == luong_bahdanau.RECIPE
    assert results["decoders"] == luong_bahdanau.DECODERS
    runs = {(r["decoder"], r["seed"]) for r in results["runs"]}
    assert runs == {
        (d, s) for d in luong_bahdanau.DECODERS for s in recipe["seeds"]
    }
    steps = list(range(100, 601, 100))
    for r in results["runs"]:
        assert r["steps"] == steps and len(r["exact_match"]) == len(steps)
        model = luong_bahdanau.build_decoder(r["decoder"], r["seed"])
        assert r["parameters"] == sum(p.numel() for p in model.parameters())


def test_a_refused_luong_model_leaves_the_global_rng():
    state = torch.get_rng_state()
    with pytest.raises((TypeError, ValueError)):
        LuongSeq2Seq(13, 13, embed_dim=4, hidden_dim=0)
    assert torch.equal(state, torch.get_rng_state())


def test_unseen_dates_gives_up_when_every_day_was_seen():
    every = set(random_date_pairs(1, torch.Generator().manual_seed(0))[1])
    with pytest.raises(TypeError, match="seen"):
        luong_bahdanau.unseen_dates(3, 0, list(every))
    luong_bahdanau._MAX_ROUNDS, saved = 2, luong_bahdanau._MAX_ROUNDS
    try:
        many = luong_bahdanau.training_targets(0, 400, 256)  # most days
        with pytest.raises(ValueError, match="found only"):
            luong_bahdanau.unseen_dates(10**5, 0, many)
    finally:
        luong_bahdanau._MAX_ROUNDS = saved


def test_intervention_refuses_a_string_and_a_translator_without_translate(
    translator,
):
    with pytest.raises(TypeError, match="list of strings"):
        attention_intervention(translator, "3 May 1999", [0])
    with pytest.raises(TypeError, match="translate"):
        attention_intervention(object(), ["3 May 1999"], [0])
    with pytest.raises(ValueError, match="row"):
        attention_intervention(translator, ["3 May 1999"], [-1])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: luong_bahdanau.unseen_dates(10**12, 0, set()), "size"),
        (lambda: luong_bahdanau.held_out_dates({}), "recipe"),
        (lambda: luong_bahdanau.held_out_dates(None), "recipe"),
        (lambda: luong_bahdanau.run("luong", 0, None), "held_out"),
        (lambda: luong_bahdanau.run("luong", 0, ([], [])), "held_out"),
        (lambda: luong_bahdanau.run("luong", 0, (["a"], ["b"]), {}), "recipe"),
        (lambda: luong_bahdanau.results_json(None), "records"),
        (lambda: luong_bahdanau.results_json([None]), "records"),
    ],
)
def test_the_experiment_refuses_bad_input_by_name(call, message):
    """Probe findings (deep errors, and a size that drew 200,000 dates
    before failing): refused at once, naming the argument."""
    with pytest.raises((TypeError, ValueError), match=message):
        call()
