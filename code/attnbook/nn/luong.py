"""The encoder-decoder with Luong et al.'s global attention (Luong, Pham and
Manning 2015), beside ``Seq2Seq``'s Bahdanau attention.

The encoder is ``Seq2Seq``'s (a bidirectional GRU, states e_j of size 2H,
decoder start s_0 = tanh(W_s c)). The decoder step changes order: the RNN
runs first, then attention asks with the *new* state::

    s_t        = GRUCell(y_{t-1}, s_{t-1})
    alpha_{tj} = softmax_j( s_t^T W_a e_j )      ("general" score)
    c_t        = sum_j alpha_{tj} e_j
    h~_t       = tanh(W_c [c_t; s_t])            (the attentional state)
    p(y_t)     = softmax(W_o h~_t)

This is global attention (every source position, as Bahdanau's) with the
general score, without the paper's input feeding (h~_{t-1} fed to the next
step) and without its local attention (a window around a predicted
position).
"""

import torch
from torch import nn

from .._random import restores_rng_on_error
from ..core.scoring import BilinearScore
from .seq2seq import Seq2Seq, check_decoder_state


class LuongSeq2Seq(Seq2Seq):
    """A GRU encoder-decoder with Luong's global "general" attention.

    src_vocab_size, tgt_vocab_size, embed_dim, hidden_dim as in ``Seq2Seq``
    (H: decoder state size; encoder states have size 2H). Trains with
    ``train_seq2seq`` and decodes with ``greedy_decode`` like ``Seq2Seq``;
    ``step`` returns the weights alpha_t (B, n) of the query s_t.
    """

    @restores_rng_on_error
    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        embed_dim: int = 32,
        hidden_dim: int = 64,
    ):
        super().__init__(
            src_vocab_size, tgt_vocab_size, embed_dim, hidden_dim, False
        )
        H = hidden_dim
        self.config.update(attention=True, attn_dim=None, decoder="luong")
        self.score = BilinearScore(query_dim=H, key_dim=2 * H)  # W_a
        self.cell = nn.GRUCell(embed_dim, H)  # y_{t-1} only
        self.combine = nn.Linear(2 * H + H, H)  # W_c
        self.out = nn.Linear(H, tgt_vocab_size)  # W_o

    def step(self, prev_tokens, state, states, summary, keep):
        """One decoder step from y_{t-1} (B,) and s_{t-1} (B, H).

        Returns (logits (B, V), s_t (B, H), alpha_t (B, n)).
        """
        check_decoder_state(self, state, states, summary, keep, prev_tokens)
        y = self.tgt_embed(prev_tokens)
        state = self.cell(y, state)  # s_t first
        c, weights = self.context(state, states, summary, keep)  # query s_t
        attentional = torch.tanh(self.combine(torch.cat([c, state], -1)))
        return self.out(attentional), state, weights
