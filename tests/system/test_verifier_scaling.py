"""benchmarks/verifier_scaling.py: its workload's verdicts are right, and its knee rule; one tiny bwrap run."""

from __future__ import annotations

import asyncio
import json

import pytest

from benchmarks.verifier_scaling import knee, measure, sample_items, synthetic_items

pytestmark = pytest.mark.backends("bwrap")


def test_synthetic_workload_is_a_pass_a_fail_and_a_malformed_completion_per_task():
    items = synthetic_items(9)
    assert [it["expected"] for it in items] == ["PASSED", "FAILED", "MALFORMED"] * 3
    assert all(it["spec"]["kind"] == "python_io" for it in items)


def test_knee_is_the_fewest_sandboxes_within_ten_percent_of_the_best():
    rows = [{"workers": 1, "checks_per_s": 100.0}, {"workers": 4, "checks_per_s": 380.0},
            {"workers": 8, "checks_per_s": 400.0}, {"workers": 16, "checks_per_s": 395.0}]
    assert knee(rows) == 4
    assert knee(rows[:2]) == 4


def test_real_samples_are_cycled_to_the_count(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"completion": c, "spec": {"kind": "python_io"}}) + "\n" for c in "ab"))
    assert [it["completion"] for it in sample_items(path, 5)] == ["a", "b", "a", "b", "a"]


@pytest.mark.timeout(300)
def test_one_small_measurement_gets_every_verdict_right(sandbox_backend, backend_ready):
    row = asyncio.run(measure(2, synthetic_items(6), 1, "bwrap", "t"))
    assert row["wrong_count"] == 0 and row["checks_per_s"] > 0
    assert len(row["train_batch_s"]) == 2 and row["verdicts"].get("INFRA_ERROR", 0) == 0
