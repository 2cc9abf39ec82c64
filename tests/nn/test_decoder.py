"""attnbook.nn.decoder: causal mask, decoder block and stack against PyTorch, teacher forcing,
the key-value cache, greedy generation, and the trained date Transformer."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import attnbook
from attnbook import KVCache, causal_mask
from attnbook.core.attention import attention
from attnbook.core.masking import masked_softmax
from attnbook.nn import decoder
from attnbook.nn.decoder import (
    EncoderDecoderTransformer,
    TransformerDecoder,
    TransformerDecoderBlock,
)


def torch_layer(embed_dim=16, num_heads=4, ffn=32, seed=0):
    torch.manual_seed(seed)
    return nn.TransformerDecoderLayer(
        embed_dim,
        num_heads,
        ffn,
        dropout=0.0,
        activation="relu",
        batch_first=True,
        norm_first=False,
    ).eval()


def batch(
    seed=1, B=3, n=5, n_src=7, E=16, lengths=(7, 4, 2), dtype=torch.float32
):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, n, E, generator=g, dtype=dtype)
    memory = torch.randn(B, n_src, E, generator=g, dtype=dtype)
    keep = (
        torch.arange(n_src) < torch.tensor(lengths)[:, None]
    )  # (B, n_src), True = a real source token
    return x, memory, keep


def test_causal_mask_keeps_the_past_and_the_present():
    mask = causal_mask(4)
    assert mask.dtype == torch.bool and mask.shape == (4, 4)
    for i in range(4):
        for j in range(4):
            assert mask[i, j].item() == (j <= i)
    assert causal_mask(0).shape == (0, 0)
    with pytest.raises(ValueError):
        causal_mask(-1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_block_equals_torch_decoder_layer_with_causal_and_padding_masks(seed):
    layer = torch_layer(seed=seed)
    block = TransformerDecoderBlock(16, 4, 32).load_torch_weights(layer).eval()
    x, memory, keep = batch(seed + 10)
    ours = block(
        x, memory, self_mask=causal_mask(5), memory_mask=keep[:, None, None, :]
    )
    theirs = layer(
        x, memory, tgt_mask=~causal_mask(5), memory_key_padding_mask=~keep
    )  # torch: True = blocked
    assert (ours - theirs).abs().max().item() < 1e-5
    # without masks too
    assert torch.allclose(block(x, memory), layer(x, memory), atol=1e-5)


def test_block_gradients_equal_torch():
    layer = torch_layer(seed=3).double()
    block = (
        TransformerDecoderBlock(16, 4, 32)
        .double()
        .load_torch_weights(layer)
        .eval()
    )
    x, memory, keep = batch(4, dtype=torch.float64)
    upstream = torch.randn(
        3,
        5,
        16,
        generator=torch.Generator().manual_seed(5),
        dtype=torch.float64,
    )
    grads = []
    for module, call in (
        (
            block,
            lambda a, m: block(a, m, causal_mask(5), keep[:, None, None, :]),
        ),
        (
            layer,
            lambda a, m: layer(
                a, m, tgt_mask=~causal_mask(5), memory_key_padding_mask=~keep
            ),
        ),
    ):
        a, m = x.clone().requires_grad_(), memory.clone().requires_grad_()
        out = call(a, m)
        params = [
            module.norm1.weight,
            module.linear1.weight
            if module is layer
            else module.ffn.linear1.weight,
            module.self_attn.in_proj_weight,
            module.multihead_attn.in_proj_weight
            if module is layer
            else module.cross_attn.in_proj_weight,
        ]
        grads.append(
            torch.autograd.grad((out * upstream).sum(), [a, m, *params])
        )
    for ours, theirs in zip(*grads):
        assert torch.allclose(ours, theirs, atol=1e-10)


def test_padded_memory_positions_have_no_influence():
    block = (
        TransformerDecoderBlock(16, 4, 32)
        .load_torch_weights(torch_layer(seed=6))
        .eval()
    )
    x, memory, keep = batch(7)
    changed = memory.clone()
    changed[~keep] = 1e3  # garbage in the padding
    mask = keep[:, None, None, :]
    assert torch.allclose(
        block(x, memory, causal_mask(5), mask),
        block(x, changed, causal_mask(5), mask),
        atol=1e-6,
    )


def test_causal_mask_makes_each_position_blind_to_the_future():
    block = (
        TransformerDecoderBlock(16, 4, 32)
        .load_torch_weights(torch_layer(seed=8))
        .eval()
    )
    x, memory, _ = batch(9)
    changed = x.clone()
    changed[:, 3:] += 5.0  # change positions 4 and 5 (1-based)
    y, y_changed = (
        block(x, memory, causal_mask(5)),
        block(changed, memory, causal_mask(5)),
    )
    assert torch.allclose(y[:, :3], y_changed[:, :3], atol=1e-6)
    assert not torch.allclose(y[:, 3:], y_changed[:, 3:], atol=1e-3)


def test_stack_equals_torch_transformer_decoder():
    layer = torch_layer(seed=11)
    theirs = nn.TransformerDecoder(layer, num_layers=3).eval()
    for i, their_layer in enumerate(
        theirs.layers
    ):  # give every layer its own weights
        torch.manual_seed(100 + i)
        for p in their_layer.parameters():
            p.data.normal_(0, 0.3)
    ours = (
        TransformerDecoder(16, 4, 32, num_layers=3)
        .load_torch_weights(theirs)
        .eval()
    )
    x, memory, keep = batch(12)
    out, self_w, cross_w = ours(
        x, memory, causal_mask(5), keep[:, None, None, :], return_weights=True
    )
    ref = theirs(
        x, memory, tgt_mask=~causal_mask(5), memory_key_padding_mask=~keep
    )
    assert (out - ref).abs().max().item() < 1e-5
    assert self_w.shape == (3, 3, 4, 5, 5) and cross_w.shape == (3, 3, 4, 5, 7)
    assert (self_w.masked_select(~causal_mask(5)) == 0).all()
    assert (cross_w * ~keep[None, :, None, None, :]).abs().max() == 0


def test_load_torch_weights_refuses_what_it_cannot_copy():
    block = TransformerDecoderBlock(16, 4, 32)
    with pytest.raises(TypeError):
        block.load_torch_weights(
            nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)
        )
    with pytest.raises(ValueError, match="pre-norm"):
        block.load_torch_weights(
            nn.TransformerDecoderLayer(
                16, 4, 32, batch_first=True, norm_first=True
            )
        )
    with pytest.raises(ValueError, match="activation"):
        block.load_torch_weights(
            nn.TransformerDecoderLayer(
                16, 4, 32, batch_first=True, activation="gelu"
            )
        )
    with pytest.raises(ValueError, match="size mismatch"):
        block.load_torch_weights(
            nn.TransformerDecoderLayer(16, 4, 64, batch_first=True)
        )


def test_bad_masks_and_inputs_are_refused():
    block = TransformerDecoderBlock(16, 4, 32)
    x, memory, keep = batch(13)
    with pytest.raises(ValueError, match="keep\\[:, None, None, :\\]"):
        block(x, memory, memory_mask=keep)  # (B, n_src) is not (n, n_src)
    with pytest.raises(ValueError):
        block(x, memory[:2])
    with pytest.raises(ValueError):
        block(x[..., :8], memory)


def small_model(seed=0, max_tgt_len=40):
    torch.manual_seed(seed)
    model = EncoderDecoderTransformer(
        20,
        15,
        embed_dim=32,
        num_heads=4,
        ffn_hidden=64,
        num_encoder_layers=2,
        num_decoder_layers=2,
        max_src_len=16,
        max_tgt_len=max_tgt_len,
    )
    for p in (
        model.parameters()
    ):  # larger random weights: sharper, more varied outputs
        p.data.mul_(2.0)
    return model.eval()


def source(seed=0, B=4, n=9):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(3, n + 1, (B,), generator=g)
    lengths[0] = n
    src = torch.randint(3, 20, (B, n), generator=g) * (
        torch.arange(n) < lengths[:, None]
    )
    return src, lengths


def test_encoder_decoder_equals_torch_layers_with_the_same_weights():
    model = small_model(1)
    src, lengths = source(1)
    tgt_in = torch.randint(
        0, 15, (4, 6), generator=torch.Generator().manual_seed(2)
    )
    keep = torch.arange(src.shape[1]) < lengths[:, None]
    enc_layer = nn.TransformerEncoderLayer(
        32, 4, 64, dropout=0.0, batch_first=True
    )
    dec_layer = nn.TransformerDecoderLayer(
        32, 4, 64, dropout=0.0, batch_first=True
    )
    torch_encoder = nn.TransformerEncoder(
        enc_layer, 2, enable_nested_tensor=False
    ).eval()
    torch_decoder = nn.TransformerDecoder(dec_layer, 2).eval()
    with torch.no_grad():
        for ours, theirs in zip(model.encoder.blocks, torch_encoder.layers):
            theirs.self_attn.in_proj_weight.copy_(
                ours.self_attn.in_proj_weight
            )
            theirs.self_attn.in_proj_bias.copy_(ours.self_attn.in_proj_bias)
            theirs.self_attn.out_proj.load_state_dict(
                ours.self_attn.out_proj.state_dict()
            )
            theirs.linear1.load_state_dict(ours.ffn.linear1.state_dict())
            theirs.linear2.load_state_dict(ours.ffn.linear2.state_dict())
            theirs.norm1.load_state_dict(ours.norm1.state_dict())
            theirs.norm2.load_state_dict(ours.norm2.state_dict())
        for ours, theirs in zip(model.decoder.blocks, torch_decoder.layers):
            for a, b in (
                (ours.self_attn, theirs.self_attn),
                (ours.cross_attn, theirs.multihead_attn),
            ):
                b.in_proj_weight.copy_(a.in_proj_weight)
                b.in_proj_bias.copy_(a.in_proj_bias)
                b.out_proj.load_state_dict(a.out_proj.state_dict())
            theirs.linear1.load_state_dict(ours.ffn.linear1.state_dict())
            theirs.linear2.load_state_dict(ours.ffn.linear2.state_dict())
            for i in (1, 2, 3):
                getattr(theirs, f"norm{i}").load_state_dict(
                    getattr(ours, f"norm{i}").state_dict()
                )
        memory = torch_encoder(
            model.encoder.embed(src), src_key_padding_mask=~keep
        )
        hidden = torch_decoder(
            model.embed_target(tgt_in),
            memory,
            tgt_mask=~causal_mask(6),
            memory_key_padding_mask=~keep,
        )
        reference = model.output(hidden)
        ours = model(src, lengths, tgt_in)
    assert (ours - reference).abs().max().item() < 1e-5


def test_teacher_forcing_equals_step_by_step_decoding():
    model = small_model(3)
    src, lengths = source(3)
    tgt_in = torch.randint(
        3, 15, (4, 8), generator=torch.Generator().manual_seed(4)
    )
    with torch.no_grad():
        memory, mask = model.encode(src, lengths)
        all_at_once = model.decode(tgt_in, memory, mask)
        for t in range(
            1, 9
        ):  # the prefix of length t alone predicts position t
            prefix = model.decode(tgt_in[:, :t], memory, mask)
            assert torch.allclose(
                prefix[:, -1], all_at_once[:, t - 1], atol=1e-5
            )


def test_cached_steps_equal_the_full_forward():
    model = small_model(5)
    block = model.decoder.blocks[0]
    x, memory, keep = batch(6, B=2, n=6, n_src=7, E=32, lengths=(7, 3))
    mask = keep[:, None, None, :]
    with torch.no_grad():
        full, self_w, cross_w = block(
            x, memory, causal_mask(6), mask, return_weights=True
        )
        cache, kv = KVCache(1), block.memory_keys_values(memory)
        for t in range(6):
            y, s, c = block.step(x[:, t : t + 1], cache, 0, kv, mask)
            assert cache.keys[0].shape == (2, 4, t + 1, 8)
            assert torch.allclose(y[:, 0], full[:, t], atol=1e-5)
            assert torch.allclose(
                s[:, :, 0], self_w[:, :, t, : t + 1], atol=1e-6
            )
            assert torch.allclose(c[:, :, 0], cross_w[:, :, t], atol=1e-6)


def test_cached_step_refuses_a_padding_mask_that_would_broadcast_against_the_heads():
    model = small_model(
        5
    )  # 4 heads: a batch of 4 would silently give sequence j's padding to head j
    block = model.decoder.blocks[0]
    x, memory, keep = batch(6, B=4, n=1, n_src=7, E=32, lengths=(7, 3, 5, 6))
    with torch.no_grad():
        kv = block.memory_keys_values(memory)
        with pytest.raises(ValueError, match="memory_mask"):
            block.step(x, KVCache(1), 0, kv, keep[:, None, :])  # (B, 1, n_src)
        y, _, c = block.step(
            x, KVCache(1), 0, kv, keep[:, None, None, :]
        )  # (B, 1, 1, n_src) is the right shape
    assert (
        c[1, :, 0, 3:].abs().max() == 0
    )  # sequence 2 has 3 real source positions


def test_the_decoders_step_equals_its_full_forward_layer_by_layer():
    model = small_model(7)
    decoder = model.decoder
    x, memory, keep = batch(8, B=2, n=5, n_src=7, E=32, lengths=(7, 4))
    mask = keep[:, None, None, :]
    with torch.no_grad():
        full, self_w, cross_w = decoder(
            x, memory, causal_mask(5), mask, return_weights=True
        )
        cache, kv = decoder.new_cache(), decoder.memory_keys_values(memory)
        assert isinstance(cache, KVCache) and len(cache.keys) == 2
        for t in range(5):
            y, s, c = decoder.step(x[:, t : t + 1], cache, kv, mask)
            assert len(cache) == t + 1
            assert s.shape == (2, 2, 4, 1, t + 1) and c.shape == (
                2,
                2,
                4,
                1,
                7,
            )
            assert torch.allclose(y[:, 0], full[:, t], atol=1e-5)
            assert torch.allclose(
                s[..., 0, :], self_w[..., t, : t + 1], atol=1e-6
            )
            assert torch.allclose(c[..., 0, :], cross_w[..., t, :], atol=1e-6)


def test_the_decoders_step_is_its_blocks_steps_in_turn():
    model = small_model(9)
    decoder = model.decoder
    x, memory, _ = batch(10, B=3, n=3, n_src=6, E=32)
    kv = decoder.memory_keys_values(memory)
    ours, theirs = decoder.new_cache(), KVCache(2)
    with torch.no_grad():
        for t in range(3):
            y, _, _ = decoder.step(x[:, t : t + 1], ours, kv)
            h = x[:, t : t + 1]
            for layer, block in enumerate(decoder.blocks):
                h, _, _ = block.step(h, theirs, layer, kv[layer])
            assert torch.equal(y, h)
    for a, b in zip(ours.keys + ours.values, theirs.keys + theirs.values):
        assert torch.equal(a, b)


def _decoder_after_one_step():
    model = small_model(11)
    decoder = model.decoder
    x, memory, _ = batch(12, B=2, n=1, n_src=6, E=32)
    cache, kv = decoder.new_cache(), decoder.memory_keys_values(memory)
    with torch.no_grad():
        decoder.step(x, cache, kv)
    return decoder, x, cache, kv


@pytest.mark.parametrize(
    "bad, error, match",
    [
        (dict(x=torch.randn(2, 2, 32)), ValueError, "new position only"),
        (dict(cache={}), TypeError, "cache must be a KVCache"),
        (dict(cache=KVCache(3)), ValueError, "number of layers"),
        (dict(memory_kv="kv"), TypeError, "memory_kv must be the list"),
        (dict(memory_kv=[]), ValueError, "number of layers"),
        (
            dict(memory_kv="second layer's of another batch"),
            ValueError,
            "memory_keys_values",
        ),
        (
            dict(memory_mask=torch.ones(2, 6, dtype=torch.bool)),
            ValueError,
            "memory_mask",
        ),
    ],
)
def test_a_refused_decoder_step_leaves_every_layer_of_the_cache(
    bad, error, match
):
    decoder, x, cache, kv = _decoder_after_one_step()
    if bad.get("memory_kv") == "second layer's of another batch":
        other = decoder.memory_keys_values(torch.randn(3, 6, 32))
        bad = dict(memory_kv=[kv[0], other[1]])  # layer 0 alone is fine
    before = [t.clone() for t in cache.keys + cache.values]
    call = {**dict(x=x, cache=cache, memory_kv=kv, memory_mask=None), **bad}
    with torch.no_grad(), pytest.raises(error, match=match):
        decoder.step(**call)
    assert len(cache) == 1 and all(
        torch.equal(a, b) for a, b in zip(before, cache.keys + cache.values)
    )
    with torch.no_grad():  # and the next good step sees one cached position
        _, self_weights, _ = decoder.step(x, cache, kv)
    assert self_weights.shape == (2, 2, 4, 1, 2) and len(cache) == 2


def test_a_block_step_names_a_layer_outside_the_cache():
    block = small_model(13).decoder.blocks[0]
    x, memory, _ = batch(14, B=2, n=1, n_src=5, E=32)
    cache, kv = KVCache(2), block.memory_keys_values(memory)
    for layer in (2, -1, 1.0, True, None):
        with pytest.raises(ValueError, match="layer"):
            block.step(x, cache, layer, kv)
    assert cache.keys == [None, None] and cache.values == [None, None]


def test_a_block_step_refuses_a_cache_layer_with_keys_but_no_values():
    block = small_model(15).decoder.blocks[0]
    x, memory, _ = batch(16, B=2, n=1, n_src=5, E=32)
    cache, kv = KVCache(1), block.memory_keys_values(memory)
    cache.keys[0] = torch.randn(2, 4, 1, 8)
    with pytest.raises(ValueError, match="keys but no values"):
        block.step(x, cache, 0, kv)
    assert cache.keys[0].shape == (2, 4, 1, 8) and cache.values[0] is None


@pytest.mark.parametrize("seed,max_len", [(0, 5), (1, 17), (2, 30), (3, 40)])
def test_generation_is_identical_with_and_without_the_cache(seed, max_len):
    model = small_model(seed)
    src, lengths = source(seed + 20)
    cached, w_cached = model.generate(
        src,
        lengths,
        max_len,
        use_cache=True,
        stop_at_eos=False,
        return_weights=True,
    )
    plain, w_plain = model.generate(
        src,
        lengths,
        max_len,
        use_cache=False,
        stop_at_eos=False,
        return_weights=True,
    )
    assert cached.shape == (4, max_len)
    assert torch.equal(cached, plain)
    assert (
        len(set(cached.flatten().tolist())) >= 3
    )  # a non-trivial output, not one repeated token
    assert torch.allclose(w_cached, w_plain, atol=1e-5)


def test_greedy_generation_picks_the_argmax_of_teacher_forced_logits():
    model = small_model(7)
    src, lengths = source(7)
    tokens = model.generate(src, lengths, 12, stop_at_eos=False)
    tgt_in = torch.cat([torch.full((4, 1), model.bos), tokens[:, :-1]], dim=1)
    with torch.no_grad():
        logits = model(src, lengths, tgt_in)
    assert torch.equal(logits.argmax(-1), tokens)


def test_generation_stops_at_eos_and_pads_finished_sequences_with_eos():
    model = small_model(8)
    with torch.no_grad():
        model.output.bias[model.eos] += (
            1e3  # EOS always wins: one step, then stop
        )
    src, lengths = source(8)
    tokens = model.generate(src, lengths, 10)
    assert tokens.tolist() == [[model.eos]] * 4


# -- the explorer's view, on an untrained date model (fast, no shipped weights needed) --------


def test_decoder_view_reports_the_chosen_steps_cross_attention_row():
    from attnbook.tasks.date_transformer import (
        DateTransformer,
        build_date_transformer,
    )
    from attnbook.widgets.decoder import (
        decoder_view,
        plot_decoder,
        update_decoder_figure,
    )

    translator = DateTransformer(build_date_transformer(seed=0))
    text = "3 May 1999"
    output, (weights,) = translator.translate([text], return_weights=True)
    view = decoder_view(translator, text, step=2, layer=1)
    assert view["source"] == list(text) and view["output"] == output[0]
    assert view["num_steps"] == weights.shape[2]
    assert torch.equal(view["weights"], weights[1, :, 1])
    assert torch.allclose(view["weights"].sum(-1), torch.ones(4), atol=1e-6)
    assert view["top"] == (weights[1, :, 1].argmax(-1) + 1).tolist()
    with pytest.raises(ValueError):
        decoder_view(translator, text, step=view["num_steps"] + 1)
    assert (
        decoder_view(translator, text, step=99, clamp=True)["step"]
        == view["num_steps"]
    )
    with pytest.raises(ValueError):
        decoder_view(translator, text, layer=2)
    fig = plot_decoder(
        decoder_view(translator, text, step=2, layer=1, width=12)
    )
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.texts] == list(text) + ["", ""]
    image = ax.images[0].get_array()
    assert image.shape == (4, 12) and (image[:, 10:] == 0).all()
    assert torch.allclose(
        torch.as_tensor(image[:, :10]), view["weights"].double(), atol=1e-7
    )
    other = decoder_view(translator, "1999-5-3", step=1, layer=0)
    changed = update_decoder_figure(fig, other)
    assert (
        ax.images[0] in changed
        and [t.get_text() for t in ax.texts] == list("1999-5-3") + [""] * 4
    )
    with pytest.raises(ValueError, match="at most 12"):
        update_decoder_figure(
            fig, decoder_view(translator, "Monday, May 3, 1999")
        )


# -- the shipped, trained date Transformer ------------------------------------------------------


@pytest.fixture(scope="module")
def pretrained():
    from attnbook.tasks.date_transformer import pretrained_date_transformer

    return pretrained_date_transformer(return_info=True)


def test_pretrained_file_is_small_and_pinned():
    from importlib import resources

    from attnbook._weights import sha256_of
    from attnbook.tasks.date_transformer import (
        DATE_TRANSFORMER_FILE,
        DATE_TRANSFORMER_SHA256,
    )

    data = (
        resources.files("attnbook") / "data" / DATE_TRANSFORMER_FILE
    ).read_bytes()
    assert len(data) <= 1_000_000
    assert sha256_of(data) == DATE_TRANSFORMER_SHA256


def test_pretrained_leaves_the_global_rng_untouched():
    from attnbook.tasks.date_transformer import pretrained_date_transformer

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    pretrained_date_transformer()
    assert torch.equal(torch.rand(3), expected)


def test_pretrained_reads_fresh_dates(pretrained):
    from attnbook.tasks.dates import random_date_pairs

    translator, info = pretrained
    assert info["recipe"]["seed"] != 2027 and info["eval_seed"] != 2027
    sources, targets = random_date_pairs(
        600, torch.Generator().manual_seed(2027)
    )  # a seed training never used
    outputs = translator.translate(sources)
    accuracy = sum(o == t for o, t in zip(outputs, targets)) / len(targets)
    assert accuracy >= 0.995, [
        (s, o, t) for s, o, t in zip(sources, outputs, targets) if o != t
    ]


def test_pretrained_translates_every_form_and_refuses_bad_input(pretrained):
    from attnbook.tasks.dates import FORMS

    translator, _ = pretrained
    assert translator.translate(list(FORMS)) == ["1999-05-03"] * len(FORMS)
    outputs, weights = translator.translate(
        ["Monday, May 3, 1999"], return_weights=True
    )
    assert weights[0].shape == (
        2,
        4,
        11,
        19,
    )  # layers, heads, 10 characters + EOS, source characters
    assert torch.allclose(weights[0].sum(-1), torch.ones(2, 4, 11), atol=1e-5)
    for bad in ([""], ["3 May 1999 \u00e9"], ["x" * 33]):
        with pytest.raises(ValueError):
            translator.translate(bad)
    with pytest.raises(TypeError):
        translator.translate("3 May 1999")


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16])
def test_decoder_target_ids_of_other_dtypes_are_refused(dtype):
    with attnbook._random.keep_global_rng():
        model = attnbook.EncoderDecoderTransformer(
            src_vocab_size=10,
            tgt_vocab_size=10,
            embed_dim=8,
            num_heads=2,
            ffn_hidden=16,
            num_encoder_layers=1,
            num_decoder_layers=1,
        )
    with pytest.raises(TypeError, match="int64"):
        model.embed_target(torch.tensor([[1, 2]], dtype=dtype))


def _block(seed=0, embed_dim=8, num_heads=2):
    torch.manual_seed(seed)
    return TransformerDecoderBlock(embed_dim, num_heads, 16).eval()


def _steps(block, x, memory, memory_mask=None):
    cache, kv = KVCache(1), block.memory_keys_values(memory)
    return torch.cat(
        [
            block.step(x[:, t : t + 1], cache, 0, kv, memory_mask)[0]
            for t in range(x.shape[1])
        ],
        1,
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cached_step_in_half_precision_does_not_overflow(dtype):
    """Scores far past float16's 65,504: the step scores and normalises in float32, as attention does."""
    big = _block()
    with torch.no_grad():
        big.self_attn.in_proj_weight.mul_(40)
        big.cross_attn.in_proj_weight.mul_(40)
    g = torch.Generator().manual_seed(1)
    x, memory = (
        30 * torch.randn(2, 3, 8, generator=g),
        30 * torch.randn(2, 4, 8, generator=g),
    )
    reference = _steps(big, x, memory)
    half = _block()
    half.load_state_dict(big.state_dict())
    half = half.to(dtype)
    out = _steps(half, x.to(dtype), memory.to(dtype))
    assert out.dtype == dtype
    assert torch.isfinite(out.float()).all()
    assert (
        out.float() - reference
    ).abs().max() < 0.5  # LayerNorm'd outputs of size ~1


