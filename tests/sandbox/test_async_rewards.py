"""The reward functions and the sandbox environment where TRL's AsyncGRPOTrainer uses them: pickled into a spawned
child process (as ``AsyncRolloutWorker`` does with ``reward_funcs`` / ``environment_factory``), each process on its
own channel and event loop, against a real service; and the ``trainer: async_grpo`` run config."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import pickle

import pytest

from trainer.config import RunConfig
from trainer.environment import SandboxEnvFactory, python_sandbox_factory
from trainer.errors import ConfigError
from trainer.rewards import VerifierRewards

SPEC = json.dumps({"kind": "stdio", "language": "python", "extract": "fenced_code", "scoring": "fraction", "cases": [
    {"stdin": "2 3\n", "expected_stdout": "5\n"}, {"stdin": "10 -4\n", "expected_stdout": "6\n"}]})
ENV_SPEC = json.dumps({"kind": "python_io", "extract": "raw", "entry_point": "f", "timeout_s": 5,
                       "cases": [{"args": [1], "expected": 2}, {"args": [5], "expected": 6}]})
COMPLETIONS = ["```python\na, b = map(int, input().split())\nprint(a + b)\n```",   # passes both cases
               "```python\nprint(5)\n```",                                          # passes one
               "no code at all"]                                                    # malformed


def _score(funcs: list, completions: list[str]) -> list[list[float | None]]:
    """What AsyncGRPOTrainer's scoring loop does with its reward functions: all awaited together on one loop."""
    from trl.trainer.utils import is_async_callable

    async def main():
        assert all(is_async_callable(f) for f in funcs)
        kwargs = dict(prompts=["p"] * len(completions), completions=completions, completion_ids=None,
                      verification=[SPEC] * len(completions))
        try:
            return await asyncio.gather(*(f(**kwargs) for f in funcs))
        finally:
            await funcs[0].owner.aclose()

    return asyncio.run(main())


def _child_scores(payload: bytes, queue) -> None:
    funcs = pickle.loads(payload)["reward_funcs"]
    owner = funcs[0].owner
    try:
        scores = _score(funcs, COMPLETIONS)
        queue.put({"scores": scores, "same_owner": all(f.owner is owner for f in funcs),
                   "batches": len(owner.history), "history_before": 0})
    except Exception as exc:  # noqa: BLE001 - the parent asserts on what comes back
        queue.put({"error": repr(exc)})


def _child_trl_scoring(payload: bytes, queue) -> None:
    """TRL's own scoring code in the child: ``_AsyncRolloutLoop._score_group`` on one group of our completions."""
    try:
        from pathlib import Path

        from accelerate import PartialState
        from datasets import Dataset
        from transformers import AutoTokenizer
        from trl.experimental.async_grpo.async_rollout_worker import (
            RolloutGroup,
            TrainingSequence,
            _AsyncRolloutLoop,
        )

        PartialState()  # TRL's child logs through accelerate, which needs its state (its _child_main sets it up)
        kwargs = pickle.loads(payload)
        tokenizer = AutoTokenizer.from_pretrained(Path(kwargs.pop("model_dir")))
        # the tiny model's chat template is none TRL knows; tool-call parsing is not what this test is about
        tokenizer.response_schema = {"type": "object", "properties": {"content": {"type": "string"}}}
        loop = _AsyncRolloutLoop(model_name="tiny", dataset=Dataset.from_list([{"prompt": "p", "verification": SPEC}]),
                                 processing_class=tokenizer, eos_token_ids=[tokenizer.eos_token_id],
                                 rollout_buffer=None, model_version_value=None, heartbeat_value=None,
                                 failed_event=None, exception_info_queue=None, metrics_queue=None,
                                 num_generations=len(COMPLETIONS), **kwargs)
        n = len(COMPLETIONS)
        group = RolloutGroup(prompts=["p"] * n, reward_kwargs={"verification": [SPEC] * n}, completions=COMPLETIONS,
                             completions_ids=[[1]] * n,
                             completions_sequences=[[TrainingSequence([0, 1], [0, 1], [0.0, -1.0], str(i))]
                                                    for i in range(n)],
                             tool_call_counts=[0] * n, tool_failure_counts=[0] * n, model_version=0, group_id=0,
                             env_rewards=[], rollout_rewards=[])
        samples = loop._loop.run_until_complete(loop._score_group(group))
        queue.put({"names": loop.reward_func_names, "metrics": [s.metrics for s in samples],
                   "advantages": [s.advantage for s in samples]})
    except Exception as exc:  # noqa: BLE001
        import traceback

        queue.put({"error": traceback.format_exc()[-2000:] + repr(exc)})


def _child_environment(payload: bytes, queue) -> None:
    factory = pickle.loads(payload)["environment_factory"]
    try:
        env = factory()
        env.reset(verification=ENV_SPEC)
        printed = env.run_python("x = 2 + 3\nprint(x)")
        env.run_python("def f(x):\n    return x + 1")
        reward = env.get_reward()  # synchronous, as run_python is
        queue.put({"printed": printed, "reward": reward, "labels": env._labels})
    except Exception as exc:  # noqa: BLE001
        queue.put({"error": repr(exc)})


