"""The two gates a GRPO run must pass first, and the check ``trainer train`` makes.

- **base rate** (``trainer gate base-rate``): the model must already succeed sometimes.
  k completions per prompt at low temperature are verified; pass@1 (Wilson interval)
  and pass@k (the unbiased estimator, bootstrap interval over prompts) are reported.
  Zero successes fail the gate: route back to SFT. A rate so high that most groups
  have no reward variance passes with a warning: GRPO has little to learn there.
- **inspection** (``trainer gate inspect``): a person read at least 50 verified samples
  (``verifier-service inspect``) and agreed with the verifier often enough; the record
  is signed off by name.

Each record is a JSON file in the gates directory (``RunConfig.gates_dir``, default
``<output_dir>/gates``) and carries the **reward config hash**: sha256 over the
dataset's verification specs (normalised, so key order and defaults do not matter),
the reward list and the reward weights. Change a spec, a weight or an extraction mode
and both gates are stale; ``trainer train`` refuses until they are run again, unless
``--skip-gates`` is given (recorded as a deviation and in ``run.json``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trainer.config import RunConfig, verifier_credentials
from trainer.errors import TrainerError
from verifier_service.errors import InvalidSpec
from verifier_service.spec import canonical_json, normal_spec_json

log = logging.getLogger(__name__)

BASE_RATE_FILE = "base_rate.json"
INSPECTION_FILE = "inspection.json"
MIN_READ_SAMPLES = 50
MIN_AGREEMENT = 0.95
TOO_EASY_PASS_AT_1 = 0.9        # warn above this pass@1 ...
ZERO_VARIANCE_WARN_SHARE = 0.5  # ... or when more than this share of groups has one reward only
EXIT_GATE_FAILED = 4


class GateError(TrainerError):
    """A gate is missing, failed, or was passed for another reward config."""


# ---- the reward config hash ------------------------------------------------------

def normalise_spec(raw: Any, where: str = "spec") -> str:
    """A spec (JSON text or mapping) in canonical JSON text; defaults dropped."""
    try:
        obj = json.loads(raw) if isinstance(raw, str) else raw
        return canonical_json(normal_spec_json(obj))
    except (ValueError, InvalidSpec) as exc:
        raise GateError(f"{where}: not a valid verification spec: {exc}") from exc


def dataset_specs(dataset, spec_column: str) -> list[str]:
    """The distinct normalised specs of a dataset's spec column, sorted."""
    return sorted({normalise_spec(raw, f"dataset row {i}") for i, raw in enumerate(dataset[spec_column])})


def reward_config_hash(config: RunConfig, specs: list[str]) -> str:
    """sha256 over what decides a reward: the specs (kinds, tests, weights, extraction), rewards, weights."""
    payload = {"specs": specs, "rewards": list(config.rewards),
               "reward_weights": [float(w) for w in config.reward_weights]}
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def gates_dir(config: RunConfig) -> Path:
    return Path(config.gates_dir) if config.gates_dir else Path(config.output_dir) / "gates"


def write_record(directory: Path, name: str, record: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(record, indent=2))
    return path


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ---- statistics ---------------------------------------------------------------

def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al. 2021), n samples, c correct."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _bootstrap(values: list[float], seed: int = 0, rounds: int = 2000) -> tuple[float, float]:
    if not values:
        return 0.0, 1.0
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(values, k=len(values))) / len(values) for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def prompt_key(sample_id: str) -> str:
    """``<prompt_index>-<sample_index>`` -> the prompt part."""
    return sample_id.rsplit("-", 1)[0] if "-" in sample_id else sample_id


