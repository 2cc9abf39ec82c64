"""Hostile-input probe of attnbook: one argument at a time made hostile.

Run (from the repository root; about 5-10 minutes on 2 cores)::

    nice -n 10 .venv/bin/python tests/tools/probe.py            # everything
    .venv/bin/python tests/tools/probe.py -k masked_softmax     # targets matching
    .venv/bin/python tests/tools/probe.py --list                # targets only

Targets: every name in ``attnbook.__all__``; the public functions and classes
(and the public methods of those classes) of every submodule, found with
pkgutil; the ``pretrained_*``/``trained_*`` loaders. Left out: the
``attnbook.train.*.main`` scripts, the widgets' ``*_explorer`` builders (they
need a kernel), the autograd ``Function`` behind ``chunked_attention`` and
anything listed in ``SKIP`` (the reason is given there).

Each target has ONE valid call (``SPECS``, small sizes; the parameters it does
not name keep their ``inspect.signature`` defaults). The valid call runs first;
if it fails, that is a finding ("valid call fails") and the target gets no
hostile calls. Then each argument in turn is replaced by every value of the
catalogue of its kind (``hostile_values``): tensors (wrong dtype, rank, empty
dims, NaN/inf, stride-0 views of 10**6 and 10**9 rows, meta device,
non-contiguous, requires_grad, ...), ints, floats, bools, strings,
generators, modules and other objects, lists, dicts, callables, paths.

Every call runs in a forked worker (a pool of ``--jobs`` processes, each
recycled after ``--max-tasks`` calls, with ``RLIMIT_AS`` at ``--memory-gb`` GB
and killed after ``--timeout`` seconds), so a crash or a hang costs one
worker. Outcome of a call (``outcome`` in the JSONL), first match wins:

  crash         the worker died (a signal, the OOM killer)
  hang          no answer within the timeout
  absurd_alloc  MemoryError, or torch's "can't allocate memory" RuntimeError
  deep_error    any other exception, or a ValueError/TypeError whose last
                traceback frame is not a ``raise`` line in code/attnbook
                (raised by torch, numpy, or Python itself)
  vague_error   ValueError/TypeError raised by attnbook whose message does not
                name the argument
  clear_error   ValueError/TypeError raised by attnbook, naming the argument
  silent_nan    returned, inputs finite, output has NaN/inf (where the valid
                call's output had none)
  ok            returned

Two flags are checked on every call, also when it raised:
``mutated`` (the bytes, shape or strides of a tensor, or a module's parameter,
that the caller passed changed; arguments a method is meant to fill, such as a
decoder ``cache``, only count when the call raised) and ``rng_moved`` (the
torch, ``random`` or numpy global RNG state changed; a constructor that
returns is allowed to draw its weights).

Output: ``_build/probe/calls.jsonl`` (one line per call: target, group,
argument, kind, variant, outcome, flags, exception type, first line of the
message, the raising frame, a one-line description of the call) and
``_build/probe/summary.txt``: counts by class for the core API (the names in
``attnbook.__all__`` and their methods) and the helpers (everything else), and
the deep errors, silent NaNs, RNG moves, mutations, allocations and hangs
grouped by (target, exception type, message prefix), largest groups first.
"""

from __future__ import annotations

import argparse
import ast
import collections
import copy
import datetime
import functools
import importlib
import inspect
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import pathlib
import pkgutil
import random
import re
import resource
import signal
import sys
import tempfile
import time
import traceback

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import torch

import attnbook

PACKAGE_DIR = str(pathlib.Path(attnbook.__file__).resolve().parent)
ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "_build" / "probe"

# ---------------------------------------------------------------------------
# Targets
# ---------------------------------------------------------------------------

SKIP = {
    # helpers made public so that no module imports another's private
    # names (issue 37); each is reached through a checked public caller
    "attnbook.core.long_context.ntk_by_parts": (
        "the formula rope_frequencies(scaling='yarn') applies after its "
        "checks (chapter 15 prints it)"
    ),
    "attnbook.experiments.hard_training.training_loop": (
        "train_selector's loop, after its checks (chapter 3 prints it)"
    ),
    "attnbook.nn.encoder.blocks_weights": (
        "size arithmetic on checked ints, via require_weights_fit"
    ),
    "attnbook.nn.encoder.check_torch_layer": "via load_torch_weights",
    # the first-line checks of a module's methods, given the module itself
    # (they replaced a decorator and forward pre-hooks): probed through
    # the methods that call them
    "attnbook.nn.pointer.check_pointer_inputs": (
        "PointerNetwork.encode's and teacher_forced_scores' check"
    ),
    "attnbook.nn.seq2seq.check_decoder_state": (
        "Seq2Seq.context's and step's (and LuongSeq2Seq.step's) check"
    ),
    "attnbook.display.diagrams.box": "a drawing primitive of the diagrams",
    "attnbook.display.diagrams.arrow": "a drawing primitive of the diagrams",
    "attnbook.display.diagrams.stage_box": "a drawing primitive",
    "attnbook.display.diagrams.up_arrow": "a drawing primitive",
    # chapter 12's script's report: scores the shipped model on all
    # held-out text (about a minute); probed through bits_per_char
    "attnbook.train.language_model.report": "minutes per call",
    # the autograd Function behind chunked_attention: reached through it
    "attnbook.core.chunked.RecomputingChunkedAttention": "autograd internals",
    "attnbook.core.chunked.RecomputingChunkedAttention.forward": "internal",
    "attnbook.core.chunked.RecomputingChunkedAttention.backward": "internal",
    # the whole norm-placement experiment (36 trainings)
    "attnbook.experiments.norm_placement.run_comparison": "minutes per call",
    # runs a fresh Python (torch import) per call: > 10 s each
    "attnbook.experiments.attention_memory.peak_memory": "a subprocess a call",
    # trains chapter 12's model for 10 to 20 minutes (or scores the shipped
    # one on all held-out text); its parts are probed: pool_kv_heads,
    # cached_numbers_per_token, train_language_model
    "attnbook.experiments.kv_sharing.run_variant": "minutes per call",
    # chapter 16: the autograd Function behind flash_attention (reached
    # through it) and the kernels' launchers, which take tensors that
    # kernels.api has checked (contiguous, 3-D, one dtype): probed through
    # kernels.api
    "attnbook.kernels.api.FlashAttention": "autograd internals",
    "attnbook.kernels.softmax.softmax": "launcher, via triton_softmax",
    "attnbook.kernels.flash_forward.flash_forward": "launcher, via api",
    "attnbook.kernels.flash_backward.flash_backward": "launcher, via api",
    "attnbook.kernels.flash_decoding.flash_decode": "launcher, via api",
    "attnbook.kernels.paged_decoding.paged_decode": "launcher, via api",
    # the GPU benchmark: every step needs CUDA (its refusal is tested)
    "attnbook.experiments.gpu_benchmark.attention_call": "needs a GPU",
    "attnbook.experiments.gpu_benchmark.median_ms": "needs a GPU",
    "attnbook.experiments.gpu_benchmark.measure": "needs a GPU",
    "attnbook.experiments.gpu_benchmark.run": "needs a GPU",
    "attnbook.experiments.gpu_benchmark.main": "needs a GPU",
    "attnbook.experiments.gpu_benchmark.require_gpu": "exits without a GPU",
    # learns 256 merges on the corpus and trains chapter 12's model on them
    # (minutes); its parts are probed: BytePairEncoder, train_on_ids
    "attnbook.tasks.bpe_language_model.train_bpe_language_model": (
        "minutes per call"
    ),
    # a listing for chapter 12 without checks; model(tokens, cache) is the
    # checked API that computes the same (tested equal)
    "attnbook.nn.language_model.cached_forward_minimal": "teaching listing",
    # scores the whole held-out text (its parts are probed: token_model_bits)
    "attnbook.train.bpe_language_model.report": "a minute per call",
    "attnbook.experiments.kv_sharing.run_sweep_arm": "minutes per call",
    # trains one recall-lab model for 300 steps (20 s); its parts
    # are probed: train_recall, recall_accuracy
    "attnbook.tasks.recall.run_model": "20 s per call",
    # trains one card model with the book's recipe (600 steps of 128 hands)
    # and scores it once per head; its parts are probed: train_card_lookup,
    # lookup_report, without_heads
    "attnbook.experiments.head_count.run_head_count": "minutes per call",
    # trains one position scheme with the book's recipe (2,000 steps) and,
    # for RoPE, fine-tunes each scaling; its parts are probed: train_scheme,
    # finetune_rope, accuracy_by_length
    "attnbook.tasks.long_context.run_scheme": "minutes per call",
    # re-evaluates the shipped models at every length (its parts are
    # probed: accuracy, pretrained_models)
    "attnbook.train.long_context.check": "a minute per call",
    # a script's command line (argv parsing, training, writing a file), as
    # the train.*.main scripts: its parts are probed (train_sorter, evaluate)
    "attnbook.train.sorter.train_and_save": "a script's command line",
    # chapter 10's comparison: trains a date model of the shipped recipe
    # for any seed but the shipped one (a minute or two); its parts are
    # probed: train_date_transformer, train_date_translator
    "attnbook.train.date_comparison.trained": "minutes per call",
    "attnbook.train.date_comparison.verify_shipped": "minutes per call",
}


# Targets whose documented answer may be infinite for finite inputs: not a
# silent NaN (the reason is given).
INF_IS_AN_ANSWER = {
    "attnbook.core.kernel_regression.gaussian_scores": (
        "-(x - x_i)^2 / (2 sigma^2) below the dtype's range is -inf, a weight"
        " of exactly 0 (nadaraya_watson relies on it)"
    ),
}


def _is_public(name: str) -> bool:
    return not name.startswith("_")


def discover_targets() -> list[str]:
    """Qualified names of every target, in a stable order."""
    names = []
    for info in pkgutil.walk_packages(attnbook.__path__, "attnbook."):
        parts = info.name.split(".")
        if not all(_is_public(p) for p in parts[1:]):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if not _is_public(name) or getattr(obj, "__module__", None) != (
                info.name
            ):
                continue
            qual = f"{info.name}.{name}"
            if info.name.startswith("attnbook.train.") and name == "main":
                continue
            if info.name.startswith("attnbook.widgets.") and name.endswith(
                "_explorer"
            ):
                continue
            if inspect.isclass(obj):
                names.append(qual)
                for method, member in vars(obj).items():
                    if _is_public(method) and inspect.isfunction(member):
                        names.append(f"{qual}.{method}")
            elif inspect.isfunction(obj):
                names.append(qual)
    return [n for n in names if n not in SKIP]


def core_names() -> set[str]:
    """Qualified names of the core API: ``__all__`` and its classes'
    methods."""
    core = set()
    for name in attnbook.__all__:
        obj = getattr(attnbook, name)
        core.add(f"{obj.__module__}.{obj.__qualname__}")
    return core


def group_of(target: str, core: set[str]) -> str:
    if target in core or target.rsplit(".", 1)[0] in core:
        return "core"
    return "helpers"


def resolve(target: str):
    """The object a qualified name points to (module attribute or method)."""
    parts = target.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return obj
    raise LookupError(target)


# ---------------------------------------------------------------------------
# Valid calls
# ---------------------------------------------------------------------------


def R(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype)


