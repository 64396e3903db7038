"""`trainer train` end to end on CPU: a tiny random model, GRPO, rewards from the real verifier service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trainer.tiny_model import build_tiny_model

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parent.parent


def write_dataset(path: Path) -> None:
    io_spec = {"kind": "python_io", "extract": "raw", "entry_point": "f", "timeout_s": 5,
               "cases": [{"args": [1], "expected": 2}]}
    fmt_spec = {"kind": "format", "pattern": "<answer>.*</answer>"}
    rows = []
    for i in range(4):
        spec = io_spec if i % 2 == 0 else fmt_spec
        rows.append({"prompt": [{"role": "user", "content": f"Write f(x) returning x + 1. ({i})"}],
                     "verification": json.dumps(spec)})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_trainer_train_runs_grpo_against_the_verifier(service, tmp_path):
    model = build_tiny_model(tmp_path / "model")
    data = tmp_path / "prompts.jsonl"
    write_dataset(data)
    out = tmp_path / "run"
    config = {
        "model": str(model), "dataset": str(data), "output_dir": str(out), "verifier": service.address,
        "use_cpu": True, "bf16": False, "generation": "transformers", "max_steps": 2, "logging_steps": 1,
        "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "max_completion_length": 16,
        "gradient_checkpointing": False, "save_steps": 1000, "learning_rate": 1e-5,
        "deviation_reasons": {"learning_rate": "a 0.1M-parameter random model in a smoke test"},
        "skip_gates": True,  # a random model has no base rate to gate on; the override is recorded
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_HUB_DISABLE_TELEMETRY="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "trainer.cli", "train", "--config", str(path)], capture_output=True,
                          text=True, timeout=600, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads((out / "run.json").read_text())
    assert any("learning_rate=1e-05" in d and "smoke test" in d for d in record["deviations"])
    assert record["config"]["skip_gates"] is True and record["gates"]["skipped"] is True
    assert any(d.startswith("skip_gates=true") for d in record["deviations"])
    steps = [h for h in record["log_history"] if "reward" in h]
    assert len(steps) == 2
    for h in steps:
        assert "rewards/verifier_format/mean" in h and "rewards/verifier_correctness/mean" in h
        assert h["verifier/infra_errors"] == 0.0
        assert h["verifier/verdict/INFRA_ERROR"] == 0.0
    assert record["verifier_batches"] >= 2 and record["verifier_infra_errors"] == 0
    timing = json.loads((out / "reward_timing.json").read_text())
    assert timing["summary"]["steps"] == 2
    assert 0.0 < timing["summary"]["mean_share"] < 1.0
    assert "reward wait:" in proc.stderr
