"""Chapter 15's length-generalisation lab: chapter 14's repeated-segment
task, trained at n = 64 with each position scheme, evaluated up to n = 512.

A sequence holds random filler, then a segment of P tokens (P drawn per
sequence from 8 .. 24) repeated until the end (``tasks.induction.
repeated_batch``). Every lookup the task needs is short: the previous token
(1 back) and the token P <= 24 back. What grows with n is only where the
tokens sit (positions the model never saw) and how many distractors there
are. So a scheme that generalises in length keeps its accuracy at n = 512,
and a scheme that fails does so because of positions.

Training draws its batches from generators seeded ``seed + 1`` (seeds 0,
1, ...); evaluation from generators seeded ``EVAL_SEED + n`` (n the length),
far from every training seed, so the two never share a draw (a test checks
that no evaluation sequence occurs in training).

``python -m attnbook.train.long_context`` trains every scheme with
``TRAINING_RECIPE`` for ``SEEDS``, fine-tunes the RoPE models at n = 512
with each scaling, and ships the accuracies as
``data/long_context.json`` (pinned, ``LONG_CONTEXT_SHA256``) and the seed-0
models as ``data/long_context_models.pt`` (pinned,
``LONG_CONTEXT_MODELS_SHA256``).
"""

import json
import math
import time

import torch

from .._checks import (
    require_dict_or_none,
    require_int,
    require_int_in,
    require_training,
)
from .._memory import require_matrix_fits
from .._random import keep_global_rng
from .._weights import load_pinned, read_pinned
from ..measure.head_scores import previous_token_score
from ..measure.threads import single_thread
from ..nn.position_schemes import SCHEMES, PositionSchemeTransformer
from .induction import predictable_loss, repeated_batch

RESULTS_FILE = "long_context.json"
LONG_CONTEXT_SHA256 = (
    "a7b1fd4d4acece81e8c7a271d04700615e125950c1a149155aab7ad012a228bf"
)
MODELS_FILE = "long_context_models.pt"
LONG_CONTEXT_MODELS_SHA256 = (
    "9edf679b2d025951c276141419aa509a641fc85d5f588c308781b5a0ebc1f8e5"
)
TASK = {"vocab_size": 64, "period": (8, 24), "train_len": 64}
MODEL_CONFIG = {"embed_dim": 64, "num_heads": 4, "num_layers": 2}
TRAINING_RECIPE = {
    "steps": 2000,
    "batch_size": 32,
    "lr": 3e-3,
    "weight_decay": 0.01,
}
FINETUNE_RECIPE = {"steps": 100, "batch_size": 4, "lr": 1e-3, "length": 512}
SEEDS = (0, 1)
LENGTHS = (64, 96, 128, 192, 256, 384, 512)
EVAL_SEED = 1_000_000
EVAL_BATCHES = {"batches": 4, "batch_size": 16}
SCALINGS = (None, "linear", "ntk", "yarn")
SCALED_LENGTHS = (64, 512)  # where the scaled RoPE models are evaluated
CURVE_CHECKPOINTS = (0, 25, 50, 100, 250, 500)  # fine-tuning steps
CURVE_SEEDS = (0, 1, 2)  # RoPE models trained with TRAINING_RECIPE
# the scalings of the curve: name -> (scaling, YaRN's ramp if not the
# paper's alpha = 1, beta = 32); "YaRN, rescaled" keeps pairs 0 and 1 of
# our heads (10.2 and 3.2 turns over 64 positions), interpolates pairs 3-7
# (< 0.5 turn) and ramps pair 2
CURVE_SCALINGS = {
    "none": (None, {}),
    "PI": ("linear", {}),
    "NTK": ("ntk", {}),
    "YaRN": ("yarn", {}),
    "YaRN, rescaled": ("yarn", {"alpha": 0.5, "beta": 2.0}),
}
CURVE_FILE = "rope_scaling_curve.json"
BUDGET_FILE = "long_context_budget.json"
BUDGET_STEPS = 4000  # the sinusoid with twice TRAINING_RECIPE's steps
LONG_CONTEXT_BUDGET_SHA256 = (
    "cd470de07da3ece5a699fbd87afa868c207cedb7deddfc60a1c25a7cb818eca4"
)
ROPE_SCALING_CURVE_SHA256 = (
    "946e48595df7194bdf87905496be1ed1a0a51a86a6117e0ea07e9f24c90318f1"
)


def build_model(scheme: str, config: dict | None = None):
    """A fresh ``PositionSchemeTransformer`` with ``MODEL_CONFIG`` (updated
    by config), drawn from torch's global generator."""
    config = {**MODEL_CONFIG, **require_dict_or_none("config", config)}
    return PositionSchemeTransformer(
        scheme, TASK["vocab_size"], max_len=max(LENGTHS), **config
    )


