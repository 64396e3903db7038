"""An inspection report's data and files, without rendering: the samples, their flags and summary, the labels a
reader recorded, and the sample-set hash that ties labels to samples. ``trainer gate inspect`` reads reports
through this module alone; ``page.py`` renders them.

A report directory holds ``samples.jsonl`` (the input, ids filled in), ``results.jsonl``, ``inspection.json``
(summary, flags, the sample-set hash), ``report.html`` and, once a person has read it, ``labels.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifier_service.errors import VerifierError
from verifier_service.spec import canonical_json, normal_spec_json
from verifier_service.tools.jsonl import read_jsonl


def code_kinds() -> tuple[str, ...]:
    """The kinds that run the completion as code (the sandboxed ones), as the kinds registry says."""
    from verifier_service.kinds import all_kinds

    return tuple(kind.name for kind in all_kinds() if kind.sandboxed)


SHORT_CODE_CHARS = 16       # non-whitespace characters under which passing code is "suspiciously short"
HIGH_CORRECTNESS = 0.5      # correctness at or above which a reward counts as "high"
NEAR_LIMIT_SHARE = 0.8      # a run taking this share of its time limit is "near the limit"
SLOWEST_SHOWN = 5

FLAGS = {
    "infra_error": "INFRA_ERROR: the sandbox failed, not the code (no reward)",
    "high_reward_short_code": f"high reward for short or empty code (< {SHORT_CODE_CHARS} non-blank characters)",
    "reward_without_tests": "correctness reward given without any test run",
    "identical_different_reward": "an identical completion for the same spec got a different reward",
    "near_timeout": f"ran to {NEAR_LIMIT_SHARE:.0%}+ of its time limit: the verdict may flip under load",
    "passed_with_stderr": "passes while printing to stderr",
}

SAMPLES_FILE = "samples.jsonl"
RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "inspection.json"
REPORT_FILE = "report.html"
LABELS_FILE = "labels.jsonl"


@dataclass
class Sample:
    """One sampled completion, its spec, its verification result and what a reader noticed."""

    id: str
    prompt: Any
    completion: str
    spec: dict
    result: dict
    flags: list[str] = field(default_factory=list)


# ---- hashing and files ----------------------------------------------------------

def sample_set_hash(samples: list[Sample]) -> str:
    """sha256 over (id, prompt, completion, normalised spec: defaults dropped, so equal specs hash equally) of
    every sample, in id order."""
    digest = hashlib.sha256()
    for s in sorted(samples, key=lambda s: s.id):
        digest.update(canonical_json([s.id, s.prompt, s.completion, normal_spec_json(s.spec)]).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def read_rows(path: Path) -> list[dict]:
    """The JSON objects of a JSONL file, blank lines skipped (validate with ``cli.read_requests``)."""
    rows = []
    for number, row in read_jsonl(path):
        if not isinstance(row, dict):
            raise VerifierError(f"{path}:{number}: each line must be a JSON object")
        rows.append(row)
    return rows


def build_samples(rows: list[dict], ids: list[str], results: list[dict]) -> list[Sample]:
    if not len(rows) == len(ids) == len(results):
        raise VerifierError(f"{len(rows)} samples, {len(ids)} ids and {len(results)} results do not line up")
    seen = Counter(ids)
    dupes = sorted(i for i, n in seen.items() if n > 1)
    if dupes:
        raise VerifierError(f"sample ids must be unique for labelling; repeated: {dupes[:5]}")
    return [Sample(id=i, prompt=row.get("prompt"), completion=row.get("completion", ""), spec=row.get("spec", {}),
                   result=result) for row, i, result in zip(rows, ids, results, strict=True)]


def load_report(report_dir: Path) -> list[Sample]:
    """The samples and results a report directory holds (written by ``write_report``)."""
    rows = read_rows(report_dir / SAMPLES_FILE)
    results = read_rows(report_dir / RESULTS_FILE)
    return build_samples(rows, [str(r.get("id", "")) for r in rows], results)


def load_labels(path: Path) -> dict[str, dict]:
    """``{id: label}`` from a labels JSONL file; a later line for an id replaces an earlier one."""
    labels: dict[str, dict] = {}
    if not path.exists():
        return labels
    for number, row in enumerate(read_rows(path), 1):
        rid = row.get("id")
        if not isinstance(rid, str) or not rid:
            raise VerifierError(f"{path}: label {number} has no id")
        agree = row.get("agree")
        if agree is not None and not isinstance(agree, bool):
            raise VerifierError(f"{path}: label {rid!r}: agree must be true, false or null")
        if not isinstance(row.get("comment", ""), str):
            raise VerifierError(f"{path}: label {rid!r}: comment must be a string")
        labels[rid] = row
    return labels


def write_labels(path: Path, labels: dict[str, dict]) -> None:
    path.write_text("".join(json.dumps(label) + "\n" for label in labels.values()), encoding="utf-8")


def import_labels(source: Path, report_dir: Path) -> dict[str, dict]:
    """Merges an exported labels file into ``report_dir/labels.jsonl`` (ids checked against the samples)."""
    samples = {s.id: s for s in load_report(report_dir)}
    incoming = load_labels(source)
    if not incoming and not source.exists():
        raise VerifierError(f"cannot read {source}")
    unknown = sorted(set(incoming) - set(samples))
    if unknown:
        raise VerifierError(f"{source}: {len(unknown)} label(s) for ids not in {report_dir / SAMPLES_FILE}: "
                            f"{unknown[:5]} (labels of another report?)")
    labels = load_labels(report_dir / LABELS_FILE)
    labels.update(incoming)
    write_labels(report_dir / LABELS_FILE, labels)
    return labels


def label_counts(labels: dict[str, dict]) -> tuple[int, int]:
    """(read, agreed): labels with a reading, and those agreeing with the verifier."""
    read = [label for label in labels.values() if label.get("agree") is not None]
    return len(read), sum(label["agree"] is True for label in read)


# ---- flags ----------------------------------------------------------------------

def _time_limit(sample: Sample, default_timeout_s: float) -> float:
    timeout = sample.spec.get("timeout_s") if isinstance(sample.spec, dict) else None
    return float(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else default_timeout_s


def flag_samples(samples: list[Sample], default_timeout_s: float = 10.0) -> None:
    """Sets each sample's ``flags`` (keys of ``FLAGS``), the cases a person should read first."""
    groups: dict[tuple[str, str], list[Sample]] = defaultdict(list)
    for s in samples:
        groups[(canonical_json(s.spec), s.completion.strip())].append(s)
    differing = {id(s) for group in groups.values() if len({s.result.get("reward") for s in group}) > 1
                 for s in group}
    for s in samples:
        r = s.result
        flags = []
        correctness = r.get("correctness_score") or 0.0
        if r.get("verdict") == "INFRA_ERROR":
            flags.append("infra_error")
        code = "".join((r.get("extracted") or "").split())
        if r.get("kind") in code_kinds() and correctness >= HIGH_CORRECTNESS and len(code) < SHORT_CODE_CHARS:
            flags.append("high_reward_short_code")
        if correctness > 0 and not r.get("tests_total"):
            flags.append("reward_without_tests")
        if id(s) in differing:
            flags.append("identical_different_reward")
        run_s = (r.get("timings") or {}).get("run_s", 0.0)
        if r.get("verdict") == "TIMEOUT" or run_s >= NEAR_LIMIT_SHARE * _time_limit(s, default_timeout_s):
            flags.append("near_timeout")
        if r.get("verdict") in ("PASSED", "PARTIAL") and (r.get("stderr_tail") or "").strip():
            flags.append("passed_with_stderr")
        s.flags = flags