def test_cached_step_returns_weights_in_the_inputs_dtype():
    block = _block().to(torch.float16)
    x = torch.randn(2, 1, 8).half()
    _, self_w, cross_w = block.step(
        x, KVCache(1), 0, block.memory_keys_values(torch.randn(2, 4, 8).half())
    )
    assert self_w.dtype == cross_w.dtype == torch.float16
    assert torch.allclose(
        cross_w.float().sum(-1), torch.ones(2, 2, 1), atol=1e-3
    )


def test_cached_step_float32_is_the_formula_written_out():
    """Float32 keeps the exact arithmetic of the core ``attention`` on the
    heads: q / sqrt(d_k) k^T, softmax, @ V, then W_O (bit for bit)."""
    block = _block(3)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 1, 8, generator=g)
    k, v = (torch.randn(2, 2, 5, 4, generator=g) for _ in range(2))
    cache = KVCache(1)
    cache.append(0, k, v)
    memory_kv = block.memory_keys_values(torch.randn(2, 3, 8, generator=g))
    with torch.no_grad():
        out, weights, _ = block.step(x, cache, 0, memory_kv)
        q, new_k, new_v = (
            t.view(2, 1, 2, 4).transpose(1, 2)
            for t in block.self_attn.project(x, x, x)
        )
        keys, values = torch.cat([k, new_k], 2), torch.cat([v, new_v], 2)
        expected_w = torch.softmax(
            (q * (1.0 / math.sqrt(4))) @ keys.transpose(-2, -1), dim=-1
        )
        attended = block.self_attn.out_proj(
            (expected_w @ values).transpose(1, 2).reshape(2, 1, 8)
        )
        y = block.norm1(x + attended)
        q = block.cross_attn.project(y, y, y)[0]
        heads = attention(q.view(2, 1, 2, 4).transpose(1, 2), *memory_kv)[0]
        read = block.cross_attn.out_proj(
            heads.transpose(1, 2).reshape(2, 1, 8)
        )
        y = block.norm2(y + read)
        expected = block.norm3(y + block.ffn(y))
    assert torch.equal(weights, expected_w)
    assert torch.equal(cache.keys[0], keys)
    assert torch.equal(cache.values[0], values)
    assert torch.equal(out, expected)


