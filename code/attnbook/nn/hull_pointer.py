"""A pointer network over 2-D points whose output length varies: the convex
hull task of Vinyals et al. (2015).

The input is n points in the plane; the output is the hull's vertices, as
positions of the input, counter-clockwise from the vertex with the lowest
index, and then that first vertex again, which closes the polygon and ends
the output. The model is ``PointerNetwork``'s: an LSTM encoder and decoder
and the additive pointer score, with the positions already chosen masked
out, except the first one, which may be chosen again (to close the polygon)
once at least three vertices are out.
"""

import torch
from torch import nn

from .._checks import (
    all_finite,
    require_float,
    require_int,
    require_module_dtype,
    require_tensor,
)
from .._memory import require_matrix_fits
from .._random import restores_rng_on_error
from ..core.masking import masked_softmax
from .pointer import add_pointer_layers

PAD = -1  # fills an output after the polygon has closed
MIN_VERTICES = 3  # the first vertex may close the polygon after this many


def _check_points(points, model) -> torch.Tensor:
    """points (B, n, 2), n >= 3, finite, in the dtype of ``model``."""
    require_float("points", points)
    if points.dim() != 3 or points.shape[-1] != 2 or points.shape[1] < 3:
        raise ValueError(
            "points must have shape (batch, n, 2) with n >= 3, got "
            f"{tuple(points.shape)}"
        )
    if not all_finite(points):
        raise ValueError("points contains NaN or infinite values")
    require_module_dtype(model, points=points)
    return points


def _check_target(target, n: int, batch: int | None = None) -> None:
    """target (B, L) int64: positions in [0, n) or ``PAD``, a vertex first
    (so every row has a step to score)."""
    require_tensor("target", target)
    if target.dtype != torch.int64:
        raise TypeError(f"target must be int64, got {target.dtype}")
    if target.dim() != 2 or target.shape[1] == 0:
        raise ValueError(
            f"target must have shape (batch, L) with L >= 1, got "
            f"{tuple(target.shape)}"
        )
    if batch is not None and len(target) != batch:
        raise ValueError(
            f"target has {len(target)} rows, points {batch}: one output "
            "per set of points"
        )
    if target.numel() and (
        target.min() < PAD or target.max() >= n or (target[:, 0] < 0).any()
    ):
        raise ValueError(
            f"target must hold positions in [0, {n}) (a vertex first) or "
            f"PAD = {PAD}, got {target.min().item()} .. {target.max().item()}"
        )


def closing_keep_mask(target: torch.Tensor, n: int) -> torch.Tensor:
    """Keep-mask of every step of a hull output.

    target: (B, L) positions, ``PAD`` after the closing step. Returns (B, L,
    n): at step t (0-based) position j is kept iff it was not chosen at steps
    0..t-1, or it is the first vertex and t >= ``MIN_VERTICES``.
    """
    _check_target(target, require_int("n", n))
    require_matrix_fits("the keep mask", (*target.shape, n), torch.int64)
    chosen = nn.functional.one_hot(target.clamp_min(0), n).bool()
    chosen &= (target >= 0).unsqueeze(-1)
    before = chosen.cumsum(dim=1) - chosen.long() > 0  # chosen at s < t
    steps = torch.arange(target.shape[1], device=target.device)
    may_close = (steps >= MIN_VERTICES).view(1, -1, 1)
    return ~before | (chosen[:, :1] & may_close)


class HullPointerNetwork(nn.Module):
    """LSTM encoder and decoder over 2-D points with an additive pointer.

    hidden_dim: size of the embeddings, of both LSTM states and of the scoring
    layer. ``decode(points)`` returns (B, n + 1) positions, ``PAD`` after the
    step that points back at the first vertex.
    """

    @restores_rng_on_error
    def __init__(self, hidden_dim: int = 64):
        super().__init__()
        self.hidden_dim = require_int("hidden_dim", hidden_dim)
        add_pointer_layers(self, 2, hidden_dim)  # one point -> a vector

    def teacher_forced_scores(self, points, target):
        """Pointer scores (B, L, n) when step t is fed the true vertex of
        step t - 1. points: (B, n, 2), target: (B, L)."""
        _check_points(points, self)
        _check_target(target, points.shape[1], len(points))
        encoder_states, final = self.encoder(self.embed(points))
        start = self.start.expand(len(points), 1, -1)
        previous = target[:, :-1].clamp_min(0)
        fed_points = points.gather(1, previous.unsqueeze(-1).expand(-1, -1, 2))
        fed = torch.cat([start, self.embed(fed_points)], dim=1)
        decoder_states, _ = self.decoder(fed, final)
        return self.pointer(decoder_states, encoder_states)

    def loss(self, points, target):
        """Cross-entropy of the true vertices, averaged over the steps up to
        and including the closing one (``log_softmax`` of the masked
        scores)."""
        _check_points(points, self)
        _check_target(target, points.shape[1], len(points))
        scores = self.teacher_forced_scores(points, target)
        keep = closing_keep_mask(target, points.shape[1])
        log_p = torch.log_softmax(scores.masked_fill(~keep, -torch.inf), -1)
        picked = log_p.gather(2, target.clamp_min(0).unsqueeze(-1))
        return -picked.squeeze(-1)[target >= 0].mean()

    @torch.no_grad()
    def decode(self, points):
        """Greedy decoding of points (B, n, 2): (B, n + 1) positions, the
        polygon closed by the first vertex, then ``PAD``."""
        _check_points(points, self)
        batch, n, _ = points.shape
        keys, state = self.encoder(self.embed(points))
        fed = self.start.expand(batch, 1, -1)
        available = torch.ones(batch, n, dtype=torch.bool)
        first = torch.zeros(batch, n, dtype=torch.bool)
        done = torch.zeros(batch, dtype=torch.bool)
        rows, out = torch.arange(batch), []
        for t in range(n + 1):
            decoder_state, state = self.decoder(fed, state)
            scores = self.pointer(decoder_state, keys)[:, 0]
            keep = available | (first & (t >= MIN_VERTICES))
            choice = masked_softmax(scores, keep).argmax(dim=-1)
            out.append(torch.where(done, PAD, choice))
            if t == 0:
                first[rows, choice] = True
            done |= first[rows, choice] & (t > 0)
            available[rows, choice] = False
            if done.all():
                break
            fed = self.embed(points[rows, choice]).unsqueeze(1)
        out += [torch.full((batch,), PAD)] * (n + 1 - len(out))
        return torch.stack(out, dim=1)
