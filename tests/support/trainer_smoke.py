"""Shared pieces of the CPU GRPO smoke runs in the tests: prompts, a run config, the `trainer` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
OFFLINE_ENV = dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1")


def write_dataset(path: Path) -> None:
    """Four prompts, alternating a sandboxed python_io spec and a format spec."""
    io_spec = {"kind": "python_io", "extract": "raw", "entry_point": "f", "timeout_s": 5,
               "cases": [{"args": [1], "expected": 2}]}
    fmt_spec = {"kind": "format", "pattern": "<answer>.*</answer>"}
    rows = [{"prompt": [{"role": "user", "content": f"Write f(x) returning x + 1. ({i})"}],
             "verification": json.dumps(io_spec if i % 2 == 0 else fmt_spec)} for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def tiny_run(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A smoke run's inputs under ``tmp_path``: the tiny model, the four prompts, and the run's output folder."""
    from trainer.tiny_model import build_tiny_model

    data = tmp_path / "prompts.jsonl"
    write_dataset(data)
    return build_tiny_model(tmp_path / "model"), data, tmp_path / "run"


def write_smoke_config(path: Path, model: Path, data: Path, out: Path, verifier: str, **changes: Any) -> Path:
    """A CPU run config of a few steps on the tiny model; ``changes`` override or add settings."""
    config = {
        "model": str(model), "dataset": str(data), "output_dir": str(out), "verifier": verifier,
        "use_cpu": True, "bf16": False, "generation": "transformers", "max_steps": 2, "logging_steps": 1,
        "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "max_completion_length": 16,
        "gradient_checkpointing": False, "save_steps": 1000, "learning_rate": 1e-5,
        "skip_gates": True,  # a random model has no base rate to gate on; the override is recorded
        "deviation_reasons": {"learning_rate": "a 0.1M-parameter random model in a smoke test"},
        **changes,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def trainer_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **OFFLINE_ENV, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "trainer.cli", *args], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env=env, check=False)