def test_cached_step_garbage_under_the_memory_mask_reaches_nothing():
    block = _block()
    g = torch.Generator().manual_seed(4)
    x, memory = (
        torch.randn(2, 3, 8, generator=g),
        torch.randn(2, 4, 8, generator=g),
    )
    keep = torch.tensor(
        [[True, True, True, False], [True, True, False, False]]
    )[:, None, None, :]
    clean = _steps(block, x, memory, keep)
    dirty = memory.clone()
    dirty[0, 3] = float("nan")
    dirty[1, 2:] = float("inf")
    assert torch.allclose(_steps(block, x, dirty, keep), clean, atol=1e-6)


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float64]
)
def test_step_and_memory_keys_values_name_a_dtype_mismatch(dtype):
    block = _block()
    kv = block.memory_keys_values(torch.randn(2, 4, 8))
    with pytest.raises(TypeError, match="dtype"):
        block.step(torch.randn(2, 1, 8).to(dtype), KVCache(1), 0, kv)
    with pytest.raises(TypeError, match="dtype"):
        block.memory_keys_values(torch.randn(2, 4, 8).to(dtype))


@pytest.mark.parametrize(
    "call",
    [
        lambda b, kv: b.step(
            torch.randn(2, 2, 8), KVCache(1), 0, kv
        ),  # two positions at once: not a step
        lambda b, kv: b.step(torch.randn(2, 8), KVCache(1), 0, kv),
        lambda b, kv: b.step(torch.randn(2, 1, 9), KVCache(1), 0, kv),
        lambda b, kv: b.step(torch.randn(2, 1, 8), None, 0, kv),
        lambda b, kv: b.step(torch.randn(2, 1, 8), KVCache(1), 0, None),
        lambda b, kv: b.step(
            torch.randn(2, 1, 8),
            KVCache(1),
            0,
            b.memory_keys_values(torch.randn(3, 4, 8)),
        ),
        lambda b, kv: b.memory_keys_values(torch.randn(4, 9)),
        lambda b, kv: b.step(
            torch.randn(2, 1, 8),
            KVCache(1),
            0,
            kv,
            torch.ones(2, 1, 4, dtype=torch.bool),
        ),
    ],
)
def test_step_refuses_bad_arguments_cleanly(call):
    block = _block()
    kv = block.memory_keys_values(torch.randn(2, 4, 8))
    with pytest.raises((TypeError, ValueError)):
        call(block, kv)


