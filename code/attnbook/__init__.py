"""attnbook: the code of *Attention, from Scratch*.

The tree is the architecture. Layers, bottom up; each imports only its own
layer and the ones below it (tests/test_layout.py checks it):

  measure      agreement within a tolerance, timing, memory, parameter
               counts, threads, key-value cache bytes, head scores
  core         attention as tensor functions: masking, scoring, attention,
               kernel regression, positional, rotary, long context (ALiBi,
               RoPE scaling), chunked, grouped-query; fixed-size memory:
               feature maps, linear attention, the delta rule, gated
               linear attention, state-space duality
  kernels      attention as Triton GPU kernels (FlashAttention-2 forward
               and backward, Flash-Decoding, paged decoding), run by
               Triton's interpreter on a CPU; triton is imported lazily
  nn           modules: multi-head (and grouped-query), latent and
               self-attention, the Transformer encoder and decoder, the RNN
               encoder-decoder, pointer networks, the attention-only
               model of induction heads
  tasks        the chapters' tasks and data, and the trained models that
               solve them
  experiments  what a chapter measures: score scaling, hard-attention
               training, complexity, norm placement, attention memory
  train        ``python -m attnbook.train.<model>``: the recipes of the
               shipped weights
  display      figures, diagrams, syntax-coloured listings
  widgets      the explorers, one module per chapter (needs ipywidgets)

``_checks`` (argument checks), ``_memory`` (the memory limit), ``_random``
(random state) and ``_weights`` (pinned weight files) serve every layer. The
names below are the book's public API: ``from attnbook import attention``.
The rest is imported from its module, e.g.
``from attnbook.tasks.order_classifier import train_order_classifier``.
"""

from ._memory import matrix_memory_limit, set_matrix_memory_limit
from .core.attention import attention, attention_weights, hard_attention
from .core.chunked import chunked_attention
from .core.delta_rule import delta_rule
from .core.feature_maps import (
    elu_feature_map,
    positive_random_features,
    random_projection,
)
from .core.gated import gated_linear_attention
from .core.grouped_query import grouped_query_attention
from .core.kernel_regression import (
    gaussian_scores,
    nadaraya_watson,
    regression_data,
    regression_target,
)
from .core.linear_attention import (
    linear_attention,
    linear_attention_recurrent,
)
from .core.long_context import (
    alibi_bias,
    alibi_slopes,
    rope_frequencies,
    yarn_attention_scale,
)
from .core.masking import (
    causal_mask,
    lengths_to_mask,
    masked_softmax,
    sliding_window_mask,
)
from .core.positional import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    position_shift_matrix,
    sinusoidal_encoding,
)
from .core.rotary import apply_rotary
from .core.sampling import next_token_distribution, sample_next_token
from .core.scoring import (
    AdditiveScore,
    BilinearScore,
    dot_score,
    scaled_dot_score,
)
from .core.ssd import decay_mask, ssd_attention
from .display.figures import sharp_figures, show_heatmaps
from .display.listing import show_source
from .kernels.api import flash_attention, flash_decoding, paged_decoding
from .measure.compare import agreement
from .measure.head_scores import induction_score, previous_token_score
from .measure.kv_cache import kv_cache_bytes, mla_cache_bytes
from .nn.attention_only import AttentionOnlyTransformer
from .nn.decoder import (
    EncoderDecoderTransformer,
    TransformerDecoder,
    TransformerDecoderBlock,
)
from .nn.encoder import (
    LayerNorm,
    PositionWiseFFN,
    TransformerEncoder,
    TransformerEncoderBlock,
    padding_mask,
)
from .nn.kv_cache import KVCache
from .nn.language_model import DecoderOnlyTransformer
from .nn.latent_attention import MultiHeadLatentAttention
from .nn.multihead import MultiHeadAttention, merge_heads, split_heads
from .nn.pointer import PointerNetwork
from .nn.self_attention import SelfAttention
from .tasks.bpe import BytePairEncoder
from .tasks.induction import pretrained_induction_models
from .tasks.language_model import pretrained_language_model
from .tasks.sorting import pretrained_sorter, sorting_batch

__all__ = [
    "AdditiveScore",
    "AttentionOnlyTransformer",
    "BilinearScore",
    "BytePairEncoder",
    "DecoderOnlyTransformer",
    "EncoderDecoderTransformer",
    "KVCache",
    "LayerNorm",
    "LearnedPositionalEmbedding",
    "MultiHeadAttention",
    "MultiHeadLatentAttention",
    "PointerNetwork",
    "PositionWiseFFN",
    "PositionalEncoding",
    "SelfAttention",
    "TransformerDecoder",
    "TransformerDecoderBlock",
    "TransformerEncoder",
    "TransformerEncoderBlock",
    "agreement",
    "alibi_bias",
    "alibi_slopes",
    "apply_rotary",
    "attention",
    "attention_weights",
    "causal_mask",
    "chunked_attention",
    "decay_mask",
    "delta_rule",
    "dot_score",
    "elu_feature_map",
    "flash_attention",
    "flash_decoding",
    "gated_linear_attention",
    "gaussian_scores",
    "grouped_query_attention",
    "hard_attention",
    "induction_score",
    "kv_cache_bytes",
    "lengths_to_mask",
    "linear_attention",
    "linear_attention_recurrent",
    "masked_softmax",
    "matrix_memory_limit",
    "merge_heads",
    "mla_cache_bytes",
    "nadaraya_watson",
    "next_token_distribution",
    "padding_mask",
    "paged_decoding",
    "position_shift_matrix",
    "positive_random_features",
    "pretrained_induction_models",
    "pretrained_language_model",
    "pretrained_sorter",
    "previous_token_score",
    "random_projection",
    "regression_data",
    "regression_target",
    "rope_frequencies",
    "sample_next_token",
    "scaled_dot_score",
    "set_matrix_memory_limit",
    "sharp_figures",
    "show_heatmaps",
    "show_source",
    "sinusoidal_encoding",
    "sliding_window_mask",
    "sorting_batch",
    "split_heads",
    "ssd_attention",
    "yarn_attention_scale",
]
__version__ = "0.1.0"
