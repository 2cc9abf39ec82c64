"""Chapter 5's quick date model: the shipped weights and loss log, and a
prefix of the recipe recomputed."""

import pytest
import torch

from attnbook.nn.seq2seq import Seq2Seq, train_seq2seq
from attnbook.tasks.dates import date_batch
from attnbook.train import quick_date_model
from attnbook.train.quick_date_model import (
    RECIPE,
    pretrained_quick_model,
    quick_model,
    train_quick_model,
)


def test_shipped_file_holds_the_model_and_every_loss():
    model, losses = pretrained_quick_model()
    assert isinstance(model, Seq2Seq) and not model.training
    assert len(losses) == RECIPE["steps"] == 100
    # the chapter's numbers: about ln 14 at step 1, 0.50 over the last 10
    assert round(losses[0], 2) == 2.61
    assert round(sum(losses[-10:]) / 10, 2) == 0.50
    assert sum(p.numel() for p in model.parameters()) == 108_366


def test_a_prefix_recomputes_the_shipped_losses():
    _, shipped = pretrained_quick_model()
    model, losses = train_quick_model(3)
    assert len(losses) == 3
    # float32 on one thread: equal here; within 1e-4 on any SIMD level
    assert losses == pytest.approx(shipped[:3], abs=1e-4)
    assert model.training is False


@pytest.mark.parametrize("steps", [0, 101, 2.0])
def test_train_quick_model_refuses_other_step_counts(steps):
    with pytest.raises(ValueError, match="steps"):
        train_quick_model(steps)


def test_stop_after_takes_the_first_steps_of_the_same_run():
    def run(**kwargs):
        torch.manual_seed(0)
        model = Seq2Seq(98, 14, embed_dim=4, hidden_dim=8, attn_dim=6)
        return train_seq2seq(
            model, lambda g: date_batch(4, g), steps=5, seed=1, **kwargs
        )

    assert run(stop_after=2) == run()[:2]
    assert len(run(stop_after=5)) == 5


@pytest.mark.parametrize(
    "stop_after, error, match",
    [
        (6, ValueError, "at most steps = 5"),
        (0, ValueError, "stop_after"),
        (1.5, ValueError, "stop_after"),
    ],
)
def test_stop_after_refuses_bad_values(stop_after, error, match):
    model = Seq2Seq(98, 14, embed_dim=4, hidden_dim=8, attn_dim=6)
    with pytest.raises(error, match=match):
        train_seq2seq(
            model,
            lambda g: date_batch(4, g),
            steps=5,
            stop_after=stop_after,
        )


def test_quick_model_is_the_chapter_initialisation():
    state = torch.random.get_rng_state()
    model = quick_model()
    assert torch.equal(torch.random.get_rng_state(), state)
    torch.manual_seed(0)
    again = Seq2Seq(98, 14, embed_dim=32, hidden_dim=64, attn_dim=64)
    for a, b in zip(model.parameters(), again.parameters()):
        assert torch.equal(a, b)


def test_damaged_digest_is_refused(monkeypatch):
    monkeypatch.setattr(quick_date_model, "QUICK_MODEL_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        pretrained_quick_model()


def test_script_writes_a_loadable_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(RECIPE, "steps", 2)
    out = tmp_path / "quick.pt"
    quick_date_model.main(["--out", str(out)])
    saved = torch.load(out, weights_only=True)
    assert saved["losses"].shape == (2,)
    assert "SHA-256" in capsys.readouterr().out