_BAD_INTS = [True, False, 1.5, float("nan"), -1, 0, "3", None, float("inf")]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(
        [
            "src_vocab_size",
            "tgt_vocab_size",
            "embed_dim",
            "num_heads",
            "ffn_hidden",
            "num_encoder_layers",
            "num_decoder_layers",
            "max_src_len",
            "max_tgt_len",
        ]
    ),
    st.sampled_from(_BAD_INTS),
)
def test_encoder_decoder_refuses_bad_sizes_before_drawing_weights(name, value):
    sizes = dict(
        src_vocab_size=10,
        tgt_vocab_size=10,
        embed_dim=8,
        num_heads=2,
        ffn_hidden=16,
        num_encoder_layers=1,
        num_decoder_layers=1,
    )
    state = torch.random.get_rng_state()
    with pytest.raises((ValueError, TypeError)):
        decoder.EncoderDecoderTransformer(**{**sizes, name: value})
    assert torch.equal(state, torch.random.get_rng_state())


@pytest.mark.parametrize(
    "flag", ["use_cache", "stop_at_eos", "return_weights"]
)
@pytest.mark.parametrize("value", ["yes", None, 2])
def test_generate_flags_must_be_bools(flag, value):
    torch.manual_seed(0)
    model = decoder.EncoderDecoderTransformer(10, 10, 8, 2, 16, 1, 1).eval()
    with pytest.raises(ValueError, match=flag):
        model.generate(torch.tensor([[3, 4, 5]]), None, 4, **{flag: value})


