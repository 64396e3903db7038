"""The pre-training gates (base rate, inspection), `trainer sample`, and `trainer train` refusing stale gates."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trainer import cli, gates
from trainer.config import RunConfig
from trainer.tiny_model import build_tiny_model
from trainer.train import load_prompts
from verifier_service.tools import inspection
from verifier_service.tools.inspection import Sample

ROOT = Path(__file__).resolve().parents[2]
IO_SPEC = {"kind": "python_io", "extract": "raw", "entry_point": "f", "timeout_s": 5,
           "cases": [{"args": [1], "expected": 2}, {"args": [5], "expected": 6}]}
FMT_SPEC = {"kind": "format", "pattern": "<answer>.*</answer>"}
OFFLINE = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_HUB_DISABLE_TELEMETRY="1", PYTHONPATH=str(ROOT))


def write_dataset(path: Path, specs: list[dict]) -> Path:
    rows = [{"prompt": [{"role": "user", "content": f"Write f(x) returning x + 1. ({i})"}],
             "verification": json.dumps(spec)} for i, spec in enumerate(specs)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_config(tmp: Path, dataset: Path, **changes) -> Path:
    config = {"model": str(tmp / "model"), "dataset": str(dataset), "output_dir": str(tmp / "run"),
              "use_cpu": True, "bf16": False, "generation": "transformers", "per_device_train_batch_size": 8,
              "gradient_accumulation_steps": 1, "max_completion_length": 16, **changes}
    path = tmp / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def result(sid: str, verdict: str, fmt: float = 1.0, correctness: float = 0.0) -> dict:
    reward = None if verdict == "INFRA_ERROR" else 0.2 * fmt + 0.8 * correctness
    return {"id": sid, "kind": "python_io", "verdict": verdict, "reward": reward, "format_score": fmt,
            "correctness_score": correctness, "tests_passed": 0, "tests_total": 1, "detail": "", "tests": [],
            "extracted": "", "stdout_tail": "", "stderr_tail": "", "timings": {"queue_s": 0, "run_s": 0, "total_s": 0}}


def group(prompt: int, passes: int, k: int = 8) -> list[dict]:
    return [result(f"{prompt}-{j}", "PASSED", correctness=1.0) if j < passes else result(f"{prompt}-{j}", "FAILED")
            for j in range(k)]


WEIGHTS = {"format": 0.2, "correctness": 0.8}


# ---- statistics ------------------------------------------------------------------------------------------

def test_wilson_interval_and_pass_at_k():
    low, high = gates.wilson_interval(0, 10)
    assert low == 0.0 and math.isclose(high, 0.2775, abs_tol=1e-4)
    low, high = gates.wilson_interval(5, 10)
    assert math.isclose(low, 0.2366, abs_tol=1e-4) and math.isclose(high, 0.7634, abs_tol=1e-4)
    assert gates.wilson_interval(0, 0) == (0.0, 1.0)
    assert gates.pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert gates.pass_at_k(10, 0, 5) == 0.0
    assert gates.pass_at_k(10, 6, 5) == 1.0  # fewer than 5 wrong: every 5-subset holds a success
    assert gates.pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)
    with pytest.raises(ValueError):
        gates.pass_at_k(2, 1, 3)


def test_base_rate_zero_routes_to_sft():
    results = group(0, 0) + group(1, 0) + [result("2-0", "INFRA_ERROR")]
    record = gates.evaluate_base_rate(results, 8, WEIGHTS)
    assert record["passed"] is False and "route to SFT" in record["advice"]
    assert record["pass@1"] == 0.0 and record["pass@8"] == 0.0 and record["infra_errors"] == 1
    assert record["pass@1_ci"][0] == 0.0 and 0 < record["pass@1_ci"][1] < 0.3
    assert record["zero_variance_share"] == 1.0


def test_base_rate_sweet_spot_passes_without_warnings():
    results = group(0, 1) + group(1, 3) + group(2, 0) + group(3, 5)
    record = gates.evaluate_base_rate(results, 8, WEIGHTS)
    assert record["passed"] is True and record["warnings"] == []
    assert record["pass@1"] == pytest.approx(9 / 32)
    assert record["pass@8"] == pytest.approx(3 / 4)
    low, high = record["pass@1_ci"]
    assert low < 9 / 32 < high
    per = {p["prompt"]: p for p in record["per_prompt"]}
    assert per["1"]["pass@1"] == pytest.approx(3 / 8) and per["2"]["zero_variance"] is True


def test_base_rate_too_high_warns():
    results = group(0, 8) + group(1, 8) + group(2, 8) + group(3, 7)
    record = gates.evaluate_base_rate(results, 8, WEIGHTS)
    assert record["passed"] is True
    assert any("little to learn" in w for w in record["warnings"])
    assert any("zero reward variance" in w for w in record["warnings"])


def test_base_rate_all_infra_is_an_error():
    with pytest.raises(gates.GateError, match="INFRA_ERROR"):
        gates.evaluate_base_rate([result("0-0", "INFRA_ERROR")], 8, WEIGHTS)


# ---- inspection gate ---------------------------------------------------------------------------------------

def labels_for(results: list[dict], read: int, disagree: int = 0) -> dict[str, dict]:
    return {r["id"]: {"id": r["id"], "agree": i >= disagree, "comment": "" if i >= disagree else "wrong verdict",
                      "verdict": r["verdict"], "reward": r["reward"]} for i, r in enumerate(results[:read])}


def test_inspection_gate_decisions():
    results = [result(f"s{i}", "PASSED" if i % 2 else "FAILED", correctness=float(i % 2)) for i in range(70)]
    samples = [{"id": r["id"]} for r in results]
    ok = gates.evaluate_inspection(samples, results, labels_for(results, 60))
    assert ok["passed"] and ok["read"] == 60 and ok["agreement"] == 1.0
    few = gates.evaluate_inspection(samples, results, labels_for(results, 49))
    assert not few["passed"] and "at least 50" in few["problems"][0]
    disagreeing = gates.evaluate_inspection(samples, results, labels_for(results, 60, disagree=6))
    assert not disagreeing["passed"] and disagreeing["agreement"] == pytest.approx(0.9)
    assert len(disagreeing["disagreements"]) == 6 and disagreeing["disagreements"][0]["comment"] == "wrong verdict"
    assert "fix the reward function" in disagreeing["problems"][0]
    stale = labels_for(results, 60)
    stale["s1"]["verdict"] = "FAILED"
    assert any("another verdict" in p for p in gates.evaluate_inspection(samples, results, stale)["problems"])
    unknown = {**labels_for(results, 60), "zz": {"id": "zz", "agree": True}}
    assert any("not in the report" in p for p in gates.evaluate_inspection(samples, results, unknown)["problems"])
    assert gates.evaluate_inspection(samples, results, labels_for(results, 60, disagree=6),
                                     min_agreement=0.85)["passed"]


# ---- the reward config hash and the check before training ------------------------------------------------

def test_reward_config_hash_covers_specs_weights_and_rewards(tmp_path):
    config = RunConfig()
    specs = [gates.normalise_spec(IO_SPEC), gates.normalise_spec(FMT_SPEC)]
    base = gates.reward_config_hash(config, sorted(specs))
    reordered = gates.normalise_spec(json.dumps(dict(reversed(list(IO_SPEC.items())))))
    assert gates.reward_config_hash(config, sorted([reordered, specs[1]])) == base
    assert gates.normalise_spec({**FMT_SPEC, "extract": ""}) == specs[1]  # a default spelled out is the same spec
    changed = [
        gates.reward_config_hash(config.override({"reward_weights": [0.3, 0.7]}), sorted(specs)),
        gates.reward_config_hash(config.override({"rewards": ["correctness", "format"]}), sorted(specs)),
        gates.reward_config_hash(config, sorted([gates.normalise_spec({**IO_SPEC, "extract": "fenced_code"}),
                                                 specs[1]])),
        gates.reward_config_hash(config, sorted([gates.normalise_spec({**IO_SPEC, "correctness_weight": 0.9}),
                                                 specs[1]])),
    ]
    assert base not in changed and len(set(changed)) == len(changed)
    assert gates.gates_dir(RunConfig(output_dir="/x")) == Path("/x/gates")
    assert gates.gates_dir(RunConfig(output_dir="/x", gates_dir="/g")) == Path("/g")


def constructed_report(directory: Path, specs: list[dict], count: int = 60) -> list[Sample]:
    samples = [Sample(id=f"{i % len(specs)}-{i}", prompt="p", completion=f"def f(x):\n    return x + {i % 3}\n",
                      spec=specs[i % len(specs)], result=result(f"{i % len(specs)}-{i}", "FAILED"))
               for i in range(count)]
    inspection.write_report(directory, samples, {"source": "constructed", "verifier": "none"})
    return samples


def write_base_rate_record(config: RunConfig, passes: int = 3) -> None:
    dataset = load_prompts(config)
    record = gates.evaluate_base_rate(group(0, passes) + group(1, 1), 8, WEIGHTS)
    record.update(reward_config_hash=gates.reward_config_hash(config, gates.dataset_specs(dataset, "verification")),
                  model=config.model)
    gates.write_record(gates.gates_dir(config), gates.BASE_RATE_FILE, record)


def write_audit_record(config: RunConfig) -> None:
    """A passed reward audit for the config's dataset (tests/system/test_audit.py runs the real one)."""
    from trainer.audit_check import AUDIT_FILE

    specs = gates.dataset_specs(load_prompts(config), "verification")
    gates.write_record(gates.gates_dir(config), AUDIT_FILE, {
        "gate": "audit", "passed": True, "reward_config_hash": gates.reward_config_hash(config, specs), "rows": 2})


