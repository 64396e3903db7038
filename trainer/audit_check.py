"""The reward-audit gate's check before training (``trainer/gates.py`` calls it; ``trainer/audit_gate.py``
writes the record it reads)."""

from __future__ import annotations

import json
from pathlib import Path

from trainer.config import RunConfig

AUDIT_FILE = "audit.json"


def check_audit(config: RunConfig, current_hash: str, directory: Path, config_path: str) -> tuple[str | None, dict]:
    """(problem or None, what run.json records) for the audit gate."""
    command = f"trainer gate audit --config {config_path} --output DIR"
    if config.audit_override:
        return None, {"overridden": config.audit_override}
    try:
        record = json.loads((directory / AUDIT_FILE).read_text())
    except FileNotFoundError:
        return f"audit: no record in {directory} (run `{command}`)", {}
    except (OSError, ValueError) as exc:
        return f"audit: cannot read {directory / AUDIT_FILE}: {exc}", {}
    if record.get("reward_config_hash") != current_hash:
        return (f"audit: stale, run for reward config {str(record.get('reward_config_hash'))[:12]}, the current one "
                f"is {current_hash[:12]} (run `{command}` again)"), {}
    if not record.get("passed"):
        return (f"audit: failed ({'; '.join(record.get('problems', []))}); or set audit_override: REASON "
                "(--audit-override REASON) to train anyway, recorded in run.json"), {}
    return None, {k: record.get(k) for k in ("created_at", "rows", "flagged_rows", "dataset_sha256", "output_dir")}
