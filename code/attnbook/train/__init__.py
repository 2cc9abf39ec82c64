"""The scripts that train the models the package ships, one fixed recipe each.

    # train, evaluate, write attnbook/data/<file>
    python -m attnbook.train.<model>
    # evaluate the shipped file only
    python -m attnbook.train.<model> --check

bottleneck, bottleneck_seeds (chapter 5's copying models over three seeds and
the plain one trained twice as long, results only), date_translator, sorter,
position_classifier, baseline_seeds and hull_pointer (chapter 6's baseline,
its seeds and variants, results only, and the convex hull network),
card_lookup,
card_heads (chapter 4's sweep of head counts, results only), order_classifier,
date_transformer, language_model (corpus rebuilds its text from this
Python's standard library), induction, norm_placement_radam (chapter 9's
RAdam runs, results only), norm_placement_probes (chapter 9's gradient
norms and first Adam steps, results only) and date_comparison (chapter 10's
two date models over three training seeds and three held-out draws,
results only). Each runs on one thread with
fixed seeds, so two runs on one machine write the same weights; the file's
SHA-256 is pinned next to its loader in ``attnbook.tasks``.

May import: the tasks and everything below them.
"""
