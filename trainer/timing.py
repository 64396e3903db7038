"""How much of each training step is spent waiting for rewards.

``RewardWaitCallback`` brackets every optimizer step and reads how long the
verifier calls of that step took; at the end of training it writes
``reward_timing.json`` (per step: wall time, reward wait, share) into the
output directory.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from transformers import TrainerCallback

from trainer.rewards import VerifierRewards


class RewardWaitCallback(TrainerCallback):
    def __init__(self, rewards: VerifierRewards):
        self.rewards = rewards
        self.steps: list[dict[str, float]] = []
        self._t0 = 0.0
        self._w0 = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        self._t0 = time.perf_counter()
        self._w0 = self.rewards.total_wait_s

    def on_step_end(self, args, state, control, **kwargs):
        step_s = time.perf_counter() - self._t0
        wait_s = self.rewards.total_wait_s - self._w0
        self.steps.append({"step": state.global_step, "step_s": step_s, "reward_wait_s": wait_s,
                           "share": wait_s / step_s if step_s > 0 else 0.0})

    def summary(self) -> dict[str, float]:
        if not self.steps:
            return {}
        shares = [s["share"] for s in self.steps]
        return {
            "steps": len(self.steps),
            "mean_step_s": statistics.fmean(s["step_s"] for s in self.steps),
            "mean_reward_wait_s": statistics.fmean(s["reward_wait_s"] for s in self.steps),
            "mean_share": statistics.fmean(shares),
            "max_share": max(shares),
        }

    def on_train_end(self, args, state, control, **kwargs):
        path = Path(args.output_dir) / "reward_timing.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"summary": self.summary(), "steps": self.steps}, indent=2))
