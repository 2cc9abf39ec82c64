"""Evaluation data are disjoint from training data: chapter 4's held-out
hands and chapter 14's evaluation sequences never occur in the training
streams of the shipped models (the streams are rebuilt from their seeds)."""

import torch

from attnbook._random import seeded_generator
from attnbook.experiments.head_count import HEAD_COUNTS, SEEDS
from attnbook.tasks.card_lookup import (
    SHIPPED_RUNS,
    TRAINING_RECIPE,
    lookup_batch,
)
from attnbook.tasks.induction import TASK, repeated_batch
from attnbook.tasks.induction import TRAINING_RECIPE as INDUCTION_RECIPE


def hands(batch: dict) -> set:
    """Each example (hand and question) as a tuple."""
    fields = ("card_colours", "card_digits", "colour_card", "digit_card")
    rows = torch.cat([batch[name].flatten(1) for name in fields], dim=1)
    return set(map(tuple, rows.tolist()))


def test_card_lookup_held_out_hands_are_never_training_hands():
    # lookup_report's 2,000 hands: one batch drawn with seed 1
    held_out = hands(lookup_batch(2000, 1, seeded_generator(1)))
    runs = set(SHIPPED_RUNS) | {
        (h, 600, seed) for h in HEAD_COUNTS for seed in SEEDS
    }
    for steps, seed in sorted({(steps, seed) for _, steps, seed in runs}):
        generator = seeded_generator(seed)
        seen = set()
        for _ in range(steps):
            batch = lookup_batch(TRAINING_RECIPE["batch_size"], 1, generator)
            seen |= hands(batch)
        assert held_out.isdisjoint(seen), (steps, seed)


def test_induction_evaluation_sequences_are_never_training_sequences():
    def stream(seed: int, batches: int, batch_size: int) -> set:
        generator = torch.Generator().manual_seed(seed)
        seen = set()
        for _ in range(batches):
            tokens, _ = repeated_batch(
                batch_size, TASK["period"], TASK["seq_len"],
                TASK["vocab_size"], generator, "random",
            )  # fmt: skip
            seen |= set(map(tuple, tokens.tolist()))
        return seen

    # training: generator seeded seed + 1; evaluate(): seed 12345, 8 x 64
    training = stream(
        INDUCTION_RECIPE["seed"] + 1,
        INDUCTION_RECIPE["steps"],
        INDUCTION_RECIPE["batch_size"],
    )
    assert stream(12345, 8, 64).isdisjoint(training)
