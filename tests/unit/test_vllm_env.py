"""What ``trainer train`` / ``trainer sample`` set up for vLLM by themselves, checked without a GPU.

The vLLM path itself needs a GPU (docs/e2e-vllm-run.md has the H200 run); here: the environment that colocated
vLLM needs, the GRPOConfig values the run config hands TRL, the e2e pipeline's choice of generation, and the
reward-timing summary's quantiles.
"""

from __future__ import annotations

import importlib.util

import pytest

from trainer.config import RunConfig
from trainer.timing import _percentile
from trainer.vllm_env import FLASHINFER_SAMPLER, colocate_environment, sampler_environment

NO_FLASHINFER = importlib.util.find_spec("flashinfer") is None


def test_colocate_environment_sets_only_what_is_missing():
    env = {"RANK": "3", "MASTER_PORT": "29999"}
    set_here = colocate_environment(env)
    assert env["RANK"] == "3" and env["MASTER_PORT"] == "29999"  # a launcher's values win
    assert env["LOCAL_RANK"] == "0" and env["WORLD_SIZE"] == "1" and env["MASTER_ADDR"] == "127.0.0.1"
    assert "RANK" not in set_here and "MASTER_PORT" not in set_here
    assert set_here["WORLD_SIZE"] == "1"


def test_colocate_environment_picks_a_free_port():
    env: dict[str, str] = {}
    colocate_environment(env)
    assert 0 < int(env["MASTER_PORT"]) < 65536


@pytest.mark.skipif(not NO_FLASHINFER, reason="FlashInfer is installed here: vLLM may use its sampler")
def test_flashinfer_sampler_off_where_flashinfer_is_missing():
    env: dict[str, str] = {}
    assert sampler_environment(env) == {FLASHINFER_SAMPLER: "0"} and env[FLASHINFER_SAMPLER] == "0"
    env = {FLASHINFER_SAMPLER: "1"}
    assert sampler_environment(env) == {} and env[FLASHINFER_SAMPLER] == "1"  # an explicit choice stays


def test_run_config_hands_colocate_settings_to_trl():
    config = RunConfig(model="m", dataset="d.jsonl", vllm_gpu_memory_utilization=0.25, vllm_enable_sleep_mode=True)
    kwargs = config.to_grpo_kwargs()
    assert kwargs["use_vllm"] is True and kwargs["vllm_mode"] == "colocate"
    assert kwargs["vllm_gpu_memory_utilization"] == 0.25 and kwargs["vllm_enable_sleep_mode"] is True
    kwargs = RunConfig(model="m", dataset="d.jsonl", generation="transformers").to_grpo_kwargs()
    assert kwargs["use_vllm"] is False and "vllm_enable_sleep_mode" not in kwargs


def test_pipeline_generates_with_vllm_on_a_gpu_and_transformers_on_a_cpu(tmp_path):
    from examples.e2e.pipeline import PipelineConfig, run_config

    gpu = run_config(PipelineConfig(state_dir=tmp_path), "127.0.0.1:1")
    assert gpu.generation == "vllm" and gpu.vllm_mode == "colocate" and gpu.vllm_enable_sleep_mode is False
    assert not any(d.startswith("generation=") for d in gpu.validate())  # the recipe's generation: no deviation
    cpu = run_config(PipelineConfig(state_dir=tmp_path, cpu=True), "127.0.0.1:1")
    assert cpu.generation == "transformers"
    assert any(d.startswith("generation=transformers") and "reason:" in d for d in cpu.validate())
    explicit = run_config(PipelineConfig(state_dir=tmp_path, generation="transformers"), "127.0.0.1:1")
    assert explicit.generation == "transformers"


def test_percentile_is_a_value_that_occurred():
    values = [float(v) for v in range(1, 101)]
    assert _percentile(values, 0.95) == 95.0 and _percentile(values, 0.5) == 50.0
    assert _percentile([0.3], 0.95) == 0.3 and _percentile([1.0, 9.0], 0.95) == 9.0
