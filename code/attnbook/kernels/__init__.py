"""Attention as GPU kernels, written in Triton (chapter 16).

One module per kernel, each in the style of Triton's tutorials: the
``@triton.jit`` kernel and the few lines that launch it. softmax (a fused
row softmax, the first kernel), flash_forward (FlashAttention-2's forward:
one program per query block and head, online softmax, log-sum-exp saved,
causal block skipping), flash_backward (D = rowsum(dO * O), a dK/dV kernel
and a dQ kernel that recompute P from the log-sum-exp), flash_decoding (one
query, the keys split across programs, partial results merged by their
log-sum-exp) and paged_decoding (a decoding step that reads keys through a
block table). ``api`` holds what readers call: ``flash_attention`` (an
``autograd.Function`` around the forward and backward kernels),
``flash_decoding``, ``paged_decoding``, ``triton_softmax``; it checks the
inputs and picks the kernels through ``_launch``: compiled on a CUDA tensor,
run by Triton's interpreter on a CPU tensor. Triton is imported only when a
kernel first runs, so ``import attnbook`` stays fast.

May import: torch, triton (lazily), ``attnbook._checks``, ``attnbook.measure``
and ``attnbook.core``. Nothing above.
"""