def G(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def keep(*shape) -> torch.Tensor:
    mask = torch.ones(*shape, dtype=torch.bool)
    mask[..., -1] = False
    return mask


def perms(batch: int, n: int) -> torch.Tensor:
    return torch.stack([torch.randperm(n) for _ in range(batch)])


@functools.lru_cache(maxsize=None)
def _loaded(what: str):
    """The shipped models, loaded once per worker (callers get copies)."""
    from attnbook._weights import load_pinned
    from attnbook.tasks import (
        card_lookup,
        copying,
        date_transformer,
        date_translator,
        language_model,
        order_classifier,
        sorting,
    )

    if what == "sorter":
        return sorting.pretrained_sorter()
    if what == "date_transformer":
        return date_transformer.pretrained_date_transformer()
    if what == "date_translator":
        return date_translator.pretrained_date_translator()
    if what == "order_classifier":
        return order_classifier.pretrained_order_classifier()[0]
    if what == "language_model":
        return language_model.pretrained_language_model()
    if what == "bottleneck":
        return copying.pretrained_bottleneck_models()
    if what == "card_lookup":
        return card_lookup.trained_card_lookup()
    if what == "card_saved":
        return card_lookup.shipped_card_lookups()
    if what == "lm_saved":
        return load_pinned(
            language_model.LANGUAGE_MODEL_FILE,
            language_model.LANGUAGE_MODEL_SHA256,
        )
    if what == "bpe_saved":
        from attnbook.tasks import bpe_language_model as bpe_lm

        return load_pinned(
            bpe_lm.BPE_LANGUAGE_MODEL_FILE, bpe_lm.BPE_LANGUAGE_MODEL_SHA256
        )
    if what == "induction":
        from attnbook.tasks.induction import pretrained_induction_models

        return pretrained_induction_models()
    if what == "induction_saved":
        from attnbook.tasks import induction

        return load_pinned(
            induction.INDUCTION_FILE, induction.INDUCTION_SHA256
        )
    if what == "oc_saved":
        return load_pinned(
            order_classifier.ORDER_CLASSIFIER_FILE,
            order_classifier.ORDER_CLASSIFIER_SHA256,
        )
    raise LookupError(what)


def shipped(what: str):
    return copy.deepcopy(_loaded(what))


def _noop():
    return None


def _graph():
    x = torch.ones(3, requires_grad=True)
    return (x * 2).exp().sum()


class Spec:
    """A valid call: ``make()`` returns (callable, kwargs). ``mutable``: the
    arguments the call is meant to change when it succeeds."""

    def __init__(self, make, mutable=()):
        self.make = make
        self.mutable = tuple(mutable)


SPECS: dict[str, Spec] = {}


def spec(target: str, mutable=()):
    """Decorator: register ``make`` as the valid call of ``target``
    (prefix ``attnbook.`` implied)."""

    def register(make):
        SPECS["attnbook." + target] = Spec(make, mutable)
        return make

    return register


def fn(target: str, /, _mutable=(), **kwargs):
    """A function target whose valid call is ``kwargs`` (tensors built in
    the worker: pass a zero-argument lambda for any value to be built)."""

    def make():
        built = {k: v() if _lazy(v) else v for k, v in kwargs.items()}
        return resolve("attnbook." + target), built

    SPECS["attnbook." + target] = Spec(make, _mutable)


def _lazy(value) -> bool:
    """Built in the worker: a lambda, or a function marked with ``lazy``."""
    return getattr(value, "__name__", "") == "<lambda>" or getattr(
        value, "_probe_lazy", False
    )


def lazy(build):
    """Mark a named function as a builder of an argument (not the value)."""
    build._probe_lazy = True
    return build


def method(target: str, instance, /, _mutable=(), **kwargs):
    """A method target: ``instance()`` builds the object; ``forward`` is
    called through the module (``module(...)``) so that hooks run."""
    cls_path, name = ("attnbook." + target).rsplit(".", 1)

    def make():
        obj = instance()
        built = {k: v() if _lazy(v) else v for k, v in kwargs.items()}
        if name == "forward" and isinstance(obj, torch.nn.Module):
            return obj, built
        return getattr(obj, name), built

    SPECS["attnbook." + target] = Spec(make, _mutable)


# The sizes of every valid call: batch 2, 3 queries, 5 keys, feature 4, model
# width 8 with 2 heads.
QKV = dict(
    queries=lambda: R(2, 3, 4),
    keys=lambda: R(2, 5, 4),
    values=lambda: R(2, 5, 6),
    mask=lambda: keep(2, 3, 5),
)

# core
fn("core.attention.attention", **QKV)
fn(
    "core.attention.attention_weights",
    queries=QKV["queries"],
    keys=QKV["keys"],
    mask=QKV["mask"],
)
fn(
    "core.attention.hard_attention",
    **QKV,
    mode="sample",
    generator=lambda: G(),
)
fn("core.chunked.StreamingAttention", queries=lambda: R(2, 3, 4))


def _stream():
    from attnbook.core.chunked import StreamingAttention

    return StreamingAttention(R(2, 3, 4))


def _stream_updated():
    return _stream().update(R(2, 5, 4), R(2, 5, 6))


method(
    "core.chunked.StreamingAttention.update",
    _stream,
    keys=lambda: R(2, 5, 4),
    values=lambda: R(2, 5, 6),
    mask=lambda: keep(2, 3, 5),
)
method("core.chunked.StreamingAttention.output", _stream_updated)
method("core.chunked.StreamingAttention.log_sum_exp", _stream_updated)
fn("core.chunked.chunked_attention", **QKV, chunk_size=2)
fn(
    "core.kernel_regression.gaussian_scores",
    query_x=lambda: R(7),
    key_x=lambda: R(5),
)
fn(
    "core.kernel_regression.nadaraya_watson",
    query_x=lambda: R(7),
    key_x=lambda: R(5),
    values=lambda: R(5),
)
fn("core.kernel_regression.regression_data", n_train=10, n_test=10)
fn("core.kernel_regression.regression_target", x=lambda: R(5))
fn(
    "core.kernel_regression.mean_squared_error",
    predictions=lambda: R(5),
    targets=lambda: R(5),
)
fn("core.masking.masked_softmax", scores=lambda: R(2, 3, 5), mask=QKV["mask"])
fn(
    "core.masking.lengths_to_mask",
    valid_lens=lambda: torch.tensor([2, 3]),
    n=4,
)
fn("core.positional.pair_frequencies", dim=8)
fn("core.positional.sinusoidal_encoding", num_positions=6, dim=8)
fn("core.positional.position_shift_matrix", delta=2.0, dim=8)
fn("core.positional.PositionalEncoding", dim=8, max_len=16)
fn("core.positional.LearnedPositionalEmbedding", max_len=16, dim=8)
fn("core.errata.source_002_encoding", num_positions=6, dim=8)
fn("core.errata.Source002PositionalEncoding", dim=8, max_len=16)


def _cls(name, *args, **kwargs):
    @lazy
    def build():
        return resolve("attnbook." + name)(*args, **kwargs).eval()

    return build


X8 = dict(x=lambda: R(2, 5, 8))
method(
    "core.positional.PositionalEncoding.forward",
    _cls("core.positional.PositionalEncoding", 8, 16),
    **X8,
)
method(
    "core.positional.LearnedPositionalEmbedding.forward",
    _cls("core.positional.LearnedPositionalEmbedding", 16, 8),
    **X8,
)
method(
    "core.errata.Source002PositionalEncoding.forward",
    _cls("core.errata.Source002PositionalEncoding", 8, 0.1, 16),
    **X8,
)
fn(
    "core.rotary.apply_rotary",
    x=lambda: R(2, 5, 8),
    positions=lambda: torch.arange(5),
)
# chapter 17: attention with a fixed-size memory
QKV_SAME = dict(
    queries=lambda: R(2, 5, 4),
    keys=lambda: R(2, 5, 4),
    values=lambda: R(2, 5, 6),
)
fn("core.feature_maps.elu_feature_map", x=lambda: R(2, 5, 4))
fn("core.feature_maps.random_projection", num_features=6, dim=4, seed=1)
fn(
    "core.feature_maps.positive_random_features",
    x=lambda: R(2, 5, 4) * 0.5,
    projection=lambda: torch.randn(6, 4),
)
fn("core.linear_attention.linear_attention", **QKV_SAME, chunk_size=2)
fn("core.linear_attention.linear_attention_recurrent", **QKV_SAME)
fn(
    "core.delta_rule.delta_rule",
    **QKV_SAME,
    beta=lambda: torch.rand(2, 5),
    gate=lambda: 0.5 + 0.5 * torch.rand(2, 5),
    chunk_size=2,
    return_state=True,
)
fn(
    "core.gated.gated_linear_attention",
    **QKV_SAME,
    gate=lambda: 0.5 + 0.5 * torch.rand(2, 5),
)
fn("core.ssd.decay_mask", gate=lambda: 0.5 + 0.5 * torch.rand(2, 5))
fn(
    "core.ssd.ssd_attention",
    **QKV_SAME,
    gate=lambda: 0.5 + 0.5 * torch.rand(2, 5),
)
fn("core.sampling.check_sampling", temperature=1.0, top_k=3, top_p=0.9)
fn("core.sampling.top_k_filter", logits=lambda: R(2, 10), k=3)
fn("core.sampling.top_p_filter", logits=lambda: R(2, 10), p=0.9)
fn(
    "core.sampling.next_token_distribution",
    logits=lambda: R(2, 10),
    temperature=1.0,
    top_k=3,
    top_p=0.9,
)
fn(
    "core.sampling.sample_next_token",
    logits=lambda: R(2, 10),
    temperature=1.0,
    top_k=3,
    top_p=0.9,
    generator=lambda: G(),
)
fn(
    "core.sampling.draw_categorical",
    probs=lambda: torch.rand(2, 10),
    generator=lambda: G(),
)
QK = dict(queries=lambda: R(2, 3, 4), keys=lambda: R(2, 5, 4))
fn("core.scoring.dot_score", **QK)
fn("core.scoring.scaled_dot_score", **QK)
fn("core.scoring.AdditiveScore", query_dim=4, key_dim=4, hidden_dim=6)
fn("core.scoring.BilinearScore", query_dim=4, key_dim=4)
method(
    "core.scoring.AdditiveScore.forward",
    _cls("core.scoring.AdditiveScore", 4, 4, 6),
    **QK,
)
method(
    "core.scoring.BilinearScore.forward",
    _cls("core.scoring.BilinearScore", 4, 4),
    **QK,
)

# display
for _name in (
    "draw_multihead",
    "draw_connectivity",
    "draw_encoder_block",
    "draw_bahdanau_step",
):
    fn("display.diagrams." + _name)


@lazy
def _figure():
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(3, 2))
    figure.text(0.5, 0.5, "text", fontsize=10)
    return figure


fn(
    "display.figures.smallest_text_px",
    figure=_figure,
    displayed_width_px=600.0,
)
fn("display.figures.sharp_png", figure=_figure)
fn("display.figures.sharp_figures")
fn("display.figures.show_heatmaps", matrices=lambda: torch.rand(2, 2, 3, 4))
fn("display.listing.Listing", source="x = 1\n")
fn("display.listing.show_source", obj=attnbook.attention)

# experiments
fn(
    "experiments.attention_memory.peak_memory",
    methods=["attention"],
    sizes=[8],
    d=4,
    chunk_size=4,
)
fn("experiments.attention_memory.start_measuring_process")
fn("experiments.io_traffic.on_chip_numbers", rows=4, cols=4, d=8, d_v=8)
fn("experiments.io_traffic.block_sizes", sram_size=256, d=8, d_v=8)
fn("experiments.io_traffic.plain_attention_traffic", n_q=5, n_k=6, d=4, d_v=3)
for _name in ("load", "store"):
    method(
        f"experiments.io_traffic.SlowMemory.{_name}",
        lambda: resolve("attnbook.experiments.io_traffic.SlowMemory")(),
        tile=lambda: R(2, 3),
    )
fn(
    "experiments.io_traffic.tiled_attention",
    q=lambda: R(5, 4),
    k=lambda: R(6, 4),
    v=lambda: R(6, 3),
    sram_size=64,
)
fn("experiments.complexity.ConvStack", dim=4)
fn("experiments.complexity.RecurrentLayer", dim=4)
fn("experiments.complexity.SelfAttentionLayer", dim=4)
X4 = dict(x=lambda: R(2, 6, 4))
method(
    "experiments.complexity.ConvStack.states",
    _cls("experiments.complexity.ConvStack", 4),
    **X4,
)
method(
    "experiments.complexity.ConvStack.forward",
    _cls("experiments.complexity.ConvStack", 4),
    **X4,
)
method(
    "experiments.complexity.RecurrentLayer.forward",
    _cls("experiments.complexity.RecurrentLayer", 4),
    **X4,
)
method(
    "experiments.complexity.SelfAttentionLayer.forward",
    _cls("experiments.complexity.SelfAttentionLayer", 4),
    **X4,
)
fn("experiments.complexity.comparison_layers", dim=4)
fn("experiments.complexity.longest_path", n=8)
fn("experiments.complexity.sequential_operations", n=8)
fn("experiments.complexity.multiply_adds", n=8, dim=4)
fn(
    "experiments.complexity.sees_first_position",  # it feeds float64 inputs
    layer=lambda: _cls("experiments.complexity.RecurrentLayer", 4)().double(),
    n=6,
    dim=4,
)
fn("experiments.complexity.conv_layers_to_connect", n=6)
fn(
    "experiments.complexity.median_forward_time",
    layer=_cls("experiments.complexity.RecurrentLayer", 4),
    x=lambda: R(2, 6, 4),
    repeats=1,
    min_seconds=1e-4,
)
fn(
    "experiments.complexity.time_layers",
    lengths=[8, 16],
    dim=4,
    conv_layers=1,
    repeats=1,
    min_seconds=1e-4,
)
fn(
    "experiments.complexity.loglog_slope",
    lengths=[8, 16, 32],
    times=[1.0, 2.0, 4.0],
)
fn("experiments.hard_training.hidden_direction", dim=4)
fn(
    "experiments.hard_training.selection_task",
    n_examples=3,
    n_items=5,
    dim=4,
    generator=lambda: G(),
)
fn("experiments.hard_training.QuerySelector", dim=4)


def _task():
    from attnbook.experiments.hard_training import selection_task

    return selection_task(3, 5, 4, G())


@lazy
def _weights64():
    return torch.softmax(R(3, 5, dtype=torch.float64), -1)


ITEMS = dict(items=lambda: _task()[0], target=lambda: _task()[1])
method(
    "experiments.hard_training.QuerySelector.forward",
    lambda: resolve("attnbook.experiments.hard_training.QuerySelector")(4).to(
        torch.float64
    ),
    items=ITEMS["items"],
)
fn("experiments.hard_training.choice_losses", **ITEMS)
fn("experiments.hard_training.soft_loss", weights=_weights64, **ITEMS)
fn("experiments.hard_training.expected_loss", weights=_weights64, **ITEMS)
fn(
    "experiments.hard_training.reinforce_surrogate",
    log_probs=lambda: R(3),
    losses=lambda: R(3),
)
fn("experiments.hard_training.leave_one_out_baseline", losses=lambda: R(3))
fn(
    "experiments.hard_training.evaluate_selector",
    model=lambda: resolve("attnbook.experiments.hard_training.QuerySelector")(
        4
    ).to(torch.float64),
    **ITEMS,
)
fn(
    "experiments.hard_training.selector_loss",
    method="reinforce",
    scores=lambda: R(3, 5, dtype=torch.float64),
    generator=lambda: G(),
    **ITEMS,
)
fn(
    "experiments.hard_training.reinforce_loss",
    scores=lambda: R(3, 5, dtype=torch.float64),
    generator=lambda: G(),
    **ITEMS,
)
fn(
    "experiments.hard_training.gumbel_loss",
    scores=lambda: R(3, 5, dtype=torch.float64),
    generator=lambda: G(),
    **ITEMS,
)
fn(
    "experiments.hard_training.train_selector",
    method="soft",
    steps=2,
    batch_size=2,
    n_items=5,
    dim=4,
    eval_every=1,
    n_test=4,
)
fn(
    "experiments.hard_training.right_answer",
    items=lambda: _task()[0],
    target=lambda: _task()[1],
)
fn(
    "tasks.blend.marked_items",
    n_examples=3,
    n_marked=2,
    n_items=5,
    dim=4,
    generator=lambda: G(),
)
fn(
    "experiments.blend_training.train_blend_selector",
    method="soft",
    n_marked=2,
    steps=2,
    batch_size=2,
    n_test=4,
    eval_every=1,
    n_items=5,
    dim=4,
)


def _blend():
    from attnbook.tasks.blend import marked_items

    return marked_items(3, 2, 5, 4, generator=G())


fn(
    "experiments.blend_training.blend_report",
    model=lambda: resolve("attnbook.experiments.hard_training.QuerySelector")(
        4
    ),
    items=lambda: _blend()[0],
    marked=lambda: _blend()[1],
    target=lambda: _blend()[2],
)
fn(
    "experiments.hard_training.steps_to_accuracy",
    history={"steps": [1, 2], "accuracy": [0.5, 0.9]},
)
fn(
    "experiments.hard_training.compare_selectors",
    methods=("soft",),
    lrs=(0.1,),
    seeds=(0,),
    steps=1,
    n_test=4,
    n_items=5,
    dim=4,
    batch_size=2,
)
fn(
    "experiments.norm_placement.PreNormEncoderBlock",
    embed_dim=8,
    num_heads=2,
    ffn_dim=16,
)
method(
    "experiments.norm_placement.PreNormEncoderBlock.forward",
    _cls("experiments.norm_placement.PreNormEncoderBlock", 8, 2, 16),
    **X8,
    mask=lambda: keep(2, 1, 1, 5),
)
method(
    "experiments.norm_placement.PreNormEncoderBlock.load_torch_weights",
    _cls("experiments.norm_placement.PreNormEncoderBlock", 8, 2, 16),
    layer=lambda: torch.nn.TransformerEncoderLayer(
        8, 2, 16, 0.0, batch_first=True, norm_first=True
    ),
)
fn("experiments.norm_placement.placement_classifier", placement="pre-LN")
fn("experiments.norm_placement.warmup_schedule", step=5, steps=10, warmup=2)
fn(
    "experiments.norm_placement.train_placement",
    placement="pre-LN",
    lr=0.003,
    steps=2,
    batch_size=4,
    eval_size=8,
    optimizer="radam",
)
fn(
    "experiments.norm_placement.early_steps",
    placement="post-LN",
    checkpoints=(0, 1),
    num_layers=1,
    probe_size=4,
)
fn("experiments.date_comparison.load_date_comparison")
fn(
    "experiments.date_comparison.pooled_misses",
    results=lambda: resolve(
        "attnbook.experiments.date_comparison.load_date_comparison"
    )(),
)
fn(
    "experiments.date_comparison.format_comparison",
    results=lambda: resolve(
        "attnbook.experiments.date_comparison.load_date_comparison"
    )(),
)
fn("experiments.norm_placement.load_radam_comparison")
fn("experiments.norm_placement.load_probes")
fn(
    "experiments.norm_placement.format_radam_table",
    results=lambda: resolve(
        "attnbook.experiments.norm_placement.load_radam_comparison"
    )(),
)
fn("experiments.norm_placement.load_comparison")
fn(
    "experiments.norm_placement.summarize",
    results=lambda: resolve(
        "attnbook.experiments.norm_placement.load_comparison"
    )(),
)
SMALL = dict(dim=4, n_trials=8, n_keys=5)
fn(
    "experiments.score_scaling.softmax_jacobian",
    weights=lambda: torch.softmax(R(3, 5), -1),
)
fn("experiments.score_scaling.random_queries_and_keys", **SMALL)
fn("experiments.score_scaling.random_scores", **SMALL)
fn("experiments.score_scaling.softmax_statistics", scores=lambda: R(8, 5))
fn("experiments.score_scaling.keys_sharing", gradients=lambda: R(8, 5))
fn("experiments.score_scaling.query_gradients", **SMALL)
fn("experiments.score_scaling.gradient_statistics", **SMALL)
fn("experiments.score_scaling.random_score_statistics", **SMALL)

