"""How the book shows things: figures and heat maps (figures), drawn diagrams
of the mechanisms (diagrams; attention_steps, chapter 1's soft lookup;
kv_sharing, which key-value head each query head reads), chapter 4's head
sweep (head_sweep), chapter 7's timing figure (layer_times), FlashAttention's
tiles (tiling), chapter 8's turning RoPE arrows (rotary) and syntax-coloured
source listings (listing); chapter 17's diagrams of a fixed-size memory
(fixed_memory).

May import: every layer below (core, nn, tasks, experiments, measure); never
the widgets.
"""
