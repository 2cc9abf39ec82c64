"""attnbook.MultiHeadAttention forward vs torch.nn.MultiheadAttention with the same weights.

Eval mode, no grad, CPU, self-attention on x of shape (B, n, embed) = (8, 256, 256), 8 heads.
The book's module returns per-head weights (B, heads, n, n), so the like-for-like
reference is torch with need_weights=True, average_attn_weights=False; torch's
default call (weights averaged over heads) and need_weights=False (fused
scaled_dot_product_attention, no weights) are timed too. Target: <= 1.3x torch.
"""

import torch
from _common import row
from torch import nn

from attnbook import MultiHeadAttention
from attnbook.measure.timing import interleaved_medians

NAME = "multihead"
TARGET = 1.3


def build(batch: int, n: int, embed: int, heads: int, seed: int = 0):
    """The two modules with identical weights, and one input x (batch, n, embed)."""
    torch.manual_seed(seed)
    reference = nn.MultiheadAttention(embed, heads, batch_first=True).eval()
    ours = (
        MultiHeadAttention(embed, heads).load_torch_weights(reference).eval()
    )
    x = torch.randn(
        batch, n, embed, generator=torch.Generator().manual_seed(seed + 1)
    )
    return ours, reference, x


def run(quick: bool = False) -> list:
    batch, n, embed, heads = (2, 16, 32, 4) if quick else (8, 256, 256, 8)
    repeats = 3 if quick else 40
    ours, reference, x = build(batch, n, embed, heads)
    with torch.no_grad():
        out, weights = ours(x, x, x)
        ref_out, ref_weights = reference(x, x, x, average_attn_weights=False)
        error = max(
            (out - ref_out).abs().max().item(),
            (weights - ref_weights).abs().max().item(),
        )
        times = interleaved_medians(
            {
                "attnbook": lambda: ours(x, x, x),
                "torch, per-head weights": lambda: reference(
                    x, x, x, average_attn_weights=False
                ),
                "torch, default call": lambda: reference(x, x, x),
                "torch, need_weights=False": lambda: reference(
                    x, x, x, need_weights=False
                ),
            },
            repeats=repeats,
            warmup=2,
        )
    size = f"B={batch} n={n} E={embed} h={heads}"
    rows = [
        row(NAME, f"attnbook forward ({size})", times["attnbook"] * 1e3, "ms"),
        row(
            NAME,
            "max |attnbook - torch| (output, weights)",
            error,
            "",
            "<= 1e-5",
            error <= 1e-5,
        ),
    ]
    for name in (
        "torch, per-head weights",
        "torch, default call",
        "torch, need_weights=False",
    ):
        ratio = times["attnbook"] / times[name]
        note = f"torch {times[name] * 1e3:.2f} ms"
        if name == "torch, need_weights=False":
            note += "; fused SDPA, returns no weights (not like for like)"
        rows.append(
            row(
                NAME,
                f"time ratio vs {name}",
                ratio,
                "x",
                f"<= {TARGET}",
                None if quick else ratio <= TARGET,
                note,
            )
        )
    return rows
