"""attnbook.tasks.card_lookup: chapter 4's card lookup task trains as before
without moving the global random state; its questions check their hands."""

import pytest
import torch

from attnbook.tasks import card_lookup as lookup


def test_train_card_lookup_leaves_the_global_rng_and_trains_as_before():
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    model, losses = lookup.train_card_lookup(2, steps=5, batch_size=8, seed=3)
    assert torch.equal(state, torch.random.get_rng_state())
    # the same run with the global generator seeded by hand, as the function always did; here
    # on the default thread count, so the sums may round differently: equal up to a tolerance
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        expected = lookup.CardLookup(2).double()
    generator = torch.Generator().manual_seed(3)
    optimizer = torch.optim.Adam(expected.parameters(), lr=3e-3)
    for _ in range(5):
        loss = lookup.lookup_loss(
            expected, lookup.lookup_batch(8, 1, generator)
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert losses[-1] == pytest.approx(loss.item(), rel=1e-9)
    for a, b in zip(model.parameters(), expected.parameters()):
        assert a.dtype == torch.float64 and torch.allclose(
            a, b, rtol=0, atol=1e-9
        )


def test_hand_questions_checks_its_hands():
    from attnbook.tasks.card_lookup import hand_questions

    colours = torch.tensor([[0, 1, 2, 3, 4, 5]])
    digits = torch.tensor([[0, 1, 2, 3, 4, 5]])
    with pytest.raises(TypeError, match="colour_card"):
        hand_questions(colours, digits, torch.randn(1, 1), torch.tensor([[0]]))
    with pytest.raises(ValueError, match="colours"):
        hand_questions(
            -colours, digits, torch.tensor([[0]]), torch.tensor([[0]])
        )
