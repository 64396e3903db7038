"""The GRPO memory model (trainer.memory): shapes, monotonicity, fits, recommend, parse_size, rendering. CPU only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.grpo_memory_report import device_peak_gib
from trainer import memory
from trainer.cli import main
from trainer.config import RunConfig
from trainer.memory import SIZE_CLASSES, estimate, parse_size, recommend, render_estimate, render_table, table

NOMINAL_PARAMS_B = {"0.5B": 0.49, "1.5B": 1.54, "3B": 3.09, "7B": 7.6, "14B": 14.7, "32B": 32.8, "72B": 72.7}


@pytest.mark.parametrize("label", list(NOMINAL_PARAMS_B))
def test_parameter_counts_match_the_published_sizes(label):
    assert SIZE_CLASSES[label].params_b == pytest.approx(NOMINAL_PARAMS_B[label], rel=0.03)


def test_size_classes_are_the_seven_classes():
    assert list(SIZE_CLASSES) == list(NOMINAL_PARAMS_B)


def _est(label, **kw):
    return estimate(SIZE_CLASSES[label], **kw)


def test_bigger_model_bigger_estimate():
    for kw in ({}, {"lora": True}, {"gpus": 4, "zero_stage": 3, "vllm_mode": "server"}):
        totals = [_est(label, **kw).total_gib for label in SIZE_CLASSES]
        assert totals == sorted(totals), kw
        assert len(set(totals)) == len(totals)


def test_lora_is_smaller_than_full_fine_tuning():
    for label in SIZE_CLASSES:
        full, lora = _est(label), _est(label, lora=True)
        assert lora.total_gib < full.total_gib
        assert lora.optimizer_gib < full.optimizer_gib and lora.gradients_gib < full.gradients_gib
        assert lora.reference_gib == 0  # the base with adapters disabled is the reference


def test_zero3_is_smaller_per_gpu_than_zero0_on_several_gpus():
    for label in SIZE_CLASSES:
        z0 = _est(label, gpus=4, zero_stage=0, vllm_mode="server")
        z2 = _est(label, gpus=4, zero_stage=2, vllm_mode="server")
        z3 = _est(label, gpus=4, zero_stage=3, vllm_mode="server")
        assert z3.total_gib < z2.total_gib < z0.total_gib
        assert z3.policy_weights_gib == pytest.approx(z2.policy_weights_gib / 4)  # both DeepSpeed bf16
        assert z0.policy_weights_gib == pytest.approx(2 * z2.policy_weights_gib)  # ZeRO-0: TRL's fp32 load


def test_zero_on_one_gpu_shards_nothing():
    z1, z2 = _est("7B", zero_stage=1), _est("7B", zero_stage=2)
    assert z2.optimizer_gib == z1.optimizer_gib and z2.gradients_gib == z1.gradients_gib


def test_gradient_checkpointing_reduces_activations():
    for label in SIZE_CLASSES:
        assert _est(label, gradient_checkpointing=True).activations_gib < \
            _est(label, gradient_checkpointing=False).activations_gib


def test_flash_attention_drops_the_score_term():
    assert _est("7B").activations_gib < _est("7B", flash_attention=False).activations_gib


def test_beta_zero_removes_the_reference_model():
    with_ref, without = _est("7B", beta=0.01), _est("7B", beta=0.0)
    assert with_ref.reference_gib > 0 and without.reference_gib == 0
    # (the fragmentation share of the overhead scales with what is allocated)
    assert without.total_gib - without.overhead_gib == pytest.approx(
        with_ref.total_gib - with_ref.overhead_gib - with_ref.reference_gib)


@pytest.mark.parametrize("zero_stage", [0, 1])
def test_full_fine_tuning_is_16_bytes_per_parameter(zero_stage):
    est = _est("7B", zero_stage=zero_stage)  # fp32 + autocast at ZeRO-0; bf16 + fp32 master under DeepSpeed
    state = est.policy_weights_gib + est.gradients_gib + est.optimizer_gib
    assert state * memory.GIB == pytest.approx(16 * SIZE_CLASSES["7B"].num_params)


def test_reference_model_has_the_policy_dtype():
    n = SIZE_CLASSES["3B"].num_params
    assert _est("3B").reference_gib * memory.GIB == pytest.approx(4 * n)  # TRL builds it like the fp32 policy
    assert _est("3B", gpus=2, zero_stage=2).reference_gib * memory.GIB == pytest.approx(2 * n)


def test_colocated_vllm_share_and_server_mode():
    colocated = _est("7B", vllm_mode="colocate", vllm_gpu_memory_utilization=0.3, gpu_memory_gb=80)
    server = _est("7B", vllm_mode="server")
    assert colocated.vllm_gib == pytest.approx(24.0) and server.vllm_gib == 0


def test_fused_lm_head_is_smaller_than_materialised_logits():
    assert _est("7B", lora=True, fused_lm_head=True).logits_gib < _est("7B", lora=True, fused_lm_head=False).logits_gib
    # With bf16 gradients (DeepSpeed), full fine-tuning adds the fused head's fp32 LM-head weight gradient
    # (vocab x hidden x 4 bytes); at ZeRO-0 the gradients already are fp32 and hold it.
    shape = SIZE_CLASSES["7B"]
    assert _est("7B").logits_gib == pytest.approx(_est("7B", lora=True).logits_gib)
    kw = {"gpus": 2, "zero_stage": 2, "fused_lm_head": True}
    extra = _est("7B", **kw).logits_gib - _est("7B", lora=True, **kw).logits_gib
    assert extra * memory.GIB == pytest.approx(shape.vocab_size * shape.hidden_size * 4)


def test_small_model_full_fine_tuning_fits_one_80gb_gpu_colocated():
    est = _est("0.5B", gpus=1, gpu_memory_gb=80, lora=False, vllm_mode="colocate")
    assert est.fits and est.total_gib <= 80


def test_72b_full_fine_tuning_does_not_fit_one_80gb_gpu():
    est = _est("72B", gpus=1, gpu_memory_gb=80, lora=False, vllm_mode="colocate")
    assert not est.fits and est.problems


def test_colocated_vllm_too_small_a_share_does_not_fit():
    est = _est("14B", lora=True, vllm_gpu_memory_utilization=0.1)
    assert est.vllm_required_gib > est.vllm_gib and not est.fits


def test_invalid_arguments_are_refused():
    with pytest.raises(ValueError, match="zero_stage"):
        _est("7B", zero_stage=4)
    with pytest.raises(ValueError, match="vllm_mode"):
        _est("7B", vllm_mode="remote")


def test_recommend_7b_on_8x80gb_fits_with_a_valid_batch_shape():
    plan = recommend(SIZE_CLASSES["7B"], gpus=8, gpu_memory_gb=80)
    assert plan.fits and plan.estimate.fits and plan.reason == ""
    assert plan.vllm_mode == "server" and plan.vllm_gpus >= 1
    assert plan.training_gpus + plan.vllm_gpus == 8
    changes = plan.as_run_config_changes()
    product = changes["per_device_train_batch_size"] * changes["gradient_accumulation_steps"] * changes["num_gpus"]
    assert product % 8 == 0
    assert plan.zero_stage in (2, 3) and "zero_stage" not in changes
    RunConfig().override(changes).validate()  # the changes are RunConfig fields TRL accepts


def test_recommend_single_gpu_colocates():
    plan = recommend("0.5B", gpus=1, gpu_memory_gb=80)
    assert plan.fits and plan.vllm_mode == "colocate" and plan.zero_stage == 0 and not plan.lora
    assert plan.gradient_checkpointing
    assert set(plan.as_run_config_changes()) == {
        "num_gpus", "lora", "gradient_checkpointing", "per_device_train_batch_size", "gradient_accumulation_steps",
        "vllm_mode", "vllm_gpu_memory_utilization"}


def test_recommend_says_when_nothing_fits():
    plan = recommend("72B", gpus=1, gpu_memory_gb=80)
    assert not plan.fits
    assert "72B needs at least" in plan.reason and "80 GB" in plan.reason


def test_recommend_lowers_the_micro_batch_and_keeps_divisibility():
    for label in SIZE_CLASSES:
        for gpus in (1, 2, 4, 8):
            plan = recommend(label, gpus=gpus, gpu_memory_gb=80)
            if not plan.fits:
                continue
            product = plan.per_device_train_batch_size * plan.gradient_accumulation_steps * plan.training_gpus
            assert product % plan.num_generations == 0
            assert plan.per_device_train_batch_size in memory.MICRO_BATCH_LADDER
            assert plan.estimate.total_gib <= 80 * (1 - memory.RECOMMEND_HEADROOM_FRACTION)


@pytest.mark.parametrize("text,label", [("7B", "7B"), ("7b", "7B"), ("7", "7B"), ("70B", "72B"), ("72", "72B"),
                                        ("0.5B", "0.5B"), (" 1.5b ", "1.5B")])
def test_parse_size_accepts(text, label):
    assert parse_size(text) is SIZE_CLASSES[label]


@pytest.mark.parametrize("text", ["13B", "", "seven", "7BB"])
def test_parse_size_rejects_with_the_known_classes(text):
    with pytest.raises(ValueError) as info:
        parse_size(text)
    for label in SIZE_CLASSES:
        assert label in str(info.value)


def test_render_table_contains_every_size_class():
    rows = table(gpu_memory_gb=80, gpu_counts=(1, 2, 4, 8))
    assert [row["size"] for row in rows] == list(SIZE_CLASSES)
    assert all(row["fits"] for row in rows)
    text = render_table(rows)
    lines = text.splitlines()
    assert len(lines) == 2 + len(SIZE_CLASSES)
    for label in SIZE_CLASSES:
        assert any(line.startswith(f"| {label} |") for line in lines)


def test_render_estimate_lists_every_term_and_the_verdict():
    text = render_estimate(_est("7B", lora=True))
    for name in memory.COMPONENT_NAMES.values():
        assert name in text
    assert "total" in text and "-> fits" in text and "Assumptions" in text
    assert "does NOT fit" in render_estimate(_est("72B"))


def test_main_prints_the_markdown_table(capsys):
    assert memory.main(["--gpu-memory", "80"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| size |") and "| 72B |" in out


def test_full_fine_tuning_only():
    plan = recommend("7B", gpus=8, gpu_memory_gb=80, allow_lora=False)
    assert plan.fits and not plan.lora
    rows = table(gpu_memory_gb=80, gpu_counts=(1, 2, 4, 8), allow_lora=False)
    assert not any(row["plan"].lora for row in rows)
    assert not rows[-1]["fits"] and "72B needs at least" in rows[-1]["plan"].reason


def test_transformers_generation_replaces_vllm_and_peaks_in_the_larger_phase():
    est = _est("3B", lora=True, generation="transformers", gpu_memory_gb=141)
    assert est.vllm_gib == 0 and est.generation_gib > 0
    assert est.generation_phase_gib > est.training_phase_gib  # LoRA: generation is the peak (as measured)
    held = est.total_gib - max(est.training_phase_gib, est.generation_phase_gib)
    assert est.total_gib == pytest.approx(held + est.generation_phase_gib)
    full = _est("3B", generation="transformers", gpu_memory_gb=141)
    assert full.training_phase_gib > full.generation_phase_gib  # full fine-tuning: the training phase
    with pytest.raises(ValueError, match="generation"):
        _est("3B", generation="sglang")


def test_recommend_with_transformers_generation_uses_no_vllm():
    plan = recommend("7B", gpus=1, gpu_memory_gb=141, generation="transformers")
    assert plan.fits and plan.lora  # 7B full fine-tuning did not fit one H200 (measured)
    assert "vllm_mode" not in plan.as_run_config_changes()
    assert plan.estimate.vllm_gib == 0 and "transformers" in plan.vllm_layout



def _measured_points():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "grpo_memory.json"
    return json.loads(path.read_text())["points"]


@pytest.mark.parametrize("point", _measured_points(),
                         ids=lambda p: f"{p['size']}-{p['mode']}-{p.get('generation', 'transformers')}")
def test_trainer_config_agrees_with_the_h200_measurements(point, capsys):
    """``trainer config`` for each measured (size, mode, generation) is within 15 % of the measured device peak
    (reserved + outside the allocator; 10 % with vLLM colocated, the bound issue 35 set), and says "does NOT fit"
    where the measurement ran out of memory."""
    vllm = point.get("generation") == "vllm"
    flags = ["config", "--model-size", point["size"], "--gpus", "1", "--gpu-memory", "141",
             "--lora" if point["mode"] == "lora" else "--no-lora"]
    flags += (["--generation", "vllm", "--vllm-mode", "colocate", "--vllm-gpu-memory-utilization",
               str(point["vllm_gpu_memory_utilization"])] if vllm else ["--generation", "transformers"])
    assert main(flags) == 0
    out = capsys.readouterr().out
    total = re.search(r"total\s+([\d.]+) GiB of 141 -> (fits|does NOT fit)", out)
    assert total, out
    if point["fits"]:
        measured = device_peak_gib(point)
        assert float(total.group(1)) == pytest.approx(measured, rel=0.10 if vllm else 0.15)
        assert total.group(2) == "fits"
    else:
        assert total.group(2) == "does NOT fit"