# measure
fn("measure.binomial.clopper_pearson", k=1, n=20)
fn("measure.binomial.equal_rates_p_value", k_a=2, k_b=0)
fn(
    "measure.compare.agreement",
    actual=lambda: torch.ones(5),
    expected=lambda: torch.ones(5),
    tol=1e-6,
)
fn("measure.memory.score_matrix_bytes", n_q=4, n_k=5)
fn("measure.memory.saved_for_backward", function=_graph)
fn("measure.parameters.count_parameters", model=torch.nn.Linear(2, 3))
fn("measure.threads.torch_threads", count=1)
fn("measure.threads.single_thread")
fn("measure.timing.interleaved_medians", functions={"a": _noop}, repeats=1)
fn("measure.timing.calls_per_sample", function=_noop, min_seconds=1e-4)
fn("measure.timing.mean_call_time", function=_noop, number=2)
fn(
    "measure.timing.median_call_time",
    function=_noop,
    repeats=1,
    min_seconds=1e-4,
)

# nn
fn("core.masking.causal_mask", n_q=4)
fn("display.figures.require_figsize", figsize=(4.0, 3.0))
fn("core.masking.sliding_window_mask", n_q=4, n_k=6, window=3)
fn(
    "core.grouped_query.grouped_query_attention",
    queries=lambda: R(2, 4, 3, 4),
    keys=lambda: R(2, 2, 5, 4),
    values=lambda: R(2, 2, 5, 6),
    mask=lambda: keep(2, 1, 3, 5),
)
fn(
    "measure.kv_cache.kv_cache_bytes",
    num_layers=2,
    num_kv_heads=2,
    head_dim=4,
    seq_len=16,
    window=8,
)
fn(
    "measure.kv_cache.mla_cache_bytes",
    num_layers=2,
    latent_dim=8,
    rope_dim=4,
    seq_len=16,
)
fn(
    "measure.state_bytes.recurrent_state_bytes",
    num_layers=2,
    num_heads=2,
    key_dim=4,
    value_dim=4,
)
fn("display.fixed_memory.draw_regrouping")
fn("display.fixed_memory.draw_three_forms", n=6, chunk_size=3)
fn("display.fixed_memory.draw_delta_step")
fn(
    "experiments.memory_retrieval.random_pairs",
    num_pairs=5,
    key_dim=4,
    value_dim=3,
)


def _pairs():
    from attnbook.experiments.memory_retrieval import random_pairs

    return random_pairs(5, 4, 3)


for _name in ("recall", "retrieval_errors"):
    fn(
        "experiments.memory_retrieval." + _name,
        memory="delta",
        keys=lambda: _pairs()[0],
        values=lambda: _pairs()[1],
        gate=lambda: torch.full((5,), 0.9, dtype=torch.float64),
    )
fn(
    "experiments.memory_retrieval.retrieval_curve",
    memory="linear",
    key_dim=4,
    pair_counts=[2, 4],
    seeds=(0,),
)
fn(
    "experiments.memory_retrieval.performer_errors",
    feature_counts=[4, 8],
    seeds=(0,),
    n=5,
    dim=4,
)
fn("measure.kv_cache.published_cache_bytes", name="Llama 2 7B", seq_len=16)
MLA_SIZES = dict(embed_dim=8, num_heads=2, latent_dim=4, rope_dim=2)
fn("nn.latent_attention.MultiHeadLatentAttention", **MLA_SIZES)
MLA = _cls("nn.latent_attention.MultiHeadLatentAttention", 8, 2, 4, None, 2)
method(
    "nn.latent_attention.MultiHeadLatentAttention.compress",
    MLA,
    x=lambda: R(2, 5, 8),
)
method(
    "nn.latent_attention.MultiHeadLatentAttention.forward",
    MLA,
    x=lambda: R(2, 5, 8),
    mask=lambda: resolve("attnbook.core.masking.causal_mask")(5),
)
DEC = ("nn.decoder.TransformerDecoderBlock", 8, 2, 16)
fn(
    "nn.decoder.TransformerDecoderBlock",
    embed_dim=8,
    num_heads=2,
    ffn_hidden=16,
)
fn(
    "nn.decoder.TransformerDecoder",
    embed_dim=8,
    num_heads=2,
    ffn_hidden=16,
    num_layers=1,
)
XM = dict(
    x=lambda: R(2, 4, 8),
    memory=lambda: R(2, 5, 8),
    self_mask=lambda: torch.ones(4, 4, dtype=torch.bool).tril(),
    memory_mask=lambda: keep(2, 1, 1, 5),
)
method("nn.decoder.TransformerDecoderBlock.forward", _cls(*DEC), **XM)
method(
    "nn.decoder.TransformerDecoder.forward",
    _cls("nn.decoder.TransformerDecoder", 8, 2, 16, 1),
    **XM,
)
method(
    "nn.decoder.TransformerDecoderBlock.memory_keys_values",
    _cls(*DEC),
    memory=lambda: R(2, 5, 8),
)


def _decoder_block():
    block = _cls(*DEC)()
    block._probe_kv = block.memory_keys_values(R(2, 5, 8))
    return block


def _step():
    block = _decoder_block()
    return block.step, {
        "x": R(2, 1, 8),
        "cache": _decoder_cache(2, 1),
        "layer": 1,
        "memory_kv": block._probe_kv,
        "memory_mask": keep(2, 1, 1, 5),
    }


def _decoder_cache(num_layers, cached):
    """A KVCache of ``num_layers`` layers holding ``cached`` positions of
    the probe's decoder block (B = 2, h = 2, d_k = 4)."""
    cache = resolve("attnbook.nn.kv_cache.KVCache")(num_layers)
    for layer in range(num_layers):
        cache.append(layer, R(2, 2, cached, 4), R(2, 2, cached, 4))
    return cache


def _decoder_step():
    decoder = _cls("nn.decoder.TransformerDecoder", 8, 2, 16, 2)()
    return decoder.step, {
        "x": R(2, 1, 8),
        "cache": _decoder_cache(2, 3),
        "memory_kv": decoder.memory_keys_values(R(2, 5, 8)),
        "memory_mask": keep(2, 1, 1, 5),
    }


SPECS["attnbook.nn.decoder.TransformerDecoderBlock.step"] = Spec(
    _step, mutable=("cache",)
)
SPECS["attnbook.nn.decoder.TransformerDecoder.step"] = Spec(
    _decoder_step, mutable=("cache",)
)
method(
    "nn.decoder.TransformerDecoder.new_cache",
    _cls("nn.decoder.TransformerDecoder", 8, 2, 16, 2),
)
method(
    "nn.decoder.TransformerDecoder.memory_keys_values",
    _cls("nn.decoder.TransformerDecoder", 8, 2, 16, 2),
    memory=lambda: R(2, 5, 8),
)
method(
    "nn.decoder.TransformerDecoderBlock.load_torch_weights",
    _cls(*DEC),
    layer=lambda: torch.nn.TransformerDecoderLayer(
        8, 2, 16, 0.0, batch_first=True
    ),
)
method(
    "nn.decoder.TransformerDecoder.load_torch_weights",
    _cls("nn.decoder.TransformerDecoder", 8, 2, 16, 1),
    decoder=lambda: torch.nn.TransformerDecoder(
        torch.nn.TransformerDecoderLayer(8, 2, 16, 0.0, batch_first=True), 1
    ),
)
EDT_SIZES = dict(
    src_vocab_size=10,
    tgt_vocab_size=9,
    embed_dim=8,
    num_heads=2,
    ffn_hidden=16,
    num_encoder_layers=1,
    num_decoder_layers=1,
    max_src_len=8,
    max_tgt_len=8,
)
fn("nn.decoder.EncoderDecoderTransformer", **EDT_SIZES)
EDT = lambda: resolve("attnbook.nn.decoder.EncoderDecoderTransformer")(  # noqa: E731
    **EDT_SIZES
).eval()
SRC = dict(
    src=lambda: torch.randint(3, 10, (2, 5)),
    src_lens=lambda: torch.tensor([5, 3]),
)
TGT = lambda: torch.randint(3, 9, (2, 4))  # noqa: E731
method("nn.decoder.EncoderDecoderTransformer.encode", EDT, **SRC)
method("nn.decoder.EncoderDecoderTransformer.embed_target", EDT, tgt=TGT)
method(
    "nn.decoder.EncoderDecoderTransformer.decode",
    EDT,
    tgt_in=TGT,
    memory=lambda: R(2, 5, 8),
    memory_mask=lambda: keep(2, 1, 1, 5),
)
method("nn.decoder.EncoderDecoderTransformer.forward", EDT, **SRC, tgt_in=TGT)
method(
    "nn.decoder.EncoderDecoderTransformer.generate",
    EDT,
    **SRC,
    max_len=4,
)
fn("nn.encoder.padding_mask", valid_lens=lambda: torch.tensor([2, 3]), n=4)
fn("nn.encoder.LayerNorm", dim=8)
fn("nn.encoder.PositionWiseFFN", embed_dim=8, ffn_dim=16)
fn(
    "nn.encoder.TransformerEncoderBlock",
    embed_dim=8,
    num_heads=2,
    ffn_dim=16,
)
method("nn.encoder.LayerNorm.forward", _cls("nn.encoder.LayerNorm", 8), **X8)
method("nn.encoder.LayerNorm.extra_repr", _cls("nn.encoder.LayerNorm", 8))
method(
    "nn.encoder.PositionWiseFFN.forward",
    _cls("nn.encoder.PositionWiseFFN", 8, 16),
    **X8,
)
ENC = ("nn.encoder.TransformerEncoderBlock", 8, 2, 16)
method(
    "nn.encoder.TransformerEncoderBlock.forward",
    _cls(*ENC),
    **X8,
    mask=lambda: keep(2, 1, 1, 5),
)
method(
    "nn.encoder.TransformerEncoderBlock.load_torch_weights",
    _cls(*ENC),
    layer=lambda: torch.nn.TransformerEncoderLayer(
        8, 2, 16, 0.0, batch_first=True
    ),
)
ENCODER_SIZES = dict(
    vocab_size=10,
    embed_dim=8,
    num_heads=2,
    ffn_dim=16,
    num_layers=1,
    max_len=16,
)
fn("nn.encoder.TransformerEncoder", **ENCODER_SIZES)
TOKENS = lambda: torch.randint(0, 10, (2, 5))  # noqa: E731
ENCODER = _cls("nn.encoder.TransformerEncoder", *ENCODER_SIZES.values())
method("nn.encoder.TransformerEncoder.embed", ENCODER, tokens=TOKENS)
method(
    "nn.encoder.TransformerEncoder.forward",
    ENCODER,
    tokens=TOKENS,
    valid_lens=lambda: torch.tensor([5, 3]),
)
fn("nn.kv_cache.KVCache", num_layers=2)
KV = lambda: resolve("attnbook.nn.kv_cache.KVCache")(1)  # noqa: E731
method(
    "nn.kv_cache.KVCache.append",
    KV,
    layer=0,
    keys=lambda: R(2, 2, 3, 4),
    values=lambda: R(2, 2, 3, 4),
)


def _filled_cache():
    cache = KV()
    cache.append(0, R(2, 2, 3, 4), R(2, 2, 3, 4))
    return cache


