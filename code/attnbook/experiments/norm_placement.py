"""Post-LN or pre-LN: where the layer normalization sits in an encoder block,
measured in training.

Post-LN (the original Transformer, BERT; ``TransformerEncoderBlock``)::

    a = LayerNorm(x + MHA(x)),          y = LayerNorm(a + FFN(a))

Pre-LN (Xiong et al. 2020, "On Layer Normalization in the Transformer
Architecture")::

    a = x + MHA(LayerNorm(x)),          y = a + FFN(LayerNorm(a))

with one more LayerNorm after the last block. The two blocks have the same
parameters, so a pre-LN model can start from exactly the weights of a post-LN
one.

``train_placement`` trains the chapter's "A before B?" classifier with either
block and a given peak learning rate, with or without a linear learning-rate
warm-up; ``run_comparison`` sweeps both placements over learning rates, warm-up
and seeds. Run ``python -m attnbook.experiments.norm_placement`` to repeat the
sweep behind ``data/norm_placement.json`` (it trains every configuration on one
thread).
"""

import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import require_int, require_training
from .._random import keep_global_rng, seeded
from .._weights import read_pinned
from ..measure.threads import single_thread
from ..nn.encoder import LayerNorm, TransformerEncoderBlock
from ..tasks.order_classifier import (
    CLSClassifier,
    held_out_batch,
    order_batch,
    training_sequences,
)

PLACEMENTS = ("post-LN", "pre-LN")
OPTIMIZERS = {"adam": torch.optim.Adam, "radam": torch.optim.RAdam}
# python -m attnbook.train.norm_placement_radam: post-LN, (optimizer, warm-up)
# arms at each learning rate and seed, the sweep's recipe otherwise
RADAM_FILE = "norm_placement_radam.json"
RADAM_ARMS = (("adam", 0), ("adam", 50), ("radam", 0))
RADAM_LRS = (1e-2, 3e-2)
RADAM_SEEDS = (0, 1, 2, 3, 4)
RADAM_STEPS = 250
RADAM_SIZES = {"num_layers": 4}
NORM_PLACEMENT_RADAM_SHA256 = (
    "9070a20434450ce9c3207242af11de6a4dc240cee5c04e5fc59b39bb1fbf47d8"
)
# python -m attnbook.train.norm_placement_probes: the gradient norms at
# initialisation and the first Adam steps of chapter 9, in float64
PROBES_FILE = "norm_placement_probes.json"
PROBE_DEPTHS = (2, 6, 12, 24)
PROBE_SEEDS = (0, 1, 2)
PROBE_CHECKPOINTS = (0, 1, 2, 5, 20)
PROBE_SIZE = 128
NORM_PLACEMENT_PROBES_SHA256 = (
    "cd0618b33adb30ee2b986ec84d4fef1b2b2d9e6a86cae5c4e8997fd5b5e95766"
)
RESULTS_FILE = (
    Path(__file__).resolve().parents[1] / "data" / "norm_placement.json"
)


class PreNormEncoderBlock(TransformerEncoderBlock):
    """A pre-LN encoder block: a = x + MHA(LN1(x)), y = a + FFN(LN2(a)).

    Same parameters (and names) as the post-LN ``TransformerEncoderBlock``;
    x: (B, n, embed_dim) -> (B, n, embed_dim); mask as for the post-LN block
    (boolean, True = keep, e.g. (B, 1, 1, n) from ``padding_mask``).
    """

    def forward(self, x, mask=None, return_weights=False):
        self._check(x, mask)
        normed = self.norm1(x)
        attended, weights = self.self_attn(normed, normed, normed, mask=mask)
        x = x + self.dropout1(attended)
        x = x + self.dropout2(self.ffn(self.norm2(x)))
        return (x, weights) if return_weights else x

    @torch.no_grad()
    def load_torch_weights(
        self, layer: nn.TransformerEncoderLayer
    ) -> "PreNormEncoderBlock":
        """Copy the parameters of a pre-norm (``norm_first=True``), ReLU
        ``nn.TransformerEncoderLayer``."""
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise TypeError(
                "expected torch.nn.TransformerEncoderLayer, got "
                f"{type(layer).__name__}"
            )
        if not layer.norm_first:
            raise ValueError(
                "torch layer is post-norm (norm_first=False); this block is "
                "pre-norm"
            )
        # the parameters do not depend on the flag: reuse the post-LN copy
        layer.norm_first = False
        try:
            super().load_torch_weights(layer)
        finally:
            layer.norm_first = True
        return self


