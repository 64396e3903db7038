"""End to end on CPU: TRL's GRPOTrainer with ``environment_factory=python_sandbox_factory(...)``, a tiny random
model whose chat template makes every first assistant turn a ``run_python`` call (a random model would never
write one), the calls run in real sandbox sessions, and the rollouts' rewards from ``get_reward`` (the code the
rollout ran, verified with the row's python_io spec) flowing back into the trainer's logs."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from support.sandboxes import stray_sandboxes
from support.service import TEST_CONFIG, RunningService
from support.trainer_smoke import OFFLINE_ENV

pytestmark = pytest.mark.docker

SPEC = {"kind": "python_io", "extract": "raw", "entry_point": "f", "timeout_s": 5,
        "cases": [{"args": [1], "expected": 2}, {"args": [5], "expected": 6}]}
RIGHT = "def f(x):\n    return x + 1\nprint(f(1))"
WRONG = "def f(x):\n    return x * 2\nprint(f(1))"


@pytest.fixture(scope="module")
def svc(docker_ready):
    running = RunningService(replace(TEST_CONFIG, session_spares=8, max_sessions=32, max_concurrency=2))
    yield running
    running.close()
    assert not stray_sandboxes("docker")  # (another service of the test run, up, keeps its own warm pool)


def test_grpo_with_a_python_sandbox_environment(svc, tmp_path, monkeypatch):
    for key, value in OFFLINE_ENV.items():
        monkeypatch.setenv(key, value)
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from trainer.environment import PythonSandboxEnv, python_sandbox_factory
    from trainer.tiny_model import FORCED_TOOL_RESPONSE, FORCED_TOOL_TEMPLATE, build_tiny_model

    path = build_tiny_model(tmp_path / "model")
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = FORCED_TOOL_TEMPLATE
    tokenizer.response_template = FORCED_TOOL_RESPONSE
    model = AutoModelForCausalLM.from_pretrained(path)
    rows = [{"prompt": [{"role": "user", "content": code}], "verification": json.dumps(SPEC)}
            for code in (RIGHT, WRONG)]
    args = GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, use_vllm=False, report_to="none",
                      num_generations=8, per_device_train_batch_size=8, max_completion_length=16, max_steps=2,
                      logging_steps=1, save_strategy="no", learning_rate=1e-5, seed=0)
    trainer = GRPOTrainer(model=model, args=args, processing_class=tokenizer, train_dataset=Dataset.from_list(rows),
                          environment_factory=python_sandbox_factory(svc.address))
    trainer.train()

    # Every rollout's forced call ran in a sandbox session: 8 rollouts a step, 2 steps.
    manager = svc.app.sessions
    assert manager.cells_by_status["ok"] >= 16
    assert manager.opened_total >= 16
    envs = trainer._environment_pool[None]
    assert all(isinstance(e, PythonSandboxEnv) for e in envs) and len(envs) == 8
    assert all(e._cells and e._cells[-1][0] in (RIGHT, WRONG) for e in envs)
    # The rewards came back through get_reward: one step all right (1.0), the other all wrong.
    logged = [h["rewards/PythonSandboxEnv/mean"] for h in trainer.state.log_history
              if "rewards/PythonSandboxEnv/mean" in h]
    assert len(logged) == 2
    assert max(logged) == pytest.approx(1.0) and min(logged) < 0.5
    # The tool's result (what the cell printed) reached the model's conversation.
    tool_text = envs[0].run_python("print(f(41))")
    assert tool_text.strip() in ("42", "82")
