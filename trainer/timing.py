"""How much of each training step is spent waiting for rewards.

``RewardWaitCallback`` brackets every optimizer step and reads how long the
verifier calls of that step took; at the end of training it writes
``reward_timing.json`` (per step: wall time, reward wait, share) into the
output directory. With a shadow reward (``VerifierRewards(shadow=...)``) each
step also records the in-process reward's time on the same batches; the shares
are taken of the step without the shadow's time (the step as it would run
without the measurement).
"""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

from transformers import TrainerCallback

from trainer.rewards import VerifierRewards


def _percentile(values: list[float], q: float) -> float:
    """The q-quantile by the nearest-rank method (a value that occurred)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


class RewardWaitCallback(TrainerCallback):
    def __init__(self, rewards: VerifierRewards):
        self.rewards = rewards
        self.steps: list[dict[str, float]] = []
        self._t0 = 0.0
        self._w0 = 0.0
        self._s0 = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        self._t0 = time.perf_counter()
        self._w0 = self.rewards.total_wait_s
        self._s0 = getattr(self.rewards, "total_shadow_s", 0.0)
        self._n0 = getattr(self.rewards, "shadow_runs", 0)
        self._h0 = len(getattr(self.rewards, "history", []))

    def on_step_end(self, args, state, control, **kwargs):
        shadow_s = getattr(self.rewards, "total_shadow_s", 0.0) - self._s0
        step_s = time.perf_counter() - self._t0 - shadow_s
        wait_s = self.rewards.total_wait_s - self._w0
        entry = {"step": state.global_step, "step_s": step_s, "reward_wait_s": wait_s,
                 "share": wait_s / step_s if step_s > 0 else 0.0}
        batches = getattr(self.rewards, "history", [])[self._h0:]
        if batches:  # the service's timing of this step's slowest sample (queueing for a sandbox, running)
            for name in ("service_max_queue_s", "service_max_run_s", "service_max_total_s"):
                entry[name] = max(getattr(b, name, 0.0) for b in batches)
        if getattr(self.rewards, "shadow_runs", 0) > self._n0:  # the shadow ran on this step's batches
            entry.update(shadow_reward_s=shadow_s, shadow_share=shadow_s / step_s if step_s > 0 else 0.0)
        self.steps.append(entry)

    def summary(self) -> dict[str, float]:
        if not self.steps:
            return {}
        shares = [s["share"] for s in self.steps]
        shadowed = [s for s in self.steps if "shadow_reward_s" in s]
        return {
            "steps": len(self.steps),
            "mean_step_s": statistics.fmean(s["step_s"] for s in self.steps),
            "mean_reward_wait_s": statistics.fmean(s["reward_wait_s"] for s in self.steps),
            "mean_share": statistics.fmean(shares),
            "max_share": max(shares),
            "median_share": statistics.median(shares),
            "p95_share": _percentile(shares, 0.95),
            "p95_reward_wait_s": _percentile([s["reward_wait_s"] for s in self.steps], 0.95),
            "max_reward_wait_s": max(s["reward_wait_s"] for s in self.steps),
            "median_step_s": statistics.median(s["step_s"] for s in self.steps),
            **({"shadow_steps": len(shadowed),
                "mean_shadow_reward_s": statistics.fmean(s["shadow_reward_s"] for s in shadowed),
                "mean_shadow_share": statistics.fmean(s["shadow_share"] for s in shadowed),
                "max_shadow_share": max(s["shadow_share"] for s in shadowed),
                # the remote wait on the same (shadowed) steps, for a side-by-side comparison
                "mean_reward_wait_s_shadowed": statistics.fmean(s["reward_wait_s"] for s in shadowed)}
               if shadowed else {}),
        }

    def on_train_end(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:  # the main process's steps; run.json keeps every process's summary
            return
        path = Path(args.output_dir) / "reward_timing.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"summary": self.summary(), "steps": self.steps}, indent=2))


def rollout_wait_summary(log_history: list[dict]) -> dict[str, float]:
    """AsyncGRPOTrainer's own timings (its rewards are scored in a child process, out of the trainer's reach):
    per logged step, how long the optimizer step waited for scored rollouts (``perf/rollout_wait_s``) against the
    whole step (``perf/step_s``), and the child's scoring time per group (``rollout/score_s``). The shares are per
    logged window (TRL averages over ``logging_steps``)."""
    pairs = [(e["perf/rollout_wait_s"], e["perf/step_s"]) for e in log_history
             if e.get("perf/step_s") and e.get("perf/rollout_wait_s") is not None]
    scores = [e["rollout/score_s"] for e in log_history if e.get("rollout/score_s") is not None]
    if not pairs:
        return {"steps": 0}
    shares = [w / s for w, s in pairs]
    return {
        "steps": len(pairs),
        "mean_step_s": statistics.fmean(s for _, s in pairs),
        "mean_rollout_wait_s": statistics.fmean(w for w, _ in pairs),
        "mean_share": statistics.fmean(shares),
        "median_share": statistics.median(shares),
        "p95_share": _percentile(shares, 0.95),
        "max_share": max(shares),
        "share_by_time": sum(w for w, _ in pairs) / sum(s for _, s in pairs),
        "mean_score_s": statistics.fmean(scores) if scores else float("nan"),
    }

