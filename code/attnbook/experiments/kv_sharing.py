"""What sharing keys and values costs (chapter 13): chapter 12's language
model retrained with fewer key-value heads and with latent attention, each
scored on the held-out text, against the numbers its cache holds.

Every variant runs ``train_language_model(**TRAINING_RECIPE)`` with one
change to the model's config (and the seed): the same data, steps, batches and
schedule. The shipped chapter 12 model is the variant with 4 key-value heads
and seed 0. ``python -m attnbook.train.kv_sharing`` trains the others and
writes ``data/kv_sharing.json``; ``kv_sharing_results()`` reads it, checked
against its pinned SHA-256.
"""

import json
import math
import statistics

import torch

from .._checks import require_int
from .._random import keep_global_rng
from .._weights import read_pinned, weights_digest
from ..measure.parameters import count_parameters
from ..nn.language_model import DecoderOnlyTransformer
from ..nn.multihead import MultiHeadAttention
from ..tasks.language_model import (
    MODEL_CONFIG,
    TRAINING_RECIPE,
    bits_per_char,
    pretrained_language_model,
    train_language_model,
)
from ..tasks.text import corpus_split

KV_SHARING_FILE = "kv_sharing.json"
KV_SHARING_SHA256 = (
    "f5022a84209bff33ecae3a1b47b7cb587dc2884f495cda7fbf67a6203369c1f0"
)
# name -> (config change, seed); "mha" seed 0 is the shipped model
VARIANTS = {
    "mha": ({}, 0),
    "mha-seed1": ({}, 1),
    "gqa2": ({"num_kv_heads": 2}, 0),
    "mqa": ({"num_kv_heads": 1}, 0),
    "mqa-seed1": ({"num_kv_heads": 1}, 1),
    "mla64": ({"latent_dim": 64}, 0),
    # one key-value head with a wider feed-forward layer (608, not 512): the
    # parameters of "mha" (833,920 against 834,304), the control of Llama 2's
    # attention ablation (Touvron et al. 2023, Sec. A.2.1)
    "mqa-wide": ({"num_kv_heads": 1, "ffn_dim": 608}, 0),
}

# The full seeded design: every arm for three seeds, each run the recipe
# above (``python -m attnbook.train.kv_sharing --sweep``, 15 runs of about
# 16 minutes of one core each). The shipped file holds the VARIANTS runs.
SWEEP_FILE = "kv_sharing_sweep.json"
SWEEP_ARMS = {
    name: change for name, (change, seed) in VARIANTS.items() if seed == 0
}
SWEEP_SEEDS = (0, 1, 2)


def cached_numbers_per_token(config: dict) -> int:
    """Numbers one layer's cache holds per position: 2 x key-value heads x
    head size (keys and values), or the latent's size for latent attention.
    """
    if not isinstance(config, dict):
        raise TypeError(
            "config must be a dict of model sizes, got "
            f"{type(config).__name__}"
        )
    config = {**MODEL_CONFIG, **config}
    if config.get("latent_dim") is not None:
        return config["latent_dim"]
    kv_heads = config.get("num_kv_heads") or config["num_heads"]
    return 2 * kv_heads * config["embed_dim"] // config["num_heads"]


def pool_kv_heads(model, num_kv_heads: int):
    """A copy of ``model`` (a DecoderOnlyTransformer with multi-head
    attention) with ``num_kv_heads`` key-value heads per layer, each the mean
    of the key (and value) projections of the heads it replaces (Ainslie et
    al. 2023, Sec. 2.1); every other weight is copied."""
    kv_heads = _check_poolable(model, num_kv_heads)
    attn = model.blocks[0].self_attn
    with keep_global_rng():
        pooled = DecoderOnlyTransformer(
            model.vocab_size,
            model.context_len,
            attn.embed_dim,
            attn.num_heads,
            len(model.blocks),
            model.blocks[0].ffn.linear1.out_features,
            num_kv_heads=num_kv_heads,
        )
    state = model.state_dict()
    for name in list(state):
        if name.endswith("self_attn.in_proj_weight") or name.endswith(
            "self_attn.in_proj_bias"
        ):
            sizes = [attn.embed_dim, attn.kv_dim, attn.kv_dim]
            q, k, v = state[name].split(sizes)
            state[name] = torch.cat(
                [q, _mean_of_groups(k, kv_heads, num_kv_heads),
                 _mean_of_groups(v, kv_heads, num_kv_heads)]
            )  # fmt: skip
    pooled.load_state_dict(state)
    return pooled.eval()


