"""Bahdanau's and Luong's attention decoders trained side by side on the
date task (chapter 5).

Every run trains one decoder (``DECODERS``) with ``train_seq2seq`` and the
same recipe (``RECIPE``): the same steps, batch size, learning rate and, for
a given seed, the very same batches. Every ``RECIPE["eval_every"]`` steps
it decodes the held-out dates greedily and records the exact-match accuracy.
The held-out dates (``held_out_dates``) are on days that occur in no
training batch of any run, so evaluation data and training data are disjoint.

``python -m attnbook.train.luong_bahdanau`` runs everything and writes
``data/luong_bahdanau.json``; ``luong_bahdanau_results()`` reads it, checked
against the pinned SHA-256.
"""

import json

import torch

from .._checks import (
    require_int,
    require_saved,
    require_text_pairs,
    require_training,
)
from .._random import keep_global_rng
from .._weights import read_pinned
from ..measure.parameters import count_parameters
from ..nn.luong import LuongSeq2Seq
from ..nn.seq2seq import Seq2Seq, train_seq2seq
from ..tasks.dates import (
    SOURCE_VOCAB,
    TARGET_VOCAB,
    date_batch,
    random_date_pairs,
    random_date_targets,
)

LUONG_BAHDANAU_FILE = "luong_bahdanau.json"
LUONG_BAHDANAU_SHA256 = (
    "124c59d806d42d06358b4f59cd91825467fd2b04a76def0665f49a4547d74f52"
)

# Luong's decoder at H = 71 has the Bahdanau model's size to within 1.2 %
# (at H = 64 it would have 17 % fewer parameters).
DECODERS = {
    "bahdanau": {"embed_dim": 32, "hidden_dim": 64, "attn_dim": 64},
    "luong": {"embed_dim": 32, "hidden_dim": 71},
}
RECIPE = {
    "steps": 600,
    "batch_size": 64,
    "lr": 3e-3,
    "seeds": (0, 1, 2),
    "eval_every": 100,
    "eval_size": 1000,
    "eval_seed": 4242,
}


def build_decoder(name: str, seed: int) -> Seq2Seq:
    """A fresh model of decoder ``name``, initialised from ``seed``, without
    touching the global RNG."""
    if name not in DECODERS:
        raise ValueError(f"unknown decoder {name!r}; choose from {DECODERS}")
    require_int("seed", seed, minimum=0)
    sizes = (len(SOURCE_VOCAB), len(TARGET_VOCAB))
    with keep_global_rng():
        torch.manual_seed(seed)
        if name == "bahdanau":
            return Seq2Seq(*sizes, **DECODERS[name])
        return LuongSeq2Seq(*sizes, **DECODERS[name])


def training_targets(seed: int, steps: int, batch_size: int) -> set:
    """The ISO dates of every batch that ``train_seq2seq(..., steps,
    seed=seed)`` draws with ``date_batch(batch_size, g)``, drawn again from
    the same generator."""
    require_training(seed=seed, steps=steps, batch_size=batch_size)
    generator = torch.Generator().manual_seed(seed)
    seen = set()
    for _ in range(steps):
        seen.update(random_date_targets(batch_size, generator))
    return seen


_MAX_ROUNDS = 200  # draws of 1,000 dates before unseen_dates gives up
MOST_UNSEEN = _MAX_ROUNDS * 1000  # the most dates unseen_dates can return


def unseen_dates(size: int, seed: int, seen: set):
    """(sources, targets): the first ``size`` random dates in random forms
    drawn with ``seed`` whose ISO date is not in ``seen``."""
    require_unseen_size(size)
    require_int("seed", seed, minimum=0)
    if not isinstance(seen, (set, frozenset)):
        raise TypeError(f"seen must be a set of ISO dates, got {seen!r:.40}")
    generator = torch.Generator().manual_seed(seed)
    sources, targets = [], []
    for _ in range(_MAX_ROUNDS):
        if len(sources) == size:
            break
        for source, target in zip(*random_date_pairs(1000, generator)):
            if target not in seen and len(sources) < size:
                sources.append(source)
                targets.append(target)
    if len(sources) < size:
        raise ValueError(
            f"found only {len(sources)} of {size} dates outside seen "
            f"({len(seen):,} dates) in {MOST_UNSEEN:,} draws"
        )
    return sources, targets


def require_unseen_size(size) -> int:
    """size: an int from 1 to ``MOST_UNSEEN`` (``unseen_dates`` draws at
    most that many dates)."""
    require_int("size", size)
    if size > MOST_UNSEEN:
        raise ValueError(
            f"size = {size:.3g} is more than the {MOST_UNSEEN:,} dates "
            "unseen_dates draws before it gives up"
        )
    return size