def lab_batch(batch_size: int, length: int, generator: torch.Generator):
    """(tokens, predictable) of the lab's task at ``length`` positions."""
    return repeated_batch(
        batch_size, TASK["period"], length, TASK["vocab_size"], generator
    )


def lookup_loss(logits, tokens, predictable) -> torch.Tensor:
    """Cross-entropy in nats of logits[:, i - 1] against token i over the
    predictable tokens i: ``predictable_loss``, with its checks."""
    return predictable_loss(logits, tokens, predictable)


def _fit(model, steps, batch_size, lr, weight_decay, length, generator):
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=lr, weight_decay=weight_decay
    )
    return _steps(model, optimizer, steps, batch_size, length, generator)


def _steps(model, optimizer, steps, batch_size, length, generator):
    """``steps`` optimizer steps on lab batches; returns the losses."""
    model.train()
    losses = []
    for _ in range(steps):
        tokens, predictable = lab_batch(batch_size, length, generator)
        loss = lookup_loss(model(tokens), tokens, predictable)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses


def train_scheme(
    scheme: str,
    seed: int = 0,
    steps: int = 2000,
    batch_size: int = 32,
    lr: float = 3e-3,
    weight_decay: float = 0.01,
    config: dict | None = None,
):
    """Train a seeded model with ``scheme`` at n = TASK["train_len"],
    float32 on one thread, AdamW with gradient clipping at 1. Returns
    (model in eval mode, per-step losses in nats). Torch's global random
    state is left as it was."""
    require_training(
        steps=steps, batch_size=batch_size, lr=lr, weight_decay=weight_decay
    )
    require_int("seed", seed, minimum=0)
    with single_thread(), keep_global_rng():
        torch.manual_seed(seed)
        model = build_model(scheme, config)
        generator = torch.Generator().manual_seed(seed + 1)
        losses = _fit(
            model,
            steps,
            batch_size,
            lr,
            weight_decay,
            TASK["train_len"],
            generator,
        )
    return model.eval(), losses


def finetune_rope(
    model,
    scaling,
    seed: int = 0,
    steps: int = 100,
    batch_size: int = 4,
    lr: float = 1e-3,
    length: int = 512,
):
    """A copy of a trained "rope" model with ``scaling`` (factor = length /
    TASK["train_len"]), fine-tuned ``steps`` steps at ``length`` positions
    (steps = 0: the scaling alone). Batches from a generator seeded
    ``seed + 101``, never an evaluation seed."""
    require_training(steps=steps, seed=seed, batch_size=batch_size, lr=lr)
    if getattr(model, "scheme", None) != "rope":
        raise ValueError(
            "finetune_rope needs a trained 'rope' PositionSchemeTransformer, "
            f"got {type(model).__name__}"
        )
    _require_lab_sizes(model)
    with single_thread(), keep_global_rng():
        copy = build_model("rope")
        copy.load_state_dict(model.state_dict())
        scale(copy, scaling, length)
        if steps:
            generator = torch.Generator().manual_seed(seed + 101)
            _fit(copy, steps, batch_size, lr, 0.0, length, generator)
    return copy.eval()


def _require_model(model) -> None:
    """``TypeError`` unless ``model`` can be called, tokens (B, n) -> logits
    (B, n, vocab): a module, or a function wrapping one (chapter 15 passes
    ``lambda tokens: model(tokens, window=64)``)."""
    if not callable(model):
        raise TypeError(
            "model must be a callable, tokens (B, n) -> logits (B, n, "
            f"vocab), e.g. a torch.nn.Module; got {type(model).__name__}"
        )


def _require_lab_sizes(model) -> None:
    """``ValueError`` unless ``model`` has the lab's sizes (``TASK``'s
    vocabulary, ``MODEL_CONFIG``, max_len = max(LENGTHS)), the sizes of the
    copy that ``finetune_rope`` fine-tunes."""
    wanted = {
        "vocab_size": TASK["vocab_size"],
        "max_len": max(LENGTHS),
        **MODEL_CONFIG,
    }
    sizes = {
        "vocab_size": model.vocab_size,
        "max_len": model.max_len,
        "embed_dim": model.token_embedding.embedding_dim,
        "num_heads": model.num_heads,
        "num_layers": model.num_layers,
    }
    if sizes != wanted:
        raise ValueError(
            f"model has the sizes {sizes}, the lab's models {wanted}: "
            "finetune_rope fine-tunes a copy of the lab's size"
        )