method("nn.kv_cache.KVCache.nbytes", _filled_cache)
method(
    "nn.kv_cache.KVCache.reorder",
    _filled_cache,
    rows=lambda: torch.tensor([1, 1, 0]),
)
fn("nn.kv_cache.require_kv_cache", cache=KV)
fn(
    "nn.language_model.DecoderOnlyBlock",
    embed_dim=8,
    num_heads=2,
    ffn_dim=16,
)
BLOCK = _cls("nn.language_model.DecoderOnlyBlock", 8, 2, 16)
method("nn.language_model.DecoderOnlyBlock.forward", BLOCK, **X8)
method(
    "nn.language_model.DecoderOnlyBlock.forward_cached",
    BLOCK,
    _mutable=("cache",),
    x=lambda: R(2, 1, 8),
    cache=KV,
    layer=0,
)
LM_SIZES = dict(
    vocab_size=10,
    context_len=8,
    embed_dim=8,
    num_heads=2,
    num_layers=1,
    ffn_dim=16,
)
fn("nn.language_model.DecoderOnlyTransformer", **LM_SIZES)
LM = _cls("nn.language_model.DecoderOnlyTransformer", *LM_SIZES.values())
method("nn.language_model.DecoderOnlyTransformer.embed", LM, tokens=TOKENS)
method(
    "nn.language_model.DecoderOnlyTransformer.forward",
    LM,
    tokens=TOKENS,
    mask=lambda: resolve("attnbook.sliding_window_mask")(5, window=2),
)
method("nn.language_model.DecoderOnlyTransformer.new_cache", LM)
method(
    "nn.language_model.DecoderOnlyTransformer.loss",
    LM,
    inputs=TOKENS,
    targets=TOKENS,
)
method(
    "nn.language_model.DecoderOnlyTransformer.generate",
    LM,
    tokens=TOKENS,
    max_new_tokens=2,
    top_k=3,
    top_p=0.9,
    generator=lambda: G(),
)
fn("nn.language_model.DecoderOnlyTransformer", **LM_SIZES, latent_dim=4)
fn(
    "experiments.kv_sharing.pool_kv_heads",
    model=LM,
    num_kv_heads=1,
)
fn(
    "experiments.kv_sharing.cached_numbers_per_token",
    config={"num_kv_heads": 2},
)
fn("experiments.kv_sharing.results_json", records=[{"name": "mha"}])
SWEEP_RECORDS = [
    {"name": f"mha-seed{s}", "held_out_bits_per_char": 1.9 + s / 100,
     "parameters": 10, "cached_per_token_per_layer": 4}
    for s in range(2)
]  # fmt: skip
fn("experiments.kv_sharing.sweep_summary", records=SWEEP_RECORDS)
fn("experiments.kv_sharing.arm_of", record={"name": "mha-seed1"})
fn(
    "experiments.sinks.mass_by_key_token",
    weights=lambda: R(2, 3, 5, 5).softmax(-1),
    tokens=lambda: torch.tensor([[0, 1, 2, 1, 0], [2, 2, 1, 0, 1]]),
    vocab_size=3,
    first_query=1,
)
fn(
    "experiments.sinks.evict_keys_mask",
    evicted=lambda: torch.tensor([[True, False, True, False]]),
    window=2,
)
fn(
    "experiments.sinks.latest_key_mask",
    marked=lambda: torch.tensor([[True, False, True, False]]),
)
fn(
    "experiments.sinks.matched_random_keys",
    evicted=lambda: torch.tensor([[True, False, True, False]]),
    generator=lambda: G(),
)
fn(
    "measure.kv_cache.hybrid_cache_bytes",
    num_layers=6,
    num_kv_heads=2,
    head_dim=4,
    seq_len=16,
    window=4,
    local_per_global=5,
)
fn("core.long_context.alibi_slopes", num_heads=4)
fn("core.long_context.alibi_bias", num_heads=2, n_q=3, n_k=5)
fn(
    "core.long_context.rope_frequencies",
    head_dim=8,
    scaling="yarn",
    factor=2.0,
    original_context=16,
)
fn("core.long_context.yarn_attention_scale", factor=2.0)
_ROPE_LAB = _cls("tasks.long_context.build_model", "rope")
SPECS["attnbook.nn.position_schemes.PositionSchemeTransformer.forward"] = Spec(
    lambda: (
        _cls(
            "nn.position_schemes.PositionSchemeTransformer",
            "rope",
            16,
            8,
            2,
            1,
            max_len=32,
        )(),  # fmt: skip
        {
            "tokens": torch.tensor([[1, 2, 3, 4, 5, 6]]),
            "clamp": 3,
            "score_scale": 1.5,
        },
    )
)
fn("tasks.long_context.previous_token_scores", model=_ROPE_LAB, length=48)
fn(
    "tasks.long_context.finetune_curve",
    model=_ROPE_LAB,
    scaling="ntk",
    checkpoints=(0, 1),
    length=64,
)
fn("tasks.long_context.scaling_curve_results")
fn("tasks.long_context.budget_results")
WEIGHTS5 = lambda: torch.softmax(R(2, 3, 5, 5), dim=-1)  # noqa: E731
fn("measure.head_scores.previous_token_score", weights=WEIGHTS5)
fn("measure.head_scores.induction_score", weights=WEIGHTS5, period=2)
fn(
    "experiments.head_interventions.replaced",
    weights=lambda: torch.softmax(R(2, 3, 5, 5), dim=-1),
    head=1,
    how="uniform",
)
fn(
    "experiments.head_interventions.held_out_windows",
    held_out=lambda: torch.arange(40),
    count=2,
    length=4,
)
fn(
    "experiments.head_interventions.intervention_costs",
    model=lambda: resolve("attnbook.nn.language_model.DecoderOnlyTransformer")(
        10, 8, 8, 2, 1, 16
    ),
    windows=lambda: torch.randint(10, (2, 9)),
    reference=lambda: torch.randint(10, (3, 9)),
)
fn(
    "experiments.head_interventions.results_json",
    costs=lambda: {"base": R(3)},
    recipe={"count": 3},
)
fn(
    "experiments.head_interventions.bits_per_window",
    logits=lambda: R(2, 3, 4),
    targets=lambda: torch.zeros(2, 3, dtype=torch.long),
)
fn("nn.multihead.split_heads", x=lambda: R(2, 5, 8), num_heads=2)
fn("nn.multihead.merge_heads", x=lambda: R(2, 2, 5, 4))
fn("nn.multihead.MultiHeadAttention", embed_dim=8, num_heads=2)
MHA = _cls("nn.multihead.MultiHeadAttention", 8, 2)
QKV8 = dict(
    query=lambda: R(2, 3, 8), key=lambda: R(2, 5, 8), value=lambda: R(2, 5, 8)
)
method("nn.multihead.MultiHeadAttention.project", MHA, **QKV8)
method(
    "nn.multihead.MultiHeadAttention.project_query", MHA, x=lambda: R(2, 3, 8)
)
method(
    "nn.multihead.MultiHeadAttention.project_keys_values",
    MHA,
    x=lambda: R(2, 5, 8),
)
method(
    "nn.multihead.MultiHeadAttention.forward",
    MHA,
    **QKV8,
    mask=lambda: keep(2, 1, 1, 5),
)
method(
    "nn.multihead.MultiHeadAttention.load_torch_weights",
    MHA,
    module=lambda: torch.nn.MultiheadAttention(8, 2, batch_first=True),
)
fn("nn.pointer.not_chosen_mask", target=lambda: perms(2, 5))
fn("nn.pointer.PointerNetwork", hidden_dim=8)
PTR = _cls("nn.pointer.PointerNetwork", 8)
XT = dict(x=lambda: torch.rand(2, 5), target=lambda: perms(2, 5))
method("nn.pointer.PointerNetwork.encode", PTR, x=XT["x"])
method(
    "nn.pointer.PointerNetwork.pointer_scores",
    PTR,
    decoder_states=lambda: R(2, 5, 8),
    encoder_states=lambda: R(2, 5, 8),
)
for _name in ("teacher_forced_scores", "forward", "loss"):
    method("nn.pointer.PointerNetwork." + _name, PTR, **XT)
method(
    "nn.pointer.PointerNetwork.pointer_step",
    PTR,
    fed=lambda: R(2, 1, 8),
    state=lambda: (torch.zeros(1, 2, 8), torch.zeros(1, 2, 8)),
    encoder_states=lambda: R(2, 5, 8),
    available=lambda: keep(2, 5),
)
method("nn.pointer.PointerNetwork.decode", PTR, x=XT["x"])
fn("nn.self_attention.SelfAttention", embed_dim=8)
SA = _cls("nn.self_attention.SelfAttention", 8)
method("nn.self_attention.SelfAttention.project", SA, **X8)
method(
    "nn.self_attention.SelfAttention.forward",
    SA,
    **X8,
    mask=lambda: keep(2, 5, 5),
)
method("nn.self_attention.SelfAttention.extra_repr", SA)
S2S_SIZES = dict(
    src_vocab_size=10, tgt_vocab_size=9, embed_dim=8, hidden_dim=8
)
fn("nn.seq2seq.Seq2Seq", **S2S_SIZES)
S2S = _cls("nn.seq2seq.Seq2Seq", *S2S_SIZES.values())
SRC_L = dict(
    src=lambda: torch.randint(3, 10, (2, 5)),
    lengths=lambda: torch.tensor([5, 3]),
)
STATES = dict(
    state=lambda: R(2, 8),
    states=lambda: R(2, 5, 16),
    summary=lambda: R(2, 16),
    keep=lambda: keep(2, 5),
)
method("nn.seq2seq.Seq2Seq.encode", S2S, **SRC_L)
method("nn.seq2seq.Seq2Seq.context", S2S, **STATES)
method(
    "nn.seq2seq.Seq2Seq.step",
    S2S,
    prev_tokens=lambda: torch.randint(3, 9, (2,)),
    **STATES,
)
method("nn.seq2seq.Seq2Seq.forward", S2S, **SRC_L, tgt_in=TGT)
method("nn.seq2seq.Seq2Seq.loss", S2S, **SRC_L, tgt_in=TGT, tgt_out=TGT)
method("nn.seq2seq.Seq2Seq.greedy_decode", S2S, **SRC_L, max_steps=3)


def _copy_batches(generator):
    from attnbook.tasks.copying import copy_batch

    return copy_batch(2, 3, generator)


fn(
    "nn.seq2seq.train_seq2seq",
    _mutable=("model",),
    model=lambda: resolve("attnbook.nn.seq2seq.Seq2Seq")(13, 13, 8, 8),
    make_batch=_copy_batches,
    steps=1,
    stop_after=1,
)

# tasks
fn(
    "tasks.card_lookup.lookup_batch",
    batch_size=2,
    generator=lambda: G(),
)


@lazy
def _hand():
    from attnbook.tasks.card_lookup import lookup_batch

    return lookup_batch(2, 1, G())


fn(
    "tasks.card_lookup.hand_questions",
    colours=lambda: _hand()["card_colours"],
    digits=lambda: _hand()["card_digits"],
    colour_card=lambda: torch.tensor([[0], [1]]),
    digit_card=lambda: torch.tensor([[1], [0]]),
)
fn("tasks.card_lookup.CardLookup", num_heads=2, embed_dim=8)
_CARD_INPUTS = ("card_colours", "card_digits", "ask_colour", "ask_digit")
SPECS["attnbook.tasks.card_lookup.CardLookup.forward"] = Spec(
    lambda: (
        _cls("tasks.card_lookup.CardLookup", 2, 8)(),
        {k: v for k, v in _hand().items() if k in _CARD_INPUTS},
    )
)
fn(
    "tasks.card_lookup.lookup_loss",
    model=_cls("tasks.card_lookup.CardLookup", 2, 8),
    batch=_hand,
)
fn(
    "tasks.card_lookup.train_card_lookup",
    steps=1,
    batch_size=4,
)
fn("tasks.card_lookup.run_name", num_heads=2, steps=600, seed=0)
fn("tasks.card_lookup.trained_card_lookup")
fn(
    "tasks.card_lookup.card_lookup_from",
    saved=lambda: shipped("card_saved"),
    name=lambda: next(iter(_loaded("card_saved")["models"])),
)
fn(
    "tasks.card_lookup.lookup_report",
    model=lambda: shipped("card_lookup"),
    num_hands=20,
)
fn("tasks.card_lookup.card_label", colour=0, digit=1)
fn("tasks.card_lookup.question_label", colour=0, digit=1)
fn(
    "tasks.copying.copy_batch",
    batch_size=2,
    lengths=3,
    generator=lambda: G(),
)
fn(
    "tasks.copying.copy_accuracy",
    model=lambda: next(iter(shipped("bottleneck").values())),
    length=3,
    num_sequences=4,
)
fn(
    "tasks.copying.copied_exactly",
    model=lambda: next(iter(shipped("bottleneck").values())),
    length=3,
    num_sequences=4,
)
fn("tasks.copying.pretrained_bottleneck_models")
fn("tasks.copying.train_bottleneck_model", name="plain", seed=1, steps=2)
fn(
    "tasks.copying.copy_accuracies",
    models=lambda: dict(list(shipped("bottleneck").items())[:1]),
    lengths=[3],
    num_sequences=4,
)
fn("tasks.date_transformer.build_date_transformer", seed=0)
fn(
    "tasks.date_transformer.DateTransformer",
    model=lambda: resolve(
        "attnbook.tasks.date_transformer.build_date_transformer"
    )(seed=0),
)
method(
    "tasks.date_transformer.DateTransformer.translate",
    lambda: shipped("date_transformer"),
    strings=["3 May 1999", "1999-5-3"],
)
fn(
    "tasks.date_transformer.date_accuracy",
    translator=lambda: shipped("date_transformer"),
    num_dates=4,
)
fn("tasks.date_transformer.pretrained_date_transformer")
fn(
    "tasks.date_translator.DateTranslator",
    model=lambda: shipped("date_translator").model,
)
method(
    "tasks.date_translator.DateTranslator.translate",
    lambda: shipped("date_translator"),
    strings=["3 May 1999", "1999-5-3"],
)
TRANSLATOR_CONFIG = dict(
    src_vocab_size=40, tgt_vocab_size=14, embed_dim=8, hidden_dim=8
)
fn("tasks.date_translator.build_translator_model", **TRANSLATOR_CONFIG)
fn("tasks.date_translator.pretrained_date_translator")
DATE = datetime.date(1999, 5, 3)
fn("tasks.dates.ordinal", day=3)
fn("tasks.dates.iso", date=DATE)
fn("tasks.dates.format_date", date=DATE, form="3 May 1999")
fn("tasks.dates.random_dates", n=3, generator=lambda: G())
fn("tasks.dates.random_date_pairs", n=3, generator=lambda: G())
fn("tasks.dates.random_date_targets", n=3, generator=lambda: G())
fn("tasks.dates.date_batch", n=3, generator=lambda: G())
fn("tasks.dates.date_spans", text="Monday, May 3, 1999")
fn("tasks.dates.CharVocabulary", chars="abc", max_length=8, name="v")


def VOCAB():
    return resolve("attnbook.tasks.dates.CharVocabulary")("abc", 8, "v")


method("tasks.dates.CharVocabulary.check", VOCAB, strings=["ab", "c"])
method("tasks.dates.CharVocabulary.encode", VOCAB, strings=["ab", "c"])
method(
    "tasks.dates.CharVocabulary.encode_for_translation",
    VOCAB,
    strings=["ab", "c"],
)
method(
    "tasks.dates.CharVocabulary.decode",
    VOCAB,
    ids=lambda: VOCAB().encode(["ab", "c"])[0],
)
fn(
    "tasks.language_model.learning_rate",
    step=5,
    steps=10,
    lr=0.002,
    warmup=2,
)
fn(
    "tasks.language_model.train_language_model",
    steps=1,
    batch_size=2,
    warmup=0,
    config=dict(
        context_len=8, embed_dim=8, num_heads=2, num_layers=1, ffn_dim=16
    ),
    progress=False,
)
LM_MODEL = lambda: shipped("language_model").model  # noqa: E731
fn(
    "tasks.language_model.bits_per_char",
    model=LM_MODEL,
    text="hello world",
    batch_size=2,
)
fn(
    "tasks.language_model.total_bits",
    model=LM_MODEL,
    ids=lambda: torch.arange(12),
    batch_size=2,
)
fn("tasks.language_model.model_from", saved=lambda: shipped("lm_saved"))
fn(
    "tasks.language_model.PretrainedLanguageModel",
    model=LM_MODEL,
    saved=lambda: shipped("lm_saved"),
)
PLM = lambda: shipped("language_model")  # noqa: E731
method(
    "tasks.language_model.PretrainedLanguageModel.generate",
    PLM,
    prompt="The ",
    max_new_tokens=3,
    top_k=3,
    top_p=0.9,
)
method(
    "tasks.language_model.PretrainedLanguageModel.next_char_distribution",
    PLM,
    prompt="The ",
    top_k=3,
    top_p=0.9,
)
method(
    "tasks.language_model.PretrainedLanguageModel.bits_per_char",
    PLM,
    text="hello world",
)
fn("tasks.language_model.pretrained_language_model")
fn("tasks.language_model.language_model_log")
fn(
    "tasks.language_model.spread_windows",
    text="hello world, hello",
    count=3,
    context_len=4,
)
fn(
    "tasks.language_model.window_bits",
    model=LM,
    windows=lambda: torch.randint(0, 10, (3, 6)),
    batch_size=2,
)
fn(
    "tasks.language_model.train_on_ids",
    train_ids=lambda: torch.randint(0, 10, (40,)),
    held_out_ids=lambda: torch.randint(0, 10, (20,)),
    vocab_size=10,
    steps=1,
    batch_size=2,
    lr=0.002,
    warmup=0,
    weight_decay=0.1,
    seed=0,
    config=dict(
        context_len=8, embed_dim=8, num_heads=2, num_layers=1, ffn_dim=16
    ),
    progress=False,
    eval_every=1,
)
fn("tasks.bpe.BytePairEncoder", merges=[(97, 98), (256, 99)])
BPE = lambda: resolve("attnbook.BytePairEncoder")(  # noqa: E731
    [(97, 98), (256, 99)]
)
method("tasks.bpe.BytePairEncoder.encode", BPE, text="abcab é")
method("tasks.bpe.BytePairEncoder.decode", BPE, ids=[257, 256, 100])


@lazy
def _byte_model():
    return resolve("attnbook.nn.language_model.DecoderOnlyTransformer")(
        258, *list(LM_SIZES.values())[1:]
    ).eval()