def placement_classifier(
    placement: str, seed: int = 0, **sizes
) -> CLSClassifier:
    """A seeded ``CLSClassifier`` with post-LN or pre-LN blocks and the same
    initial weights.

    placement: "post-LN" or "pre-LN". The pre-LN model copies the post-LN model
    built from the same seed and adds a final LayerNorm before the linear head.
    sizes: passed to ``CLSClassifier`` (embed_dim, num_heads, ffn_dim,
    num_layers, ...). Torch's global random state is restored on exit (the
    seeding happens inside).
    """
    with seeded(require_int("seed", seed, minimum=0)):
        return _seeded_placement_classifier(placement, seed, **sizes)


def _seeded_placement_classifier(
    placement: str, seed: int, **sizes
) -> CLSClassifier:
    """``placement_classifier`` that leaves torch's global generator seeded
    by ``seed`` and advanced by the initialisation (``train_placement``
    trains on from there, inside its own ``keep_global_rng``, so its runs
    are those it always gave)."""
    if placement not in PLACEMENTS:
        raise ValueError(
            f"placement must be one of {PLACEMENTS}, got {placement!r}"
        )
    require_int("seed", seed, minimum=0)
    torch.manual_seed(seed)  # inside seeded(seed): the global RNG is locked
    model = CLSClassifier(**sizes)
    if placement == "pre-LN":
        post_blocks = model.encoder.blocks
        pre_blocks = []
        for block in post_blocks:
            pre = PreNormEncoderBlock(
                block.embed_dim,
                block.num_heads,
                block.ffn.linear1.out_features,
            )
            pre.load_state_dict(block.state_dict())
            pre_blocks.append(pre)
        model.encoder.blocks = nn.ModuleList(pre_blocks)
        model.head = nn.Sequential(
            LayerNorm(model.head.in_features), model.head
        )
    return model


def gradient_norms_at_init(
    placement: str, num_layers: int, seed: int = 0, batch_size: int = 64
) -> list:
    """Gradient norm of each block's second FFN weight W_2 at initialisation.

    The quantity of Xiong et al. (2020), Theorem 1 and Figure 3: the
    Frobenius norm of dLoss/dW_2 in block 1 .. ``num_layers`` (a list, first
    block first) of a fresh ``placement_classifier(placement, seed,
    num_layers=num_layers)``, in float64, for the cross-entropy of one
    ``order_batch(batch_size)`` drawn with a generator seeded ``seed``.
    Torch's global random state is left alone.
    """
    require_int("num_layers", num_layers)
    model = placement_classifier(placement, seed, num_layers=num_layers)
    model = model.to(torch.float64).train()
    generator = torch.Generator().manual_seed(seed)
    tokens, lens, labels = order_batch(batch_size, generator=generator)
    with single_thread():
        F.cross_entropy(model(tokens, lens), labels).backward()
    return [
        block.ffn.linear2.weight.grad.norm().item()
        for block in model.encoder.blocks
    ]


