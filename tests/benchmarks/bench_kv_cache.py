"""Greedy generation with and without a key-value cache (attnbook.EncoderDecoderTransformer.generate).

An encoder-decoder Transformer with random weights (2 encoder and 2 decoder layers,
embed_dim 128, 4 heads, FFN 512, vocabularies of 100) reads a source of 16 tokens and
generates 512 tokens greedily (no stop at EOS), batch 1, eval mode, no grad, CPU, one
thread for both (generation at batch 1 is a chain of small operations; a second thread
only adds waiting on a shared machine).
Without the cache every step re-runs the decoder over the whole prefix; with it every
step computes attention for the new position only and appends its keys and values.
Both must produce the same tokens. Target: the cached version at least 10x faster
(ratio of medians measured side by side in this run).
"""

import torch
from _common import row

from attnbook import EncoderDecoderTransformer
from attnbook.measure.threads import single_thread
from attnbook.measure.timing import interleaved_medians

NAME = "kv-cache"
TARGET = 10.0


def build(
    embed: int = 128,
    heads: int = 4,
    layers: int = 2,
    tokens: int = 512,
    seed: int = 0,
):
    """The model (random weights, seeded) and one source sequence (1, 16)."""
    torch.manual_seed(seed)
    model = EncoderDecoderTransformer(
        100,
        100,
        embed_dim=embed,
        num_heads=heads,
        ffn_hidden=4 * embed,
        num_encoder_layers=layers,
        num_decoder_layers=layers,
        max_src_len=16,
        max_tgt_len=tokens + 1,
    ).eval()
    src = torch.randint(
        3, 100, (1, 16), generator=torch.Generator().manual_seed(seed + 1)
    )
    return model, src


def run(quick: bool = False) -> list:
    embed, heads, layers, tokens = (
        (32, 4, 2, 24) if quick else (128, 4, 2, 512)
    )
    repeats = 1 if quick else 3
    model, src = build(embed, heads, layers, tokens)

    outputs = {}

    def generate(use_cache: bool):
        outputs[use_cache] = model.generate(
            src, max_len=tokens, use_cache=use_cache, stop_at_eos=False
        )

    with single_thread():
        for use_cache in (True, False):  # first calls pay one-off set-up costs
            model.generate(
                src, max_len=8, use_cache=use_cache, stop_at_eos=False
            )
        times = interleaved_medians(
            {
                "cache": lambda: generate(True),
                "no cache": lambda: generate(False),
            },
            repeats=repeats,
            warmup=0,
        )
    same = torch.equal(outputs[True], outputs[False])
    ratio = times["no cache"] / times["cache"]
    size = f"{layers} layers, E={embed}, h={heads}, {tokens} tokens"
    return [
        row(
            NAME,
            f"greedy generation with the cache ({size})",
            times["cache"],
            "s",
        ),
        row(
            NAME, "greedy generation without the cache", times["no cache"], "s"
        ),
        row(
            NAME,
            "same tokens with and without the cache",
            same,
            "",
            "True",
            same,
        ),
        row(
            NAME,
            "speed-up of the cache (time without / with)",
            ratio,
            "x",
            f">= {TARGET:g}",
            None if quick else ratio >= TARGET,
            f"median of {repeats}, interleaved, one thread",
        ),
    ]
