"""RNN encoder-decoders with and without additive attention (Bahdanau, Cho and
Bengio 2015).

A bidirectional GRU encoder reads the source tokens x_1..x_n into encoder
states e_1..e_n (each the forward and backward states side by side, size 2H). A
GRU decoder writes the output one token at a time. At output step t it reads a
context vector c_t:

- without attention (``attention=False``), c_t = c for every t: the encoder's
  two final states, one vector of size 2H that must hold the whole input (the
  bottleneck);
- with attention (``attention=True``), the previous decoder state s_{t-1} is
  the query and the encoder states are the keys and the values::

      alpha_{tj} = softmax_j( v^T tanh(W_q s_{t-1} + W_k e_j) )
      c_t        = sum_j alpha_{tj} e_j

  (padding masked out), which is ``attnbook.attention(s_{t-1}, E, E,
  score=AdditiveScore(H, 2H, d_a), mask)``.

Then s_t = GRUCell([y_{t-1}; c_t], s_{t-1}) and the output distribution is
softmax(W_o [s_t; c_t; y_{t-1}]), y_{t-1} the embedding of the previous output
token. The decoder starts from s_0 = tanh(W_s c), c the encoder's final states,
in both models.

Also here: the copying task of the bottleneck experiment, and the book's
trained date translator (``pretrained_date_translator``), whose weights ship in
``attnbook/data``.
"""

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .._checks import (
    require_bool_mask,
    require_flag,
    require_float,
    require_ids,
    require_int,
    require_lengths,
    require_module_dtype,
    require_same_size,
    require_shape,
    require_tensor,
    require_training,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import restores_rng_on_error, seeded_generator
from ..core.attention import attention
from ..core.masking import lengths_to_mask
from ..core.scoring import AdditiveScore

PAD, BOS, EOS = 0, 1, 2


def _check_target(model, src, tgt_in) -> None:
    """Seq2Seq.forward's target: tgt_in (B, T) ids of the target vocabulary,
    B as in src (src and lengths are checked by encode)."""
    require_ids("tgt_in", tgt_in, model.tgt_embed.num_embeddings, dims=2)
    if tgt_in.shape[1] == 0:
        raise ValueError("tgt_in must hold at least one step (BOS), got T = 0")
    require_tensor("src", src)
    if src.dim() >= 1:
        require_same_size(
            "batch size", "src", src.shape[0], "tgt_in", tgt_in.shape[0]
        )


_NO_TOKENS = object()  # context: no previous tokens to check


def check_decoder_state(model, state, states, summary, keep, prev=_NO_TOKENS):
    """A decoder step's inputs: state (B, H), states (B, n, 2H), summary
    (B, 2H) in the model's dtype, keep (B, n) boolean; prev (B,) ids of the
    target vocabulary."""
    hidden = model.config["hidden_dim"]
    require_float("states", states)
    batch, n = require_shape("states", states, (None, None, 2 * hidden)).shape[
        :2
    ]
    for name, tensor, size in (
        ("state", state, hidden),
        ("summary", summary, 2 * hidden),
    ):
        require_float(name, tensor)
        require_shape(name, tensor, (batch, None))
        require_same_size("feature size", name, tensor.shape[1], "H", size)
    require_module_dtype(model, state=state, states=states, summary=summary)
    require_bool_mask(keep, torch.Size((batch, n)), name="keep")
    if tuple(keep.shape) != (batch, n):
        raise ValueError(
            f"keep must have shape ({batch}, {n}), got {tuple(keep.shape)}"
        )
    if prev is not _NO_TOKENS:
        require_shape("prev_tokens", prev, (batch,))
        require_ids(
            "previous target tokens", prev, model.tgt_embed.num_embeddings
        )


_FEWER = "decode fewer steps or"


class Seq2Seq(nn.Module):
    """A GRU encoder-decoder over token ids, with additive attention or
    without.

    src_vocab_size, tgt_vocab_size: numbers of token ids (id 0 = padding, 1 =
    BOS, 2 = EOS in the target). embed_dim: token embedding size. hidden_dim:
    H, the decoder state size (each encoder direction also has H, so e_j has
    size 2H). attention: use Bahdanau attention (True) or the fixed context
    vector (False). attn_dim: d_a, the hidden size of the additive score
    (default H).
    """

    @restores_rng_on_error
    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        embed_dim: int = 32,
        hidden_dim: int = 64,
        attention: bool = True,
        attn_dim: int | None = None,
    ):
        super().__init__()
        for name, value in (
            ("src_vocab_size", src_vocab_size),
            ("tgt_vocab_size", tgt_vocab_size),
            ("embed_dim", embed_dim),
            ("hidden_dim", hidden_dim),
        ):
            require_int(name, value)
        require_flag("attention", attention)
        if attn_dim is not None:
            require_int("attn_dim", attn_dim)
        vocab, H = src_vocab_size + tgt_vocab_size, hidden_dim
        require_weights_fit(
            "Seq2Seq", (vocab + 12 * H, embed_dim + 4 * H + (attn_dim or H))
        )
        self.config = {
            "src_vocab_size": src_vocab_size,
            "tgt_vocab_size": tgt_vocab_size,
            "embed_dim": embed_dim,
            "hidden_dim": hidden_dim,
            "attention": bool(attention),
            "attn_dim": attn_dim if attn_dim is not None else hidden_dim,
        }
        H = hidden_dim
        self.src_embed = nn.Embedding(
            src_vocab_size, embed_dim, padding_idx=PAD
        )
        self.encoder = nn.GRU(
            embed_dim, H, batch_first=True, bidirectional=True
        )
        self.init_state = nn.Linear(2 * H, H)
        self.score = (
            AdditiveScore(
                query_dim=H, key_dim=2 * H, hidden_dim=self.config["attn_dim"]
            )
            if attention
            else None
        )
        self.tgt_embed = nn.Embedding(tgt_vocab_size, embed_dim)
        self.cell = nn.GRUCell(embed_dim + 2 * H, H)
        self.out = nn.Linear(H + 2 * H + embed_dim, tgt_vocab_size)

    @property
    def uses_attention(self) -> bool:
        return self.score is not None

    def encode(self, src: torch.Tensor, lengths: torch.Tensor):
        """Encoder states and summary.

        src: (B, n) ids, padded with 0; lengths: (B,) numbers of real tokens
        (each >= 1). Returns (E (B, n, 2H) encoder states, zero at padding; c
        (B, 2H) the final forward state and the final backward state side by
        side; keep (B, n) mask, True = real token).
        """
        require_tensor("src", src)
        if src.dim() != 2:
            raise ValueError(
                f"src must have shape (B, n), got {tuple(src.shape)}"
            )
        require_ids("src", src, self.src_embed.num_embeddings)
        lengths = require_lengths(
            "lengths", lengths, src.shape[0], src.shape[1]
        )
        packed = pack_padded_sequence(
            self.src_embed(src),
            lengths.cpu(),
            batch_first=True,
            enforce_sorted=False,
        )
        states, final = self.encoder(packed)
        states, _ = pad_packed_sequence(
            states, batch_first=True, total_length=src.shape[1]
        )
        summary = torch.cat([final[0], final[1]], dim=-1)
        return states, summary, lengths_to_mask(lengths, src.shape[1])

    def context(self, state, states, summary, keep):
        """The context vector c_t for decoder state s_{t-1}.

        state: (B, H) s_{t-1}; states: (B, n, 2H) E; summary: (B, 2H) c;
        keep: (B, n). Returns (c_t (B, 2H), alpha_t (B, n) or None).
        """
        check_decoder_state(self, state, states, summary, keep)
        if self.score is None:
            return summary, None
        # One query per sequence: (B, 1, H); keys = values = E; mask (B, 1, n)
        query, mask = state.unsqueeze(1), keep.unsqueeze(1)
        c, weights = attention(query, states, states, self.score, mask)
        return c.squeeze(1), weights.squeeze(1)

    def step(self, prev_tokens, state, states, summary, keep):
        """One decoder step from y_{t-1} (B,) and s_{t-1} (B, H).

        Returns (logits (B, V), s_t (B, H), alpha_t (B, n) or None).
        """
        check_decoder_state(self, state, states, summary, keep, prev_tokens)
        y = self.tgt_embed(prev_tokens)
        c, weights = self.context(state, states, summary, keep)
        state = self.cell(torch.cat([y, c], dim=-1), state)
        logits = self.out(torch.cat([state, c, y], dim=-1))
        return logits, state, weights

    def forward(self, src, lengths, tgt_in):
        """Teacher forcing: the decoder is fed the true previous tokens.

        src: (B, n), lengths: (B,), tgt_in: (B, T) BOS, then the target.
        Returns (logits (B, T, V), weights (B, T, n) or None).
        """
        _check_target(self, src, tgt_in)
        states, summary, keep = self.encode(src, lengths)
        state = torch.tanh(self.init_state(summary))
        logits, weights = [], []
        for prev in tgt_in.unbind(1):  # y_{t-1} for t = 1, ..., T
            out, state, alpha = self.step(prev, state, states, summary, keep)
            logits.append(out)
            weights.append(alpha)
        weights = torch.stack(weights, 1) if self.uses_attention else None
        return torch.stack(logits, 1), weights

    def loss(self, src, lengths, tgt_in, tgt_out) -> torch.Tensor:
        """Mean cross-entropy of the teacher-forced predictions; padding (0)
        in tgt_out is ignored."""
        require_tensor("tgt_in", tgt_in)
        require_ids("tgt_out", tgt_out, self.tgt_embed.num_embeddings, dims=2)
        if tgt_out.shape != tgt_in.shape:
            raise ValueError(
                f"tgt_out {tuple(tgt_out.shape)} must have the shape of tgt_in"
                f" {tuple(tgt_in.shape)}"
            )
        if tgt_out.dtype != torch.int64:
            raise TypeError(f"tgt_out must be int64, got {tgt_out.dtype}")
        logits, _ = self(src, lengths, tgt_in)
        return nn.functional.cross_entropy(
            logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD
        )

    @torch.no_grad()
    def greedy_decode(
        self, src: torch.Tensor, lengths: torch.Tensor, max_steps: int
    ):
        """Greedy decoding: at each step feed back the most probable token, up
        to ``max_steps``.

        src: (B, n), lengths: (B,). Returns (tokens (B, T) with T <= max_steps,
        EOS included, positions after a sequence's EOS filled with PAD; weights
        (B, T, n), zero on padding and after EOS, or None without attention).
        Stops early when every sequence has written EOS.
        """
        require_int("max_steps", max_steps)
        states, summary, keep = self.encode(src, lengths)
        require_matrix_fits(  # the worst case: no sequence writes EOS
            "the decoded tokens", (len(src), max_steps), torch.int64, _FEWER
        )
        state = torch.tanh(self.init_state(summary))
        prev = torch.full((src.shape[0],), BOS, dtype=torch.long)
        done = torch.zeros(src.shape[0], dtype=torch.bool)
        tokens, weights = [], []
        for _ in range(max_steps):
            logits, state, alpha = self.step(
                prev, state, states, summary, keep
            )
            prev = logits.argmax(-1)
            tokens.append(prev.masked_fill(done, PAD))
            if alpha is not None:
                weights.append(alpha.masked_fill(done.unsqueeze(1), 0.0))
            done = done | (prev == EOS)
            if done.all():
                break
        return torch.stack(tokens, 1), (
            torch.stack(weights, 1) if weights else None
        )