fn(
    "tasks.bpe_language_model.token_model_bits",
    model=_byte_model,
    bpe=BPE,
    text="abcab abc",
)
fn("tasks.bpe_language_model.pretrained_bpe_language_model")
fn(
    "tasks.bpe_language_model.PretrainedBpeLanguageModel",
    saved=lambda: shipped("bpe_saved"),
)
PBPE = lambda: resolve(  # noqa: E731
    "attnbook.tasks.bpe_language_model.pretrained_bpe_language_model"
)()
method(
    "tasks.bpe_language_model.PretrainedBpeLanguageModel.greedy",
    PBPE,
    prompt="Return the ",
    max_new_tokens=3,
)


def _order():
    from attnbook.tasks.order_classifier import order_batch

    return order_batch(2, 6, 3, G())


fn(
    "tasks.order_classifier.order_batch",
    batch_size=2,
    max_len=6,
    generator=lambda: G(),
)
fn("tasks.order_classifier.encode", text="cdAe")
CLS_SIZES = dict(embed_dim=8, num_heads=2, ffn_dim=16, num_layers=1)
fn("tasks.order_classifier.CLSClassifier", **CLS_SIZES)
CLS = lambda: resolve("attnbook.tasks.order_classifier.CLSClassifier")(  # noqa: E731
    **CLS_SIZES
).eval()
method(
    "tasks.order_classifier.CLSClassifier.forward",
    CLS,
    tokens=lambda: _order()[0],
    valid_lens=lambda: _order()[1],
)
fn(
    "tasks.order_classifier.accuracy",
    model=CLS,
    tokens=lambda: _order()[0],
    valid_lens=lambda: _order()[1],
    labels=lambda: _order()[2],
)
fn(
    "tasks.order_classifier.train_order_classifier",
    steps=1,
    batch_size=4,
    max_len=6,
    progress=False,
)
fn("tasks.order_classifier.pretrained_order_classifier")
fn("tasks.order_classifier.classifier_from", saved=lambda: shipped("oc_saved"))
fn("tasks.sorting.sorting_batch", batch_size=2, n=5, generator=lambda: G())
fn("tasks.sorting.scale_to_unit", x=lambda: torch.rand(2, 5))
fn(
    "tasks.sorting.sorting_accuracy",
    model=lambda: shipped("sorter"),
    n=5,
    num_sequences=4,
    batch_size=2,
)
fn(
    "tasks.sorting.train_sorter",
    hidden_dim=8,
    steps=1,
    batch_size=2,
    min_len=3,
    max_len=4,
)
fn(
    "tasks.sorting.save_sorter",
    model=_cls("nn.pointer.PointerNetwork", 8),
    path="sorter.pt",
)
fn(
    "tasks.sorting.load_sorter",
    path=lambda: resolve("attnbook.tasks.sorting.pretrained_path")(),
)
fn("tasks.sorting.pretrained_path")
fn("tasks.sorting.pretrained_sorter")
fn("tasks.sorting.load_baseline_seeds")
fn("tasks.text.encode", text="hello")
fn("tasks.text.decode", ids=lambda: torch.tensor([72, 73, 74]))
fn("tasks.text.corpus_documents")
fn("tasks.text.split_documents", documents=["first doc", "second", "third"])
fn("tasks.text.corpus_split")
fn(
    "tasks.text.text_batch",
    ids=lambda: torch.randint(0, 90, (40,)),
    batch_size=2,
    context_len=4,
    generator=lambda: G(),
)
fn("tasks.text.unigram_bits_per_char", train="hello world", held_out="hello")
fn("tasks.text.bigram_bits_per_char", train="hello world", held_out="hello")
fn("tasks.text.nats_to_bits", nats=1.0)

# train (not the main scripts)
fn(
    "train.card_lookup.describe",
    name=lambda: next(iter(_loaded("card_saved")["models"])),
    model=lambda: shipped("card_lookup"),
)
# two steps, not the grid's hundreds: one valid call is seconds, not minutes
fn(
    "train.card_heads_budget.run_budget",
    num_heads=2,
    lr=1e-3,
    steps=2,
    seed=0,
)
fn(
    "train.card_heads_budget.budget_json",
    records=[{"num_heads": 1, "lr": 1e-3, "steps": 600, "seed": 0}],
)
fn(
    "train.card_heads_budget.best_budgets",
    results=lambda: resolve(
        "attnbook.train.card_heads_budget.budget_results"
    )(),
)
fn("train.quick_date_model.quick_model")
# one of the 100 steps: the prefix the chapter checks, shortened
fn("train.quick_date_model.train_quick_model", steps=1)
fn("train.quick_date_model.pretrained_quick_model")
LIB = pathlib.Path(PACKAGE_DIR)
fn("train.corpus.module_files", lib=LIB)
fn("train.corpus.module_name", path=LIB / "core" / "attention.py", lib=LIB)
fn("train.corpus.docstrings", tree=lambda: ast.parse('"""Doc."""\n'))
fn("train.corpus.clean", text="Some text.")
fn("train.corpus.extract", lib=LIB / "core")
fn(
    "train.date_transformer.train_date_transformer",
    steps=1,
    batch_size=2,
    lr=1e-3,
    warmup=0,
    seed=0,
    embed_dim=8,
    num_heads=2,
    ffn_hidden=16,
    num_encoder_layers=1,
    num_decoder_layers=1,
)
fn("train.date_translator.translator_config")
fn(
    "train.date_translator.train_date_translator",
    recipe=dict(
        embed_dim=4, hidden_dim=8, attn_dim=8, steps=1, batch_size=2,
        lr=1e-3, seed=0,
    ),
)  # fmt: skip
fn("train.date_comparison.comparison_dates", draw=31337)
fn(
    "train.date_comparison.score",
    translator=lambda: shipped("date_transformer"),
    dates=(["3/5/1999", "May 3, 1999"], ["1999-05-03", "1999-05-03"]),
)
fn(
    "train.date_translator.date_accuracy",
    translator=lambda: shipped("date_translator"),
    size=4,
    batch=2,
)
fn(
    "train.date_translator.serialise",
    model=lambda: shipped("date_translator").model,
    recipe=lambda: resolve(
        "attnbook.train.date_translator.translator_config"
    )(),
)
fn("train.language_model.report", model=LM_MODEL)
fn(
    "train.order_classifier.held_out_accuracy",
    model=lambda: shipped("order_classifier"),
)
fn("train.sorter.evaluate", model=lambda: shipped("sorter"))

# widgets: the pure views, and the figures drawn from them
VIEWS = {
    "basics": ("kernel_regression", {}),
    "chunked": ("chunked", {}),
    "decoder": (
        "decoder",
        {"translator": lambda: shipped("date_transformer")},
    ),
    "multihead": ("multihead", {}),
    "pointer": ("pointer", {"model": lambda: shipped("sorter")}),
    "positional": ("positional", {}),
    "scoring": ("scoring", {}),
    "self_attention": ("self_attention", {}),
    "seq2seq": (
        "seq2seq",
        {"translator": lambda: shipped("date_translator")},
    ),
    "soft_hard": ("soft_hard", {}),
    "kv_cache": ("kv_cache", {}),
    "gpu_kernels": ("tiles", {}),
    "fixed_memory": ("memory", {}),
    "language_model": (
        "decoding",
        {"lm": lambda: shipped("language_model")},
    ),
    "recall": ("recall", {}),
    "induction": (
        "induction_training",
        {
            "models": lambda: shipped("induction")[0],
            "history": lambda: shipped("induction")[1],
        },
    ),
    "long_context": ("rope_scaling", {}),
    "transformer": (
        "cls_attention",
        {"model": lambda: shipped("order_classifier")},
    ),
}


def _view_of(module: str, stem: str, kwargs: dict):
    @lazy
    def build():
        view = resolve(f"attnbook.widgets.{module}.{stem}_view")
        return view(**{k: v() for k, v in kwargs.items()})

    return build


for _module, (_stem, _kwargs) in VIEWS.items():
    fn(f"widgets.{_module}.{_stem}_view", **_kwargs)
    _view = _view_of(_module, _stem, _kwargs)
    fn(f"widgets.{_module}.plot_{_stem}", view=_view)

    def _update(module=_module, stem=_stem, view=_view):
        import matplotlib.pyplot as plt

        plot = resolve(f"attnbook.widgets.{module}.plot_{stem}")
        update = resolve(f"attnbook.widgets.{module}.update_{stem}_figure")
        built = view()
        figure = plot(built)
        figure = figure if isinstance(figure, plt.Figure) else plt.gcf()
        return update, {"fig": figure, "view": built}

    SPECS[f"attnbook.widgets.{_module}.update_{_stem}_figure"] = Spec(_update)
fn("widgets.language_model.visible", text="a b\nc")

# chapter 16: the kernels (Triton's interpreter on the CPU), their tiles,
# the shipped GPU timings and the figures
QKV4 = dict(
    queries=lambda: R(1, 2, 5, 16),
    keys=lambda: R(1, 2, 7, 16),
    values=lambda: R(1, 2, 7, 16),
)
fn("kernels.api.flash_attention", **QKV4, causal=True)
fn(
    "kernels.api.flash_decoding",
    query=lambda: R(1, 2, 1, 16),
    keys=QKV4["keys"],
    values=QKV4["values"],
    split_size=4,
)


def _paged_args():
    from attnbook.kernels.api import paged_cache

    pages = paged_cache(R(2, 2, 20, 16), R(2, 2, 20, 16), 8, G())
    return dict(
        zip(("key_pages", "value_pages", "block_table", "lengths"), pages)
    )


_PAGED = lazy(_paged_args)
fn(
    "kernels.api.paged_decoding",
    query=lambda: R(2, 2, 1, 16),
    key_pages=lambda: _PAGED()["key_pages"],
    value_pages=lambda: _PAGED()["value_pages"],
    block_table=lambda: _PAGED()["block_table"],
    lengths=lambda: _PAGED()["lengths"],
)
fn(
    "kernels.api.paged_cache",
    keys=lambda: R(2, 2, 20, 16),
    values=lambda: R(2, 2, 20, 16),
    page_size=8,
    generator=lambda: G(),
)
fn("kernels.api.triton_softmax", scores=lambda: R(3, 7))
fn(
    "kernels.tiles.kernel_tiles",
    n_q=37,
    n_k=53,
    block_m=16,
    block_n=16,
    causal=True,
)
fn(
    "kernels.tiles.mask_tiles",
    keep=lambda: keep(37, 53),
    block_m=16,
    block_n=16,
)
fn("kernels.tiles.tile_counts", tiles=lambda: torch.zeros(3, 4).to(torch.int8))
fn("experiments.gpu_timings.h200_measurement")
fn("experiments.gpu_timings.gpu_benchmark")
fn(
    "experiments.gpu_timings.timing_rows",
    results=lambda: resolve(
        "attnbook.experiments.gpu_timings.h200_measurement"
    )(),
)
fn(
    "experiments.gpu_timings.slowdown",
    results=lambda: resolve(
        "attnbook.experiments.gpu_timings.h200_measurement"
    )(),
    slow="attnbook.chunked_attention",
    fast="sdpa flash",
    run="first",
    dtype="bfloat16",
)
fn("display.kernels.draw_kernel_grid", blocks=4, row=1)
fn("display.kernels.draw_decoding", splits=3, pages=4)
fn(
    "display.kernels.draw_tiles",
    ax=lambda: __import__("matplotlib.pyplot").pyplot.subplots()[1],
    tiles=lambda: torch.zeros(3, 4).to(torch.int8),
)
fn(
    "display.kernels.plot_roofline",
    peak_tflops=989.0,
    bandwidth_tbs=4.8,
    points=[("fused", 128.0)],
)
fn(
    "display.kernels.plot_gpu_timings",
    rows_by_name={"a": [(1024, 0.1), (2048, 0.3)]},
)
fn("widgets.multihead.example_hand")
fn("widgets.pointer.parse_numbers", text="20, 5, 10")
fn("widgets.self_attention.word_vector", word="cat")
fn("widgets.soft_hard.circle_keys")
fn("widgets.soft_hard.angle_query", angle=60.0)

# chapter 18's recall lab: the model, the task, the script's JSON, the diagram
RM = "nn.recall_model."
fn(RM + "ShortConv", dim=8)
method(
    RM + "ShortConv.forward", _cls(RM + "ShortConv", 8), x=lambda: R(2, 5, 8)
)
fn(RM + "TokenMixer", kind="deltanet", dim=8, num_heads=2)
_MIXER = _cls(RM + "TokenMixer", "gated_deltanet", 8, 2)
method(RM + "TokenMixer.forward", _MIXER, x=lambda: R(2, 5, 8))
method(
    RM + "TokenMixer.mix",
    _MIXER,
    x=lambda: R(2, 5, 8),
    q=lambda: R(2, 2, 5, 4),
    k=lambda: R(2, 2, 5, 4),
    v=lambda: R(2, 2, 5, 4),
)
method(RM + "TokenMixer.state_numbers", _MIXER, n=5)
fn(RM + "Block", kind="softmax", dim=8, num_heads=2)
method(
    RM + "Block.forward",
    _cls(RM + "Block", "linear", 8, 2),
    x=lambda: R(2, 5, 8),
)
_RECALL_ARGS = (("sliding_window", "deltanet"), 16, 8)
fn(RM + "RecallModel", mixers=("softmax", "linear"), vocab_size=16, dim=8)
method(
    RM + "RecallModel.forward",
    _cls(RM + "RecallModel", *_RECALL_ARGS),
    tokens=lambda: torch.randint(16, (2, 6), generator=G()),
)
method(
    RM + "RecallModel.state_numbers",
    _cls(RM + "RecallModel", *_RECALL_ARGS),
    n=6,
)
TR = "tasks.recall."
fn(TR + "recall_batch", batch_size=2, pairs=3, generator=lambda: G())
fn(
    TR + "recall_loss",
    logits=lambda: R(2, 9, 128),
    targets=lambda: resolve("attnbook.tasks.recall.recall_batch")(2, 3, G())[
        1
    ],
)
fn(TR + "build_model", name="hybrid", key_dim=4, config={"dim": 8})
fn(
    TR + "train_recall",
    name="deltanet",
    steps=1,
    batch_size=2,
    config={"dim": 8},
    curve_every=1,
    pairs=(2,),
)
fn(TR + "eval_generator", pairs=4)
fn(TR + "evaluation_batch", pairs=4, sequences=2)
fn(
    TR + "recall_accuracy",
    model=lambda: resolve("attnbook.tasks.recall.build_model")(
        "softmax", config={"dim": 8}
    ),
    pairs=4,
    sequences=2,
)
fn(TR + "shipped_runs")
fn(TR + "pretrained_results")
fn(TR + "chance_accuracy")
fn("train.recall.results_json", records=[])
fn(
    "display.recall.draw_recall_sequence",
    tokens=lambda: resolve("attnbook.tasks.recall.recall_batch")(1, 3, G())[0][
        0
    ],
    targets=lambda: resolve("attnbook.tasks.recall.recall_batch")(1, 3, G())[
        1
    ][0],
    num_keys=64,
)


# issue 37: the argument checks that became public names
fn("core.positional.check_sequence", x=lambda: R(2, 5, 8), dim=8, max_len=16)
fn("display.attention_steps.require_weights", weights=[0.25, 0.75])
fn(
    "experiments.hard_training.check_selection",
    items=lambda: R(3, 4, 2),
    target=lambda: torch.tensor([0, 1, 3]),
)
fn("measure.timing.require_count", name="repeats", value=3)
fn("nn.pointer.check_values", x=lambda: torch.rand(2, 5))
fn("experiments.hard_training.check_method", method="soft")
fn(
    "nn.multihead.require_multihead_mask",
    mask=lambda: torch.ones(5, 6, dtype=torch.bool),
    batch=(2,),
    num_heads=4,
    n_q=5,
    n_k=6,
)


