"""Chapter 13's language-model pieces: latent-attention blocks in the
decoder-only model, an explicit mask (sliding windows), averaging key-value
heads (pool_kv_heads), and the shipped key-value sharing sweep."""

import pytest
import torch

from attnbook import (
    DecoderOnlyTransformer,
    MultiHeadLatentAttention,
    causal_mask,
    pretrained_language_model,
    sliding_window_mask,
)
from attnbook.experiments import kv_sharing
from attnbook.experiments.kv_sharing import (
    VARIANTS,
    cached_numbers_per_token,
    kv_sharing_results,
    pool_kv_heads,
    results_json,
)
from attnbook.measure.parameters import count_parameters
from attnbook.nn.language_model import DecoderOnlyBlock
from attnbook.tasks.language_model import MODEL_CONFIG

SMALL = {"context_len": 16, "embed_dim": 32, "num_heads": 4, "num_layers": 2}
SMALL["ffn_dim"] = 64


def small_model(seed=0, **change):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return DecoderOnlyTransformer(96, **{**SMALL, **change}).eval()


def tokens(n=12, batch=2, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 96, (batch, n), generator=g)


def test_a_latent_block_is_latent_attention_under_the_causal_mask():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        block = DecoderOnlyBlock(32, 4, 64, latent_dim=8)
        x = torch.randn(2, 7, 32)
    assert isinstance(block.self_attn, MultiHeadLatentAttention)
    h = block.norm1(x)
    attended = MultiHeadLatentAttention.forward(
        block.self_attn, h, mask=causal_mask(7)
    )[0]
    expected = x + attended
    expected = expected + block.ffn(block.norm2(expected))
    torch.testing.assert_close(block(x), expected, rtol=0, atol=0)


def test_a_latent_model_is_causal_and_caches_a_latent_per_position():
    model = small_model(latent_dim=8)
    ids = tokens()
    with torch.no_grad():
        whole = model(ids)
        changed = ids.clone()
        changed[:, 7:] = (changed[:, 7:] + 1) % 96
        prefix = model(changed)
    # the first 7 positions never see the changed tokens
    torch.testing.assert_close(prefix[:, :7], whole[:, :7])
    assert not torch.allclose(prefix[:, 7:], whole[:, 7:])
    attn = model.blocks[0].self_attn
    assert attn.kv_down.weight.shape == (8, 32)


def test_latent_attention_and_kv_heads_are_refused_together():
    state = torch.random.get_rng_state()
    with pytest.raises(ValueError, match="num_kv_heads or latent_dim"):
        DecoderOnlyTransformer(96, **SMALL, num_kv_heads=2, latent_dim=8)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_a_latent_model_refuses_a_kv_cache_before_changing_it():
    model = small_model(latent_dim=8)
    cache = model.new_cache()
    with pytest.raises(ValueError, match="without a KVCache"):
        model(tokens(), cache)
    assert len(cache) == 0 and cache.nbytes() == 0


def test_the_explicit_causal_mask_is_the_default():
    model = small_model()
    ids = tokens()
    with torch.no_grad():
        torch.testing.assert_close(
            model(ids, mask=causal_mask(12)), model(ids), rtol=0, atol=0
        )


def test_a_sliding_window_changes_only_positions_beyond_the_window():
    model = small_model()
    ids = tokens()
    with torch.no_grad():
        windowed = model(ids, mask=sliding_window_mask(12, window=4))
        whole = model(ids)
    # positions 0..3 see all their keys anyway (every layer)
    torch.testing.assert_close(windowed[:, :4], whole[:, :4])
    assert not torch.allclose(windowed[:, 4:], whole[:, 4:])


def test_a_mask_with_a_cache_is_refused_and_the_cache_is_unchanged():
    model = small_model()
    cache = model.new_cache()
    with pytest.raises(ValueError, match="without a cache only"):
        model(tokens(), cache, mask=causal_mask(12))
    assert len(cache) == 0


