"""Pointer networks: a sequence-to-sequence model whose outputs are input
positions.

Vinyals, Fortunato and Jaitly (2015); nndl §1.1.3.4. An LSTM encoder reads
the inputs x_1..x_n into states e_1..e_n. A decoder LSTM, started from the
encoder's final state and fed the input it chose at the previous step,
produces a state s_t at every output step t. The pointer distribution of
step t is an attention distribution over the inputs,

    u_{t,j} = v^T tanh(W_q s_t + W_k e_j),
    p(pi_t = j | ...) = softmax_j(u_{t,j}),

with the positions chosen at earlier steps masked out. The scores are exactly
``AdditiveScore`` (keys = encoder states, queries = decoder states) and the
masking is ``masked_softmax`` with a keep-mask. The book's task is sorting:
output the positions of the inputs from the largest to the smallest.
"""

import math

import torch
from torch import nn

from .._checks import (
    all_finite,
    require_float,
    require_int,
    require_module_dtype,
    require_shape,
    require_tensor,
)
from .._memory import require_activations_fit, require_weights_fit
from .._random import restores_rng_on_error
from ..core.masking import masked_softmax
from ..core.scoring import AdditiveScore


def check_values(x) -> torch.Tensor:
    """x must be a finite float tensor of shape (B, n) with n >= 1."""
    require_float("x", x)
    if x.dim() != 2:
        raise ValueError(
            f"x must have shape (batch, n), got a {x.dim()}-D tensor of shape "
            f"{tuple(x.shape)}"
        )
    if x.shape[1] == 0:
        raise ValueError(
            "x must hold at least one number per sequence, got shape "
            f"{tuple(x.shape)}"
        )
    if not all_finite(x):
        raise ValueError(
            f"x of shape {tuple(x.shape)} contains NaN or infinite values"
        )
    return x


def _check_permutations(x, target) -> torch.Tensor:
    """target must be a (B, n) integer tensor (of the shape of x, if x is
    given) whose rows are permutations of 0..n-1."""
    require_tensor("target", target)
    if target.dim() != 2 or (x is not None and target.shape != x.shape):
        wanted = "(B, n)" if x is None else f"the shape of x {tuple(x.shape)}"
        raise ValueError(
            f"target must have {wanted}, got {tuple(target.shape)}"
        )
    if target.dtype != torch.int64:
        raise TypeError(
            f"target must hold int64 positions, got dtype {target.dtype}"
        )
    n = target.shape[1]
    expected = torch.arange(n, device=target.device).expand_as(target)
    if not torch.equal(target.sort(dim=1).values, expected):
        raise ValueError(
            f"every row of target must be a permutation of 0..{n - 1}"
        )
    return target


_NO_TARGET = object()  # decode: no target to check


def check_pointer_inputs(module, x, target=_NO_TARGET) -> torch.Tensor:
    """x: finite (B, n) floats in the module's dtype; target, when given,
    (B, n) permutations of 0..n-1. Returns x."""
    check_values(x)
    require_module_dtype(module, x=x)
    n, hidden = x.shape[1], module.hidden_dim
    # a pass: the encoder (~7 n H a row), then n decoding steps, each
    # scoring n encoder states additively (~8 H + 3 n H + 4 n a row)
    numbers = len(x) * n * (15 * hidden + 3 * n * hidden + 4 * n)
    require_activations_fit("x", x, numbers, x.dtype, "a pointer network")
    if target is not _NO_TARGET:
        _check_permutations(x, target)
    return x


def _check_step(module, fed, state, encoder_states, available) -> None:
    """The arguments of ``pointer_step``: fed (B, 1, H), state (h, c) each
    (1, B, H), encoder_states (B, n, H) in the module's dtype; available
    (B, n) boolean with at least one True per row."""
    hidden = module.hidden_dim
    require_float("encoder_states", encoder_states)
    batch, n = require_shape(
        "encoder_states", encoder_states, (None, None, hidden)
    ).shape[:2]
    require_float("fed", fed)
    require_shape("fed", fed, (batch, 1, hidden))
    if not isinstance(state, (tuple, list)) or len(state) != 2:
        raise TypeError(
            "state must be the decoder LSTM's pair (h, c), got "
            f"{type(state).__name__} {str(state):.60}"
        )
    for name, tensor in zip(("state[0]", "state[1]"), state):
        require_float(name, tensor)
        require_shape(name, tensor, (1, batch, hidden))
    require_module_dtype(
        module,
        fed=fed,
        encoder_states=encoder_states,
        **{"state[0]": state[0], "state[1]": state[1]},
    )
    require_shape("available", available, (batch, n))
    if available.dtype != torch.bool:
        raise TypeError(
            f"available must be a boolean tensor, got dtype {available.dtype}"
        )
    if n and not available.any(-1).all():
        raise ValueError("available must keep at least one position per row")


