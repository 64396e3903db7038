"""The e2e run's TrainerCallbacks: the wall-clock budget stops before a step would cross it; the step log."""

from __future__ import annotations

import json
from types import SimpleNamespace

from transformers import TrainerControl

from examples.e2e import callbacks
from examples.e2e.callbacks import StepLog, TrainBudget


class Clock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_the_budget_stops_training_before_the_next_step_would_cross_it(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(callbacks.time, "monotonic", clock.monotonic)
    budget = TrainBudget(budget_s=100.0, margin=1.5)
    state, control = SimpleNamespace(global_step=0), TrainerControl()
    budget.on_train_begin(None, state, control)
    stopped_at = None
    for step in range(1, 50):
        budget.on_step_begin(None, state, control)
        clock.now += 20.0 if step == 2 else 10.0  # one slow step: the margin follows the slowest
        state.global_step = step
        budget.on_step_end(None, state, control)
        if control.should_training_stop:
            stopped_at = step
            break
    # after step s >= 2, elapsed = 10 s * (s + 1); it stops once elapsed + 1.5 * 20 s > 100 s: after step 7
    assert stopped_at == 7 and budget.stopped_at_step == 7
    summary = budget.summary()
    assert summary["slowest_step_s"] == 20.0 and summary["elapsed_s"] == 80.0


def test_a_budget_never_reached_does_not_stop(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(callbacks.time, "monotonic", clock.monotonic)
    budget = TrainBudget(budget_s=1000.0)
    state, control = SimpleNamespace(global_step=0), TrainerControl()
    budget.on_train_begin(None, state, control)
    for step in range(1, 4):
        budget.on_step_begin(None, state, control)
        clock.now += 5.0
        state.global_step = step
        budget.on_step_end(None, state, control)
    assert not control.should_training_stop and budget.summary()["stopped_by_budget_at_step"] is None


def test_the_step_log_keeps_each_logged_step_with_the_plotted_metrics(tmp_path):
    path = tmp_path / "run" / "steps.jsonl"
    log = StepLog(path)
    state = SimpleNamespace(global_step=3)
    log.on_log(None, state, None, logs={"reward": 0.5, "rewards/verifier_format/mean": 1.0,
                                         "rewards/verifier_correctness/mean": 0.375,
                                         "completions/mean_length": 120.0, "frac_reward_zero_std": 0.25,
                                         "note": "text is left out"})
    log.on_log(None, state, None, logs={"train_runtime": 12.0})  # not a training step's metrics
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 1
    plotted = {k: rows[0][k] for k in ("step", "reward", "format", "correctness", "completion_length",
                                       "zero_variance_groups")}
    assert plotted == {"step": 3, "reward": 0.5, "format": 1.0, "correctness": 0.375, "completion_length": 120.0,
                       "zero_variance_groups": 0.25}
    assert "note" not in rows[0] and rows[0]["frac_reward_zero_std"] == 0.25