def test_masked_softmax_of_the_step_matches_the_shared_rule():
    """The step's weights follow masked_softmax: a fully masked memory row gives zero weights."""
    block = _block()
    memory = torch.randn(1, 3, 8)
    keep = torch.zeros(1, 1, 1, 3, dtype=torch.bool)
    _, _, cross = block.step(
        torch.randn(1, 1, 8),
        KVCache(1),
        0,
        block.memory_keys_values(memory),
        keep,
    )
    assert torch.equal(cross, torch.zeros_like(cross))
    assert torch.equal(
        masked_softmax(torch.zeros(1, 3), keep[0, 0]), torch.zeros(1, 3)
    )
    assert causal_mask(0).shape == (0, 0)


def _step_setup():
    torch.manual_seed(0)
    block = decoder.TransformerDecoderBlock(8, 2, 16).eval()
    memory_kv = block.memory_keys_values(torch.randn(2, 6, 8))
    cache = KVCache(1)
    with torch.no_grad():
        block.step(torch.randn(2, 1, 8), cache, 0, memory_kv)
    return block, memory_kv, cache


@pytest.mark.parametrize(
    "bad_call, error, words",
    [
        (
            lambda b, kv, c: b.step(torch.randn(2, 2, 8), c, 0, kv),
            ValueError,
            "new position only",
        ),
        (
            lambda b, kv, c: b.step(
                torch.randn(2, 1, 8),
                c,
                0,
                b.memory_keys_values(torch.randn(3, 6, 8)),
            ),
            ValueError,
            "memory_keys_values",
        ),
        (
            lambda b, kv, c: b.step(
                torch.randn(2, 1, 8),
                c,
                0,
                kv,
                torch.ones(2, 6, dtype=torch.bool),
            ),
            ValueError,
            "memory_mask",
        ),
    ],
)
def test_a_refused_step_leaves_the_cache_as_it_was(bad_call, error, words):
    block, memory_kv, cache = _step_setup()
    before = [t.clone() for t in cache.keys + cache.values]
    with torch.no_grad(), pytest.raises(error, match=words):
        bad_call(block, memory_kv, cache)
    after = cache.keys + cache.values
    assert len(after) == len(before) and all(
        torch.equal(a, b) for a, b in zip(after, before)
    )
    with (
        torch.no_grad()
    ):  # and the next good step sees exactly one cached position
        _, self_weights, _ = block.step(
            torch.randn(2, 1, 8), cache, 0, memory_kv
        )
    assert self_weights.shape == (2, 2, 1, 2) and cache.keys[0].shape == (
        2,
        2,
        2,
        4,
    )