def test_train_refuses_missing_failed_and_stale_gates(tmp_path, capsys):
    data = write_dataset(tmp_path / "prompts.jsonl", [IO_SPEC, FMT_SPEC])
    path = write_config(tmp_path, data)
    config = RunConfig.from_yaml(path)

    assert cli.main(["train", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "training refused" in err and "trainer gate base-rate" in err and "trainer gate inspect" in err
    assert "trainer gate audit" in err
    assert "--skip-gates" in err

    # The inspection gate: too few labels fail and are recorded as failed; 60 agreeing readings pass.
    report = tmp_path / "inspect"
    samples = constructed_report(report, [IO_SPEC, FMT_SPEC])
    inspection.write_labels(report / "labels.jsonl", labels_for([s.result for s in samples], 20))
    gate_args = ["gate", "inspect", "--config", str(path), "--report", str(report), "--signed-off-by", "ada"]
    assert cli.main(gate_args) == gates.EXIT_GATE_FAILED
    assert "only 20 sample(s) read" in capsys.readouterr().err
    record = json.loads((tmp_path / "run" / "gates" / "inspection.json").read_text())
    assert record["passed"] is False and record["signed_off_by"] is None
    inspection.write_labels(report / "labels.jsonl", labels_for([s.result for s in samples], 60))
    assert cli.main(gate_args) == 0
    record = json.loads((tmp_path / "run" / "gates" / "inspection.json").read_text())
    assert record["passed"] and record["signed_off_by"] == "ada" and record["read"] == 60
    assert record["sample_set_hash"] == inspection.sample_set_hash(samples)

    # Base rate failed (zero successes): still refused, with the SFT advice.
    write_base_rate_record(config, passes=0)
    write_base_rate_record(config, passes=0)
    gates.write_record(gates.gates_dir(config), gates.BASE_RATE_FILE, {
        **gates.evaluate_base_rate(group(0, 0), 8, WEIGHTS),
        "reward_config_hash": json.loads((tmp_path / "run" / "gates" / "inspection.json").read_text())[
            "reward_config_hash"], "model": config.model})
    assert cli.main(["train", "--config", str(path)]) == 2
    assert "route to SFT" in capsys.readouterr().err

    # The three passed for this reward config: the check lets training start.
    write_base_rate_record(config)
    write_audit_record(config)
    status = gates.check_gates(config, load_prompts(config))
    assert status["skipped"] is False and status["inspection"]["signed_off_by"] == "ada"

    # A changed weight, a changed spec (extraction mode) or another model makes the gates stale.
    assert cli.main(["train", "--config", str(path), "--reward-weights", "0.3,0.7"]) == 2
    err = capsys.readouterr().err
    assert err.count("stale") == 3 and "run `trainer gate" in err
    write_dataset(data, [{**IO_SPEC, "extract": "fenced_code"}, FMT_SPEC])
    assert cli.main(["train", "--config", str(path)]) == 2
    assert capsys.readouterr().err.count("stale") == 3
    write_dataset(data, [IO_SPEC, FMT_SPEC])
    assert cli.main(["train", "--config", str(path), "--model", str(tmp_path / "other")]) == 2
    assert "measured on model" in capsys.readouterr().err
    # The inspected samples must be of the current dataset's specs.
    write_dataset(data, [IO_SPEC])
    assert cli.main(gate_args) == 2
    assert "specs the training dataset does not hold" in capsys.readouterr().err


def test_skip_gates_is_a_recorded_deviation(tmp_path):
    data = write_dataset(tmp_path / "prompts.jsonl", [IO_SPEC])
    config = RunConfig.from_yaml(write_config(tmp_path, data, skip_gates=True))
    assert any(d.startswith("skip_gates=true") for d in config.validate())
    status = gates.check_gates(config, load_prompts(config))
    assert status["skipped"] is True and len(status["reward_config_hash"]) == 64


# ---- sampling and the base-rate gate against a model ----------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_trainer_sample_writes_verify_jsonl(tiny_model, tmp_path):
    data = write_dataset(tmp_path / "prompts.jsonl", [IO_SPEC, FMT_SPEC, IO_SPEC])
    out = tmp_path / "samples.jsonl"
    proc = subprocess.run([sys.executable, "-m", "trainer.cli", "sample", "--model", str(tiny_model), "--dataset",
                           str(data), "--n", "3", "--prompts", "2", "--temperature", "0.7", "--max-new-tokens", "8",
                           "--output", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT, env=OFFLINE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6
    prompts = sorted({r["id"].split("-")[0] for r in rows})
    assert len(prompts) == 2 and all(r["id"].split("-")[1] in ("0", "1", "2") for r in rows)
    for r in rows:
        assert isinstance(r["completion"], str) and r["prompt"][0]["role"] == "user"
        assert r["spec"] == (IO_SPEC if r["id"].split("-")[0] != "1" else FMT_SPEC)
    from verifier_service.tools.cli import read_requests
    assert len(read_requests(out)) == 6  # the verify / inspect input form


def test_transformers_generation_batches_prompts_with_left_padding(tiny_model):
    """Prompts of different lengths in one generate call: each gets its n completions, the same as one by one."""
    from trainer.sample import _generate_transformers

    prompts = [[{"role": "user", "content": "add 1 and 2"}], "x",
               [{"role": "user", "content": "a much longer prompt with many more words in it than the others"}]]
    batched = _generate_transformers(str(tiny_model), prompts, 2, 0.0, 6, 0, prompt_batch=3)
    single = _generate_transformers(str(tiny_model), prompts, 2, 0.0, 6, 0, prompt_batch=1)
    assert [len(c) for c in batched] == [2, 2, 2]
    assert batched == single  # greedy: left padding changes nothing


@pytest.mark.docker
def test_base_rate_gate_routes_the_tiny_model_to_sft(service, tiny_model, tmp_path):
    data = write_dataset(tmp_path / "prompts.jsonl", [IO_SPEC, IO_SPEC, FMT_SPEC])
    path = write_config(tmp_path, data, model=str(tiny_model), verifier=service.address)
    proc = subprocess.run([sys.executable, "-m", "trainer.cli", "gate", "base-rate", "--config", str(path), "--k", "4",
                           "--prompts", "0", "--temperature", "0.2"], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=OFFLINE)
    assert proc.returncode == gates.EXIT_GATE_FAILED, proc.stderr[-3000:]
    assert "route to SFT" in proc.stderr
    record = json.loads((tmp_path / "run" / "gates" / "base_rate.json").read_text())
    assert record["passed"] is False and record["pass@1"] == 0.0 and record["samples"] == 12
    assert record["prompts"] == 3 and record["temperature"] == 0.2 and record["model"] == str(tiny_model)
    samples = (tmp_path / "run" / "gates" / "base_rate_samples.jsonl").read_text().splitlines()
    assert sorted(json.loads(s)["id"] for s in samples) == sorted(f"{p}-{j}" for p in range(3) for j in range(4))


@pytest.mark.docker
def test_both_gates_pass_end_to_end(service, tmp_path, capsys):
    data = write_dataset(tmp_path / "prompts.jsonl", [IO_SPEC, FMT_SPEC])
    path = write_config(tmp_path, data, verifier=service.address)
    rows = []
    for j in range(4):  # prompt 0 (python_io) solved half of the time, prompt 1 (format) once
        good = j % 2 == 0
        rows.append({"id": f"0-{j}", "prompt": "p", "completion": "def f(x):\n    return x + 1\n" if good else
                     f"def f(x):\n    return x + {10 + j}\n", "spec": IO_SPEC})
        rows.append({"id": f"1-{j}", "prompt": "p", "completion": "<answer>1</answer>" if j == 0 else f"answer {j}",
                     "spec": FMT_SPEC})
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["gate", "base-rate", "--config", str(path), "--k", "4", "--samples", str(samples),
                     "--temperature", "0.2"]) == 0
    err = capsys.readouterr().err
    assert "pass@1 0.375" in err and "pass@4 1.000" in err
    report = tmp_path / "inspect"
    constructed = constructed_report(report, [IO_SPEC, FMT_SPEC], count=50)
    inspection.write_labels(report / "labels.jsonl", labels_for([s.result for s in constructed], 50))
    assert cli.main(["gate", "inspect", "--config", str(path), "--report", str(report), "--signed-off-by", "bo"]) == 0
    config = RunConfig.from_yaml(path)
    write_audit_record(config)
    status = gates.check_gates(config, load_prompts(config))
    assert status["base-rate"]["pass@1"] == pytest.approx(0.375)
    assert status["inspection"]["read"] == 50


@pytest.mark.docker
def test_trainer_sample_with_report_goes_straight_to_the_inspection_report(service, tiny_model, tmp_path):
    # The first of the three commands: samples, verified, and the report to read.
    data = write_dataset(tmp_path / "prompts.jsonl", [IO_SPEC, FMT_SPEC])
    path = write_config(tmp_path, data, model=str(tiny_model), verifier=service.address)
    out, report = tmp_path / "samples.jsonl", tmp_path / "inspect"
    proc = subprocess.run([sys.executable, "-m", "trainer.cli", "sample", "--config", str(path), "--n", "2",
                           "--max-new-tokens", "8", "--output", str(out), "--report", str(report)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=OFFLINE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (report / "report.html").exists() and (report / "results.jsonl").exists()
    assert len((report / "results.jsonl").read_text().splitlines()) == 4
    assert "trainer gate inspect" in proc.stderr