def not_chosen_mask(target: torch.Tensor) -> torch.Tensor:
    """Keep-mask of the positions still available at every decoding step.

    target: (B, n) permutations, ``target[b, t]`` the position chosen at
    step t (0-based). Returns mask (B, n, n): ``mask[b, t, j]`` is True iff
    position j was not chosen at steps 0..t-1 (j is in ``target[b, t:]``).
    """
    _check_permutations(None, target)
    batch, n = target.shape
    steps = torch.arange(n, device=target.device).expand(batch, n)
    # step_of[b, j]: the step that chooses position j (inverse permutation)
    step_of = torch.empty_like(target).scatter_(1, target, steps)
    return step_of.unsqueeze(1) >= steps.unsqueeze(2)


def add_pointer_layers(module: nn.Module, input_dim: int, hidden_dim: int):
    """The layers of a pointer network (this module's and the convex hull's):
    ``embed`` (an input of ``input_dim`` numbers -> a vector), the LSTM
    ``encoder`` and ``decoder``, ``start`` (the input of step 0: nothing
    chosen yet, the source's h_0 symbol) and ``pointer``, the additive score
    v^T tanh(W_q s_t + W_k e_j) of the decoder state (query) against the
    encoder states (keys). Their initial weights are drawn from torch's
    global generator, as every torch layer's are."""
    if not isinstance(module, nn.Module):
        raise TypeError(
            f"module must be a torch.nn.Module, got {type(module).__name__}"
        )
    require_int("input_dim", input_dim)
    require_int("hidden_dim", hidden_dim)
    require_weights_fit(
        "the pointer layers", (20 * hidden_dim + input_dim, hidden_dim)
    )
    module.embed = nn.Linear(input_dim, hidden_dim)
    module.encoder = nn.LSTM(hidden_dim, hidden_dim, batch_first=True)
    module.decoder = nn.LSTM(hidden_dim, hidden_dim, batch_first=True)
    module.start = nn.Parameter(
        torch.randn(hidden_dim) / math.sqrt(hidden_dim)
    )
    module.pointer = AdditiveScore(
        query_dim=hidden_dim, key_dim=hidden_dim, hidden_dim=hidden_dim
    )


