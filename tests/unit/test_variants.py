"""GRPO variant presets: each is TRL 1.16's, recorded as a deviation, accepted by GRPOConfig, and trains."""

from __future__ import annotations

import random
import re

import pytest

from trainer.config import RunConfig, add_run_flags, flags_to_changes
from trainer.errors import ConfigError
from trainer.variants import VARIANTS, check_overrides, get_variant

CPU = dict(use_cpu=True, bf16=False, generation="transformers")


def grpo_config(config: RunConfig):
    """GRPOConfig from a run config, as trainer/train.py builds it."""
    from trl import GRPOConfig

    kwargs = config.to_grpo_kwargs()
    if "activation_checkpointing" in GRPOConfig.__dataclass_fields__:
        kwargs["activation_checkpointing"] = kwargs.pop("gradient_checkpointing")
    return GRPOConfig(**kwargs)


def test_registry_names_trl_fields_and_papers():
    from trl import GRPOConfig

    fields = set(GRPOConfig.__dataclass_fields__)
    assert {"dr_grpo", "dapo", "gspo", "bnpo"} <= set(VARIANTS)
    for name, variant in VARIANTS.items():
        assert variant.name == name and variant.description and variant.reason
        assert re.fullmatch(r"\d{4}\.\d{5}", variant.paper.arxiv), variant.paper
        assert variant.grpo_overrides and set(variant.grpo_overrides) <= fields, name
    with pytest.raises(TypeError):
        VARIANTS["dapo"].grpo_overrides["epsilon"] = 0.1  # presets are read-only


def test_unknown_variant_lists_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown variant 'dapo2'; valid: .*dr_grpo.*dapo.*gspo"):
        get_variant("dapo2")
    with pytest.raises(ConfigError, match="valid: "):
        RunConfig(variant="dapo2").validate()


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_preset_gives_a_grpo_config_trl_accepts(name, tmp_path):
    variant = get_variant(name)
    config = RunConfig(**CPU, variant=name, output_dir=str(tmp_path))
    deviations = config.validate()
    recorded = [d for d in deviations if d.startswith(f"variant={name} ")]
    assert len(recorded) == 1 and variant.reason in recorded[0] and variant.paper.arxiv in recorded[0]
    args = grpo_config(config)
    for key, value in variant.grpo_overrides.items():
        assert getattr(args, key) == value, key
    # what the preset does not set stays the recipe's
    assert (args.learning_rate, args.beta, args.num_generations) == (5e-7, 0.01, 8)


def test_a_preset_sets_the_loss_type_and_refuses_a_contradicting_one():
    assert RunConfig(variant="dapo").to_grpo_kwargs()["loss_type"] == "dapo"
    assert RunConfig(variant="gspo").to_grpo_kwargs()["loss_type"] == "grpo"
    assert RunConfig(variant="gdpo").to_grpo_kwargs()["loss_type"] == "grpo"  # gdpo keeps the recipe's loss
    RunConfig(variant="dapo", loss_type="dapo").validate()  # the same value is fine
    with pytest.raises(ConfigError, match=r"variant=dapo sets loss_type=dapo.*loss_type=bnpo"):
        RunConfig(variant="dapo", loss_type="bnpo").validate()


def test_grpo_overrides_apply_last_and_are_recorded_with_reasons():
    config = RunConfig(variant="dapo", grpo_overrides={"epsilon_high": 0.3, "top_entropy_quantile": 0.2},
                       deviation_reasons={"grpo_overrides.epsilon_high": "clip-higher still binding"})
    deviations = config.validate()
    assert "grpo_overrides.epsilon_high=0.3; reason: clip-higher still binding" in deviations
    assert "grpo_overrides.top_entropy_quantile=0.2" in deviations
    kwargs = config.to_grpo_kwargs()
    assert (kwargs["epsilon_high"], kwargs["top_entropy_quantile"], kwargs["loss_type"]) == (0.3, 0.2, "dapo")
    assert RunConfig().validate() == []  # no variant, no overrides: no deviation


def test_grpo_overrides_are_checked_against_trl():
    with pytest.raises(ConfigError, match=r"epsilon_hi \(did you mean epsilon_high"):
        RunConfig(grpo_overrides={"epsilon_hi": 0.28}).validate()
    with pytest.raises(ConfigError, match="learning_rate is a run config setting of its own"):
        RunConfig(grpo_overrides={"learning_rate": 1e-6}).validate()
    with pytest.raises(ConfigError, match="use_vllm"):
        check_overrides({"use_vllm": False}, owned={"use_vllm"})


def test_variant_flag_and_yaml(tmp_path):
    import argparse

    parser = argparse.ArgumentParser()
    add_run_flags(parser)
    config = RunConfig().override(flags_to_changes(parser.parse_args(["--variant", "dr_grpo"])))
    assert config.variant == "dr_grpo" and config.to_grpo_kwargs()["scale_rewards"] == "none"
    path = tmp_path / "run.yaml"
    path.write_text("variant: gspo\ngrpo_overrides:\n  num_iterations: 2\n")
    config = RunConfig.from_yaml(path)
    kwargs = config.to_grpo_kwargs()
    assert (kwargs["importance_sampling_level"], kwargs["num_iterations"]) == ("sequence", 2)
    path.write_text("grpo_overrides: [epsilon_high]\n")
    with pytest.raises(ConfigError, match="grpo_overrides must be a mapping"):
        RunConfig.from_yaml(path)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from trainer.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_preset_trains_a_step_on_cpu(name, tiny_model, tmp_path):
    """One GRPO step per preset with local rewards (the verifier-backed run is in test_diagnose.py)."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    rng = random.Random(0)

    def format_reward(completions, **kwargs):
        return [rng.random() for _ in completions]

    def correctness_reward(completions, **kwargs):
        return [float(rng.random() > 0.5) for _ in completions]

    config = RunConfig(**CPU, variant=name, output_dir=str(tmp_path), max_steps=1, logging_steps=1,
                       per_device_train_batch_size=8, gradient_accumulation_steps=1, max_completion_length=8,
                       gradient_checkpointing=False, save_steps=1000, learning_rate=1e-5)
    config.validate()
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": f"question {i}"}]} for i in range(4)])
    trainer = GRPOTrainer(model=str(tiny_model), reward_funcs=[format_reward, correctness_reward],
                          args=grpo_config(config), train_dataset=dataset,
                          processing_class=AutoTokenizer.from_pretrained(tiny_model))
    trainer.train()
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 1 and logged[0]["frac_reward_zero_std"] < 1.0 and "loss" in logged[0]
    masks = get_variant(name).grpo_overrides.get("mask_truncated_completions", False)
    if masks and logged[0]["completions/clipped_ratio"] == 1:
        assert logged[0]["grad_norm"] == 0.0  # every completion truncated and masked: nothing to learn from
    else:
        assert logged[0]["entropy"] > 0 and logged[0]["grad_norm"] > 0