def evaluate_base_rate(results: list[dict], k: int, weights: dict[str, float]) -> dict[str, Any]:
    """pass@1 / pass@k per prompt and overall, group reward variance, and the gate's decision.

    A sample succeeds when its verdict is PASSED. INFRA_ERROR samples are left out (no reward).
    ``weights`` maps a reward component (format, correctness) to its TRL reward weight.
    """
    groups: dict[str, list[dict]] = defaultdict(list)
    infra = 0
    for r in results:
        if r.get("verdict") == "INFRA_ERROR" or r.get("reward") is None:
            infra += 1
            continue
        groups[prompt_key(str(r["id"]))].append(r)
    if not groups:
        raise GateError(f"no sample could be judged ({infra} INFRA_ERROR): fix the verifier service first")
    per_prompt = []
    for key, group in groups.items():
        n, c = len(group), sum(r["verdict"] == "PASSED" for r in group)
        rewards = [weights.get("format", 0.0) * r["format_score"] + weights.get("correctness", 0.0)
                   * r["correctness_score"] for r in group]
        low, high = wilson_interval(c, n)
        per_prompt.append({"prompt": key, "n": n, "correct": c, "pass@1": c / n, "pass@1_ci": [low, high],
                           f"pass@{k}": pass_at_k(n, c, min(k, n)),
                           "reward_mean": sum(rewards) / n, "zero_variance": max(rewards) - min(rewards) < 1e-9})
    total_n = sum(p["n"] for p in per_prompt)
    total_c = sum(p["correct"] for p in per_prompt)
    pass_k = [p[f"pass@{k}"] for p in per_prompt]
    zero_variance = sum(p["zero_variance"] for p in per_prompt) / len(per_prompt)
    all_solved = sum(p["correct"] == p["n"] for p in per_prompt) / len(per_prompt)
    record: dict[str, Any] = {
        "prompts": len(per_prompt), "samples": total_n, "correct": total_c, "infra_errors": infra, "k": k,
        "pass@1": total_c / total_n, "pass@1_ci": list(wilson_interval(total_c, total_n)),
        f"pass@{k}": sum(pass_k) / len(pass_k), f"pass@{k}_ci": list(_bootstrap(pass_k)),
        "zero_variance_share": zero_variance, "all_solved_share": all_solved,
        "per_prompt": sorted(per_prompt, key=lambda p: p["prompt"]),
        "warnings": [],
    }
    if total_c == 0:
        record["passed"] = False
        record["advice"] = (f"route to SFT: the model never succeeded ({total_n} samples, {len(per_prompt)} prompts, "
                            f"pass@1 95% CI up to {record['pass@1_ci'][1]:.3f}). GRPO re-weights samples that "
                            "already work; with no success in any group there is nothing to re-weight. Fine-tune "
                            "on the task and its format (SFT, e.g. LoRA/QLoRA), then run this gate again.")
        return record
    record["passed"] = True
    if record["pass@1"] >= TOO_EASY_PASS_AT_1 or all_solved > ZERO_VARIANCE_WARN_SHARE:
        record["warnings"].append(
            f"the success rate is high (pass@1 {record['pass@1']:.2f}; {all_solved:.0%} of prompts solved by every "
            "sample): GRPO has little to learn from these prompts; use harder ones")
    if zero_variance > ZERO_VARIANCE_WARN_SHARE:
        record["warnings"].append(
            f"{zero_variance:.0%} of the groups have zero reward variance: they give GRPO no advantage signal "
            "(all samples scored alike)")
    return record


