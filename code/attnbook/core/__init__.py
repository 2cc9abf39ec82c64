"""Attention as tensor functions: the mechanisms every later layer is built
from.

masking (keep-masks: from lengths, causal, sliding-window; masked softmax),
scoring (dot, scaled dot, bilinear and additive scores), attention (soft and
hard attention over keys and values), grouped_query (several query heads
sharing one key-value head: MQA, GQA),
kernel_regression (Nadaraya-Watson, chapter 1), positional (sinusoidal and
learned position tables), rotary (RoPE), long_context (ALiBi's slopes and
biases, RoPE's frequencies scaled by position interpolation, NTK-aware
scaling and YaRN), chunked (attention one block of keys at a time, with an
online softmax) and sampling (the next token: greedy, temperature, top-k,
top-p). Attention with a fixed-size memory (chapter 17): feature_maps (elu +
1, Performer's positive random features), linear_attention (parallel,
recurrent and chunked forms), delta_rule (DeltaNet and Gated DeltaNet, token
loop and chunked WY/UT form), gated (gated linear attention, per head or per
channel) and ssd (Mamba-2's state-space duality: attention with a decay
mask); _state_checks holds their shared input checks. errata keeps the
sources' flawed code as they printed it (source 002's positional encoding),
for chapter 8's comparison; nothing else uses it.

May import: torch, ``attnbook._checks`` and ``attnbook.measure``. Nothing
above.
"""