def reading_order(samples: list[Sample]) -> list[Sample]:
    """Flagged samples first (most flags first), otherwise in input order."""
    order = {id(s): i for i, s in enumerate(samples)}
    return sorted(samples, key=lambda s: (-len(s.flags), order[id(s)]))


# ---- summary --------------------------------------------------------------------

def reward_histogram(samples: list[Sample], bins: int = 10) -> tuple[list[int], int]:
    """Counts of rewards in ``bins`` equal bins over [0, 1], and the count with no reward."""
    counts = [0] * bins
    missing = 0
    for s in samples:
        reward = s.result.get("reward")
        if reward is None or not math.isfinite(reward):
            missing += 1
            continue
        counts[min(bins - 1, max(0, int(reward * bins)))] += 1
    return counts, missing


def outcome(result: dict) -> str:
    """malformed / well-formed wrong / partly correct / correct / no reward."""
    if result.get("verdict") == "INFRA_ERROR" or result.get("reward") is None:
        return "no reward (INFRA_ERROR)"
    if result.get("format_score", 0.0) <= 0.0:
        return "malformed"
    correctness = result.get("correctness_score", 0.0)
    if correctness >= 1.0:
        return "correct"
    return "partly correct" if correctness > 0 else "well-formed wrong"


OUTCOMES = ("malformed", "well-formed wrong", "partly correct", "correct", "no reward (INFRA_ERROR)")


def summarize(samples: list[Sample]) -> dict[str, Any]:
    """The numbers of the terminal summary, also stored in ``inspection.json``."""
    rewards = [s.result["reward"] for s in samples if s.result.get("reward") is not None]
    outcomes = Counter(outcome(s.result) for s in samples)
    malformed = [s.result["reward"] for s in samples if outcome(s.result) == "malformed"]
    wellformed = [s.result["reward"] for s in samples
                  if outcome(s.result) in ("well-formed wrong", "partly correct", "correct")]
    counts, missing = reward_histogram(samples)
    return {
        "samples": len(samples),
        "verdicts": dict(Counter(s.result.get("verdict") for s in samples).most_common()),
        "outcomes": {name: outcomes.get(name, 0) for name in OUTCOMES},
        "mean_reward": sum(rewards) / len(rewards) if rewards else None,
        "mean_format": sum(s.result.get("format_score", 0.0) for s in samples) / max(len(samples), 1),
        "mean_correctness": sum(s.result.get("correctness_score", 0.0) for s in samples) / max(len(samples), 1),
        "reward_histogram": counts,
        "no_reward": missing,
        "max_malformed_reward": max(malformed) if malformed else None,
        "min_wellformed_reward": min(wellformed) if wellformed else None,
        "flags": dict(Counter(f for s in samples for f in s.flags)),
        "flagged_samples": sum(bool(s.flags) for s in samples),
        "infra_errors": [s.id for s in samples if s.result.get("verdict") == "INFRA_ERROR"],
    }


def read_meta(report_dir: Path) -> dict[str, Any]:
    try:
        summary = json.loads((report_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VerifierError(f"{report_dir} is not an inspection report ({SUMMARY_FILE}: {exc})") from exc
    return {k: summary.get(k) for k in ("source", "verifier", "built_at", "default_timeout_s")}