class PointerNetwork(nn.Module):
    """LSTM encoder, LSTM decoder and an additive pointer over the input
    positions.

    hidden_dim: size of the embeddings, of both LSTM states and of the scoring
    layer. Inputs are sequences of numbers x: (B, n). Outputs are positions:
    ``decode(x)`` returns a (B, n) LongTensor whose every row is a permutation
    of 0..n-1.
    """

    @restores_rng_on_error
    def __init__(self, hidden_dim: int = 64):
        super().__init__()
        require_int("hidden_dim", hidden_dim)
        require_weights_fit("PointerNetwork", (20 * hidden_dim, hidden_dim))
        self.hidden_dim = hidden_dim
        add_pointer_layers(self, 1, hidden_dim)  # one number -> a vector

    def encode(self, x: torch.Tensor):
        """Run the encoder. x: (B, n). Returns (states (B, n, H), final (h,
        c), each (1, B, H))."""
        check_pointer_inputs(self, x)
        states, final = self.encoder(self.embed(x.unsqueeze(-1)))
        return states, final

    def pointer_scores(
        self, decoder_states: torch.Tensor, encoder_states: torch.Tensor
    ) -> torch.Tensor:
        """Unnormalised pointer scores score(s_t, e_j).

        decoder_states: (B, M, H), encoder_states: (B, N, H). Returns (B, M,
        N).
        """
        return self.pointer(decoder_states, encoder_states)

    def teacher_forced_scores(self, x, target):
        """Unmasked pointer scores u_{t,j} under teacher forcing.

        x: (B, n) numbers, target: (B, n) permutations. Step 0 is fed the start
        symbol, step t the number at the true pi_{t-1}. Returns (B, n, n).
        """
        check_pointer_inputs(self, x, target)
        encoder_states, final = self.encode(x)
        start = self.start.expand(len(x), 1, -1)
        chosen = x.gather(1, target[:, :-1]).unsqueeze(-1)  # fed at 1..n-1
        fed = torch.cat([start, self.embed(chosen)], dim=1)
        decoder_states, _ = self.decoder(fed, final)
        return self.pointer_scores(decoder_states, encoder_states)

    def forward(self, x, target):
        """Teacher forcing: the pointer distributions when step t is fed the
        true pi_{t-1}.

        x: (B, n) numbers, target: (B, n) permutations (the true positions).
        Returns weights (B, n, n): row t is p(pi_t = . | pi_<t, x), zero on the
        positions that ``target`` chose before step t.
        """
        scores = self.teacher_forced_scores(x, target)
        return masked_softmax(scores, not_chosen_mask(target))

    def loss(self, x, target):
        """Cross-entropy of the true positions under teacher forcing, averaged
        over steps and batch.

        ``log_softmax`` of the masked scores (chosen positions set to -inf),
        never log(softmax): it stays finite, with a nonzero gradient, even
        when the true position's probability underflows to 0 in float32.
        """
        scores = self.teacher_forced_scores(x, target)
        chosen = ~not_chosen_mask(target)
        log_p = torch.log_softmax(scores.masked_fill(chosen, -torch.inf), -1)
        return -log_p.gather(2, target.unsqueeze(-1)).mean()

    def pointer_step(self, fed, state, encoder_states, available):
        """One greedy decoding step.

        fed: (B, 1, H) the embedded number chosen last (or the start symbol);
        state: the decoder LSTM's (h, c); available: (B, n), True = not chosen
        yet. Returns (choice (B,), weights (B, 1, n), the new state).
        """
        _check_step(self, fed, state, encoder_states, available)
        decoder_state, state = self.decoder(fed, state)  # (B, 1, H)
        scores = self.pointer_scores(decoder_state, encoder_states)
        weights = masked_softmax(scores, available.unsqueeze(1))
        # The k kept weights sum to 1, so the largest is >= 1/k > 0, while a
        # chosen position has weight exactly 0: argmax never repeats one.
        return weights.squeeze(1).argmax(dim=-1), weights, state

    @torch.no_grad()
    def decode(self, x, return_weights=False):
        """Greedy decoding of x (B, n): positions (B, n), each a permutation of
        0..n-1; with ``return_weights`` also the weights (B, n, n)."""
        keys, state = self.encode(x)  # encoder states (x checked there)
        available = torch.ones_like(x, dtype=torch.bool)
        fed = self.start.expand(len(x), 1, -1)  # step 0: the start symbol
        choices, weights = [], []
        for _ in range(x.shape[1]):
            choice, w, state = self.pointer_step(fed, state, keys, available)
            available.scatter_(1, choice.unsqueeze(1), False)
            fed = self.embed(x.gather(1, choice.unsqueeze(1)).unsqueeze(-1))
            choices.append(choice)
            weights.append(w)
        positions, weights = torch.stack(choices, 1), torch.cat(weights, 1)
        return (positions, weights) if return_weights else positions


class PositionClassifier(PointerNetwork):
    """The fixed-vocabulary baseline: chapter 5's attention decoder with a
    softmax over ``max_positions`` position *classes*.

    Everything but the output layer is a ``PointerNetwork``'s (and the same
    mask of the positions already chosen). At step t the additive attention
    averages the encoder states into a context c_t, and a linear layer maps
    [s_t; c_t] to one score per class 1..max_positions, whatever the input
    holds there. A list of n <= max_positions numbers uses the first n
    classes; a longer list has positions that no class names.
    """

    @restores_rng_on_error
    def __init__(self, hidden_dim: int = 64, max_positions: int = 10):
        super().__init__(hidden_dim)
        self.max_positions = require_int("max_positions", max_positions)
        self.classes = nn.Linear(2 * hidden_dim, max_positions)

    def pointer_scores(
        self, decoder_states: torch.Tensor, encoder_states: torch.Tensor
    ) -> torch.Tensor:
        """Class scores of positions 1..n. decoder_states: (B, M, H),
        encoder_states: (B, n, H) with n <= max_positions. Returns (B, M,
        n)."""
        n = encoder_states.shape[-2]
        if n > self.max_positions:
            raise ValueError(
                f"a PositionClassifier with {self.max_positions} output "
                f"classes cannot point at position {n} of a list of {n}"
            )
        weights = torch.softmax(
            self.pointer(decoder_states, encoder_states), dim=-1
        )
        context = weights @ encoder_states  # (B, M, H)
        both = torch.cat([decoder_states, context], dim=-1)
        return self.classes(both)[..., :n]
