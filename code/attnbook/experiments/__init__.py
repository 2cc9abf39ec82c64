"""The chapters' experiments: what a chapter measures, with its controls.

head_count (heads against head size on the card task, chapter 4), score_scaling
(why scores are divided by the square root of d, chapter 2), hard_training
(training hard attention: REINFORCE and the exact expected gradient, chapter
3), blend_training (soft against hard attention when the right answer is a
blend, chapter 3), complexity (self-attention against CNNs and RNNs, chapter
7), bottleneck_seeds (chapter 5's copying models with and without attention
over three training seeds, and the plain one trained twice as long),
norm_placement (post-LN against pre-LN, chapter 9), attention_memory (the
peak memory of one attention call, chapter 11) and io_traffic (slow-memory
traffic of plain and tiled attention, chapter 11); head_circuits (a head's QK
and OV circuits and scores, and the language model run with its attention
weights read or replaced, chapter 14); head_interventions (what a head is worth
under four replacements of its weights: zero, uniform, its mean pattern,
shuffled, chapter 14); sinks (where a head's weight goes, by key token, and
what evicting those keys costs, chapter 13); memory_retrieval (what a
fixed-size state recalls: softmax, a sum of outer products, the delta rule,
least squares; Performer's error, chapter 17); date_comparison (the
recurrent date translator against the date Transformer over training seeds
and held-out draws, chapter 10).

May import: everything below: ``attnbook.core``, ``attnbook.nn``,
``attnbook.tasks``, ``attnbook.measure`` and the private
``_checks``/``_weights``.
"""
