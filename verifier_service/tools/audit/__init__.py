"""The reward audit: a self-test of every task of a dataset before training on it.

For every row (its ``verification`` spec, its prompt, an optional reference solution):

- the reference, when given, must PASS ``runs`` times (the last ``hog_runs`` beside a CPU hog), with the same
  verdict every time and a run time under a third of the spec's limit;
- the probes of ``probes.py`` (trivial answers, the prompt's literals as constants, the hack corpus) must
  earn no correctness (more than ``max_correctness``).

``run_audit`` reads the dataset, runs everything through the service in batches, writes ``audit.jsonl``,
``audit.json`` and ``report.html`` and returns the audits and the summary. ``verifier-service audit`` and
``trainer gate audit`` (which adds the gate record) both call it. docs/audit.md says what it checks and what
it cannot.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from verifier_service.tools.audit.report import inspection_join, summary_table, write_files
from verifier_service.tools.audit.runner import (
    AuditInputError,
    AuditSettings,
    RowAudit,
    audit_rows,
    dataset_hash,
    read_dataset_rows,
)

EXIT_CLEAN = 0
EXIT_USAGE = 2
EXIT_INFRA = 3
EXIT_FLAGGED = 4   # the gate convention of `trainer gate *` (docs/audit.md: why not the 1)


def load_dataset(path: Path) -> list[dict[str, Any]]:
    """A dataset's rows: JSONL (``trainer data convert`` output), a JSON list, or Parquet."""
    from verifier_service.tools.jsonl import read_jsonl

    if path.suffix == ".parquet":
        try:
            import pandas
        except ImportError as exc:
            raise AuditInputError("reading Parquet needs pandas (pip install pandas pyarrow)") from exc
        return [dict(r) for r in pandas.read_parquet(path).to_dict("records")]
    try:
        head = path.read_text(encoding="utf-8")[:4096].lstrip() if path.is_file() else None
    except (OSError, UnicodeError) as exc:
        raise AuditInputError(f"cannot read the dataset {path}: {exc}") from exc
    if head is None:
        raise AuditInputError(f"the dataset {path} is not a file")
    if head.startswith("["):
        import json

        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise AuditInputError(f"{path}: not a JSON list: {exc}") from exc
    return [row for _, row in read_jsonl(path)]


def run_audit(dataset: Path, output: Path, settings: AuditSettings | None = None, *, server: str | None = None,
              config=None, credentials=None, inspection: Path | None = None, rows: list[dict] | None = None,
              show_progress: bool = True) -> tuple[list[RowAudit], dict[str, Any]]:
    """Audits the dataset at ``dataset`` (or ``rows``), writes the files under ``output``; (audits, summary)."""
    settings = settings or AuditSettings()
    if config is not None:
        settings.default_timeout_s = config.default_timeout_s
    if output.exists() and not output.is_dir():
        raise AuditInputError(f"--output {output} is a file: give a directory")
    parsed = read_dataset_rows(rows if rows is not None else load_dataset(dataset), settings)
    audits, summary = asyncio.run(audit_rows(parsed, settings, server=server, config=config,
                                             credentials=credentials, show_progress=show_progress))
    summary = {"dataset": str(dataset), "dataset_sha256": dataset_hash(parsed), "verifier": server or "embedded",
               "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "runs": settings.runs, "hog_runs": settings.hog_runs, "max_correctness": settings.max_correctness,
               "slow_margin": settings.slow_margin, "probe_families": list(settings.families),
               **({"inspection": str(inspection)} if inspection else {}), **summary}
    joined = inspection_join(audits, inspection) if inspection else None
    write_files(output, audits, summary, joined)
    return audits, summary


def exit_code(summary: dict[str, Any]) -> int:
    if summary["infra_errors"]:
        return EXIT_INFRA
    return EXIT_FLAGGED if summary["flagged_rows"] else EXIT_CLEAN


__all__ = ["EXIT_CLEAN", "EXIT_FLAGGED", "EXIT_INFRA", "EXIT_USAGE", "AuditInputError", "AuditSettings",
           "RowAudit", "exit_code", "load_dataset", "run_audit", "summary_table"]
