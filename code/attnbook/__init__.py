"""attnbook: the code of *Attention, from Scratch*.

Layers, bottom up (nothing imports upward):
  tensor functions  compare, masking, kernel_regression, scoring, score_scaling, attention,
                    positional, rotary, chunked
  modules           multihead, self_attention, transformer, pointer, and the chapters'
                    experiments: hard_training, complexity, classifier
  plotting          plotting
  widgets           attnbook.widgets.<chapter> (imported on demand, needs ipywidgets)

The names below are the book's public API; the experiment modules are imported
from their submodules (e.g. ``from attnbook.classifier import train_order_classifier``).
"""

from ._checks import matrix_memory_limit, set_matrix_memory_limit
from .attention import attention, attention_weights, hard_attention
from .chunked import chunked_attention
from .compare import agreement
from .decoder import EncoderDecoderTransformer, TransformerDecoder, TransformerDecoderBlock, causal_mask
from .kernel_regression import gaussian_scores, nadaraya_watson, regression_data, regression_target
from .masking import lengths_to_mask, masked_softmax
from .multihead import MultiHeadAttention, merge_heads, split_heads
from .plotting import sharp_figures, show_heatmaps
from .pointer import PointerNetwork, pretrained_sorter, sorting_batch
from .positional import LearnedPositionalEmbedding, PositionalEncoding, position_shift_matrix, sinusoidal_encoding
from .rotary import apply_rotary
from .scoring import AdditiveScore, BilinearScore, dot_score, scaled_dot_score
from .self_attention import SelfAttention
from .transformer import LayerNorm, PositionWiseFFN, TransformerEncoder, TransformerEncoderBlock, padding_mask

__all__ = [
    "AdditiveScore",
    "BilinearScore",
    "EncoderDecoderTransformer",
    "LayerNorm",
    "LearnedPositionalEmbedding",
    "MultiHeadAttention",
    "PointerNetwork",
    "PositionWiseFFN",
    "PositionalEncoding",
    "SelfAttention",
    "TransformerEncoder",
    "TransformerEncoderBlock",
    "TransformerDecoder",
    "TransformerDecoderBlock",
    "agreement",
    "apply_rotary",
    "attention",
    "attention_weights",
    "causal_mask",
    "chunked_attention",
    "dot_score",
    "gaussian_scores",
    "hard_attention",
    "lengths_to_mask",
    "masked_softmax",
    "matrix_memory_limit",
    "merge_heads",
    "nadaraya_watson",
    "padding_mask",
    "position_shift_matrix",
    "pretrained_sorter",
    "regression_data",
    "regression_target",
    "scaled_dot_score",
    "set_matrix_memory_limit",
    "sharp_figures",
    "show_heatmaps",
    "sinusoidal_encoding",
    "sorting_batch",
    "split_heads",
]
__version__ = "0.1.0"