# issue 36: a valid call for every public function left without one
fn(
    "core.rotary.rotate_pairs",
    x=lambda: R(2, 5, 8),
    positions=lambda: torch.arange(5),
    frequencies=lambda: torch.rand(4),
)
fn(
    "core.long_context.rope_score_by_distance",
    frequencies=lambda: torch.rand(4),
    distances=lambda: torch.arange(5.0),
)
fn("core.long_context.t5_buckets", distances=lambda: torch.arange(6))


@lazy
def _ax():
    import matplotlib.figure

    return matplotlib.figure.Figure().add_subplot()


@lazy
def _log_ax():
    ax = _ax()
    ax.loglog([1.0, 300.0], [1.0, 300.0])
    return ax


fn(
    "display.diagrams.weight_line",
    ax=_ax,
    start=(0.0, 0.0),
    end=(1.0, 1.0),
    weight=0.5,
)
fn("display.figures.label_log_axis", ax=_log_ax)
fn("display.figures.require_axes", ax=_ax)
fn(
    "display.head_sweep.draw_head_sweep",
    table=lambda: resolve("attnbook.experiments.head_count.sweep_table")(
        resolve("attnbook.experiments.head_count.head_sweep_results")()
    ),
)
fn(
    "display.layer_times.plot_layer_times",
    lengths=[8, 16, 32],
    times={"attention": [1e-3, 2e-3, 4e-3], "rnn": [2e-3, 4e-3, 8e-3]},
)
fn("display.long_context.draw_rope_turns", head_dim=8, trained=16, longest=64)
fn(
    "display.rotary.draw_rotated_pairs",
    vector=lambda: R(4),
    panels=[(0, range(3)), (1, range(3))],
)
method(
    "experiments.hard_training.QuerySelector.scores",
    lambda: resolve("attnbook.experiments.hard_training.QuerySelector")(4).to(
        torch.float64
    ),
    items=ITEMS["items"],
)
fn(
    "experiments.head_circuits.head_matrices",
    layer=MHA,
    head=1,
)
fn(
    "experiments.head_circuits.qk_circuit",
    layer=MHA,
    head=1,
    query_inputs=lambda: R(3, 8),
    key_inputs=lambda: R(5, 8),
)
fn(
    "experiments.head_circuits.ov_circuit",
    layer=MHA,
    head=1,
    inputs=lambda: R(3, 8),
    unembed=lambda: R(10, 8),
)
fn(
    "experiments.head_circuits.language_model_forward",
    model=LM,
    tokens=TOKENS,
)


@lazy
def _causal_weights():
    scores = R(2, 5, 5).masked_fill(
        ~torch.ones(5, 5, dtype=torch.bool).tril(), -float("inf")
    )
    return scores.softmax(-1)


fn(
    "experiments.head_circuits.shuffle_keys",
    weights=_causal_weights,
    generator=lambda: G(),
)
fn("experiments.head_circuits.uniform_causal_weights", n=5)
fn("experiments.head_circuits.first_key_mass", weights=_causal_weights)
AOT_SIZES = dict(
    vocab_size=16, context_len=12, embed_dim=8, num_heads=2, num_layers=2
)
AOT = _cls("nn.attention_only.AttentionOnlyTransformer", *AOT_SIZES.values())
fn(
    "experiments.head_circuits.induction_model_scores",
    model=AOT,
    period=3,
    batch_size=2,
)
fn("experiments.head_circuits.key_heads", model=AOT, period=3, batch_size=2)
fn(
    "experiments.head_count.sweep_json",
    records=[{"num_heads": 1, "seed": 0, "digit_accuracy": 0.5}],
)
fn(
    "experiments.head_count.sweep_table",
    results=lambda: resolve(
        "attnbook.experiments.head_count.head_sweep_results"
    )(),
)
fn(
    "experiments.bottleneck_seeds.score",
    model=lambda: next(iter(shipped("bottleneck").values())),
    lengths=[3],
    num_sequences=200,
)
fn(
    "experiments.bottleneck_seeds.run",
    name="plain",
    seed=1,
    steps=2,
    lengths=[3],
    num_sequences=200,
)
fn(
    "experiments.bottleneck_seeds.results_json",
    records=[{"model": "plain", "seed": 1, "copied": [3]}],
)
fn("experiments.bottleneck_seeds.bottleneck_seed_results")
fn(
    "experiments.bottleneck_seeds.accuracy_curves",
    results=lambda: resolve(
        "attnbook.experiments.bottleneck_seeds.bottleneck_seed_results"
    )(),
    model="plain",
    steps=1200,
)
fn("experiments.luong_bahdanau.build_decoder", name="luong", seed=0)
fn(
    "experiments.luong_bahdanau.training_targets",
    seed=0,
    steps=2,
    batch_size=2,
)
fn(
    "experiments.luong_bahdanau.unseen_dates",
    size=3,
    seed=0,
    seen={"1999-05-03"},
)
fn("experiments.luong_bahdanau.require_unseen_size", size=3)
LB_MODEL = lambda: resolve(  # noqa: E731
    "attnbook.experiments.luong_bahdanau.build_decoder"
)("luong", 0).eval()
LB_PAIRS = (["3 May 1999", "1999-5-3"], ["1999-05-03", "1999-05-03"])
fn(
    "experiments.luong_bahdanau.exact_match",
    model=LB_MODEL,
    sources=LB_PAIRS[0],
    targets=LB_PAIRS[1],
)
LB_RECIPE = {
    "steps": 2,
    "batch_size": 2,
    "lr": 3e-3,
    "seeds": (0,),
    "eval_every": 1,
    "eval_size": 2,
    "eval_seed": 4242,
}
fn(
    "experiments.luong_bahdanau.run",
    name="bahdanau",
    seed=0,
    held_out=LB_PAIRS,
    recipe=LB_RECIPE,
)
fn(
    "experiments.luong_bahdanau.results_json",
    records=[{"name": "luong", "final_loss": 1.23456, "exact_match": [0.5]}],
    recipe=LB_RECIPE,
)
fn(
    "experiments.norm_placement.gradient_norms_at_init",
    placement="pre-LN",
    num_layers=2,
    batch_size=4,
)
fn(
    "experiments.norm_placement.format_table",
    results=lambda: resolve(
        "attnbook.experiments.norm_placement.load_comparison"
    )(),
)
fn("measure.intervention.swap_character", text="3 May 1999", position=0)
fn(
    "measure.intervention.attention_intervention",
    translator=lambda: shipped("date_translator"),
    texts=["3 May 1999", "1999-5-3"],
    rows=[0, 5],
)
fn("nn.attention_only.AttentionOnlyTransformer", **AOT_SIZES)
method(
    "nn.attention_only.AttentionOnlyTransformer.forward",
    AOT,
    tokens=lambda: torch.randint(0, 16, (2, 6)),
    return_weights=True,
    ablate=[(0, 1)],
)
fn(
    "nn.beam_search.beam_search",
    model=EDT,
    **SRC,
    beam_width=2,
    max_len=4,
    alpha=0.6,
    use_cache=True,
)
fn(
    "nn.beam_search.length_penalty",
    lengths=lambda: torch.tensor([1.0, 4.0, 9.0]),
    alpha=0.6,
)
fn(
    "nn.beam_search.sequence_log_probs",
    model=EDT,
    **SRC,
    tokens=TGT,
)


def _hull():
    from attnbook.tasks.convex_hull import hull_batch

    return hull_batch(2, 6, G())


fn(
    "nn.hull_pointer.closing_keep_mask",
    target=lambda: _hull()[1],
    n=6,
)
HULL = _cls("nn.hull_pointer.HullPointerNetwork", 8)
for _name in ("teacher_forced_scores", "loss"):
    method(
        "nn.hull_pointer.HullPointerNetwork." + _name,
        HULL,
        points=lambda: _hull()[0],
        target=lambda: _hull()[1],
    )
method(
    "nn.hull_pointer.HullPointerNetwork.decode",
    HULL,
    points=lambda: _hull()[0],
)
fn("nn.luong.LuongSeq2Seq", **S2S_SIZES)
method(
    "nn.luong.LuongSeq2Seq.step",
    _cls("nn.luong.LuongSeq2Seq", *S2S_SIZES.values()),
    prev_tokens=lambda: torch.randint(3, 9, (2,)),
    **STATES,
)
fn(
    "nn.pointer.add_pointer_layers",
    _mutable=("module",),
    module=lambda: torch.nn.Module(),
    input_dim=1,
    hidden_dim=8,
)
method(
    "nn.pointer.PositionClassifier.pointer_scores",
    _cls("nn.pointer.PositionClassifier", 8, 5),
    decoder_states=lambda: R(2, 5, 8),
    encoder_states=lambda: R(2, 5, 8),
)
PST = _cls(
    "nn.position_schemes.PositionSchemeTransformer",
    "alibi",
    16,
    8,
    2,
    1,
    max_len=32,
)
fn(
    "nn.position_schemes.PositionSchemeTransformer",
    scheme="rope",
    vocab_size=16,
    embed_dim=8,
    num_heads=2,
    num_layers=1,
    max_len=32,
)
method(
    "nn.position_schemes.PositionSchemeTransformer.set_rope_scaling",
    _cls(
        "nn.position_schemes.PositionSchemeTransformer",
        "rope",
        16,
        8,
        2,
        1,
        max_len=32,
    ),
    scaling="yarn",
    factor=2.0,
    original_context=16,
)
method(
    "nn.position_schemes.PositionSchemeTransformer.embed",
    _cls(
        "nn.position_schemes.PositionSchemeTransformer",
        "sinusoidal",
        16,
        8,
        2,
        1,
        max_len=32,
    ),
    tokens=lambda: torch.randint(0, 16, (2, 6)),
)
method(
    "nn.position_schemes.PositionSchemeTransformer.score_bias",
    PST,
    n=5,
    dtype=torch.float32,
)
fn(
    "experiments.hard_training.run_sweep",
    recipe={
        "methods": ["soft", "reinforce"],
        "lrs": [0.1],
        "seeds": [0],
        "level": 0.8,
        "train": {"steps": 2, "batch_size": 2, "n_items": 5, "dim": 4},
    },
)
fn(
    "experiments.scale_training.noisy_copy_task",
    n_sets=2,
    n_queries=3,
    n_keys=4,
    dim=5,
    generator=lambda: G(),
)
fn("experiments.scale_training.ProjectedDotScore", dim=4, scaled=True)
method(
    "experiments.scale_training.ProjectedDotScore.forward",
    lambda: resolve("attnbook.experiments.scale_training.ProjectedDotScore")(
        4, True
    ),
    queries=lambda: R(2, 3, 4, dtype=torch.float64),
    keys=lambda: R(2, 5, 4, dtype=torch.float64),
)
fn(
    "experiments.scale_training.evaluate",
    model=lambda: resolve(
        "attnbook.experiments.scale_training.ProjectedDotScore"
    )(5, True),
    data=lambda: resolve(
        "attnbook.experiments.scale_training.noisy_copy_task"
    )(n_sets=2, n_queries=3, n_keys=4, dim=5, generator=G()),
)
fn(
    "experiments.scale_training.best_rows",
    sweep=lambda: resolve(
        "attnbook.experiments.scale_training.shipped_scale_sweep"
    )(),
    by="area",
)
fn(
    "experiments.scale_training.train_retriever",
    scaled=False,
    dim=4,
    n_keys=5,
    lr=0.01,
    seed=0,
    steps=2,
    batch_size=2,
    eval_every=1,
    n_eval_sets=1,
)
fn(
    "experiments.scale_training.run_sweep",
    recipe={
        "dims": [4],
        "n_keys": [5],
        "lrs": [0.01],
        "seeds": [0],
        "train": {
            "steps": 2,
            "batch_size": 2,
            "noise": 1.0,
            "eval_every": 1,
            "n_eval_sets": 1,
        },
    },
)
fn(
    "tasks.card_lookup.without_heads",
    model=_cls("tasks.card_lookup.CardLookup", 2, 8),
    heads=[0],
)
fn(
    "tasks.convex_hull.hull_order",
    points=[(0.0, 0.0), (1.0, 0.0), (0.2, 0.3), (0.0, 1.0), (1.0, 1.0)],
)
fn("tasks.convex_hull.hull_batch", batch_size=2, n=6, generator=lambda: G())
fn("tasks.convex_hull.hull_accuracy", model=HULL, n=5, num_sets=4)
fn("tasks.convex_hull.save_hull_pointer", model=HULL, path="hull.pt")
fn("tasks.convex_hull.hull_errors", model=HULL, n=5, num_sets=4)
fn("tasks.convex_hull.polygon_area", corners=lambda: R(4, 2))
fn("tasks.convex_hull.is_simple_polygon", corners=lambda: R(4, 2))


@lazy
def _saved_hull():
    from attnbook.tasks.convex_hull import save_hull_pointer

    save_hull_pointer(HULL(), "saved_hull.pt", {"note": "probe"})
    return "saved_hull.pt"


fn("tasks.convex_hull.load_hull_pointer", path=_saved_hull)
fn(
    "tasks.convex_hull.train_hull_pointer",
    hidden_dim=8,
    steps=1,
    batch_size=2,
    min_len=4,
    max_len=5,
)
method(
    "tasks.date_transformer.DateTransformer.translate_beam",
    lambda: shipped("date_transformer"),
    strings=["3 May 1999", "1999-5-3"],
    beam_width=2,
    alpha=0.6,
)


def _repeated():
    from attnbook.tasks.induction import repeated_batch

    return repeated_batch(2, 3, 8, 10, G())


fn(
    "tasks.induction.repeated_batch",
    batch_size=2,
    period=3,
    seq_len=8,
    vocab_size=10,
    generator=lambda: G(),
)
fn(
    "tasks.induction.predictable_loss",
    logits=lambda: R(2, 8, 10),
    tokens=lambda: _repeated()[0],
    predictable=lambda: _repeated()[1],
)
SMALL_AOT = {"embed_dim": 8, "num_heads": 2}
fn(
    "tasks.induction.build_model",
    num_layers=1,
    task=lambda: dict(resolve("attnbook.tasks.induction.TASK")),
    config=SMALL_AOT,
)
INDUCTION_AOT = lambda: resolve("attnbook.tasks.induction.build_model")(  # noqa: E731
    2, resolve("attnbook.tasks.induction.TASK"), SMALL_AOT
).eval()
fn("tasks.induction.evaluate", model=INDUCTION_AOT, batches=1, batch_size=2)
fn("tasks.induction.models_from", saved=lambda: shipped("induction_saved"))
fn(
    "tasks.induction.train_induction",
    num_layers=1,
    steps=1,
    batch_size=2,
    config=SMALL_AOT,
)
SMALL_PST = {"embed_dim": 8, "num_heads": 2, "num_layers": 1}
fn("tasks.long_context.build_model", scheme="alibi", config=SMALL_PST)


def _lab():
    from attnbook.tasks.long_context import lab_batch

    return lab_batch(2, 48, G())


