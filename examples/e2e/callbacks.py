"""TrainerCallbacks of the e2e run: a wall-clock training budget, and a per-step metrics log.

``TrainBudget`` stops training cleanly (``control.should_training_stop``) before the next step would cross the
budget, judged by the slowest step so far, so that the GPU call's 600 s limit is never hit mid-step.
``StepLog`` appends each logged step's metrics to a JSONL file as it happens (kept even if the run dies).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from transformers import TrainerCallback

# TRL 1.16's names of what the report plots, per logged step.
STEP_METRICS = {
    "reward": "reward",
    "format": "rewards/verifier_format/mean",
    "correctness": "rewards/verifier_correctness/mean",
    "completion_length": "completions/mean_length",
    "zero_variance_groups": "frac_reward_zero_std",
}


class TrainBudget(TrainerCallback):
    def __init__(self, budget_s: float, margin: float = 1.3):
        self.budget_s = budget_s
        self.margin = margin
        self.started = 0.0
        self._step_t0 = 0.0
        self.slowest_step_s = 0.0
        self.stopped_at_step: int | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = time.monotonic()

    def on_step_begin(self, args, state, control, **kwargs):
        self._step_t0 = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        now = time.monotonic()
        self.slowest_step_s = max(self.slowest_step_s, now - self._step_t0)
        if now - self.started + self.margin * self.slowest_step_s > self.budget_s:
            control.should_training_stop = True
            self.stopped_at_step = state.global_step
        return control

    def summary(self) -> dict:
        return {"budget_s": self.budget_s, "elapsed_s": time.monotonic() - self.started if self.started else 0.0,
                "slowest_step_s": self.slowest_step_s, "stopped_by_budget_at_step": self.stopped_at_step}


class StepLog(TrainerCallback):
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "reward" in logs:
            row = {"step": state.global_step, **{k: logs.get(v) for k, v in STEP_METRICS.items()},
                   **{k: v for k, v in logs.items() if isinstance(v, (int, float))}}
            with self.path.open("a") as f:
                f.write(json.dumps(row) + "\n")
