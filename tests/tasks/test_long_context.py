"""attnbook.tasks.long_context: chapter 15's lookup task, its loss,
accuracy and fine-tuning helpers."""

import pytest
import torch


def test_finetune_rope_names_both_sizes_of_a_model_of_another_size():
    from attnbook.nn.position_schemes import PositionSchemeTransformer
    from attnbook.tasks.long_context import finetune_rope

    torch.manual_seed(0)
    small = PositionSchemeTransformer("rope", 10, 8, 2, 1, max_len=16)
    state = torch.get_rng_state()
    with pytest.raises(
        ValueError, match=r"'embed_dim': 8.*'embed_dim': 64"
    ) as error:
        finetune_rope(small, "linear", steps=0)
    assert "'vocab_size': 10" in str(error.value)
    assert torch.equal(torch.get_rng_state(), state)


def test_lookup_loss_refuses_a_batch_with_nothing_predictable():
    from attnbook.tasks.long_context import lookup_loss

    logits, tokens = torch.randn(2, 8, 5), torch.randint(0, 5, (2, 8))
    nothing = torch.zeros(2, 8, dtype=torch.bool)
    with pytest.raises(ValueError, match="predictable marks no token"):
        lookup_loss(logits, tokens, nothing)
    some = nothing.clone()
    some[:, 4:] = True
    assert torch.isfinite(lookup_loss(logits, tokens, some))


def test_the_lab_accuracy_takes_a_function_of_the_tokens():
    # chapter 15 measures a model under an intervention through a wrapper
    from attnbook.tasks import long_context

    def constant(tokens):
        return torch.zeros(*tokens.shape, long_context.TASK["vocab_size"])

    accuracy = long_context.accuracy(constant, 64, batches=1, batch_size=2)
    assert 0.0 <= accuracy <= 1.0


def test_the_lab_accuracy_bounds_its_evaluation_tokens():
    from attnbook.tasks import long_context

    with pytest.raises(ValueError, match="the evaluation tokens of shape"):
        long_context.accuracy(torch.nn.Identity(), 64, batches=10**12)
    with pytest.raises(TypeError, match="lengths must be a sequence"):
        long_context.accuracy_by_length(torch.nn.Identity(), None)