fn(
    "tasks.long_context.lab_batch",
    batch_size=2,
    length=48,
    generator=lambda: G(),
)
fn(
    "tasks.long_context.lookup_loss",
    logits=lambda: R(2, 48, 64),
    tokens=lambda: _lab()[0],
    predictable=lambda: _lab()[1],
)
fn(
    "tasks.long_context.train_scheme",
    scheme="alibi",
    steps=1,
    batch_size=2,
    config=SMALL_PST,
)
SMALL_ROPE = _cls("tasks.long_context.build_model", "rope", SMALL_PST)
fn(
    "tasks.long_context.finetune_rope",  # the lab's size: it copies into one
    model=_ROPE_LAB,
    scaling="ntk",
    steps=1,
    batch_size=2,
    length=128,
)
fn(
    "tasks.long_context.scale",
    model=SMALL_ROPE,
    scaling="yarn",
    length=128,
)
fn("tasks.long_context.eval_generator", length=64)
fn(
    "tasks.long_context.accuracy",
    model=SMALL_ROPE,
    length=64,
    batches=1,
    batch_size=2,
)
fn(
    "tasks.long_context.accuracy_by_length",
    model=SMALL_ROPE,
    lengths=(64, 96),
)
fn(
    "tasks.order_classifier.training_sequences",
    steps=2,
    batch_size=2,
    seed=0,
    max_len=6,
)
fn(
    "tasks.order_classifier.held_out_batch",
    batch_size=2,
    exclude=lambda: {(1, 2, 3)},
    max_len=6,
    generator=lambda: G(),
)
fn("tasks.order_classifier.without_heads", model=CLS, heads=[(0, 1)])
IT = "the trophy did not fit in the suitcase because it was too big"
fn(
    "tasks.referent.sentence",
    thing="trophy",
    container="suitcase",
    adjective="big",
    colours=("red", None),
)
fn("tasks.referent.referent", sentence_text=IT)
fn("tasks.referent.sentences_of", pairs=[("trophy", "suitcase")])
IT_SENTENCES = [
    IT,
    "the red box did not fit in the tin because it was too small",
]
fn("tasks.referent.encode", sentences=IT_SENTENCES)
REFERENT = _cls("tasks.referent.ReferentModel", 8)
method(
    "tasks.referent.ReferentModel.forward",
    REFERENT,
    ids=lambda: resolve("attnbook.tasks.referent.encode")(IT_SENTENCES)[0],
    it_index=lambda: resolve("attnbook.tasks.referent.encode")(IT_SENTENCES)[
        1
    ],
)
fn("tasks.referent.accuracy", model=REFERENT, sentences=IT_SENTENCES)
fn("tasks.referent.it_rows", model=REFERENT, sentence_text=IT)


def _sorting_batches(batch_size, n, generator):
    from attnbook.tasks.sorting import sorting_batch

    return sorting_batch(batch_size, n, generator)


fn(
    "tasks.sorting.teacher_forced_training",
    _mutable=("model",),
    model=_cls("nn.pointer.PointerNetwork", 8),
    draw_batch=_sorting_batches,
    generator=lambda: G(),
    steps=1,
    batch_size=2,
    lengths=(3, 4),
    lr=1e-3,
    final_lr=1e-4,
)
fn(
    "train.date_transformer.held_out_accuracy",
    translator=lambda: shipped("date_transformer"),
    pairs=LB_PAIRS,
)
fn("train.date_transformer.held_out_date_pairs", size=4)
fn(
    "train.date_transformer.translations",
    translator=lambda: shipped("date_transformer"),
    sources=["3/5/1999", "May 3, 1999"],
)
fn("train.hull_pointer.evaluate", model=HULL)
fn("train.induction.report", two_layer=INDUCTION_AOT, one_layer=INDUCTION_AOT)
# seed 0: the shipped model (any other seed trains one for minutes)
fn("train.rope_scaling_curve.rope_model", seed=0)
fn(
    "train.baseline_seeds.lists_sorted",
    model=lambda: shipped("sorter"),
    lengths=(2,),
)
fn(
    "train.baseline_seeds.train_indexed",
    recipe=dict(
        hidden_dim=8, steps=1, batch_size=2, min_len=3, max_len=4, lr=0.01,
        final_lr=1e-5, seed=0, max_positions=4,
    ),
)  # fmt: skip
fn(
    "train.baseline_seeds.IndexedPositionClassifier",
    hidden_dim=8,
    max_positions=5,
)
method(
    "train.baseline_seeds.IndexedPositionClassifier.encode",
    _cls("train.baseline_seeds.IndexedPositionClassifier", 8, 5),
    x=lambda: torch.rand(2, 5),
)


def valid_call(target: str):
    """(callable, kwargs) of the valid call: the spec's arguments, then the
    signature's defaults for every other named parameter."""
    entry = SPECS.get(target)
    if entry is None:
        fn_, kwargs = resolve(target), {}
    else:
        fn_, kwargs = entry.make()
    try:
        signature = inspect.signature(fn_)
    except (TypeError, ValueError):
        return fn_, kwargs
    for name, parameter in signature.parameters.items():
        if name in kwargs or name in ("self", "cls"):
            continue
        if parameter.kind in (
            parameter.VAR_POSITIONAL,
            parameter.VAR_KEYWORD,
        ):
            continue
        if parameter.default is not parameter.empty:
            kwargs[name] = parameter.default
    return fn_, kwargs


# ---------------------------------------------------------------------------
# The catalogue of hostile values
# ---------------------------------------------------------------------------


def kind_of(value) -> str:
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool:
            return "bool_tensor"
        if value.is_floating_point() or value.is_complex():
            return "float_tensor"
        return "int_tensor"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, torch.Generator):
        return "generator"
    if isinstance(value, torch.dtype):
        return "dtype"
    if isinstance(value, pathlib.Path):
        return "path"
    if isinstance(value, (list, tuple)):
        return "sequence"
    if isinstance(value, dict):
        return "dict"
    if value is None:
        return "none"
    if inspect.isclass(value):
        return "class"
    if callable(value) and not isinstance(value, torch.nn.Module):
        return "callable"
    return "object"


def _wide(t: torch.Tensor, rows: int) -> torch.Tensor:
    """A stride-0 view with ``rows`` along the sequence dimension."""
    dim = t.dim() - 2 if t.dim() >= 2 else 0
    shape = list(t.shape)
    shape[dim] = rows
    return t.narrow(dim, 0, 1).expand(*shape)


def _poke(t: torch.Tensor, value) -> torch.Tensor:
    t = t.clone()
    t.view(-1)[0] = value
    return t


def _noncontig(t: torch.Tensor) -> torch.Tensor:
    out = torch.empty(*t.shape, 2, dtype=t.dtype).select(-1, 0)
    return out.copy_(t)


TENSOR_COMMON = {
    "None": lambda t: None,
    "list": lambda t: t.tolist(),
    "str": lambda t: "abc",
    "0-d": lambda t: t.flatten()[0].clone(),
    "flattened_1d": lambda t: t.flatten().clone(),
    "extra_dim": lambda t: t[None].clone(),
    "empty_dim0": lambda t: t.narrow(0, 0, 0).clone(),
    "empty_last": lambda t: t.narrow(-1, 0, 0).clone(),
    "meta": lambda t: t.to("meta"),
    "noncontiguous": _noncontig,
    "stride0_1e6": lambda t: _wide(t, 10**6),
    "stride0_1e9": lambda t: _wide(t, 10**9),
}
FLOAT_TENSOR = {
    **TENSOR_COMMON,
    "int64": lambda t: t.round().long(),
    "bool": lambda t: t > 0,
    "float16": lambda t: t.half(),
    "float64": lambda t: t.double(),
    "complex64": lambda t: t.to(torch.complex64),
    "nan": lambda t: _poke(t, float("nan")),
    "inf": lambda t: _poke(t, float("inf")),
    "-inf": lambda t: _poke(t, -float("inf")),
    "requires_grad": lambda t: t.detach().clone().requires_grad_(),
}
INT_TENSOR = {
    **TENSOR_COMMON,
    "float32": lambda t: t.float(),
    "bool": lambda t: t > 0,
    "uint8": lambda t: t.to(torch.uint8),
    "int16": lambda t: t.to(torch.int16),
    "int32": lambda t: t.to(torch.int32),
    "negative": lambda t: _poke(t, -1),
    "huge_value": lambda t: _poke(t, 10**9),
}
BOOL_TENSOR = {
    **{k: TENSOR_COMMON[k] for k in TENSOR_COMMON if k not in ("str", "list")},
    "float32": lambda t: t.float(),
    "int64": lambda t: t.long(),
    "uint8": lambda t: t.to(torch.uint8),
    "all_false": lambda t: torch.zeros_like(t),
}
INTS = {
    "0": 0,
    "-1": -1,
    "2.5": 2.5,
    "True": True,
    "None": None,
    "'3'": "3",
    "10**12": 10**12,
    "10**400": 10**400,
}
FLOATS = {
    "nan": float("nan"),
    "inf": float("inf"),
    "-inf": -float("inf"),
    "0.0": 0.0,
    "-1.0": -1.0,
    "1e-320": 1e-320,
    "1e300": 1e300,
    "10**400": 10**400,
    "None": None,
    "'1'": "1",
}
CATALOGUE = {
    "float_tensor": FLOAT_TENSOR,
    "int_tensor": INT_TENSOR,
    "bool_tensor": BOOL_TENSOR,
    "int": {k: (lambda v=v: v) for k, v in INTS.items()},
    "float": {k: (lambda v=v: v) for k, v in FLOATS.items()},
    "bool": {
        "None": lambda: None,
        "'yes'": lambda: "yes",
        "2": lambda: 2,
    },
    "str": {
        "''": lambda: "",
        "long_1e6": lambda: "a" * 10**6,
        "non_ascii": lambda: "ünïcødé ✓ 日本",
        "None": lambda: None,
        "3": lambda: 3,
    },
    "generator": {
        "None": lambda: None,
        "'g'": lambda: "g",
        "seeded_generator": lambda: G(1),
    },
    "object": {
        "None": lambda: None,
        "3": lambda: 3,
        "nn.Linear(2, 2)": lambda: torch.nn.Linear(2, 2),
    },
    "class": {"None": lambda: None, "int": lambda: int},
    "sequence": {
        "None": lambda: None,
        "[]": lambda: [],
        "'abc'": lambda: "abc",
        "[None]": lambda: [None],
    },
    "dict": {"None": lambda: None, "{}": lambda: {}, "'x'": lambda: "x"},
    "callable": {"None": lambda: None, "'dot'": lambda: "dot", "3": lambda: 3},
    "dtype": {
        "None": lambda: None,
        "'float32'": lambda: "float32",
        "torch.int64": lambda: torch.int64,
    },
    "path": {
        "None": lambda: None,
        "''": lambda: "",
        "missing": lambda: "/nonexistent/probe/file",
        "directory": lambda: ".",
    },
    "none": {"'x'": lambda: "x", "-1": lambda: -1, "2.5": lambda: 2.5},
}
NONFINITE_VARIANTS = {"nan", "inf", "-inf"}


def hostile_values(kind: str) -> list[str]:
    return list(CATALOGUE.get(kind, {}))


def make_hostile(valid, kind: str, variant: str):
    make = CATALOGUE[kind][variant]
    return make(valid) if kind.endswith("_tensor") else make()


# ---------------------------------------------------------------------------
# One call, in the worker
# ---------------------------------------------------------------------------


def _tensors_in(value, prefix: str, depth: int = 0):
    """(label, tensor) for every tensor in an argument: itself, list, tuple
    and dict items, a module's parameters and buffers, an object's module
    attributes."""
    if depth > 3:
        return
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, torch.nn.Module):
        for name, tensor in value.state_dict(keep_vars=True).items():
            yield f"{prefix}.{name}", tensor
    elif isinstance(value, dict):
        for key, item in list(value.items())[:50]:
            yield from _tensors_in(item, f"{prefix}[{key!r}]", depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value[:50]):
            yield from _tensors_in(item, f"{prefix}[{i}]", depth + 1)
    elif hasattr(value, "__dict__") and not inspect.isclass(value):
        for key, item in list(vars(value).items())[:20]:
            if isinstance(item, (torch.nn.Module, torch.Tensor)):
                yield from _tensors_in(item, f"{prefix}.{key}", depth + 1)


def _fingerprint(tensor: torch.Tensor):
    if tensor.device.type == "meta" or tensor.is_sparse:
        return None
    storage = tensor.untyped_storage()
    raw = torch.empty(0, dtype=torch.uint8).set_(storage.clone())
    return (
        raw,
        tuple(tensor.shape),
        tuple(tensor.stride()),
        tensor.storage_offset(),
    )


def snapshot(kwargs: dict) -> dict:
    shot = {}
    for name, value in kwargs.items():
        entries = {}
        for label, tensor in _tensors_in(value, name):
            try:
                entries[label] = (tensor, _fingerprint(tensor))
            except Exception:  # an odd tensor subclass: not compared
                pass
        shot[name] = (
            value,
            entries,
            len(value) if isinstance(value, dict) else None,
        )
    return shot


def changed(shot: dict, kwargs: dict) -> list[str]:
    out = []
    for name, (value, entries, length) in shot.items():
        if isinstance(value, dict) and len(value) != length:
            out.append(name)
            continue
        for label, (tensor, before) in entries.items():
            if before is None:
                continue
            after = _fingerprint(tensor)
            if after[1:] != before[1:] or not torch.equal(after[0], before[0]):
                out.append(label)
                break
    return out


def rng_state():
    return (
        torch.get_rng_state(),
        random.getstate(),
        np.random.get_state()[1].copy(),
    )


def rng_equal(a, b) -> bool:
    return (
        torch.equal(a[0], b[0]) and a[1] == b[1] and np.array_equal(a[2], b[2])
    )


def nonfinite(value, depth: int = 0) -> tuple[bool, bool]:
    """(has NaN, has inf) anywhere in a returned value."""
    nan = inf = False
    if depth > 4:
        return nan, inf
    if isinstance(value, torch.Tensor):
        if value.device.type == "meta" or not (
            value.is_floating_point() or value.is_complex()
        ):
            return nan, inf
        value = value.detach()
        if value.numel() > 10**8:
            return nan, inf
        return bool(value.isnan().any()), bool(value.isinf().any())
    if isinstance(value, float):
        return math.isnan(value), math.isinf(value)
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return bool(np.isnan(value).any()), bool(np.isinf(value).any())
    items = ()
    if isinstance(value, dict):
        items = list(value.values())[:200]
    elif isinstance(value, (list, tuple)):
        items = list(value)[:200]
    for item in items:
        a, b = nonfinite(item, depth + 1)
        nan, inf = nan or a, inf or b
    return nan, inf