def early_steps(
    placement: str,
    lr: float = 1e-2,
    checkpoints=(0, 1, 2, 5, 40),
    seed: int = 0,
    num_layers: int = 4,
    probe_size: int = 256,
) -> dict:
    """What the first Adam steps without warm-up do to each block, in
    float64.

    Trains ``placement_classifier(placement, seed, num_layers=num_layers)``
    as ``train_placement`` does (Adam at peak ``lr``, no warm-up, linear
    decay over 250 steps, the batches of ``seed``) for ``max(checkpoints)``
    steps, and after each step count in ``checkpoints`` (0: at
    initialisation) measures on ``probe_size`` fixed sequences:

    - "spread": per block, how much its [CLS] output depends on the input:
      the root-mean-square over features of its standard deviation across
      the sequences, divided by the root-mean-square of the output itself
      (1: as varied as it is large; 0: the same for every input);
    - "dead": per block, the fraction of FFN hidden units whose input to
      the ReLU is <= 0 at every real token of every sequence;
    - "logit_spread": the standard deviation across the sequences of the
      difference of the two logits.

    Returns {"steps": [...], "spread": [[per block] per checkpoint],
    "dead": [...], "logit_spread": [...]}. Runs on one thread; torch's
    global random state is left alone.
    """
    if not isinstance(checkpoints, (tuple, list)) or not checkpoints:
        raise ValueError(
            "checkpoints must be a non-empty tuple or list of step counts, "
            f"got {checkpoints!r:.60}"
        )
    for step in checkpoints:
        require_int("checkpoints", step, minimum=0)
    require_training(lr=lr, steps=max(checkpoints) or 1, warmup=0)
    require_int("probe_size", probe_size)
    with single_thread(), keep_global_rng():
        model = _seeded_placement_classifier(
            placement, seed, num_layers=num_layers
        ).to(torch.float64)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: warmup_schedule(s, 250, 0)
        )
        batches = torch.Generator().manual_seed(seed + 1)
        probe = order_batch(
            probe_size, generator=torch.Generator().manual_seed(123)
        )
        records = {"steps": [], "spread": [], "dead": [], "logit_spread": []}
        for step in range(max(checkpoints) + 1):
            if step in checkpoints:
                for key, value in _block_probe(model, *probe[:2]).items():
                    records[key].append(value)
                records["steps"].append(step)
            if step == max(checkpoints):
                break
            model.train()
            tokens, lens, labels = order_batch(64, generator=batches)
            loss = F.cross_entropy(model(tokens, lens), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
    return records


@torch.no_grad()
def _block_probe(model, tokens, lens) -> dict:
    """``early_steps``' three measurements of ``model`` on one batch."""
    outputs, hidden = [], []
    hooks = [
        block.register_forward_hook(
            lambda m, a, out: outputs.append(
                out[0] if isinstance(out, tuple) else out
            )
        )
        for block in model.encoder.blocks
    ] + [
        block.ffn.linear1.register_forward_hook(
            lambda m, a, out: hidden.append(out)
        )
        for block in model.encoder.blocks
    ]
    try:
        logits = model.eval()(tokens, lens)
    finally:
        for hook in hooks:
            hook.remove()
    real = torch.arange(tokens.shape[1]) < lens[:, None]  # (B, n)
    spread, dead = [], []
    for out, pre in zip(outputs, hidden):
        cls = out[:, 0]  # (B, d)
        size = cls.pow(2).mean().sqrt()
        spread.append((cls.var(0).mean().sqrt() / size).item())
        alive = (pre > 0) & real[..., None]  # (B, n, d_ff)
        dead.append(1.0 - alive.any(1).any(0).double().mean().item())
    logit_spread = (logits[:, 1] - logits[:, 0]).std().item()
    return {"spread": spread, "dead": dead, "logit_spread": logit_spread}


def warmup_schedule(step: int, steps: int, warmup: int) -> float:
    """Learning-rate factor at ``step`` (0-based): linear rise over
    ``warmup`` steps, then linear decay to 0."""
    require_int("step", step, minimum=0)
    require_int("steps", steps)
    require_int("warmup", warmup, minimum=0)
    if step < warmup:
        return (step + 1) / warmup
    # past the run (also when warmup >= steps): no division by
    # steps - warmup <= 0
    if step >= steps:
        return 0.0
    return max(0.0, (steps - step) / (steps - warmup))


def train_placement(
    placement: str,
    lr: float,
    warmup: int = 0,
    steps: int = 250,
    batch_size: int = 64,
    seed: int = 0,
    eval_size: int = 1000,
    optimizer: str = "adam",
    **sizes,
) -> dict:
    """Train one "A before B?" classifier; returns its loss curve and held-out
    results.

    ``optimizer`` "adam" (``torch.optim.Adam``) or "radam" (rectified Adam,
    Liu et al. 2020, ``torch.optim.RAdam``; same betas and eps) at peak
    learning rate ``lr``; the rate rises linearly over ``warmup``
    steps (0: no warm-up) and then decays linearly to 0 at ``steps``. The
    training batches (fresh at every step) and the initial weights depend only
    on ``seed``, so both placements see the same data from the same start. Runs
    on one thread. Returns {"loss": [per-step training loss], "eval_loss":
    held-out cross-entropy, "eval_accuracy": held-out accuracy} on
    ``eval_size`` sequences of a fixed seed, none of them in the run's
    training batches (``held_out_batch``).
    """
    require_training(lr=lr, steps=steps, warmup=warmup, batch_size=batch_size)
    require_int("eval_size", eval_size)
    if optimizer not in OPTIMIZERS:
        raise ValueError(
            f"optimizer must be one of {tuple(OPTIMIZERS)}, got {optimizer!r}"
        )
    with single_thread(), keep_global_rng():
        model = _seeded_placement_classifier(placement, seed, **sizes)
        optimizer = OPTIMIZERS[optimizer](model.parameters(), lr=lr)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: warmup_schedule(s, steps, warmup)
        )
        generator = torch.Generator().manual_seed(seed + 1)
        losses = []
        model.train()
        for _ in range(steps):
            tokens, lens, labels = order_batch(batch_size, generator=generator)
            loss = F.cross_entropy(model(tokens, lens), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(
                loss.item() if torch.isfinite(loss) else float("nan")
            )
        model.eval()
        tokens, lens, labels = held_out_batch(
            eval_size,
            exclude=training_sequences(steps, batch_size, seed),
            generator=torch.Generator().manual_seed(123),
        )
        with torch.no_grad():
            logits = model(tokens, lens)
            eval_loss = F.cross_entropy(logits, labels).item()
            eval_accuracy = (logits.argmax(-1) == labels).float().mean().item()
    return {
        "loss": losses,
        "eval_loss": eval_loss,
        "eval_accuracy": eval_accuracy,
    }


def run_comparison(
    lrs=(1e-3, 3e-3, 1e-2, 3e-2),
    warmups=(0, 50),
    seeds=(0, 1, 2),
    steps: int = 250,
    progress: bool = True,
    **sizes,
) -> dict:
    """Train every (placement, warm-up, lr, seed); returns a JSON-ready dict of
    the settings and runs.

    Each run records its final held-out loss and accuracy and its training loss
    curve averaged over blocks of 10 steps (to keep the results file small).
    """
    runs = []
    start = time.perf_counter()
    for placement in PLACEMENTS:
        for warmup in warmups:
            for lr in lrs:
                for seed in seeds:
                    result = train_placement(
                        placement, lr, warmup, steps, seed=seed, **sizes
                    )
                    curve = (
                        torch.tensor(result["loss"])
                        .view(-1, 10)
                        .mean(1)
                        .tolist()
                    )
                    runs.append(
                        {
                            "placement": placement,
                            "warmup": warmup,
                            "lr": lr,
                            "seed": seed,
                            "eval_loss": result["eval_loss"],
                            "eval_accuracy": result["eval_accuracy"],
                            "loss_every_10": curve,
                        }
                    )
                    if progress:
                        print(
                            f"{time.perf_counter() - start:7.1f} s  "
                            f"{placement:7} warm-up {warmup:3} lr {lr:g} "
                            f"seed {seed}: held-out loss "
                            f"{result['eval_loss']:.4f}, "
                            f"accuracy {result['eval_accuracy']:.3f}",
                            flush=True,
                        )
    return {
        "steps": steps,
        "sizes": sizes,
        "lrs": list(lrs),
        "warmups": list(warmups),
        "seeds": list(seeds),
        "runs": runs,
    }


def load_comparison(path=RESULTS_FILE) -> dict:
    """The shipped results of ``run_comparison`` (see the module docstring)."""
    if not isinstance(path, (str, Path)):
        raise TypeError(
            f"path must be a str or pathlib.Path, got {type(path).__name__}"
        )
    if not Path(path).is_file():
        raise FileNotFoundError(f"no results file at {path}")
    return json.loads(Path(path).read_text())


def summarize(results: dict, key: str = "eval_accuracy") -> dict:
    """{(placement, warmup): [(lr, [value per seed]), ...]} from
    ``run_comparison`` results."""
    if not isinstance(results, dict) or not isinstance(
        results.get("runs"), list
    ):
        raise ValueError(
            "results must be the dict run_comparison returns (with a list "
            "under 'runs')"
        )
    keys = sorted(
        {
            k
            for run in results["runs"]
            for k in run
            if isinstance(run.get(k), (int, float))
        }
    )
    if any(key not in run for run in results["runs"]):
        raise ValueError(
            f"key {key!r} is not in the runs; choose one of {keys}"
        )
    table = {}
    for run in results["runs"]:
        rows = table.setdefault((run["placement"], run["warmup"]), {})
        rows.setdefault(run["lr"], []).append(run[key])
    return {k: sorted(v.items()) for k, v in table.items()}


def format_table(results: dict, key: str = "eval_accuracy") -> str:
    """``summarize(results, key)`` as text: one line per (placement,
    warm-up), the value of every seed at each learning rate, two learning
    rates per block of lines (to fit 79 columns)."""
    table = summarize(results, key)
    lrs = results["lrs"]
    lines = []
    for start in range(0, len(lrs), 2):
        part = slice(start, start + 2)
        header = " | ".join(f"lr {lr:<14g}" for lr in lrs[part])
        lines += ["", f"{'placement':9} {'warm-up':>7} | {header}".rstrip()]
        for (placement, warmup), rows in table.items():
            seeds = [" ".join(f"{v:.3f}" for v in vs) for _, vs in rows[part]]
            lines.append(f"{placement:9} {warmup:>7} | " + " | ".join(seeds))
    return "\n".join(lines[1:])


def load_radam_comparison() -> dict:
    """The shipped ``data/norm_placement_radam.json`` of
    ``python -m attnbook.train.norm_placement_radam`` (checked against its
    pinned SHA-256): post-LN without warm-up under RAdam, beside Adam with
    and without warm-up, at matched seeds, batches and initial weights."""
    return json.loads(read_pinned(RADAM_FILE, NORM_PLACEMENT_RADAM_SHA256))


def load_probes() -> dict:
    """The shipped ``data/norm_placement_probes.json`` of ``python -m
    attnbook.train.norm_placement_probes`` (checked against its pinned
    SHA-256): {"gradient_norms": {placement: {depth: [per seed: per block]}},
    "early_steps": {placement: early_steps(placement, ...)}, ...}, every
    number computed in float64 by the functions of this module."""
    return json.loads(read_pinned(PROBES_FILE, NORM_PLACEMENT_PROBES_SHA256))


def format_radam_table(results: dict) -> str:
    """``load_radam_comparison()`` as text: one line per (learning rate,
    optimizer, warm-up) with the held-out accuracy of every seed and the
    number of seeds above 0.9."""
    if not isinstance(results, dict) or not {"lrs", "arms", "runs"} <= set(
        results
    ):
        raise ValueError(
            "results must be the dict load_radam_comparison returns (with "
            "'lrs', 'arms' and 'runs')"
        )
    lines = [f"{'peak lr':>7}  {'optimizer':9} {'warm-up':>7} | accuracy"]
    for lr in results["lrs"]:
        for optimizer, warmup in results["arms"]:
            accs = [
                run["eval_accuracy"]
                for run in results["runs"]
                if (run["lr"], run["optimizer"], run["warmup"])
                == (lr, optimizer, warmup)
            ]
            trained = sum(a > 0.9 for a in accs)
            lines.append(
                f"{lr:>7g}  {optimizer:9} {warmup:>7} | "
                + " ".join(f"{a:.3f}" for a in accs)
                + f"  ({trained} of {len(accs)} above 0.9)"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=250)
    parser.add_argument("--out", default=str(RESULTS_FILE))
    args = parser.parse_args()
    results = run_comparison(steps=args.steps, num_layers=args.layers)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print("wrote", args.out)
