"""Prepares a CPU smoke run of `trainer train`: a tiny random model, a prompt set, a run config.

    python examples/grpo_cpu/prepare.py --out /tmp/grpo-cpu --verifier 127.0.0.1:50051
    trainer train --config /tmp/grpo-cpu/run.yaml

The prompts ask for small Python functions checked by the verifier's python_io
kind in the Docker sandbox (code extracted raw, so every completion reaches the
sandbox) and for a tagged answer checked by the format kind. The model is
random: rewards are near zero; the run shows the plumbing and how long each step
waits for rewards (reward_timing.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from trainer.tiny_model import build_tiny_model

TASKS = [
    ("inc", "returns x + 1", [[1], [5]], [2, 6]),
    ("double", "returns 2 * x", [[3], [0]], [6, 0]),
    ("neg", "returns -x", [[4], [-2]], [-4, 2]),
    ("sq", "returns x * x", [[3], [-3]], [9, 9]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--verifier", default="127.0.0.1:50051")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    model = build_tiny_model(args.out / "model")
    rows = []
    for name, what, inputs, outputs in TASKS:
        spec = {"kind": "python_io", "extract": "raw", "entry_point": name, "timeout_s": 5,
                "cases": [{"args": a, "expected": e} for a, e in zip(inputs, outputs, strict=False)]}
        rows.append({"prompt": [{"role": "user", "content": f"Write a Python function {name}(x) that {what}."}],
                     "verification": json.dumps(spec)})
        rows.append({"prompt": [{"role": "user", "content": f"What does {name}(2) return? Answer in <answer> tags."}],
                     "verification": json.dumps({"kind": "format", "pattern": r".*<answer>.+</answer>.*"})})
    (args.out / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = {
        "model": str(model), "dataset": str(args.out / "prompts.jsonl"), "output_dir": str(args.out / "run"),
        "verifier": args.verifier, "use_cpu": True, "bf16": False, "generation": "transformers",
        "max_steps": args.steps, "logging_steps": 1, "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 1, "max_completion_length": 48, "gradient_checkpointing": False,
        "save_steps": 100000, "learning_rate": 1e-5,
        # A random model never succeeds, so the base-rate gate would (rightly) send it to SFT: this run only
        # shows the plumbing, and says so in its metadata.
        "skip_gates": True,
        "deviation_reasons": {
            "skip_gates": "plumbing smoke run with a random model; its base rate is zero by construction",
            "learning_rate": "a random 0.1M-parameter model in a smoke run",
            "gradient_accumulation_steps": "one prompt group per step keeps the CPU run short",
            "generation": "no GPU, so no vLLM",
        },
    }
    (args.out / "run.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    print(f"wrote {args.out}/run.yaml; run: trainer train --config {args.out}/run.yaml")


if __name__ == "__main__":
    main()