def scale(model, scaling, length: int, **ramp) -> None:
    """Set a "rope" model's scaling for ``length`` positions (None: plain
    RoPE); ramp: YaRN's alpha and beta, if not the paper's."""
    _require_lab_model("model", model)
    require_int("length", length)
    factor = length / TASK["train_len"]
    if scaling is None:
        model.set_rope_scaling(None)
    else:
        model.set_rope_scaling(scaling, factor, TASK["train_len"], **ramp)


def finetune_curve(
    model,
    scaling,
    checkpoints=CURVE_CHECKPOINTS,
    seed: int = 0,
    ramp: dict | None = None,
    batch_size: int = 4,
    lr: float = 1e-3,
    length: int = 512,
) -> list:
    """Accuracy at 64 and at ``length`` while a copy of a trained "rope"
    model with ``scaling`` (YaRN's alpha, beta in ramp) is fine-tuned at
    ``length`` positions: one AdamW run, evaluated after each number of
    steps in checkpoints (0 included: the scaling alone). The same batches
    and constant learning rate as ``finetune_rope``, so the checkpoint at
    100 steps is its 100-step fine-tune. Returns [{"steps", "64",
    str(length)}]."""
    ramp = require_dict_or_none("ramp", ramp)
    require_training(seed=seed, batch_size=batch_size, lr=lr)
    require_int("length", length, minimum=TASK["train_len"])
    if (
        not isinstance(checkpoints, (list, tuple))
        or not checkpoints
        or any(
            isinstance(c, bool) or not isinstance(c, int) for c in checkpoints
        )
        or list(checkpoints) != sorted(set(checkpoints))
        or checkpoints[0] < 0
    ):
        raise ValueError(
            "checkpoints must be a rising list of ints >= 0, got "
            f"{checkpoints!r:.60}"
        )
    _require_lab_model("model", model, "rope")
    _require_weights_fit(model, length, batch_size)
    with single_thread(), keep_global_rng():
        copy = build_model("rope")
        copy.load_state_dict(model.state_dict())
        scale(copy, scaling, length, **ramp)
        optimizer = torch.optim.AdamW(
            copy.parameters(), lr=lr, weight_decay=0.0
        )
        generator = torch.Generator().manual_seed(seed + 101)
        curve, done = [], 0
        for steps in checkpoints:
            _steps(
                copy, optimizer, steps - done, batch_size, length, generator
            )
            done = steps
            copy.eval()
            curve.append(
                {
                    "steps": steps,
                    **{
                        str(n): accuracy(copy, n, **EVAL_BATCHES)
                        for n in (TASK["train_len"], length)
                    },
                    "previous_token": previous_token_scores(copy).tolist(),
                }
            )
    return curve


@torch.no_grad()
def previous_token_scores(model, length: int = 64, batch_size: int = 16):
    """``previous_token_score`` of every layer-0 head, shape (num_heads,),
    float64: mean over the first evaluation batch at ``length``."""
    _require_lab_model("model", model)
    require_int("length", length, minimum=2 * TASK["period"][1])
    require_int("batch_size", batch_size)
    _require_weights_fit(model, length, batch_size)
    tokens, _ = lab_batch(batch_size, length, eval_generator(length))
    with single_thread():
        _, weights = model(tokens, return_weights=True)
    return previous_token_score(weights[0].double()).mean(dim=0)


def _require_lab_model(name, model, scheme=None) -> None:
    """A ``PositionSchemeTransformer`` (with ``scheme``, if given)."""
    if not isinstance(model, PositionSchemeTransformer) or (
        scheme is not None and model.scheme != scheme
    ):
        wanted = f"a {scheme!r} " if scheme else "a "
        raise ValueError(
            f"{name} must be {wanted}PositionSchemeTransformer, got "
            f"{type(model).__name__}"
            + (
                f" with scheme {model.scheme!r}"
                if scheme and isinstance(model, PositionSchemeTransformer)
                else ""
            )
        )


def eval_generator(length: int) -> torch.Generator:
    """The generator of the evaluation batches at ``length``."""
    require_int("length", length)
    return torch.Generator().manual_seed(EVAL_SEED + length)