def evaluate_inspection(samples: list[dict], results: list[dict], labels: dict[str, dict], *,
                        min_read: int = MIN_READ_SAMPLES, min_agreement: float = MIN_AGREEMENT) -> dict[str, Any]:
    """The human-verifier agreement over the read samples, and whether it passes."""
    by_id = {str(r["id"]): r for r in results}
    problems = []
    unknown = sorted(set(labels) - set(by_id))
    if unknown:
        problems.append(f"{len(unknown)} label(s) name samples not in the report: {unknown[:5]}")
    stale = [i for i, label in labels.items() if i in by_id and label.get("verdict")
             and label["verdict"] != by_id[i].get("verdict")]
    if stale:
        problems.append(f"{len(stale)} label(s) were recorded against another verdict than the report's "
                        f"(re-verified since?): {stale[:5]}")
    read = [label for i, label in labels.items() if i in by_id and label.get("agree") is not None]
    agreed = sum(label["agree"] is True for label in read)
    rate = agreed / len(read) if read else 0.0
    if len(read) < min_read:
        problems.append(f"only {len(read)} sample(s) read; the gate needs at least {min_read}")
    elif rate < min_agreement:
        problems.append(f"the verifier agrees with the human reading on {rate:.1%} of {len(read)} samples, below "
                        f"{min_agreement:.0%}: fix the reward function (see the disagreements), then inspect again")
    return {
        "samples": len(samples), "read": len(read), "agreed": agreed, "agreement": rate,
        "agreement_ci": list(wilson_interval(agreed, len(read))),
        "min_read": min_read, "min_agreement": min_agreement,
        "disagreements": [{"id": label["id"], "verdict": by_id[label["id"]].get("verdict"),
                           "reward": by_id[label["id"]].get("reward"), "comment": label.get("comment", "")}
                          for label in read if label["agree"] is False],
        "problems": problems, "passed": not problems,
    }


# ---- the check before training ----------------------------------------------------

