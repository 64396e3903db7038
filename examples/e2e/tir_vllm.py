"""Tool-integrated GRPO with vLLM generation: TRL's ``GRPOTrainer(use_vllm=True, vllm_mode="colocate",
environment_factory=python_sandbox_factory(...))``, every tool call run in a sandbox session of a verifier service
started here (bwrap backend: the GPU machine has no Docker), rewards from the environment's ``get_reward``.

The model is a tiny random Qwen2 whose chat template makes every first assistant turn a ``run_python`` call of the
user's text (a random model would never write one): what this measures is the plumbing and its cost (sessions
opened, cells run, time per tool call, the step time with and without the tool loop), not learning.

    bash examples/e2e/gpu_run.sh ...   # sets up the carried environment; then, in the same call:
    python -m examples.e2e.tir_vllm --bwrap "$BWRAP" --out "$OUT" --steps 20

Writes ``tir-vllm.json`` (per-step times, rewards, the service's session metrics) into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
import urllib.request
from pathlib import Path

from verifier_service.testing import ServedProcess, free_port

SPEC = {"kind": "python_io", "extract": "raw", "entry_point": "f", "timeout_s": 5,
        "cases": [{"args": [1], "expected": 2}, {"args": [5], "expected": 6}]}
RIGHT = "def f(x):\n    return x + 1\nprint(f(1))"
WRONG = "def f(x):\n    return x * 2\nprint(f(1))"


def metrics(port: int) -> dict[str, float]:
    """The service's session metrics (Prometheus text), summed over labels."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    found: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(r"^(rlvr_session\w*|rlvr_cell\w*)(\{[^}]*\})? ([0-9.eE+-]+)$", line)
        if m:
            key = m.group(1) + (m.group(2) or "")
            found[key] = float(m.group(3))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bwrap", default="bwrap")
    parser.add_argument("--out", default=".")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--generations", type=int, default=16)
    args = parser.parse_args()

    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from trainer.environment import python_sandbox_factory
    from trainer.tiny_model import FORCED_TOOL_RESPONSE, FORCED_TOOL_TEMPLATE, build_tiny_model

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    metrics_port = free_port()
    served = ServedProcess("--sandbox-backend", "bwrap", "--bwrap-path", args.bwrap, "--max-concurrency", "8",
                           "--session-spares", str(args.generations), "--max-sessions", "128",
                           "--metrics-port", str(metrics_port), log_path=out / "service.log")
    started = time.monotonic()
    served.start(timeout=180)
    service_start_s = time.monotonic() - started
    try:
        work = Path(tempfile.mkdtemp(prefix="tir-vllm-"))
        path = build_tiny_model(work / "model", hidden_size=256, max_position_embeddings=4096)
        tokenizer = AutoTokenizer.from_pretrained(path)
        tokenizer.chat_template = FORCED_TOOL_TEMPLATE
        tokenizer.response_template = FORCED_TOOL_RESPONSE
        tokenizer.save_pretrained(path)  # vLLM reads the template from the folder
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16)
        rows = [{"prompt": [{"role": "user", "content": code}], "verification": json.dumps(SPEC)}
                for code in (RIGHT, WRONG)] * 4
        config = GRPOConfig(output_dir=str(work / "out"), bf16=True, use_vllm=True, vllm_mode="colocate",
                            vllm_gpu_memory_utilization=0.3, report_to="none", num_generations=args.generations,
                            per_device_train_batch_size=args.generations, max_completion_length=32,
                            max_steps=args.steps, logging_steps=1, save_strategy="no", learning_rate=1e-5, seed=0)
        steps: list[float] = []

        class StepTimes(TrainerCallback):
            def on_step_begin(self, *_a, **_k):
                self.t = time.monotonic()

            def on_step_end(self, *_a, **_k):
                steps.append(time.monotonic() - self.t)

        trainer = GRPOTrainer(model=model, args=config, processing_class=tokenizer,
                              train_dataset=Dataset.from_list(rows),
                              environment_factory=python_sandbox_factory(served.address), callbacks=[StepTimes()])
        trainer.train()
        envs = trainer._environment_pool[None]
        probe = []
        for _ in range(20):  # one tool call's round trip, outside the trainer
            t = time.monotonic()
            envs[0].run_python("1 + 1")
            probe.append(time.monotonic() - t)
        probe.sort()
        logged = [h for h in trainer.state.log_history if "rewards/PythonSandboxEnv/mean" in h]
        result = {
            "steps": len(steps), "step_s": steps, "service_start_s": service_start_s,
            "reward_mean_by_step": [h["rewards/PythonSandboxEnv/mean"] for h in logged],
            "tools_calls_by_step": [h.get("tools/call_frequency") for h in logged],
            "tool_call_p50_ms": probe[len(probe) // 2] * 1000, "tool_call_max_ms": probe[-1] * 1000,
            "environments": len(envs), "last_cells": [e._cells[-1] if e._cells else None for e in envs],
            "service_metrics": metrics(metrics_port),
            "log_history_tail": trainer.state.log_history[-3:],
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        }
        (out / "tir-vllm.json").write_text(json.dumps(result, indent=2, default=str))
        print(json.dumps({k: v for k, v in result.items() if k not in ("log_history_tail", "service_metrics")},
                         default=str))
    finally:
        served.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