@torch.no_grad()
def accuracy(
    model, length: int, batches=4, batch_size=16, period: int | None = None
) -> float:
    """The fraction of predictable tokens whose most likely prediction is
    right, on the evaluation batches at ``length`` positions; period: one
    repeat period P for every sequence instead of the task's range."""
    _require_model(model)
    require_int("length", length, minimum=2 * TASK["period"][1])
    require_int("batches", batches)
    require_int("batch_size", batch_size)
    require_matrix_fits(
        "the evaluation tokens",
        (batches, batch_size, length),
        torch.int64,
        "use fewer batches, or",
    )
    if period is not None:
        require_int_in("period", period, *TASK["period"])
    periods = TASK["period"] if period is None else period
    generator = eval_generator(length)
    right = total = 0
    with single_thread():
        for _ in range(batches):
            tokens, predictable = repeated_batch(
                batch_size, periods, length, TASK["vocab_size"], generator
            )
            guess = model(tokens)[:, :-1].argmax(-1)
            keep = predictable[:, 1:]
            right += int((guess == tokens[:, 1:])[keep].sum())
            total += int(keep.sum())
    return right / total


def accuracy_by_length(model, lengths=LENGTHS) -> dict:
    """{length: accuracy} on the evaluation batches."""
    _require_model(model)
    if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__iter__"):
        raise TypeError(
            f"lengths must be a sequence of ints, got {lengths!r:.40}"
        )
    return {n: accuracy(model, n, **EVAL_BATCHES) for n in lengths}


def chance_accuracy() -> float:
    """1 / vocab_size: a uniform guess."""
    return 1 / TASK["vocab_size"]


def run_scheme(scheme: str, seed: int) -> dict:
    """Train one scheme with one seed and evaluate it: what the training
    script runs per process. For "rope" also each scaling at 512, without
    and with the fine-tune. Returns a JSON-ready dict (and the model's
    state_dict under "state")."""
    start = time.process_time()
    model, losses = train_scheme(scheme, seed, **TRAINING_RECIPE)
    result = {
        "scheme": scheme,
        "seed": seed,
        "final_loss": sum(losses[-100:]) / len(losses[-100:]),
        "accuracy": accuracy_by_length(model),
    }
    if scheme == "rope":
        result["scaled"] = {}
        for scaling in SCALINGS:
            name = str(scaling)
            tuned = {}
            for steps in (0, FINETUNE_RECIPE["steps"]):
                copy = finetune_rope(
                    model,
                    scaling,
                    seed,
                    **{**FINETUNE_RECIPE, "steps": steps},
                )
                tuned["finetuned" if steps else "as_trained"] = (
                    accuracy_by_length(copy, SCALED_LENGTHS)
                )
            result["scaled"][name] = tuned
    result["cpu_seconds"] = time.process_time() - start
    result["state"] = {k: v.clone() for k, v in model.state_dict().items()}
    return result


def pretrained_results() -> dict:
    """The shipped ``data/long_context.json`` (checked against its pinned
    SHA-256): recipe, seeds, lengths and every accuracy."""
    return json.loads(read_pinned(RESULTS_FILE, LONG_CONTEXT_SHA256))


def scaling_curve_results() -> dict:
    """The shipped ``data/rope_scaling_curve.json`` of
    ``python -m attnbook.train.rope_scaling_curve`` (checked against its
    pinned SHA-256): accuracy at 64 and 512 and the layer-0 previous-token
    scores at every fine-tuning checkpoint, per seed and scaling."""
    return json.loads(read_pinned(CURVE_FILE, ROPE_SCALING_CURVE_SHA256))


def budget_results() -> dict:
    """The shipped ``data/long_context_budget.json`` of
    ``python -m attnbook.train.long_context_budget`` (checked against its
    pinned SHA-256): the sinusoid trained for ``BUDGET_STEPS`` steps."""
    return json.loads(read_pinned(BUDGET_FILE, LONG_CONTEXT_BUDGET_SHA256))


def pretrained_models() -> dict:
    """{scheme: model in eval mode}, the seed-0 model of every scheme
    (checked against the pinned SHA-256). Torch's global random state is
    left as it was."""
    saved = load_pinned(MODELS_FILE, LONG_CONTEXT_MODELS_SHA256)
    models = {}
    for scheme in SCHEMES:
        with keep_global_rng():
            model = build_model(scheme, saved["config"])
        model.load_state_dict(saved["models"][scheme])
        models[scheme] = model.eval()
    return models


def log_chance() -> float:
    """ln(vocab_size), the loss of a uniform guess in nats."""
    return math.log(TASK["vocab_size"])


def _require_weights_fit(model, length: int, batch_size: int) -> None:
    """``length`` within the model's max_len, and the attention weights of
    a batch, (layers, batch_size, heads, length, length), within the memory
    limit (``ValueError`` otherwise)."""
    if length > model.max_len:
        raise ValueError(
            f"length ({length}) is beyond the model's max_len "
            f"({model.max_len})"
        )
    require_matrix_fits(
        "the attention weights",
        (model.num_layers, batch_size, model.num_heads, length, length),
        torch.float32,
        hint="use a smaller batch_size, or",
    )
