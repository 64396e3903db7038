"""The e2e pipeline on a CPU, stages data -> report, with a tiny random model and the bwrap-backed service.

A random model never solves a task: the base-rate gate must fail loudly, and training must refuse without the
inspection record; with ``--skip-gates`` (recorded as a deviation) the rest runs through to the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from examples.e2e import report

from support.trainer_smoke import OFFLINE_ENV, ROOT

pytestmark = pytest.mark.backends("bwrap")
SMALL = ["--tiny-model", "--cpu", "--train-tasks", "16", "--heldout-tasks", "8", "--max-new-tokens", "16",
         "--base-rate-k", "2", "--base-rate-prompts", "3", "--batch-size", "8", "--max-steps", "2",
         "--sandbox-backend", "bwrap", "--service-concurrency", "2"]


def pipeline(state, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **OFFLINE_ENV, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "examples.e2e.pipeline", "--state-dir", str(state), *SMALL, *args],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, env=env, check=False)


@pytest.mark.timeout(900)  # ~1 minute on an idle 2-core machine; much more when the cores are shared
def test_pipeline_stages_data_to_report(sandbox_backend, backend_ready, tmp_path):
    state = tmp_path / "state"
    no_record = tmp_path / "no-inspection.json"
    proc = pipeline(state, "--stages", "data,model,service,inspect-prepare,gates", "--inspect-prompts", "2",
                    "--inspect-n", "3", "--inspection-record", str(no_record))
    assert proc.returncode == 4, proc.stderr[-3000:]
    assert "BASE RATE IS ZERO" in proc.stderr
    stages = json.loads((state / "stages.json").read_text())
    assert stages["data"]["train"]["rows"] == 16 and stages["data"]["heldout"]["rows"] == 8
    assert stages["service"]["smoke"] == {"right": "PASSED", "wrong": "FAILED", "malformed": "MALFORMED"}
    assert stages["service"]["doctor_exit"] == 0
    assert stages["inspect-prepare"]["samples"] == 6
    report_dir = state / "inspect" / "report"
    assert (report_dir / "report.html").exists() and "trainer gate inspect" in proc.stderr
    base = json.loads((state / "gates" / "base_rate.json").read_text())
    assert base["passed"] is False and base["samples"] == 6

    proc = pipeline(state, "--stages", "eval-before,train", "--inspection-record", str(no_record))
    assert proc.returncode == 4, proc.stderr[-3000:]
    assert "no inspection gate record" in proc.stderr and "trainer gate inspect" in proc.stderr
    before = json.loads((state / "eval" / "before.json").read_text())
    assert before["completions"] == 8 and before["agreement"]["disagreements"] == 0
    assert not (state / "run" / "run.json").exists()

    # the e2e README's CPU command: --skip-gates with the gates stage in the list (it measures, and goes on)
    proc = pipeline(state, "--stages", "gates,train,eval-after,report", "--skip-gates", "--inspection-record",
                    str(no_record))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "base-rate gate FAILED (zero successes in 6 samples); --skip-gates: going on" in proc.stderr
    run = json.loads((state / "run" / "run.json").read_text())
    deviations = "\n".join(run["deviations"])
    assert "skip_gates=true" in deviations
    assert "grpo_overrides.save_strategy='no'; reason: no checkpoints" in deviations
    assert "learning_rate=1e-05" in deviations and "reason: a 135M-parameter model" in deviations
    assert run["shadow_disagreements"] == 0
    assert not list((state / "run").glob("checkpoint-*"))
    steps = [json.loads(line) for line in (state / "run" / "steps.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 2]
    for s in steps:
        for key in ("reward", "format", "correctness", "completion_length", "zero_variance_groups"):
            assert s[key] is not None, key
    timing = json.loads((state / "run" / "reward_timing.json").read_text())["summary"]
    assert timing["steps"] == 2 and timing["mean_reward_wait_s"] > 0 and timing["mean_shadow_reward_s"] > 0
    results = json.loads((state / "report" / "results.json").read_text())
    assert results["eval_after"]["agreement"]["disagreements"] == 0
    assert set(results["targets"]) == {"pass@1_gain", "format_after", "reward_wait_share"}
    assert results["targets"]["pass@1_gain"]["measured"] == pytest.approx(
        results["eval_after"]["pass@1"]["rate"] - results["eval_before"]["pass@1"]["rate"])

    out = tmp_path / "docs" / "e2e-run.md"
    assert report.main(["--results", str(state / "report" / "results.json"), "--out", str(out), "--no-plots"]) == 0
    text = out.read_text()
    for heading in ("## Targets", "## Gates", "## Held-out evaluation", "### Service vs in-process reference",
                    "## Cost of the reward path", "## Run config and deviations"):
        assert heading in text
    assert "| before | 8 | 0 | 0 |" in text


def test_gate_records_of_the_pipeline_hold_for_the_training_dataset(tmp_path):
    """The gates stage reads the rows without `datasets`; training loads them with it: same reward config hash."""
    from examples.e2e.pipeline import PipelineConfig, read_rows, run_config
    from examples.e2e.tasks import write_splits
    from trainer.gates import dataset_specs, reward_config_hash
    from trainer.train import load_prompts

    cfg = PipelineConfig(state_dir=tmp_path, train_tasks=24, heldout_tasks=6)
    write_splits(tmp_path / "data", train=24, heldout=6)
    config = run_config(cfg, "127.0.0.1:1")
    rows, dataset = read_rows(cfg.data("train")), load_prompts(config)
    assert reward_config_hash(config, dataset_specs(rows, config.spec_column)) == \
        reward_config_hash(config, dataset_specs(dataset, config.spec_column))
    assert len(rows) == len(dataset) == 24 and rows[3] == dataset[3]
