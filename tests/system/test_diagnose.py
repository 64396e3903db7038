"""`trainer diagnose`: synthetic log histories (one per pathology, one healthy) and a real run's logs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trainer.cli import main
from trainer.config import RunConfig
from trainer.diagnose import (
    CHECKS,
    Finding,
    Thresholds,
    diagnose,
    load_history,
    load_run,
    merge_patches,
    patched_config,
    run_checks,
    validate_patched,
)
from trainer.errors import ConfigError, TrainerError

from support.trainer_smoke import tiny_run, trainer_cli, write_smoke_config

ROOT = Path(__file__).resolve().parents[2]
CPU = dict(use_cpu=True, bf16=False, generation="transformers")

# A healthy run: correctness and format rise together, about a fifth of the groups uniform, length steady,
# entropy easing slowly, KL small, a little clipping, no INFRA_ERROR. Curves are functions of progress x in [0, 1].
HEALTHY = {
    "rewards/verifier_format/mean": lambda x: 0.6 + 0.3 * x,
    "rewards/verifier_correctness/mean": lambda x: 0.1 + 0.4 * x,
    "reward_std": lambda x: 0.3,
    "frac_reward_zero_std": lambda x: 0.2,
    "completions/mean_length": lambda x: 100 + 10 * x,
    "completions/max_length": lambda x: 220,
    "completions/clipped_ratio": lambda x: 0.02,
    "entropy": lambda x: 1.2 - 0.2 * x,
    "kl": lambda x: 0.001 + 0.04 * x,
    "clip_ratio/region_mean": lambda x: 0.01,
    "clip_ratio/high_mean": lambda x: 0.006,
    "clip_ratio/low_mean": lambda x: 0.004,
    "verifier/infra_errors": lambda x: 0.0,
    "verifier/batch_lost": lambda x: 0.0,
    "verifier/verdict/INFRA_ERROR": lambda x: 0.0,
    "verifier/verdict/PASSED": lambda x: 0.1 + 0.4 * x,
}


def make_history(n: int = 12, **curves) -> list[dict]:
    """n log entries every 10 steps (logging_steps=10), TRL's way, ending with the run's summary entry.

    ``reward`` is the recipe's weighted sum (0.2 format + 0.8 correctness) unless given; a curve of None drops it.
    """
    names = {k.replace("__", "/"): v for k, v in curves.items()}
    metrics = {**HEALTHY, **names}
    history = []
    for i in range(n):
        x = i / (n - 1)
        entry = {k: f(x) if callable(f) else f for k, f in metrics.items() if f is not None}
        if "reward" not in names:
            entry["reward"] = 0.2 * entry["rewards/verifier_format/mean"] + 0.8 * entry[
                "rewards/verifier_correctness/mean"]
        entry.update(loss=0.01, learning_rate=5e-7, epoch=x, step=10 * (i + 1))
        history.append(entry)
    history.append({"train_runtime": 100.0, "train_loss": 0.01, "epoch": 1.0, "step": 10 * n})
    return history


def late_spike(value: float, k: int = 3, base: float = 0.01):
    return lambda x: value if x > 1 - k / 11.5 else base


def infra_burst(x: float) -> float:
    return 0.25 if 0.3 < x < 0.65 else 0.0


CASES = {
    "no_learning_signal (all fail)": (
        dict(frac_reward_zero_std=lambda x: 0.95, rewards__verifier_correctness__mean=lambda x: 0.0,
             rewards__verifier_format__mean=lambda x: 0.0, verifier__verdict__PASSED=lambda x: 0.0),
        "no_learning_signal", {"num_generations": 16}, "fail together"),
    "no_learning_signal (all pass)": (
        dict(frac_reward_zero_std=lambda x: 0.92, rewards__verifier_correctness__mean=lambda x: 1.0,
             rewards__verifier_format__mean=lambda x: 1.0),
        "no_learning_signal", {"num_generations": 16}, "pass together"),
    "length bias": (
        dict(completions__mean_length=lambda x: 100 + 300 * x, completions__max_length=lambda x: 600,
             rewards__verifier_correctness__mean=lambda x: 0.3, rewards__verifier_format__mean=lambda x: 0.9),
        "length_bias", {"variant": "dr_grpo"}, "longer, not more correct"),
    "entropy collapse": (
        dict(entropy=lambda x: 1.5 - 1.45 * x),
        "entropy_collapse", {"grpo_overrides": {"epsilon_high": 0.28}}, "entropy_drop=0.3"),
    "kl blow-up, on-policy": (
        dict(kl=late_spike(1.5), clip_ratio__region_mean=lambda x: 0.0, clip_ratio__high_mean=lambda x: 0.0,
             clip_ratio__low_mean=lambda x: 0.0),
        "kl_blowup", {"beta": 0.04}, "kl_max=0.5"),
    "kl blow-up, off-policy": (
        dict(kl=late_spike(1.5), clip_ratio__region_mean=lambda x: 0.05),
        "kl_blowup", {"variant": "gspo"}, "clip_ratio/region_mean > 0"),
    "reward rising on format alone": (
        dict(rewards__verifier_format__mean=lambda x: 0.1 + 0.9 * x, rewards__verifier_correctness__mean=lambda x: 0.2,
             verifier__verdict__PASSED=lambda x: 0.2),
        "reward_hacking_smell", {}, "the correctness reward does not rise"),
    "truncation": (
        dict(completions__clipped_ratio=lambda x: 0.35, completions__max_length=lambda x: 512),
        "truncation", {"grpo_overrides": {"mask_truncated_completions": True}}, "clipped_ratio=20%"),
    "infrastructure noise": (
        dict(verifier__verdict__INFRA_ERROR=infra_burst, verifier__infra_errors=lambda x: 8 * infra_burst(x),
             verifier__batch_lost=lambda x: 1.0 if 0.4 < x < 0.5 else 0.0),
        "infra_noise", {}, "infra_frac=2%"),
    "clipping dominates": (
        dict(clip_ratio__region_mean=lambda x: 0.2, clip_ratio__high_mean=lambda x: 0.15,
             clip_ratio__low_mean=lambda x: 0.05),
        "clipping_dominates", {"grpo_overrides": {"epsilon_high": 0.28}}, "clip_region=10%"),
}
THRESHOLD_NAME = re.compile(r"\b[a-z_]+=\d")  # evidence names its threshold, e.g. zero_std_frac=0.5


def test_a_healthy_run_has_no_finding():
    diagnosis = run_checks(make_history())
    assert diagnosis.findings == [] and diagnosis.healthy
    assert diagnosis.skipped == {}  # every check had what it needs, and none fired


@pytest.mark.parametrize("case", list(CASES))
def test_each_pathology_gives_its_finding_with_evidence(case):
    curves, expected, patch, phrase = CASES[case]
    findings = diagnose(make_history(**curves))
    assert [f.name for f in findings] == [expected]
    finding = findings[0]
    assert finding.patch == patch
    assert any(phrase in e for e in finding.evidence), finding.evidence
    first = finding.evidence[0]
    assert "/" in first.split(":")[0] or first.split(":")[0] in ("reward", "entropy", "kl", "frac_reward_zero_std")
    assert THRESHOLD_NAME.search(" ".join(finding.evidence)) or "threshold" in " ".join(finding.evidence)
    assert re.search(r"steps? \d+", " ".join(finding.evidence)), "evidence names the steps"
    assert finding.reason and finding.severity in ("critical", "warning")
    if finding.patch:
        validate_patched(finding.patch)  # trainer train accepts it on the recipe
        assert finding.paper is not None or "beta" in finding.patch


def test_no_signal_advice_follows_the_method():
    fail = diagnose(make_history(**CASES["no_learning_signal (all fail)"][0]))[0]
    assert "SFT" in fail.action and "dynamic sampling" in fail.action
    assert fail.severity == "critical" and fail.paper.arxiv == "2503.14476"


def test_infrastructure_noise_points_at_the_verifier_not_a_variant():
    finding = diagnose(make_history(**CASES["infrastructure noise"][0]))[0]
    assert finding.patch == {} and finding.paper is None and "verifier" in finding.action
    assert finding.severity == "critical"  # a whole batch was lost
    assert any("verifier/batch_lost" in e and "step 60" in e for e in finding.evidence)


def test_reward_hacking_sends_back_to_inspection():
    finding = diagnose(make_history(**CASES["reward rising on format alone"][0]))[0]
    assert finding.patch == {} and "inspection" in finding.action
    assert any("rewards/verifier_format/mean" in e for e in finding.evidence)


def test_a_flat_held_out_pass_rate_is_a_reward_hacking_smell():
    history = make_history()  # the training correctness reward rises ...
    for step in (30, 60, 90, 120):  # ... but the held-out pass rate does not (TRL prefixes eval metrics with eval_)
        history.insert(-1, {"eval_verifier/test_pass_rate": 0.31, "eval_loss": 0.1, "step": step})
    findings = diagnose(history)
    assert [f.name for f in findings] == ["reward_hacking_smell"]
    assert any(e.startswith("held-out eval_verifier/test_pass_rate") for e in findings[0].evidence)
    history[-2]["eval_verifier/test_pass_rate"] = 0.6  # it rises: no smell
    assert diagnose(history) == []


def test_patches_use_the_runs_config():
    config = RunConfig(**CPU, per_device_train_batch_size=8, gradient_accumulation_steps=1, max_completion_length=256,
                       allow_fewer_generations=False).to_dict()
    findings = diagnose(make_history(**CASES["no_learning_signal (all fail)"][0]), config=config)
    # 16 completions per prompt need a generation batch divisible by 16: 8 x 1 -> 8 x 2
    assert findings[0].patch == {"num_generations": 16, "gradient_accumulation_steps": 2}
    severe = make_history(completions__clipped_ratio=lambda x: 0.8)
    assert diagnose(severe, config=config)[0].patch == {
        "grpo_overrides": {"mask_truncated_completions": True}, "max_completion_length": 512}
    dapo = {**config, "variant": "dapo"}  # masking is on already: only the limit moves
    assert diagnose(severe, config=dapo)[0].patch == {"max_completion_length": 512}
    length = CASES["length bias"][0]
    assert diagnose(make_history(**length), config=dapo)[0].patch == {
        "grpo_overrides": {"mask_truncated_completions": True}}  # the loss is length-unbiased already
    collapse = diagnose(make_history(**CASES["entropy collapse"][0]), config=dapo)[0]
    assert collapse.patch == {"grpo_overrides": {"top_entropy_quantile": 0.2}}  # clip-higher is on already


def test_thresholds_decide_and_short_runs_say_what_was_not_checked():
    history = make_history(completions__clipped_ratio=lambda x: 0.35)
    assert diagnose(history, Thresholds(clipped_ratio=0.4)) == []
    assert Thresholds().override({"clipped_ratio": "0.4", "min_points": "5"}).min_points == 5
    with pytest.raises(ConfigError, match="unknown threshold"):
        Thresholds().override({"clip": "1"})
    short = run_checks(make_history(n=2))
    assert short.findings == []
    assert set(short.skipped) == {"reward_hacking_smell", "length_bias", "entropy_collapse"}
    assert all("needs 6 logged steps" in why for why in short.skipped.values())
    bare = run_checks([{"loss": 0.1, "step": 1}])
    assert set(bare.skipped) == {name for name, _ in CHECKS}


def test_merging_patches_keeps_the_most_severe_and_says_what_it_dropped():
    def finding(name, patch):
        return Finding(name, "critical", name, ["e"], patch, "r")

    merged = merge_patches([finding("a", {"variant": "gspo"}), finding("b", {"variant": "dr_grpo"}),
                            finding("c", {"grpo_overrides": {"epsilon_high": 0.28, "top_entropy_quantile": 0.2}})])
    assert merged.patch == {"variant": "gspo", "grpo_overrides": {"top_entropy_quantile": 0.2}}
    assert any("b: variant='dr_grpo' not applied" in n for n in merged.notes)
    assert any("epsilon_high=0.28 not applied: variant gspo sets epsilon_high=0.0004" in n for n in merged.notes)
    assert set(merged.reasons) == {"variant", "grpo_overrides.top_entropy_quantile"}
    base = RunConfig(**CPU, output_dir="/tmp/run-a").to_dict()
    patched = patched_config(base, merged)
    assert patched["output_dir"] == "/tmp/run-a-patched" and base["output_dir"] == "/tmp/run-a"
    deviations = validate_patched(patched)
    assert any(d.startswith("variant=gspo") and "trainer diagnose: a:" in d for d in deviations)


def write_run(path: Path, history: list[dict], config: dict | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    record = {"log_history": history, "deviations": []}
    if config is not None:
        record["config"] = config
    (path / "run.json").write_text(json.dumps(record))
    return path


def test_load_history_from_run_json_and_trainer_state(tmp_path):
    history = make_history()
    config = RunConfig(**CPU).to_dict()
    run = write_run(tmp_path / "run", history, config)
    assert load_history(run) == history and load_run(run).config == config
    for number in (9, 10):  # the latest checkpoint is 10, not 9
        checkpoint = run / f"checkpoint-{number}"
        checkpoint.mkdir()
        (checkpoint / "trainer_state.json").write_text(json.dumps({"log_history": history[:number],
                                                                   "global_step": number}))
    loaded = load_run(run / "checkpoint-9")
    assert len(loaded.history) == 9 and loaded.config == config  # the config comes from the run's run.json
    (run / "run.json").unlink()
    assert len(load_history(run)) == 10
    assert len(load_history(run / "checkpoint-9" / "trainer_state.json")) == 9
    with pytest.raises(TrainerError, match=r"no run\.json or trainer_state\.json"):
        load_history(tmp_path)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(TrainerError, match="no log_history"):
        load_history(tmp_path / "bad.json")


def test_cli_exit_codes_json_and_patch_out(tmp_path, capsys):
    config = RunConfig(**CPU, output_dir=str(tmp_path / "out"), per_device_train_batch_size=8,
                       gradient_accumulation_steps=1).to_dict()
    healthy = write_run(tmp_path / "healthy", make_history(), config)
    assert main(["diagnose", str(healthy)]) == 0
    assert "no finding" in capsys.readouterr().out
    sick = write_run(tmp_path / "sick", make_history(**CASES["length bias"][0],
                                                     completions__clipped_ratio=lambda x: 0.3), config)
    patch_file = tmp_path / "patched.yaml"
    assert main(["diagnose", str(sick), "--json", "--patch-out", str(patch_file)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["healthy"] and [f["name"] for f in report["findings"]] == ["length_bias", "truncation"]
    assert report["findings"][0]["paper"]["arxiv"] == "2503.20783"
    assert report["patch"] == {"variant": "dr_grpo", "grpo_overrides": {"mask_truncated_completions": True}}
    patched = RunConfig.from_yaml(patch_file)  # what trainer train --config reads
    assert patched.variant == "dr_grpo" and patched.output_dir == str(tmp_path / "out") + "-patched"
    assert patched.per_device_train_batch_size == 8 and patched.grpo_overrides == {"mask_truncated_completions": True}
    deviations = patched.validate()
    assert any(d.startswith("variant=dr_grpo") and "trainer diagnose: length_bias" in d for d in deviations)
    assert patch_file.read_text().startswith(f"# trainer diagnose {sick / 'run.json'}: 2 finding(s)")
    assert main(["diagnose", str(sick)]) == 1
    text = capsys.readouterr().out
    assert "length_bias" in text and "completions/mean_length" in text and "proposed patch" in text
    assert main(["diagnose", str(sick), "--threshold", "length_growth=10", "--threshold", "clipped_ratio=0.5"]) == 0
    assert main(["diagnose", str(sick), "--threshold", "nope=1"]) == 2
    assert main(["diagnose", str(tmp_path / "missing")]) == 2


# ---- a real run: a tiny CPU GRPO run with a preset, against the verifier service --------------------------------


@pytest.mark.docker
def test_a_preset_run_is_diagnosed_and_its_patch_trains(service, tmp_path):
    model, data, out = tiny_run(tmp_path)
    path = write_smoke_config(
        tmp_path / "run.yaml", model, data, out, service.address, max_steps=3,
        deviation_reasons={"learning_rate": "a 0.1M-parameter random model in a smoke test",
                           "variant": "exercising a preset in the smoke test"})
    proc = trainer_cli("train", "--config", str(path), "--variant", "dapo")
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads((out / "run.json").read_text())
    assert record["config"]["variant"] == "dapo"
    assert any(d.startswith("variant=dapo (loss_type='dapo'") and "smoke test" in d for d in record["deviations"])

    # the real run's logs: a random tiny model never passes, and its 16-token completions are cut off
    patch_file = tmp_path / "patched.yaml"
    proc = trainer_cli("diagnose", str(out), "--json", "--patch-out", str(patch_file))
    assert proc.returncode == 1, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    names = [f["name"] for f in report["findings"]]
    assert names and {"no_learning_signal", "truncation"} & set(names), names
    for finding in report["findings"]:
        assert finding["evidence"] and all(isinstance(e, str) and e for e in finding["evidence"])
    assert "infra_noise" not in names  # the verifier judged every sample
    # three logged steps show no trend (the trend checks say so); the checks of the moment ran on the real metrics
    assert set(report["skipped"]) == {"reward_hacking_smell", "length_bias", "entropy_collapse"}
    if "truncation" in names:  # DAPO masks truncation already: the patch raises the limit instead
        truncation = report["findings"][names.index("truncation")]
        assert truncation["patch"] == {"max_completion_length": 32}

    # the patch trains
    patched_out = tmp_path / "patched-run"
    proc = trainer_cli("train", "--config", str(patch_file), "--max-steps", "1", "--output-dir", str(patched_out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    patched_record = json.loads((patched_out / "run.json").read_text())
    assert patched_record["config"]["variant"] == "dapo"
    assert any("trainer diagnose:" in d for d in patched_record["deviations"]) or \
        set(report["patch"]) <= {"num_generations", "max_completion_length"}
    for key, value in report["patch"].items():
        assert patched_record["config"][key] == value
    assert [h for h in patched_record["log_history"] if "reward" in h]
