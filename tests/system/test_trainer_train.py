"""`trainer train` end to end on CPU: a tiny random model, GRPO, rewards from the real verifier service."""

from __future__ import annotations

import json

import pytest

from support.trainer_smoke import tiny_run, trainer_cli, write_smoke_config

pytestmark = pytest.mark.docker


def test_trainer_train_runs_grpo_against_the_verifier(service, tmp_path):
    model, data, out = tiny_run(tmp_path)
    path = write_smoke_config(tmp_path / "run.yaml", model, data, out, service.address)
    proc = trainer_cli("train", "--config", str(path))
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