def _mean_of_groups(rows, kv_heads: int, num_kv_heads: int):
    """Rows (kv_heads * d, ...) of kv_heads heads -> (num_kv_heads * d, ...):
    each new head the mean of kv_heads / num_kv_heads neighbouring ones."""
    groups = rows.unflatten(0, (num_kv_heads, kv_heads // num_kv_heads, -1))
    return groups.mean(dim=1).flatten(0, 1)


def _check_poolable(model, num_kv_heads) -> int:
    if not isinstance(model, DecoderOnlyTransformer) or not all(
        isinstance(b.self_attn, MultiHeadAttention) for b in model.blocks
    ):
        raise TypeError(
            "model must be a DecoderOnlyTransformer with multi-head "
            f"attention, got {type(model).__name__}"
        )
    kv_heads = model.blocks[0].self_attn.num_kv_heads
    require_int("num_kv_heads", num_kv_heads)
    if kv_heads % num_kv_heads:
        raise ValueError(
            f"num_kv_heads must divide the model's {kv_heads} key-value "
            f"heads, got {num_kv_heads}"
        )
    return kv_heads


def run_variant(name: str) -> dict:
    """Train (or, for "mha", load the shipped model) and score one variant:
    a JSON-ready dict."""
    if name not in VARIANTS:
        raise ValueError(
            f"name must be one of {sorted(VARIANTS)}, got {name!r}"
        )
    change, seed = VARIANTS[name]
    if name == "mha":
        lm = pretrained_language_model()
        model, final_loss = lm.model, float(lm.losses[-1])
    else:
        recipe = {**TRAINING_RECIPE, "seed": seed}
        model, history = train_language_model(
            **recipe, config=change, progress=False
        )
        final_loss = history["loss"][-1]
    held_out = corpus_split()[1]
    return {
        "name": name,
        "config": change,
        "seed": seed,
        "parameters": count_parameters(model),
        "cached_per_token_per_layer": cached_numbers_per_token(change),
        "held_out_bits_per_char": bits_per_char(model, held_out),
        "final_training_loss_nats": final_loss,
        "weights_digest": weights_digest(model),
    }


def run_sweep_arm(arm: str, seed: int) -> dict:
    """Train arm ``arm`` of the sweep with ``TRAINING_RECIPE`` and ``seed``
    and score it on the held-out text: a JSON-ready dict."""
    if arm not in SWEEP_ARMS:
        raise ValueError(
            f"arm must be one of {sorted(SWEEP_ARMS)}, got {arm!r}"
        )
    require_int("seed", seed, minimum=0)
    change = SWEEP_ARMS[arm]
    recipe = {**TRAINING_RECIPE, "seed": seed}
    model, history = train_language_model(
        **recipe, config=change, progress=False
    )
    return {
        "name": f"{arm}-seed{seed}",
        "arm": arm,
        "config": change,
        "seed": seed,
        "parameters": count_parameters(model),
        "cached_per_token_per_layer": cached_numbers_per_token(change),
        "held_out_bits_per_char": bits_per_char(model, corpus_split()[1]),
        "final_training_loss_nats": history["loss"][-1],
        "weights_digest": weights_digest(model),
    }


# two-sided 95 % quantiles of Student's t, by degrees of freedom
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447,
         7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179,
         13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101,
         19: 2.093, 20: 2.086}  # fmt: skip


def arm_of(record: dict) -> str:
    """The setting a run belongs to: its "arm", or its name without a
    "-seedN" suffix ("mha-seed1" -> "mha")."""
    if not isinstance(record, dict) or not isinstance(
        record.get("arm", record.get("name")), str
    ):
        raise TypeError(
            "record must be a dict with a str 'name' (or 'arm'), got "
            f"{type(record).__name__}"
        )
    return record.get("arm") or record["name"].split("-seed")[0]


def sweep_summary(records: list) -> dict:
    """Mean and standard deviation (None for one seed) of the held-out bits
    per character of each arm (``arm_of``) of ``run_variant`` or
    ``run_sweep_arm`` records; the pooled standard deviation of a seed over
    the arms with two seeds or more; and the smallest difference between
    two arms' means of ``seeds`` seeds each that a two-sided t-test at 5 %
    would call real if a seed's spread is the pooled one:
    t(0.975, 2 (seeds - 1)) x pooled sd x sqrt(2 / seeds), for seeds = 2
    and 3 (``detectable``: {seeds: difference}).

    Returns {"arms": {arm: {"mean", "sd", "seeds", "parameters",
    "cached_per_token_per_layer"}}, "pooled_sd", "df", "detectable"}.
    """
    arms = _group_by_arm(records)
    summary, squares, df = {}, 0.0, 0
    for arm, runs in arms.items():
        bits = [r["held_out_bits_per_char"] for r in runs]
        spread = statistics.stdev(bits) if len(bits) > 1 else None
        summary[arm] = {
            "mean": statistics.fmean(bits),
            "sd": spread,
            "seeds": len(bits),
            "parameters": runs[0]["parameters"],
            "cached_per_token_per_layer": runs[0][
                "cached_per_token_per_layer"
            ],
        }
        if spread is not None:
            squares += spread**2 * (len(bits) - 1)
            df += len(bits) - 1
    if not df:
        raise ValueError("records must hold two seeds of at least one arm")
    pooled = math.sqrt(squares / df)
    return {
        "arms": summary,
        "pooled_sd": pooled,
        "df": df,
        "detectable": {
            seeds: _T975[2 * (seeds - 1)] * pooled * math.sqrt(2 / seeds)
            for seeds in (2, 3)
        },
    }


def _group_by_arm(records) -> dict:
    if not isinstance(records, list) or not all(
        isinstance(r, dict) and "name" in r for r in records
    ):
        raise TypeError(
            "records must be a list of run_variant's dicts (each with a "
            f"'name'), got {type(records).__name__}"
        )
    arms = {}
    for record in records:
        arms.setdefault(arm_of(record), []).append(record)
    return arms


def kv_sharing_results() -> dict:
    """The shipped sweep: {"recipe": ..., "variants": {name: record}}."""
    data = read_pinned(KV_SHARING_FILE, KV_SHARING_SHA256)
    return json.loads(data)


def results_json(records: list) -> str:
    """The file ``kv_sharing_results`` reads, from ``run_variant`` (or
    ``run_sweep_arm``) records."""
    if not isinstance(records, list) or not all(
        isinstance(r, dict) and "name" in r for r in records
    ):
        raise TypeError(
            "records must be a list of run_variant's dicts (each with a "
            f"'name'), got {type(records).__name__}"
        )
    return (
        json.dumps(
            {
                "recipe": TRAINING_RECIPE,
                "model": MODEL_CONFIG,
                "variants": {r["name"]: r for r in records},
            },
            indent=1,
        )
        + "\n"
    )
