"""Modules in the style of ``torch.nn``, built from ``attnbook.core``.

multihead (multi-head attention, weights interchangeable with
``torch.nn.MultiheadAttention``), self_attention, encoder (the Transformer
encoder block and stack, layer norm, feed-forward), kv_cache (the key-value
cache both generating Transformers keep), decoder (the decoder block and its
cached step, the encoder-decoder Transformer), seq2seq (an RNN
encoder-decoder with additive attention), pointer (pointer networks),
language_model (a decoder-only Transformer with a key-value cache),
latent_attention (multi-head latent attention, DeepSeek-V2's MLA),
attention_only (attention layers on a residual stream, no MLP: the model of
induction heads) and recall_model (chapter 18's small model with a token
mixer chosen per layer: softmax, sliding window, linear attention, DeltaNet,
gated DeltaNet).

May import: torch, ``attnbook._checks``, ``attnbook.measure``,
``attnbook.core``. Not the tasks, experiments or anything above them.
"""
