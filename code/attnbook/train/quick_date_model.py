"""Chapter 5's quick date model: 100 training steps, shipped with its losses.

    # writes attnbook/data/quick_date_model.pt (about 10 s CPU)
    python -m attnbook.train.quick_date_model
    python -m attnbook.train.quick_date_model --out /tmp/quick.pt

The recipe is the chapter's "training and decoding" example: a ``Seq2Seq``
with additive attention (embedding 32, state 64, score 64) built after
``torch.manual_seed(0)``, trained by ``train_seq2seq`` for 100 steps of 64
dates (``date_batch``), learning rate 3e-3, seed 1, in float32 on one thread.
The file holds the weights and the loss of every step. The chapter trains the
first few steps live and checks their losses against the file's
(``train_quick_model(10)``), then loads the trained model.
"""

import hashlib
import io
import sys
import time

import torch

from .._checks import require_int
from .._weights import load_pinned
from ..measure.threads import single_thread
from ..nn.seq2seq import Seq2Seq, train_seq2seq
from ..tasks.dates import SOURCE_VOCAB, TARGET_VOCAB, date_batch
from ._results import results_parser

RECIPE = {"steps": 100, "batch_size": 64, "lr": 3e-3, "seed": 1}
MODEL = {"embed_dim": 32, "hidden_dim": 64, "attn_dim": 64}
INIT_SEED = 0  # torch.manual_seed before the model is built
QUICK_MODEL_FILE = "quick_date_model.pt"
QUICK_MODEL_SHA256 = (
    "43ceadbe6e51c2ac9e4069dbdb0e7abe723b994486dadead005138656b093418"
)


def quick_model() -> Seq2Seq:
    """The untrained quick model, initialised from ``INIT_SEED``."""
    with torch.random.fork_rng():
        torch.manual_seed(INIT_SEED)
        return Seq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), **MODEL)


def train_quick_model(steps: int):
    """Train the quick model by ``RECIPE`` on one thread for the first
    ``steps`` of its ``RECIPE["steps"]`` (same batches and schedule; all of
    them for the shipped model). Returns (model, the losses of those
    steps)."""
    require_int("steps", steps)
    if steps > RECIPE["steps"]:
        raise ValueError(
            f"steps must be at most the recipe's {RECIPE['steps']}, got "
            f"{steps}"
        )
    model = quick_model()
    batch_size = RECIPE["batch_size"]
    with single_thread():
        losses = train_seq2seq(
            model,
            lambda g: date_batch(batch_size, g),
            steps=RECIPE["steps"],
            lr=RECIPE["lr"],
            seed=RECIPE["seed"],
            stop_after=steps,
        )
    return model, losses


def pretrained_quick_model():
    """(model, losses): the shipped quick model, trained by ``RECIPE``, and
    the loss of each of its 100 steps (checked against
    ``QUICK_MODEL_SHA256``)."""
    saved = load_pinned(QUICK_MODEL_FILE, QUICK_MODEL_SHA256)
    model = quick_model()
    model.load_state_dict(saved["weights"])
    model.eval()
    return model, saved["losses"].tolist()


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], QUICK_MODEL_FILE)
    args = parser.parse_args(argv)
    start = time.process_time()
    model, losses = train_quick_model(RECIPE["steps"])
    print(
        f"trained {RECIPE['steps']} steps in "
        f"{time.process_time() - start:.1f} s CPU; loss {losses[0]:.4f} at "
        f"step 1, {losses[-1]:.4f} at the last"
    )
    buffer = io.BytesIO()
    torch.save(
        {
            "weights": model.state_dict(),
            "losses": torch.tensor(losses, dtype=torch.float64),
        },
        buffer,
    )
    args.out.write_bytes(buffer.getvalue())
    digest = hashlib.sha256(buffer.getvalue()).hexdigest()
    print(
        f"wrote {args.out}; SHA-256 (pin it as QUICK_MODEL_SHA256 in "
        f"attnbook.train.quick_date_model): {digest}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
