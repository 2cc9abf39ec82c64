"""Train chapter 5's two copying models, with and without attention, and ship
them.

    # train both, write attnbook/data/bottleneck_models.pt
    python -m attnbook.train.bottleneck
    python -m attnbook.train.bottleneck --out /tmp/b.pt

Task: copy a string of random digits, length 4 to 30. Both models are
``Seq2Seq`` GRU encoder-decoders of about the same size
(``BOTTLENECK_MODELS``), trained with the same recipe (``RECIPE``): the same
number of steps, the same batches (one generator, one seed), one CPU thread, so
two runs write the same file bit for bit. Every batch has one length, drawn
uniformly from 4 to 30. The script prints each model's parameters, wall time
and exact-match accuracy per length; the chapter evaluates the shipped weights
itself.
"""

import hashlib
import io
import time
from importlib import resources
from pathlib import Path

import torch

from ..measure.parameters import count_parameters
from ..tasks.copying import (
    BOTTLENECK_FILE,
    BOTTLENECK_MODELS,
    BOTTLENECK_RECIPE,
    COPY_LENGTHS,
    copy_accuracy,
    train_bottleneck_model,
)
from ._results import training_arguments

RECIPE = BOTTLENECK_RECIPE


def main(argv=None) -> None:
    args, _, _ = training_arguments(
        argv,
        __doc__,
        {"steps": RECIPE["steps"]},
        "train.bottleneck",
        check=False,
    )
    torch.set_num_threads(1)
    recipe = {**RECIPE, "steps": args.steps}
    low, high = COPY_LENGTHS
    saved = {"recipe": recipe, "models": {}}
    for name in BOTTLENECK_MODELS:
        wall, cpu = time.perf_counter(), time.process_time()
        model, _ = train_bottleneck_model(
            name, recipe["seed"], recipe["steps"], log_every=200
        )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        accuracy = {
            n: round(copy_accuracy(model, n, 200, seed=10_000 + n), 3)
            for n in range(low, high + 1, 2)
        }
        print(
            f"{name}: {count_parameters(model):,} parameters, wall {wall:.1f} "
            f"s, CPU {cpu:.1f} s, "
            f"{recipe['steps'] / wall:.2f} steps/s; accuracy {accuracy}",
            flush=True,
        )
        saved["models"][name] = {
            "config": model.config,
            "state_dict": {
                k: v.contiguous() for k, v in model.state_dict().items()
            },
        }
    buffer = io.BytesIO()
    torch.save(saved, buffer)
    data = buffer.getvalue()
    out = args.out or Path(
        str(resources.files("attnbook") / "data" / BOTTLENECK_FILE)
    )
    out.write_bytes(data)
    print(
        f"wrote {out} ({len(data):,} bytes), SHA-256 "
        f"{hashlib.sha256(data).hexdigest()}"
    )


if __name__ == "__main__":
    main()