def _load_record(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise GateError(f"cannot read gate record {path}: {exc}") from exc


DATA_FLAGS = ("model", "dataset", "output_dir", "gates_dir", "verifier", "spec_column", "seed")  # the gates' flags
HASHED = ("rewards", "reward_weights")  # reward config a gate reads from --config only


def gate_flags(config_path: str | None, changed: dict[str, Any] | None) -> tuple[str, str]:
    """The flags that make a gate command see the run ``trainer train`` was given (its ``--config`` and the data
    flags it changed), and a note when a changed flag is one the gate commands take from the file only."""
    import shlex

    parts = [f"--config {shlex.quote(config_path)}"] if config_path else []
    changed = changed or {}
    parts += [f"--{name.replace('_', '-')} {shlex.quote(str(changed[name]))}" for name in DATA_FLAGS if name in changed]
    file_only = [name for name in HASHED if name in changed]
    note = ""
    if file_only:
        flags = " ".join(f"--{n.replace('_', '-')} ..." for n in file_only)
        note = (f" (the gate commands read {', '.join(file_only)} from the config file only: write the run config "
                f"with them first, `trainer config {parts[0] + ' ' if config_path else ''}{flags} --output FILE`, "
                "then pass --config FILE to the gates and to train)")
    return " ".join(parts), note


def check_gates(config: RunConfig, dataset, config_path: str | None = "run.yaml",
                changed: dict[str, Any] | None = None) -> dict[str, Any]:
    """Raises GateError unless both gates passed for the current reward config; returns what run.json records.
    ``config_path`` / ``changed``: the run config file and flags ``trainer train`` got, repeated in the hints."""
    current = reward_config_hash(config, dataset_specs(dataset, config.spec_column))
    directory = gates_dir(config)
    status: dict[str, Any] = {"skipped": config.skip_gates, "reward_config_hash": current, "gates_dir": str(directory)}
    if config.skip_gates:
        log.warning("--skip-gates: training without the base-rate and inspection gates (recorded in run.json)")
        return status
    flags, note = gate_flags(config_path, changed)
    commands = {BASE_RATE_FILE: f"trainer gate base-rate {flags}".rstrip() + note,
                INSPECTION_FILE: f"trainer gate inspect {flags} --report DIR --signed-off-by NAME".replace("  ", " ")
                + note}
    problems = []
    for name, command in commands.items():
        record = _load_record(directory / name)
        gate = name.removesuffix(".json").replace("_", "-")
        if record is None:
            problems.append(f"{gate}: no record in {directory} (run `{command}`)")
        elif record.get("reward_config_hash") != current:
            problems.append(f"{gate}: stale, passed for reward config {str(record.get('reward_config_hash'))[:12]}, "
                            f"the current one is {current[:12]} (a spec, weight, extraction mode or the reward "
                            f"list changed; run `{command}` again)")
        elif not record.get("passed"):
            problems.append(f"{gate}: failed ({record.get('advice') or '; '.join(record.get('problems', []))})")
        elif name == BASE_RATE_FILE and record.get("model") != config.model:
            problems.append(f"{gate}: measured on model {record.get('model')!r}, training {config.model!r} "
                            f"(run `{command}` again)")
        else:
            status[gate] = {k: record.get(k) for k in ("created_at", "signed_off_by", "signed_off_at", "pass@1",
                                                        "agreement", "read", "sample_set_hash") if k in record}
    from trainer.audit_check import check_audit

    problem, status["audit"] = check_audit(config, current, directory, config_path)
    if problem:
        problems.append(problem)
    if problems:
        raise GateError("training refused, the pre-training gates have not passed for this reward config:\n  - "
                        + "\n  - ".join(problems)
                        + "\nTo train anyway pass --skip-gates (skip_gates: true); it is recorded in run.json.")
    return status


# ---- running the gates -------------------------------------------------------------

def verify_samples(target: str, samples: list[dict], batch_size: int = 32, parallel: int = 4,
                   credentials=None) -> list[dict]:
    """Verifies verify-JSONL rows against the service at ``target`` (with ``credentials``: the run's key and
    TLS; None: the environment's), with a progress bar on a terminal; the results in JSON form."""
    import asyncio

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from verifier_service.client import VerifierClient
    from verifier_service.errors import VerifierError
    from verifier_service.spec import request_from_json, result_to_json

    async def run() -> list:
        console = Console(stderr=True)
        async with await VerifierClient.connect(target, credentials=credentials) as client:
            with Progress(TextColumn("verifying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=console, disable=not console.is_terminal) as progress:
                task = progress.add_task("verify", total=len(requests))
                return await client.verify_many(requests, batch_size, parallel,
                                                on_batch=lambda n: progress.advance(task, n))

    try:
        requests = [request_from_json({k: s[k] for k in ("id", "completion", "spec")}) for s in samples]
        return [result_to_json(r) for r in asyncio.run(run())]
    except (VerifierError, InvalidSpec) as exc:
        raise GateError(f"verification failed: {exc}") from exc


def _check_specs_in_dataset(samples: list[dict], specs: list[str], what: str) -> None:
    known = set(specs)
    outside = sorted({str(s.get("id")) for s in samples if normalise_spec(s.get("spec"), f"sample {s.get('id')}")
                      not in known})
    if outside:
        raise GateError(f"{len(outside)} {what} were verified with specs the training dataset does not hold (ids "
                        f"{outside[:5]}): the reward config changed since they were made; sample the current "
                        "dataset again")


def _check_k(samples: list[dict], k: int, source: str) -> None:
    """pass@k needs k samples of every prompt: a samples file made with fewer is refused, not scored as pass@k."""
    counts: dict[str, int] = defaultdict(int)
    for s in samples:
        counts[prompt_key(str(s.get("id")))] += 1
    short = {key: n for key, n in counts.items() if n < k}
    if short:
        fewest = min(short.values())
        raise GateError(f"--k {k}: {source} holds fewer than {k} samples for {len(short)} of {len(counts)} prompt(s) "
                        f"(as few as {fewest}; ids <prompt>-<sample>): pass@{k} needs {k} per prompt; run with "
                        f"--k {fewest}, or sample {k} per prompt (trainer sample --n {k})")


def _keep_better_record(directory: Path, record: dict, replace: bool) -> None:
    """Refuses to overwrite a record of the same reward config and model that measured more samples."""
    old = _load_record(directory / BASE_RATE_FILE)
    if (replace or old is None or old.get("reward_config_hash") != record["reward_config_hash"]
            or old.get("model") != record["model"] or int(old.get("samples") or 0) <= record["samples"]):
        return
    raise GateError(f"{directory / BASE_RATE_FILE} already holds a {'passed' if old.get('passed') else 'FAILED'} "
                    f"base-rate record for this reward config and model over {old.get('samples')} samples "
                    f"({old.get('created_at')}); this run measured {record['samples']} samples "
                    f"({'passed' if record['passed'] else 'failed'}) and is not written: measure at least as many, "
                    "or pass --replace to replace it")


def run_base_rate_gate(config: RunConfig, dataset, *, k: int, temperature: float, prompts: int,
                       samples_file: Path | None = None, backend: str = "auto",
                       replace: bool = False) -> tuple[dict, Path]:
    """Samples (or reads) k completions per prompt, verifies them, writes and returns the gate record (never in
    place of a record of the same reward config and model that measured more samples, unless ``replace``)."""
    from trainer.sample import sample_completions, write_samples
    from verifier_service.tools.inspection.report import read_rows

    specs = dataset_specs(dataset, config.spec_column)
    directory = gates_dir(config)
    if samples_file is not None:
        samples = read_rows(samples_file)
        source = str(samples_file)
        _check_k(samples, k, source)
    else:
        samples = sample_completions(config.model, dataset, n=k, temperature=temperature,
                                     max_new_tokens=config.max_completion_length, spec_column=config.spec_column,
                                     prompts=prompts, seed=config.seed, backend=backend)
        source = str(directory / "base_rate_samples.jsonl")
        write_samples(Path(source), samples)
    _check_specs_in_dataset(samples, specs, "samples")
    results = verify_samples(config.verifier, samples, credentials=verifier_credentials(config))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "base_rate_results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    record = evaluate_base_rate(results, k, dict(zip(config.rewards, config.reward_weights, strict=True)))
    record = {"gate": "base-rate", "passed": record.pop("passed"), "reward_config_hash":
              reward_config_hash(config, specs), "model": config.model, "temperature": temperature,
              "samples_file": source, "created_at": now_utc(), **record}
    previous = _load_record(directory / BASE_RATE_FILE)
    _keep_better_record(directory, record, replace)
    if previous is not None:
        record["replaced"] = {key: previous.get(key) for key in ("passed", "samples", "created_at", "model",
                                                                 "reward_config_hash")}
    return record, write_record(directory, BASE_RATE_FILE, record)


def run_inspection_gate(config: RunConfig, dataset, *, report_dir: Path, labels_file: Path | None,
                        signed_off_by: str, min_read: int = MIN_READ_SAMPLES,
                        min_agreement: float = MIN_AGREEMENT) -> tuple[dict, Path]:
    """Checks the labels of an inspection report and writes the signed-off (or failed) gate record."""
    from verifier_service.errors import VerifierError
    from verifier_service.tools.inspection import report as inspection

    if not signed_off_by.strip():
        raise GateError("--signed-off-by NAME is required: the inspection gate is a person's sign-off")
    labels_file = labels_file or report_dir / inspection.LABELS_FILE
    try:
        samples = inspection.load_report(report_dir)
        labels = inspection.load_labels(labels_file)
    except VerifierError as exc:
        raise GateError(f"cannot read the inspection report: {exc}") from exc
    specs = dataset_specs(dataset, config.spec_column)
    rows = [{"id": s.id, "spec": s.spec} for s in samples]
    _check_specs_in_dataset(rows, specs, "inspected samples")
    verdict = evaluate_inspection(rows, [s.result for s in samples], labels, min_read=min_read,
                                  min_agreement=min_agreement)
    passed = verdict.pop("passed")
    labels_hash = hashlib.sha256(labels_file.read_bytes()).hexdigest() if labels_file.exists() else None
    record = {"gate": "inspection", "passed": passed, "reward_config_hash": reward_config_hash(config, specs),
              "sample_set_hash": inspection.sample_set_hash(samples), "report_dir": str(report_dir),
              "labels_file": str(labels_file), "labels_sha256": labels_hash,
              "signed_off_by": signed_off_by if passed else None, "signed_off_at": now_utc() if passed else None,
              "created_at": now_utc(), **verdict}
    return record, write_record(gates_dir(config), INSPECTION_FILE, record)


__all__ = ["GateError", "check_gates", "evaluate_base_rate", "evaluate_inspection", "now_utc", "pass_at_k",
           "reward_config_hash", "run_base_rate_gate", "run_inspection_gate", "wilson_interval", "write_record"]
