"""The run's results in one JSON document (``STATE/report/results.json``): what ``report.py`` renders.

Collected on the GPU machine from the state dir (stdlib only), so that the report can be rendered anywhere from
the fetched results. Targets are judged here from the measured numbers; a missing measurement is "not measured",
never met.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _jsonl(path: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except OSError:
        return []


def judge_targets(eval_before: dict | None, eval_after: dict | None, timing: dict | None,
                  targets: dict[str, float]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    if eval_before and eval_after:
        gain = eval_after["pass@1"]["rate"] - eval_before["pass@1"]["rate"]
        out["pass@1_gain"] = {"target": f">= +{targets['pass@1_gain']:.0%} absolute", "measured": gain,
                              "met": gain >= targets["pass@1_gain"]}
    else:
        out["pass@1_gain"] = {"target": f">= +{targets['pass@1_gain']:.0%} absolute", "measured": None,
                              "met": None}
    fmt = eval_after["format_compliance"]["rate"] if eval_after else None
    out["format_after"] = {"target": f">= {targets['format_after']:.0%}", "measured": fmt,
                           "met": None if fmt is None else fmt >= targets["format_after"]}
    share = (timing or {}).get("mean_share")
    out["reward_wait_share"] = {"target": f"<= {targets['reward_wait_share']:.0%} of step time", "measured": share,
                                "met": None if share is None else share <= targets["reward_wait_share"]}
    return out


def environment() -> dict[str, str]:
    """Versions of what the run used, and the accelerator."""
    from importlib import metadata

    env = {}
    for name in ("torch", "transformers", "trl", "vllm", "datasets", "grpcio", "protobuf"):
        try:
            env[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            env[name] = "absent"
    try:
        import torch

        env["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    except Exception as exc:  # noqa: BLE001 - a report without the device name is still a report
        env["device"] = f"unknown ({exc})"
    return env


def collect(state: Path, pipeline_config: dict, targets: dict[str, float]) -> dict[str, Any]:
    run = _load(state / "run" / "run.json") or {}
    timing = _load(state / "run" / "reward_timing.json") or {}
    base_rate = _load(state / "gates" / "base_rate.json")
    if base_rate:
        base_rate = {k: v for k, v in base_rate.items() if k != "per_prompt"}
    inspection = _load(state / "gates" / "inspection.json")
    before, after = _load(state / "eval" / "before.json"), _load(state / "eval" / "after.json")
    return {
        "pipeline_config": pipeline_config,
        "environment": environment(),
        "stages": _load(state / "stages.json"),
        "base_rate": base_rate,
        "inspection": inspection,
        "eval_before": before,
        "eval_after": after,
        "run": {k: run.get(k) for k in ("config", "deviations", "train_metrics", "verifier_batches",
                                        "verifier_infra_errors", "shadow_disagreements", "gates",
                                        "vllm_environment")},
        "budget": _load(state / "run" / "budget.json"),
        "reward_timing": timing,
        "steps": _jsonl(state / "run" / "steps.jsonl"),
        "targets": judge_targets(before, after, timing.get("summary"), targets),
    }