def test_a_mask_of_the_wrong_size_is_refused_clearly():
    model = small_model()
    with pytest.raises(ValueError, match="mask"):
        model(tokens(), mask=causal_mask(5))


def test_pooling_to_every_head_changes_nothing():
    model = small_model()
    ids = tokens()
    with torch.no_grad():
        torch.testing.assert_close(
            pool_kv_heads(model, 4)(ids), model(ids), rtol=0, atol=0
        )


def test_pooled_key_and_value_heads_are_the_means_of_their_groups():
    model = small_model()
    pooled = pool_kv_heads(model, 2)
    d = 32 // 4
    for old, new in zip(model.blocks, pooled.blocks):
        w, b = old.self_attn.in_proj_weight, old.self_attn.in_proj_bias
        pw, pb = new.self_attn.in_proj_weight, new.self_attn.in_proj_bias
        assert new.self_attn.num_kv_heads == 2
        assert torch.equal(pw[:32], w[:32]) and torch.equal(pb[:32], b[:32])
        for part, start in (("keys", 32), ("values", 64)):
            for group in range(2):
                heads = [
                    w[start + h * d : start + (h + 1) * d]
                    for h in (2 * group, 2 * group + 1)
                ]
                offset = 32 + (part == "values") * 2 * d + group * d
                torch.testing.assert_close(
                    pw[offset : offset + d], (heads[0] + heads[1]) / 2
                )
    for name in ("token_embedding.weight", "blocks.1.ffn.linear1.weight"):
        assert torch.equal(pooled.state_dict()[name], model.state_dict()[name])