def train_seq2seq(
    model: Seq2Seq,
    make_batch,
    steps: int,
    lr: float = 3e-3,
    seed: int = 0,
    log_every: int = 0,
    after_step=None,
    stop_after: int | None = None,
):
    """Train ``model`` with teacher forcing, Adam and a one-cycle learning rate
    for ``steps`` steps.

    make_batch(generator) -> (src, src_lengths, tgt_in, tgt_out) draws one
    batch; the generator is ``torch.Generator().manual_seed(seed)``. Gradients
    are clipped to norm 1. With a fixed thread count the result is bit-for-bit
    reproducible. after_step(step, model), if given, is called after every
    step (step = 1, ..., steps), e.g. to evaluate along the way. With
    ``stop_after`` = k (1 <= k <= steps), only the first k steps of that run
    are taken (same batches and schedule). Returns the list of losses.
    """
    if not isinstance(model, Seq2Seq):
        raise TypeError(f"model must be a Seq2Seq, got {type(model).__name__}")
    require_training(steps=steps, lr=lr, seed=seed)
    require_int("steps", steps)  # the one-cycle schedule needs a step
    require_int("log_every", log_every, minimum=0)
    if stop_after is not None:
        require_int("stop_after", stop_after)
        if stop_after > steps:
            raise ValueError(
                f"stop_after must be at most steps = {steps}, got {stop_after}"
            )
    if not callable(make_batch):
        raise TypeError(
            "make_batch must be a function of a generator, got "
            f"{make_batch!r:.40}"
        )
    if after_step is not None and not callable(after_step):
        raise TypeError(
            "after_step must be a function of (step, model), got "
            f"{after_step!r:.40}"
        )
    generator = seeded_generator(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=lr, total_steps=steps, pct_start=0.1
    )
    model.train()
    losses = []
    for i in range(steps if stop_after is None else stop_after):
        loss = model.loss(*make_batch(generator))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if after_step is not None:
            after_step(i + 1, model)
        if log_every and (i % log_every == 0 or i == steps - 1):
            print(
                f"step {i + 1:5d}/{steps}  loss {loss.item():.4f}", flush=True
            )
    model.eval()
    return losses