def held_out_dates(recipe=RECIPE):
    """(sources, targets): ``recipe["eval_size"]`` random dates in random
    forms, drawn with ``recipe["eval_seed"]``, on days that no training batch
    of any seed contains."""
    _check_recipe(
        recipe, "seeds", "steps", "batch_size", "eval_size", "eval_seed"
    )
    seen = set().union(
        *(
            training_targets(s, recipe["steps"], recipe["batch_size"])
            for s in recipe["seeds"]
        )
    )
    return unseen_dates(recipe["eval_size"], recipe["eval_seed"], seen)


def exact_match(model: Seq2Seq, sources, targets) -> float:
    """The share of ``sources`` that ``model`` translates (greedily) into
    exactly ``targets``."""
    if not isinstance(model, Seq2Seq):
        raise TypeError(f"model must be a Seq2Seq, got {type(model).__name__}")
    for name, strings in (("sources", sources), ("targets", targets)):
        if not isinstance(strings, (list, tuple)) or not all(
            isinstance(s, str) for s in strings
        ):
            raise TypeError(
                f"{name} must be a list of str, got {strings!r:.40}"
            )
    if not sources or len(sources) != len(targets):
        raise ValueError(
            "sources and targets must be as many and not empty, got "
            f"{len(sources)} and {len(targets)}"
        )
    src, lengths = SOURCE_VOCAB.encode(sources)
    tokens, _ = model.greedy_decode(src, lengths, max_steps=11)
    outputs = TARGET_VOCAB.decode(tokens)
    return sum(o == t for o, t in zip(outputs, targets)) / len(targets)


def run(name: str, seed: int, held_out, recipe=RECIPE) -> dict:
    """Train decoder ``name`` with ``seed`` and record its parameters, its
    loss and its held-out exact match every ``eval_every`` steps."""
    held_out = require_text_pairs("held_out", held_out)
    _check_recipe(recipe, "steps", "batch_size", "lr", "eval_every")
    model = build_decoder(name, seed)
    curve = {}

    def evaluate(step, model):
        if step % recipe["eval_every"] == 0:
            model.eval()
            curve[step] = exact_match(model, *held_out)
            model.train()

    losses = train_seq2seq(
        model,
        lambda g: date_batch(recipe["batch_size"], g),
        steps=recipe["steps"],
        lr=recipe["lr"],
        seed=seed,
        after_step=evaluate,
    )
    return {
        "decoder": name,
        "seed": seed,
        "parameters": count_parameters(model),
        "final_loss": sum(losses[-10:]) / 10,
        "steps": sorted(curve),
        "exact_match": [curve[s] for s in sorted(curve)],
    }


def _check_recipe(recipe, *keys) -> None:
    """``recipe`` a dict with ``keys``, each setting as ``require_training``
    wants it (eval_size and eval_seed: ints)."""
    require_saved("recipe", recipe, *keys)
    training = ("steps", "batch_size", "lr", "eval_every")
    require_training(**{k: recipe[k] for k in keys if k in training})
    for key in ("eval_size", "eval_seed"):
        if key in keys:
            require_int(f'recipe["{key}"]', recipe[key], minimum=0)
    if "seeds" in keys:
        seeds = recipe["seeds"]
        if not isinstance(seeds, (list, tuple)) or not seeds:
            raise TypeError(
                f'recipe["seeds"] must be a list of ints, got {seeds!r:.40}'
            )
        for seed in seeds:
            require_training(seed=seed)


def results_json(records: list, recipe=RECIPE) -> str:
    """The shipped file's text: the recipe, the decoders and every run, with
    accuracies rounded to 4 decimals (a JSON that reads the same
    everywhere)."""
    if not isinstance(records, (list, tuple)):
        raise TypeError(
            f"records must be a list of run() results, got {records!r:.40}"
        )
    for record in records:
        require_saved("each of records", record, "final_loss", "exact_match")
    runs = [
        dict(
            r,
            final_loss=round(r["final_loss"], 4),
            exact_match=[round(a, 4) for a in r["exact_match"]],
        )
        for r in records
    ]
    return (
        json.dumps(
            {"recipe": recipe, "decoders": DECODERS, "runs": runs}, indent=1
        )
        + "\n"
    )


def luong_bahdanau_results() -> dict:
    """The shipped runs: {"recipe", "decoders", "runs": [{"decoder", "seed",
    "parameters", "final_loss", "steps", "exact_match"}, ...]}."""
    return json.loads(read_pinned(LUONG_BAHDANAU_FILE, LUONG_BAHDANAU_SHA256))