def test_pool_kv_heads_refuses_bad_arguments_and_keeps_the_rng():
    model = small_model()
    state = torch.random.get_rng_state()
    with pytest.raises(ValueError, match="must divide the model's 4"):
        pool_kv_heads(model, 3)
    with pytest.raises(TypeError, match="DecoderOnlyTransformer"):
        pool_kv_heads(small_model(latent_dim=8), 2)
    with pytest.raises(TypeError, match="model must be"):
        pool_kv_heads("a model", 2)
    pool_kv_heads(model, 2)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_cached_numbers_per_token_count_what_a_layer_caches():
    assert cached_numbers_per_token({}) == 2 * 4 * 32
    assert cached_numbers_per_token({"num_kv_heads": 1}) == 2 * 32
    assert cached_numbers_per_token({"latent_dim": 64}) == 64
    model = small_model(num_kv_heads=2)
    cache = model.new_cache()
    with torch.no_grad():
        model(tokens(n=5, batch=1), cache)
    per_layer_token = cache.nbytes() / 4 / len(model.blocks) / 5
    config = {**SMALL, "num_kv_heads": 2}
    assert per_layer_token == 2 * 2 * (config["embed_dim"] // 4)


@pytest.fixture(scope="module")
def sweep():
    return kv_sharing_results()


def test_the_shipped_sweep_holds_every_variant_with_its_recipe(sweep):
    assert set(sweep["variants"]) == set(VARIANTS)
    assert sweep["model"] == MODEL_CONFIG
    for name, (change, seed) in VARIANTS.items():
        run = sweep["variants"][name]
        assert run["config"] == change and run["seed"] == seed
        assert run["cached_per_token_per_layer"] == cached_numbers_per_token(
            change
        )
        with torch.random.fork_rng():
            fresh = DecoderOnlyTransformer(96, **{**MODEL_CONFIG, **change})
        assert run["parameters"] == count_parameters(fresh)
        # every model beats the bigram counts (3.769) by a wide margin
        assert 1.5 < run["held_out_bits_per_char"] < 2.5


def test_the_sweeps_multi_head_run_is_the_shipped_model(sweep):
    lm = pretrained_language_model()
    run = sweep["variants"]["mha"]
    assert run["held_out_bits_per_char"] == pytest.approx(
        lm.held_out_bits_per_char, abs=1e-6
    )
    assert run["final_training_loss_nats"] == pytest.approx(
        float(lm.losses[-1]), abs=1e-6
    )


def test_the_sweep_file_is_pinned(monkeypatch):
    monkeypatch.setattr(kv_sharing, "KV_SHARING_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        kv_sharing_results()


def test_run_variant_refuses_an_unknown_name():
    with pytest.raises(ValueError, match="must be one of"):
        kv_sharing.run_variant("gqa3")


def _records(bits_by_arm):
    return [
        {"name": f"{arm}-seed{seed}", "held_out_bits_per_char": b,
         "parameters": 10, "cached_per_token_per_layer": 4}
        for arm, bits in bits_by_arm.items()
        for seed, b in enumerate(bits)
    ]  # fmt: skip


def test_sweep_summary_means_sds_and_detectable_difference():
    summary = kv_sharing.sweep_summary(
        _records({"a": [1.0, 1.2, 1.4], "b": [2.0, 2.1, 2.2]})
    )
    assert summary["arms"]["a"]["mean"] == pytest.approx(1.2)
    assert summary["arms"]["a"]["sd"] == pytest.approx(0.2)
    assert summary["arms"]["b"]["sd"] == pytest.approx(0.1)
    assert summary["df"] == 4
    pooled = ((0.2**2 * 2 + 0.1**2 * 2) / 4) ** 0.5
    assert summary["pooled_sd"] == pytest.approx(pooled)
    # two means of 3 seeds each: t(0.975, 4) = 2.776; of 2: t(0.975, 2)
    assert summary["detectable"][3] == pytest.approx(
        2.776 * pooled * (2 / 3) ** 0.5
    )
    assert summary["detectable"][2] == pytest.approx(4.303 * pooled)


def test_sweep_summary_pools_only_arms_with_two_seeds():
    summary = kv_sharing.sweep_summary(_records({"a": [1.0, 1.1], "b": [2.0]}))
    assert summary["arms"]["b"]["sd"] is None
    assert summary["arms"]["b"]["seeds"] == 1
    assert summary["df"] == 1
    assert summary["pooled_sd"] == pytest.approx(0.1 / 2**0.5)
    with pytest.raises(ValueError, match="two seeds"):
        kv_sharing.sweep_summary(_records({"a": [1.0], "b": [2.0]}))
    with pytest.raises(TypeError, match="records"):
        kv_sharing.sweep_summary([{"arm": "mha"}])


def test_the_shipped_sweep_groups_seeds_into_arms(sweep):
    summary = kv_sharing.sweep_summary(list(sweep["variants"].values()))
    assert summary["arms"]["mha"]["seeds"] == 2
    assert summary["arms"]["mqa"]["seeds"] == 2
    assert summary["df"] == 2


def test_run_sweep_arm_refuses_an_unknown_arm_or_seed():
    with pytest.raises(ValueError, match="arm"):
        kv_sharing.run_sweep_arm("gqa3", 0)
    with pytest.raises(ValueError, match="seed"):
        kv_sharing.run_sweep_arm("mha", -1)


def test_the_wide_mqa_arm_matches_the_multi_head_parameters():
    counts = {}
    for arm in ("mha", "mqa", "mqa-wide"):
        config = {**MODEL_CONFIG, **kv_sharing.SWEEP_ARMS[arm]}
        with torch.random.fork_rng():
            counts[arm] = count_parameters(
                DecoderOnlyTransformer(96, **config)
            )
    assert counts["mqa"] < counts["mha"] - 90_000
    assert abs(counts["mqa-wide"] - counts["mha"]) < 0.001 * counts["mha"]


@pytest.mark.parametrize("config", [None, "x", [("num_kv_heads", 2)]])
def test_cached_numbers_per_token_needs_a_dict(config):
    with pytest.raises(TypeError, match="config must be a dict"):
        cached_numbers_per_token(config)


@pytest.mark.parametrize("records", [None, "abc", [None], [{"seed": 0}]])
def test_results_json_needs_run_variant_records(records):
    with pytest.raises(TypeError, match="records must be a list"):
        results_json(records)
