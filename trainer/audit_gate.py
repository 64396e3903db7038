"""The reward-audit gate: ``trainer gate audit`` runs the audit (``verifier_service.tools.audit``) over the run's
dataset and writes ``audit.json`` to the gates directory, tied to the reward config hash like the other gates.

``trainer train`` refuses to start unless the record passed (no row flagged, none left unjudged) for the current
reward config, or the run config gives ``audit_override`` (the reason, recorded in run.json and as a deviation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.audit_check import AUDIT_FILE
from trainer.config import RunConfig
from trainer.errors import TrainerError

__all__ = ["AUDIT_FILE", "audit_record", "run_audit_gate"]
FLAGGED_LISTED = 500  # row ids (and their flags) the record lists; audit.jsonl has them all


def audit_record(config: RunConfig, specs: list[str], summary: dict[str, Any], audits: list, output: Path) -> dict:
    from trainer.gates import now_utc, reward_config_hash

    flagged = {a.id: a.flags for a in audits if a.flags}
    passed = not flagged and not summary["infra_errors"]
    problems = []
    if flagged:
        problems.append(f"{len(flagged)} of {summary['rows']} row(s) flagged ("
                        + ", ".join(f"{c}: {n}" for c, n in summary["rows_by_flag_class"].items())
                        + f"); read {output / 'report.html'}, fix or drop those rows, or set audit_override: REASON")
    if summary["infra_errors"]:
        problems.append(f"{summary['infra_errors']} row(s) could not be judged (INFRA_ERROR): run the audit again")
    return {"gate": "audit", "passed": passed, "reward_config_hash": reward_config_hash(config, specs),
            "dataset": str(config.dataset), "dataset_sha256": summary["dataset_sha256"],
            "rows": summary["rows"], "flagged_rows": summary["flagged_rows"],
            "rows_by_flag_class": summary["rows_by_flag_class"], "output_dir": str(output),
            "flagged": dict(list(flagged.items())[:FLAGGED_LISTED]),
            "settings": {k: summary[k] for k in ("runs", "hog_runs", "max_correctness", "slow_margin",
                                                 "probe_families")},
            "verifications": summary["verifications"], "seconds": summary["seconds"],
            "problems": problems, "created_at": now_utc()}


def run_audit_gate(config: RunConfig, dataset, args, *, embedded: bool) -> tuple[int, dict, Path]:
    """Audits the run's dataset (rows as loaded for training) and writes the gate record; (exit code, record,
    path)."""
    from trainer.config import verifier_credentials
    from trainer.gates import dataset_specs, gates_dir, write_record
    from verifier_service.errors import VerifierError
    from verifier_service.tools.audit import EXIT_FLAGGED, EXIT_INFRA
    from verifier_service.tools.audit.cli import run_and_report

    specs = dataset_specs(dataset, config.spec_column)
    args.audit_dataset = Path(config.dataset)
    if args.audit_spec_column == "verification":
        args.audit_spec_column = config.spec_column
    try:
        code, summary, audits = run_and_report(args, server=None if embedded else config.verifier,
                                       credentials=None if embedded else verifier_credentials(config),
                                       rows=dataset.to_list())
    except VerifierError as exc:
        raise TrainerError(f"audit: {exc}") from exc
    record = audit_record(config, specs, summary, audits, args.audit_output)
    path = write_record(gates_dir(config), AUDIT_FILE, record)
    return (code if code in (EXIT_FLAGGED, EXIT_INFRA) else 0), record, path
