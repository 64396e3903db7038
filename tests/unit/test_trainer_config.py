"""The recipe as a validated config: every refusal and every recorded deviation."""

from __future__ import annotations

import pytest

from trainer.config import RunConfig
from trainer.errors import ConfigError

CPU = dict(use_cpu=True, bf16=False, generation="transformers")


def test_the_reference_recipe_has_no_deviation():
    config = RunConfig()
    assert config.validate() == []
    kwargs = config.to_grpo_kwargs()
    expected = dict(use_vllm=True, vllm_mode="colocate", num_generations=8, learning_rate=5e-7, beta=0.01,
                    per_device_train_batch_size=8, gradient_accumulation_steps=4, bf16=True, logging_steps=10,
                    seed=3407, loss_type="grpo")
    assert {k: kwargs[k] for k in expected} == expected


def test_trl_defaults_that_differ_are_set_explicitly():
    from trl import GRPOConfig

    trl_default = GRPOConfig(output_dir="/tmp/x", use_cpu=True, bf16=False)
    ours = GRPOConfig(**RunConfig(**CPU, output_dir="/tmp/x").to_grpo_kwargs())
    assert (trl_default.loss_type, trl_default.beta, trl_default.learning_rate) == ("dapo", 0.0, 1e-6)
    assert (ours.loss_type, ours.beta, ours.learning_rate, ours.num_generations) == ("grpo", 0.01, 5e-7, 8)
    assert ours.reward_weights == [0.2, 0.8]


def test_fewer_than_eight_generations_is_refused_unless_overridden():
    with pytest.raises(ConfigError, match=r"below the recipe's floor of 8.*allow_fewer_generations"):
        RunConfig(num_generations=4).validate()
    deviations = RunConfig(num_generations=4, allow_fewer_generations=True).validate()
    assert any("num_generations=4 < 8" in d for d in deviations)
    with pytest.raises(ConfigError, match="at least 2"):
        RunConfig(num_generations=1, allow_fewer_generations=True).validate()


@pytest.mark.parametrize("rewards, message", [
    (["correctness"], "missing: format"),
    (["format"], "missing: correctness"),
    (["format", "correctness", "style"], "unknown reward component"),
])
def test_reward_list_needs_format_and_correctness(rewards, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig(rewards=rewards, reward_weights=[1.0] * len(rewards)).validate()


def test_reward_weights_must_match_and_be_positive():
    with pytest.raises(ConfigError, match="2 rewards"):
        RunConfig(reward_weights=[1.0]).validate()
    with pytest.raises(ConfigError, match="positive"):
        RunConfig(reward_weights=[0.0, 1.0]).validate()


def test_batch_divisibility():
    with pytest.raises(ConfigError, match="divisible by num_generations"):
        RunConfig(per_device_train_batch_size=3, gradient_accumulation_steps=1).validate()
    # 2 x 4 x 1 = 8: fine, but recorded as a departure from the recipe's batch shape
    deviations = RunConfig(per_device_train_batch_size=2).validate()
    assert any("per_device_train_batch_size=2" in d for d in deviations)
    with pytest.raises(ConfigError, match="divisible"):
        RunConfig(per_device_train_batch_size=2, gradient_accumulation_steps=1, num_gpus=3,
                  vllm_mode="server").validate()


def test_cpu_rules():
    with pytest.raises(ConfigError, match="bf16"):
        RunConfig(use_cpu=True, generation="transformers").validate()
    with pytest.raises(ConfigError, match="vLLM generation needs a GPU"):
        RunConfig(use_cpu=True, bf16=False).validate()
    assert "generation=transformers" in RunConfig(**CPU).validate()[0]


def test_settled_ranges_are_deviations_with_reasons():
    deviations = RunConfig(learning_rate=5e-6, beta=0.0, loss_type="dapo",
                           deviation_reasons={"learning_rate": "135M model learns slowly"}).validate()
    assert "learning_rate=5e-06 outside the settled range [1e-07, 1e-06]; reason: 135M model learns slowly" \
        in deviations
    assert any(d.startswith("beta=0 outside") and "reference model is not loaded" in d for d in deviations)
    assert any("loss_type=dapo" in d for d in deviations)


def test_vllm_mode_against_gpu_count():
    assert any("colocate on 8 GPUs" in d for d in RunConfig(num_gpus=8).validate())
    assert any("server with one training GPU" in d for d in RunConfig(vllm_mode="server").validate())
    assert RunConfig(num_gpus=8, vllm_mode="server").validate() == []
    with pytest.raises(ConfigError, match="vllm_mode must be one of"):
        RunConfig(vllm_mode="remote").validate()


def test_yaml_and_flag_overrides(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("num_generations: 16\nlearning_rate: 3.0e-7\nrewards: [format, correctness]\n")
    config = RunConfig.from_yaml(path)
    assert (config.num_generations, config.learning_rate) == (16, 3e-7)
    config = config.override({"num_generations": "8", "bf16": "false", "reward_weights": "0.5,1"})
    assert (config.num_generations, config.bf16, config.reward_weights) == (8, False, [0.5, 1.0])
    path.write_text("num_generation: 16\n")
    with pytest.raises(ConfigError, match="unknown setting"):
        RunConfig.from_yaml(path)
    path.write_text("num_generations: many\n")
    with pytest.raises(ConfigError, match="must be an integer"):
        RunConfig.from_yaml(path)