def _run_spawned(target, payload: bytes) -> dict:
    ctx = multiprocessing.get_context("spawn")  # what AsyncRolloutWorker uses
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(payload, queue))
    proc.start()
    try:
        result = queue.get(timeout=120)
    finally:
        proc.join(30)
    assert proc.exitcode == 0
    assert "error" not in result, result["error"]
    return result


def test_the_reward_functions_pickle_and_score_in_a_spawned_process(service):
    rewards = VerifierRewards(service.address)
    here = _score(rewards.reward_funcs(), COMPLETIONS)  # this process, its own channel
    assert here[1][0] == 1.0 and here[1][1] == 0.5 and here[1][2] == 0.0  # correctness: 2/2, 1/2, malformed
    assert len(rewards.history) == 1
    weighted = rewards.reward_funcs(weights=[0.2, 0.8])
    payload = pickle.dumps({"reward_funcs": weighted})  # one dumps for all kwargs, as AsyncRolloutWorker does
    assert b"history" not in payload or len(pickle.loads(payload)["reward_funcs"][0].owner.history) == 0
    child = _run_spawned(_child_scores, payload)
    assert child["same_owner"]  # both functions still share one owner: one VerifyBatch per batch
    assert child["batches"] == 1
    assert child["scores"] == [[0.2 * s for s in here[0]], [0.8 * s for s in here[1]]]
    assert len(rewards.history) == 1  # the child's batch is counted in the child


def test_trl_async_scoring_loop_scores_with_the_pickled_functions(service, tmp_path):
    """The spawned child runs TRL's ``_AsyncRolloutLoop._score_group``: the composite reward is the weighted sum of
    the verifier's scores, and the group's advantages follow from it."""
    from trainer.tiny_model import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny")
    rewards = VerifierRewards(service.address)
    plain = _score(rewards.reward_funcs(), COMPLETIONS)
    payload = pickle.dumps({"reward_funcs": rewards.reward_funcs(weights=[0.2, 0.8]), "model_dir": str(model_dir)})
    child = _run_spawned(_child_trl_scoring, payload)
    assert child["names"] == ["verifier_format", "verifier_correctness"]
    expected = [0.2 * f + 0.8 * c for f, c in zip(plain[0], plain[1], strict=True)]
    assert [m["reward"] for m in child["metrics"]] == pytest.approx(expected)
    assert expected[0] > expected[1] > expected[2]  # right, half right, malformed: the group has a signal
    assert child["advantages"][0] > 0 > child["advantages"][2]


def test_a_pickled_copy_carries_no_channel_or_statistics(service):
    rewards = VerifierRewards(service.address)
    _score(rewards.reward_funcs(), COMPLETIONS[:1])
    copy = pickle.loads(pickle.dumps(rewards))
    assert copy._clients == {} and copy._shared == {} and copy.history == [] and copy.total_wait_s == 0.0
    assert copy.target == rewards.target and copy.credentials == rewards.credentials
    assert _score(copy.reward_funcs(), COMPLETIONS[:1]) == _score(rewards.reward_funcs(), COMPLETIONS[:1])
    assert len(copy.history) == 1


def test_weights_must_match_the_components(service):
    from trainer.errors import RewardError

    with pytest.raises(RewardError, match="weight"):
        VerifierRewards(service.address).reward_funcs(weights=[1.0])


def test_the_environment_factory_pickles_and_runs_sessions_in_a_spawned_process(service):
    factory = python_sandbox_factory(service.address, max_output_chars=500)
    assert isinstance(factory, SandboxEnvFactory)
    child = _run_spawned(_child_environment, pickle.dumps({"environment_factory": factory}))
    assert child["printed"] == "5"
    assert child["reward"] == 1.0  # the rollout's cells, in order, as one program: f passes both cases
    from trainer.environment import run_id

    assert child["labels"]["run"] != run_id()  # the child's sessions carry its own run label


def test_async_grpo_run_config():
    base = dict(model="m", dataset="d.jsonl", output_dir="/tmp/o", skip_gates=True)
    with pytest.raises(ConfigError, match="vllm_mode: server"):
        RunConfig(**base, trainer="async_grpo").validate()
    config = RunConfig(**base, trainer="async_grpo", vllm_mode="server", vllm_server_port=8123)
    deviations = config.validate()
    assert any(d.startswith("trainer=async_grpo") for d in deviations)
    kwargs = config.to_async_grpo_kwargs()
    assert kwargs["vllm_server_base_url"] == "http://127.0.0.1:8123"
    assert not {"beta", "reward_weights", "loss_type", "use_vllm", "vllm_mode"} & set(kwargs)
    from trl.experimental.async_grpo import AsyncGRPOConfig

    args = AsyncGRPOConfig(**{**kwargs, "bf16": False, "use_cpu": True})  # this machine has no GPU
    assert args.num_generations == 8 and args.learning_rate == config.learning_rate
    # async-only fields pass through grpo_overrides, GRPOConfig-only ones are refused there
    RunConfig(**base, trainer="async_grpo", vllm_mode="server", grpo_overrides={"max_staleness": 2}).validate()
    with pytest.raises(ConfigError, match="max_staleness"):
        RunConfig(**base, grpo_overrides={"max_staleness": 2}).validate()
    with pytest.raises(ConfigError, match="trainer must be one of"):
        RunConfig(**base, trainer="ppo").validate()
