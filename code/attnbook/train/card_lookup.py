"""Train the card-lookup models of chapter 4 and ship them with the package.

    # train, evaluate, write attnbook/data/card_lookup_models.pt
    python -m attnbook.train.card_lookup
    # evaluate the shipped file only
    python -m attnbook.train.card_lookup --check
    # train elsewhere (e.g. to compare digests)
    python -m attnbook.train.card_lookup --out /tmp/c.pt

Each run in ``attnbook.tasks.card_lookup.SHIPPED_RUNS`` is
``train_card_lookup(num_heads, steps, seed=seed)`` with the batch size and
learning rate of ``TRAINING_RECIPE``: float64, one thread, a fixed seed, so two
runs on one machine write the same file bit for bit. On another CPU the
one-head runs end a few percent apart in accuracy (their training never
settles, and Adam turns rounding differences into different steps): that is why
the chapter loads these files instead of training. The script prints each run's
accuracy on 2,000 fresh hands and its time, and stores no timing in the file.
"""

import hashlib
import time
from pathlib import Path

import torch

from .._weights import weights_digest
from ..tasks.card_lookup import (
    CARD_LOOKUP_FILE,
    SHIPPED_RUNS,
    TRAINING_RECIPE,
    CardLookup,
    card_lookup_from,
    lookup_report,
    run_name,
    train_card_lookup,
)
from ._results import training_arguments


def describe(name: str, model: CardLookup) -> str:
    report = lookup_report(model)
    return (
        f"{name}: digit answers {100 * report['digit_accuracy']:.1f}% right, "
        "colour answers "
        f"{100 * report['colour_accuracy']:.1f}% right, weights digest "
        f"{weights_digest(model)}"
    )


def main(argv=None) -> None:
    shared = {
        key: TRAINING_RECIPE[key] for key in ("batch_size", "lr")
    }  # steps and seed: per run
    args, recipe, _ = training_arguments(
        argv, __doc__, shared, "train.card_lookup"
    )
    out = (
        args.out
        or Path(__file__).resolve().parents[1] / "data" / CARD_LOOKUP_FILE
    )
    torch.set_num_threads(1)

    if args.check:
        saved = torch.load(out, weights_only=True)
        for name in saved["models"]:
            print(describe(name, card_lookup_from(saved, name)))
        return

    models, info = {}, {}
    for num_heads, steps, seed in SHIPPED_RUNS:
        name = run_name(num_heads, steps, seed)
        wall, cpu = time.perf_counter(), time.process_time()
        model, losses = train_card_lookup(
            num_heads, steps=steps, seed=seed, threads=1, **recipe
        )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(
            f"{describe(name, model)} ({wall:.1f} s wall, {cpu:.1f} s CPU)",
            flush=True,
        )
        models[name] = model.state_dict()
        info[name] = {
            "num_heads": num_heads,
            "steps": steps,
            "seed": seed,
            **recipe,
            "dtype": "float64",
            "final_loss": sum(losses[-50:]) / 50,
            "torch": str(torch.__version__),
        }
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"models": models, "info": info}, out)
    print(
        f"saved {out} ({out.stat().st_size / 1024:.0f} KiB); SHA-256 (pin it "
        "as CARD_LOOKUP_SHA256 in "
        "attnbook/tasks/card_lookup.py when shipping it): "
        f"{hashlib.sha256(out.read_bytes()).hexdigest()}"
    )


if __name__ == "__main__":
    main()
