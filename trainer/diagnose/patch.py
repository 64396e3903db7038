"""One run-config patch from many findings: merged (the most severe finding first wins), applied to the run's
config with its reasons, and validated as a run config."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainer.diagnose.checks import Finding
from trainer.variants import get_variant

# ---- one patch from many findings --------------------------------------------------------


@dataclass
class MergedPatch:
    patch: dict[str, Any]
    reasons: dict[str, str]   # deviation_reasons entries, one per patched setting
    notes: list[str]          # what was left out, and why


def merge_patches(findings: Sequence[Finding]) -> MergedPatch:
    """One run-config patch: findings in order (most severe first); the first to set a value keeps it."""
    patch: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    notes: list[str] = []
    for finding in findings:
        why = f"trainer diagnose: {finding.name}: {finding.reason}"
        for key, value in finding.patch.items():
            if key == "grpo_overrides":
                overrides = patch.setdefault("grpo_overrides", {})
                for name, v in value.items():
                    if name in overrides and overrides[name] != v:
                        notes.append(f"{finding.name}: grpo_overrides.{name}={v!r} not applied ({overrides[name]!r} "
                                     "from a more severe finding stands)")
                        continue
                    overrides[name] = v
                    reasons.setdefault(f"grpo_overrides.{name}", why)
            elif key in patch and patch[key] != value:
                notes.append(f"{finding.name}: {key}={value!r} not applied ({patch[key]!r} from a more severe "
                             "finding stands)")
            else:
                patch[key] = value
                reasons.setdefault(key, why)
    if "variant" in patch:  # a preset is a coherent set: a loose override of one of its values would break it
        preset = get_variant(patch["variant"]).grpo_overrides
        for name in [n for n, v in patch.get("grpo_overrides", {}).items() if n in preset and preset[n] != v]:
            notes.append(f"grpo_overrides.{name}={patch['grpo_overrides'][name]!r} not applied: variant "
                         f"{patch['variant']} sets {name}={preset[name]!r}")
            del patch["grpo_overrides"][name]
            reasons.pop(f"grpo_overrides.{name}", None)
        if not patch.get("grpo_overrides", True):
            del patch["grpo_overrides"]
    return MergedPatch(patch, reasons, notes)


def patched_config(base: dict[str, Any], merged: MergedPatch) -> dict[str, Any]:
    """The run's config with the patch on top, its reasons recorded, and a fresh output_dir."""
    config = json.loads(json.dumps(base))  # a deep copy of plain data
    for key, value in merged.patch.items():
        if key == "grpo_overrides":
            config["grpo_overrides"] = {**config.get("grpo_overrides", {}), **value}
        else:
            config[key] = value
    config["deviation_reasons"] = {**config.get("deviation_reasons", {}), **merged.reasons}
    if config.get("output_dir"):
        config["output_dir"] = str(config["output_dir"]).rstrip("/") + "-patched"
    return config


def validate_patched(config: dict[str, Any]) -> list[str]:
    """The patched config's deviations; raises ConfigError when the patch makes it invalid."""
    from trainer.config import RunConfig

    return RunConfig.from_dict(config, where="patched run config").validate()