def _cache_holding(keys, values):
    cache = KVCache(1)
    cache.keys[0], cache.values[0] = keys, values
    return cache


@pytest.mark.parametrize(
    "cache, words",
    [
        (
            _cache_holding(torch.randn(3, 2, 1, 4), torch.randn(3, 2, 1, 4)),
            r"\(2, 2, t, 4\)",
        ),
        (
            _cache_holding(torch.randn(2, 2, 1, 3), torch.randn(2, 2, 1, 3)),
            r"\(2, 2, t, 4\)",
        ),
        (
            _cache_holding(
                torch.randn(2, 2, 1, 4, dtype=torch.float64),
                torch.randn(2, 2, 1, 4),
            ),
            "float64",
        ),
        (_cache_holding(torch.randn(2, 2, 1, 4), None), "keys but no values"),
        (
            _cache_holding(torch.randn(2, 2, 1, 4), torch.randn(2, 2, 2, 4)),
            "1 keys but 2 values",
        ),
    ],
)
def test_a_cache_of_another_batch_or_model_gets_a_clear_error(cache, words):
    block, memory_kv, _ = _step_setup()
    before = cache.keys + cache.values
    with torch.no_grad(), pytest.raises(ValueError, match=words):
        block.step(torch.randn(2, 1, 8), cache, 0, memory_kv)
    assert all(a is b for a, b in zip(before, cache.keys + cache.values))
    with pytest.raises(TypeError, match="cache must be a KVCache"):
        block.step(torch.randn(2, 1, 8), {}, 0, memory_kv)


@pytest.mark.parametrize("use_cache", [True, False])
def test_generate_refuses_more_steps_than_target_positions(use_cache):
    import attnbook

    torch.manual_seed(0)
    model = attnbook.EncoderDecoderTransformer(
        10, 9, embed_dim=8, num_heads=2, ffn_hidden=16, max_tgt_len=4
    ).eval()
    src = torch.randint(
        3, 10, (2, 5), generator=torch.Generator().manual_seed(1)
    )
    with pytest.raises(
        ValueError, match=r"max_len \(8\) must be at most max_tgt_len \(4\)"
    ):
        model.generate(src, max_len=8, use_cache=use_cache, stop_at_eos=False)
    with (
        torch.no_grad()
    ):  # every position there is can be used, with or without the cache alike
        tokens = model.generate(
            src, max_len=4, use_cache=use_cache, stop_at_eos=False
        )
        assert tokens.shape == (2, 4)
        assert torch.equal(
            tokens,
            model.generate(
                src, max_len=4, use_cache=not use_cache, stop_at_eos=False
            ),
        )
