"""The chapters' tasks and data, and the trained models that solve them.

dates (dates as people write them, ISO targets, the character vocabularies),
copying (the bottleneck experiment's digit strings), date_translator and
date_transformer (the shipped date models), card_lookup (chapter 4's card game
and its multi-head model), sorting (chapter 6's pointer-network sorter),
order_classifier (chapter 9's "does A come before B?"), text (a corpus of
Python's docstrings, its characters and count baselines), language_model
(chapter 12's small language model trained on it), induction (chapter
14's repeated sequences and the attention-only models trained on them) and
referent (chapter 7's "what does *it* refer to?", trained in the chapter)
and recall (chapter 18's multi-query associative recall lab);
blend (chapter 3's blend task: the answer is the mean of marked items).
Every shipped model is loaded by a ``pretrained_*``/``trained_*`` function
that checks the file's pinned SHA-256.

May import: ``attnbook._checks``, ``attnbook._weights``, ``attnbook.measure``,
``attnbook.core``, ``attnbook.nn``.
"""