ALLOC_WORDS = (
    "can't allocate memory",
    "cannot allocate memory",
    "defaultcpuallocator",
    "out of memory",
    "bad_alloc",
    "not enough memory",
)


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def describe(value) -> str:
    if isinstance(value, torch.Tensor):
        kind = "randn" if value.is_floating_point() else "tensor"
        parts = [str(size) for size in value.shape]
        if value.dtype != torch.float32:
            parts.append(f"dtype={value.dtype}")
        if value.device.type != "cpu":
            parts.append(f"device={value.device.type!r}")
        notes = []
        if value.dim() and 0 in value.stride() and value.numel() > 1:
            notes.append("stride-0 view")
        elif not value.is_contiguous():
            notes.append("non-contiguous")
        if value.requires_grad:
            notes.append("requires_grad")
        note = f" [{', '.join(notes)}]" if notes else ""
        return f"{kind}({', '.join(parts)}){note}"
    if isinstance(value, str) and len(value) > 40:
        return f"'{value[:5]}'*{len(value)}"
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value > 10**15
    ):
        return f"10**{len(str(value)) - 1}"
    if isinstance(value, torch.nn.Module):
        return f"<{type(value).__name__}>"
    if isinstance(value, (list, tuple)) and len(value) > 6:
        return f"<{type(value).__name__} of {len(value)}>"
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(
                f"{k!r}: {describe(v)}" for k, v in list(value.items())[:6]
            )
            + "}"
        )
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        return value.__name__
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def run_call(task: dict) -> dict:
    """Build the valid call, make one argument hostile, call, classify."""
    target, arg, variant = task["target"], task["arg"], task["variant"]
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    result = {"target": target, "arg": arg, "variant": variant}
    try:
        call, kwargs = valid_call(target)
        if arg is not None:
            kind = kind_of(kwargs[arg])
            result["kind"] = kind
            kwargs[arg] = make_hostile(kwargs[arg], kind, variant)
    except Exception as error:
        result.update(outcome="probe_error", exc_type=type(error).__name__)
        result["message"] = str(error).split("\n")[0][:300]
        return result
    if arg is None:
        result["kinds"] = {k: kind_of(v) for k, v in kwargs.items()}
    result["call"] = (
        f"{target.removeprefix('attnbook.')}("
        + ", ".join(
            f"{k}=<{variant}: {describe(v)}>"
            if k == arg
            else f"{k}={describe(v)}"
            for k, v in kwargs.items()
        )
        + ")"
    )
    is_class = inspect.isclass(call) and not isinstance(call, torch.nn.Module)
    entry = SPECS.get(target)
    mutable = entry.mutable if entry else ()
    shot = snapshot(kwargs)
    rng_before = rng_state()
    from attnbook import _memory

    limit = _memory.matrix_memory_limit()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(task["timeout"])
    start = time.perf_counter()
    error = tb = output = None
    try:
        output = call(**kwargs)
    except _Timeout:
        error = "timeout"
    except BaseException as caught:  # noqa: BLE001 - we classify everything
        error, tb = caught, caught.__traceback__
    finally:
        signal.alarm(0)
    result["seconds"] = round(time.perf_counter() - start, 4)
    _memory._MATRIX_LIMIT["bytes"] = limit
    try:
        import matplotlib.pyplot as plt

        plt.close("all")
    except Exception:
        pass
    mutated = changed(shot, kwargs)
    if error is None:
        mutated = [
            m for m in mutated if m.split(".")[0].split("[")[0] not in mutable
        ]
    result["mutated"] = mutated
    moved = not rng_equal(rng_before, rng_state())
    result["rng_moved"] = moved and not (is_class and error is None)
    if error == "timeout":
        result["outcome"] = "hang"
        return result
    if error is not None:
        message = str(error).split("\n")[0][:300]
        frames = traceback.extract_tb(tb)
        last = frames[-1] if frames else None
        where = f"{last.filename}:{last.lineno}" if last else "?"
        # attnbook's own refusal: a ``raise`` line in code/attnbook (a
        # TypeError from ``x % "3"`` on an attnbook line is Python's, deep)
        ours = (
            bool(last)
            and last.filename.startswith(PACKAGE_DIR)
            and (last.line or "").lstrip().startswith("raise")
        )
        result.update(
            exc_type=type(error).__name__,
            message=message,
            where=where.replace(PACKAGE_DIR, "attnbook"),
        )
        lowered = message.lower()
        if isinstance(error, MemoryError) or (
            isinstance(error, RuntimeError)
            and any(w in lowered for w in ALLOC_WORDS)
        ):
            result["outcome"] = "absurd_alloc"
        elif isinstance(error, (ValueError, TypeError)) and ours:
            named = arg is None or arg.lower() in str(error).lower()
            result["outcome"] = "clear_error" if named else "vague_error"
        else:
            result["outcome"] = "deep_error"
        return result
    nan, inf = nonfinite(output)
    result["out_nan"], result["out_inf"] = nan, inf
    inputs_finite = not (variant in NONFINITE_VARIANTS or variant == "10**400")
    new_nan = nan and not task.get("valid_nan")
    new_inf = inf and not task.get("valid_inf")
    new_inf = new_inf and task["target"] not in INF_IS_AN_ANSWER
    if arg is not None and inputs_finite and (new_nan or new_inf):
        result["outcome"] = "silent_nan"
    else:
        result["outcome"] = "ok"
    del output
    return result


def worker_main(conn, memory_gb: float, workdir: str) -> None:
    """A worker: a cap on its address space, one thread, its own working
    directory; answers tasks until told to stop."""
    limit = int(memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    torch.set_num_threads(1)
    os.chdir(workdir)
    sys.stdout = open(os.devnull, "w")
    sys.stderr = open(os.devnull, "w")
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            result = run_call(task)
        except BaseException as error:  # noqa: BLE001
            result = {
                "target": task["target"],
                "arg": task["arg"],
                "variant": task["variant"],
                "outcome": "probe_error",
                "exc_type": type(error).__name__,
                "message": str(error).split("\n")[0][:300],
            }
        try:
            conn.send(result)
        except Exception as error:  # an unpicklable field
            conn.send(
                {
                    **{
                        k: v
                        for k, v in result.items()
                        if k in ("target", "arg", "variant")
                    },
                    "outcome": "probe_error",
                    "message": f"result not sendable: {error}",
                }
            )


# ---------------------------------------------------------------------------
# The pool, in the parent
# ---------------------------------------------------------------------------


class Pool:
    """``jobs`` forked workers; a worker that dies or overruns its task's
    timeout is killed and replaced; each is recycled after ``max_tasks``."""

    def __init__(self, jobs, memory_gb, timeout, max_tasks, workdir):
        self.context = multiprocessing.get_context("fork")
        self.jobs, self.memory_gb = jobs, memory_gb
        self.timeout, self.max_tasks, self.workdir = (
            timeout,
            max_tasks,
            workdir,
        )
        self.workers = [self._spawn() for _ in range(jobs)]

    def _spawn(self):
        parent, child = self.context.Pipe()
        process = self.context.Process(
            target=worker_main,
            args=(child, self.memory_gb, self.workdir),
            daemon=True,
        )
        process.start()
        child.close()
        return {"process": process, "conn": parent, "task": None, "done": 0}

    def _retire(self, worker, kill: bool):
        if kill:
            worker["process"].kill()
        else:
            try:
                worker["conn"].send(None)
            except Exception:
                worker["process"].kill()
        worker["process"].join(5)
        if worker["process"].is_alive():
            worker["process"].kill()
            worker["process"].join()
        worker["conn"].close()

    def run(self, tasks, on_result):
        pending = collections.deque(tasks)
        while pending or any(w["task"] for w in self.workers):
            for i, worker in enumerate(self.workers):
                if worker["task"] is None and pending:
                    task = pending.popleft()
                    task["timeout"] = int(self.timeout)
                    worker["task"], worker["start"] = task, time.monotonic()
                    worker["conn"].send(task)
            busy = [w for w in self.workers if w["task"]]
            ready = multiprocessing.connection.wait(
                [w["conn"] for w in busy]
                + [w["process"].sentinel for w in busy],
                timeout=0.5,
            )
            now = time.monotonic()
            for i, worker in enumerate(self.workers):
                task = worker["task"]
                if task is None:
                    continue
                result = None
                if worker["conn"] in ready:
                    try:
                        result = worker["conn"].recv()
                    except (EOFError, OSError):
                        result = None
                if result is not None:
                    worker["task"] = None
                    worker["done"] += 1
                    on_result(result)
                    if worker["done"] >= self.max_tasks:
                        self._retire(worker, kill=False)
                        self.workers[i] = self._spawn()
                    continue
                dead = not worker["process"].is_alive()
                late = now - worker["start"] > self.timeout + 5
                if dead or late:
                    code = worker["process"].exitcode
                    self._retire(worker, kill=True)
                    self.workers[i] = self._spawn()
                    on_result(
                        {
                            "target": task["target"],
                            "arg": task["arg"],
                            "variant": task["variant"],
                            "kind": task.get("kind"),
                            "outcome": "hang"
                            if late and not dead
                            else "crash",
                            "exc_type": None if late else f"exit {code}",
                            "message": "killed after the timeout"
                            if late and not dead
                            else f"worker died (exit code {code})",
                        }
                    )

    def close(self):
        for worker in self.workers:
            self._retire(worker, kill=False)


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------

CLASSES = (
    "ok",
    "clear_error",
    "vague_error",
    "deep_error",
    "absurd_alloc",
    "silent_nan",
    "hang",
    "crash",
    "probe_error",
)


def summarize(
    results: list[dict], core: set[str], findings: list[dict]
) -> str:
    lines = []
    hostile = [r for r in results if r["arg"] is not None]
    for r in hostile:
        r["group"] = group_of(r["target"], core)
    targets = {r["target"] for r in results}
    by_group = collections.Counter(r["group"] for r in hostile)
    lines.append(
        f"{len(targets)} targets, {len(results) - len(hostile)} valid calls "
        f"({len(findings)} fail), {len(hostile)} hostile calls "
        f"(core API {by_group['core']}, helpers {by_group['helpers']})"
    )
    lines.append("")
    lines.append(f"{'class':<16}{'core API':>10}{'helpers':>10}{'total':>10}")
    counts = collections.Counter((r["outcome"], r["group"]) for r in hostile)
    for name in CLASSES:
        c, h = counts[(name, "core")], counts[(name, "helpers")]
        lines.append(f"{name:<16}{c:>10}{h:>10}{c + h:>10}")
    for flag in ("rng_moved", "mutated"):
        c = sum(1 for r in hostile if r.get(flag) and r["group"] == "core")
        h = sum(1 for r in hostile if r.get(flag) and r["group"] == "helpers")
        lines.append(f"{'+ ' + flag:<16}{c:>10}{h:>10}{c + h:>10}")
    lines.append("")
    lines.append("(rng_moved and mutated are flags on top of the class.)")
    if findings:
        lines.append("")
        lines.append(f"valid call fails ({len(findings)}):")
        for r in findings:
            lines.append(
                f"  {r['target']}: {r.get('outcome')} {r.get('exc_type')}: "
                f"{r.get('message', '')[:120]}"
            )
            if r.get("call"):
                lines.append(f"      {r['call']}")

    def groups(title, selected, key):
        if not selected:
            return
        grouped = collections.defaultdict(list)
        for r in selected:
            grouped[key(r)].append(r)
        lines.append("")
        lines.append(
            f"{title}: {len(selected)} calls in {len(grouped)} groups"
        )
        for k, rows in sorted(
            grouped.items(), key=lambda kv: (-len(kv[1]), kv[0])
        ):
            args = sorted({f"{r['arg']}={r['variant']}" for r in rows})
            shown = ", ".join(args[:6]) + (", ..." if len(args) > 6 else "")
            lines.append(f"  {len(rows):>4}  {' | '.join(str(p) for p in k)}")
            lines.append(f"        {shown}")
            if rows[0].get("call"):
                lines.append(f"        e.g. {rows[0]['call'][:300]}")

    def error_key(r):
        # numbers (sizes, ids, addresses) vary within one cause
        message = re.sub(r"\d+", "N", r.get("message") or "")[:60]
        return (
            r["target"].removeprefix("attnbook."),
            r.get("exc_type"),
            message,
        )

    for outcome in (
        "deep_error",
        "absurd_alloc",
        "hang",
        "crash",
        "silent_nan",
        "vague_error",
        "probe_error",
    ):
        selected = [r for r in hostile if r["outcome"] == outcome]
        key = (
            error_key
            if outcome != "silent_nan"
            else (lambda r: (r["target"].removeprefix("attnbook."), r["arg"]))
        )
        groups(outcome, selected, key)
    groups(
        "rng_moved",
        [r for r in hostile if r.get("rng_moved")],
        lambda r: (r["target"].removeprefix("attnbook."), r["outcome"]),
    )
    groups(
        "mutated",
        [r for r in hostile if r.get("mutated")],
        lambda r: (
            r["target"].removeprefix("attnbook."),
            r["arg"],
            ",".join(r["mutated"]),
        ),
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "-k", action="append", default=[], help="only targets containing this"
    )
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--memory-gb", type=float, default=6.0)
    parser.add_argument("--max-tasks", type=int, default=200)
    parser.add_argument("--out", type=pathlib.Path, default=OUT_DIR)
    parser.add_argument("--list", action="store_true", help="list the targets")
    parser.add_argument(
        "--valid-only", action="store_true", help="only the valid calls"
    )
    args = parser.parse_args(argv)

    for info in pkgutil.walk_packages(attnbook.__path__, "attnbook."):
        importlib.import_module(info.name)  # warm the forked workers
    import matplotlib.pyplot  # noqa: F401

    targets = discover_targets()
    if args.k:
        targets = [t for t in targets if any(k in t for k in args.k)]
    if args.list:
        core = core_names()
        for target in targets:
            print(f"{group_of(target, core):8} {target}")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="attnbook-probe-") as workdir:
        pool = Pool(
            args.jobs, args.memory_gb, args.timeout, args.max_tasks, workdir
        )
        try:
            valid: dict[str, dict] = {}
            pool.run(
                [
                    {"target": t, "arg": None, "variant": "valid"}
                    for t in targets
                ],
                lambda r: valid.__setitem__(r["target"], r),
            )
            findings = [
                r for r in valid.values() if r["outcome"] not in ("ok",)
            ]
            results.extend(valid.values())
            tasks = []
            for target in targets:
                first = valid[target]
                if first["outcome"] != "ok":
                    continue
                for arg, kind in first.get("kinds", {}).items():
                    for variant in hostile_values(kind):
                        tasks.append(
                            {
                                "target": target,
                                "arg": arg,
                                "kind": kind,
                                "variant": variant,
                                "valid_nan": first.get("out_nan"),
                                "valid_inf": first.get("out_inf"),
                            }
                        )
            if args.valid_only:
                tasks = []
            total = len(tasks)
            done = [0]

            def collect(result):
                results.append(result)
                done[0] += 1
                if done[0] % 500 == 0:
                    elapsed = time.monotonic() - started
                    print(
                        f"  {done[0]}/{total} calls, {elapsed:.0f} s",
                        file=sys.stderr,
                    )

            print(
                f"{len(targets)} targets, {len(findings)} valid calls fail; "
                f"{total} hostile calls",
                file=sys.stderr,
            )
            pool.run(tasks, collect)
        finally:
            pool.close()
    for r in results:
        r.setdefault("kind", None)
        r["group"] = group_of(r["target"], core_names())
    with open(args.out / "calls.jsonl", "w") as out:
        for r in results:
            row = {
                k: r.get(k)
                for k in (
                    "target",
                    "group",
                    "arg",
                    "kind",
                    "variant",
                    "outcome",
                    "exc_type",
                    "message",
                    "where",
                    "mutated",
                    "rng_moved",
                    "seconds",
                    "call",
                )
            }
            out.write(json.dumps(row) + "\n")
    text = summarize(results, core_names(), findings)
    text += f"\n\nwall time {time.monotonic() - started:.0f} s\n"
    (args.out / "summary.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
