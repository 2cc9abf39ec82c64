"""Train the book's date translator and ship it with the package.

    # train, evaluate, write attnbook/data/date_translator.pt
    python -m attnbook.train.date_translator
    # evaluate the shipped file only
    python -m attnbook.train.date_translator --check
    # train elsewhere (e.g. to compare digests)
    python -m attnbook.train.date_translator --out /tmp/t.pt

The recipe (``RECIPE``) is fixed: a number of steps, a seed, one CPU thread, so
two runs on one machine write the same file bit for bit (compare the printed
SHA-256). The script prints its wall time, CPU time and steps/s, and the
exact-match accuracy (greedy decoding) on ``EVAL_SIZE`` fresh random dates in
random forms drawn with ``EVAL_SEED``, a seed the training never uses (training
draws every batch from one generator seeded with ``RECIPE['seed']``). After
training, pin the printed digest as ``TRANSLATOR_SHA256`` in
``attnbook/tasks/date_translator.py``.
"""

import hashlib
import io
import time
from importlib import resources
from pathlib import Path

import torch

from .._checks import require_int, require_saved, require_translator
from .._random import keep_global_rng, seeded_generator
from ..measure.parameters import count_parameters
from ..nn.seq2seq import Seq2Seq, train_seq2seq
from ..tasks.date_translator import (
    TRANSLATOR_FILE,
    DateTranslator,
    build_translator_model,
)
from ..tasks.dates import (
    SOURCE_VOCAB,
    TARGET_VOCAB,
    date_batch,
    random_date_pairs,
)
from ._results import training_arguments

RECIPE = {
    "embed_dim": 32,
    "hidden_dim": 64,
    "attn_dim": 64,
    "steps": 800,
    "batch_size": 128,
    "lr": 3e-3,
    "seed": 0,
}
EVAL_SEED = 2026
EVAL_SIZE = 2000


def translator_config(recipe=RECIPE) -> dict:
    require_saved("recipe", recipe, "embed_dim", "hidden_dim", "attn_dim")
    return {
        "src_vocab_size": len(SOURCE_VOCAB),
        "tgt_vocab_size": len(TARGET_VOCAB),
        "embed_dim": recipe["embed_dim"],
        "hidden_dim": recipe["hidden_dim"],
        "attention": True,
        "attn_dim": recipe["attn_dim"],
    }


def date_accuracy(
    translator: DateTranslator,
    size: int = EVAL_SIZE,
    seed: int = EVAL_SEED,
    batch: int = 500,
):
    """(exact-match accuracy, list of (source, target, output) mistakes) on
    ``size`` fresh dates."""
    require_translator(translator)
    require_int("size", size)
    require_int("batch", batch)
    sources, targets = random_date_pairs(size, seeded_generator(seed))
    outputs = []
    for i in range(0, size, batch):
        outputs += translator.translate(sources[i : i + batch])
    wrong = [(s, t, o) for s, t, o in zip(sources, targets, outputs) if t != o]
    return 1 - len(wrong) / size, wrong


def train_date_translator(recipe=RECIPE, log_every: int = 0) -> Seq2Seq:
    """Train a fresh date translator with ``recipe`` (``RECIPE`` by default;
    another seed gives another run of the same recipe); returns the model in
    eval mode.

    The initial weights come from torch's global generator seeded
    ``recipe["seed"]`` (the global random state is restored afterwards), the
    batches from ``date_batch(recipe["batch_size"], g)`` with ``g`` seeded
    the same; training runs on one thread. With ``RECIPE`` this gives the
    shipped weights bit for bit on one machine.
    """
    require_saved("recipe", recipe, "steps", "batch_size", "lr", "seed")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with keep_global_rng():
            torch.manual_seed(recipe["seed"])
            model = Seq2Seq(**translator_config(recipe))
            if log_every:
                print(f"{count_parameters(model):,} parameters", flush=True)
            train_seq2seq(
                model,
                lambda g: date_batch(recipe["batch_size"], g),
                recipe["steps"],
                recipe["lr"],
                recipe["seed"],
                log_every=log_every,
            )
    finally:
        torch.set_num_threads(threads)
    return model.eval()


def serialise(model: Seq2Seq, recipe: dict) -> bytes:
    if not isinstance(model, Seq2Seq):
        raise TypeError(f"model must be a Seq2Seq, got {type(model).__name__}")
    require_saved("recipe", recipe)
    buffer = io.BytesIO()
    torch.save(
        {
            "config": model.config,
            "recipe": dict(recipe),
            "state_dict": {
                k: v.contiguous() for k, v in model.state_dict().items()
            },
        },
        buffer,
    )
    return buffer.getvalue()


def main(argv=None) -> None:
    args, _, _ = training_arguments(argv, __doc__, {}, "train.date_translator")
    torch.set_num_threads(1)
    if args.check:
        from ..tasks.date_translator import pretrained_date_translator

        accuracy, wrong = date_accuracy(pretrained_date_translator())
        print(
            f"accuracy {accuracy:.4f} on {EVAL_SIZE} fresh dates (seed "
            f"{EVAL_SEED}); wrong: {wrong[:10]}"
        )
        return
    recipe = dict(RECIPE)
    print("recipe:", recipe, flush=True)
    wall, cpu = time.perf_counter(), time.process_time()
    model = train_date_translator(recipe, log_every=100)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"training: wall {wall:.1f} s, CPU {cpu:.1f} s, "
        f"{recipe['steps'] / wall:.2f} steps/s (wall), "
        f"{recipe['steps'] / cpu:.2f} steps/s (CPU)",
        flush=True,
    )
    data = serialise(model, recipe)
    out = args.out or Path(
        str(resources.files("attnbook") / "data" / TRANSLATOR_FILE)
    )
    out.write_bytes(data)
    print(
        f"wrote {out} ({len(data):,} bytes), SHA-256 "
        f"{hashlib.sha256(data).hexdigest()}"
    )
    check = build_translator_model(**model.config)
    check.load_state_dict(model.state_dict())
    accuracy, wrong = date_accuracy(DateTranslator(check))
    print(
        f"accuracy {accuracy:.4f} on {EVAL_SIZE} fresh dates (seed {EVAL_SEED}"
        f"); wrong: {wrong[:10]}"
    )


if __name__ == "__main__":
    main()
