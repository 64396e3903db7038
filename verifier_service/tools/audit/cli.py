"""The audit's command-line flags and its run, shared by ``verifier-service audit`` and ``trainer gate audit``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from verifier_service.tools.audit import EXIT_CLEAN, EXIT_FLAGGED, EXIT_INFRA, exit_code, run_audit, summary_table
from verifier_service.tools.audit.probes import FAMILIES
from verifier_service.tools.audit.runner import SLOW_MARGIN, AuditInputError, AuditSettings, RowAudit

EXIT_CODES = f"""exit codes:
  {EXIT_CLEAN}    no row flagged
  1    an unexpected error (a bug)
  2    bad usage or input (a flag, the dataset, a spec the service refuses)
  {EXIT_INFRA}    infrastructure: the service or sandbox is unavailable, or a result was INFRA_ERROR (inconclusive)
  {EXIT_FLAGGED}    some rows are flagged (a failed gate, as for every `trainer gate`)
  130  interrupted"""


def add_audit_flags(parser: argparse.ArgumentParser, *, dataset_flag: bool = True) -> None:
    """The audit's flags; ``dataset_flag``: an ``--input`` flag (the trainer takes the run's dataset instead)."""
    if dataset_flag:
        parser.add_argument("--input", dest="audit_dataset", type=Path, required=True,
                            help="the dataset: JSONL rows {id, prompt, verification, reference} (trainer data convert)")
    parser.add_argument("--output", dest="audit_output", type=Path, required=True,
                        help="directory for audit.jsonl, audit.json and report.html")
    parser.add_argument("--runs", type=int, default=3, help="reference runs (default 3)")
    parser.add_argument("--hog-runs", type=int, default=1, help="of the reference runs, how many beside a CPU hog "
                        "(the last ones; default 1)")
    parser.add_argument("--hog-cores", type=int, default=None, help="busy processes of the hog (default: one per CPU)")
    parser.add_argument("--max-correctness", type=float, default=0.0,
                        help="a probe earning more correctness than this flags its row (default 0: none allowed)")
    parser.add_argument("--slow-margin", type=float, default=SLOW_MARGIN,
                        help="flag a reference slower than its limit divided by this (default 3)")
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help=f"probe families to run (default {','.join(FAMILIES)})")
    parser.add_argument("--audit-spec-column", dest="audit_spec_column", default="verification",
                        help="the dataset's spec column (default verification; a 'spec' column works too)")
    parser.add_argument("--reference-column", default="reference", help="the reference solution column")
    parser.add_argument("--inspection", type=Path, default=None,
                        help="an inspection report directory to join: each row's card lists its inspected samples")
    parser.add_argument("--audit-batch-size", dest="audit_batch_size", type=int, default=64,
                        help="completions per VerifyBatch call")
    parser.add_argument("--audit-parallel", dest="audit_parallel", type=int, default=4, help="batches in flight")


def settings_from_args(args: argparse.Namespace) -> AuditSettings:
    families = tuple(f.strip() for f in args.families.split(",") if f.strip())
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown or not families:
        raise AuditInputError(f"--families: unknown {unknown}; choose from {', '.join(FAMILIES)}")
    if args.runs < 1 or not 0 <= args.hog_runs < args.runs + (args.runs == 1):
        raise AuditInputError("--runs must be at least 1 and --hog-runs between 0 and runs - 1 (the first run is "
                              "never beside the hog)")
    if args.hog_cores is not None and args.hog_cores < 1:
        raise AuditInputError("--hog-cores must be at least 1")
    if not 0.0 <= args.max_correctness < 1.0:
        raise AuditInputError("--max-correctness must be in [0, 1)")
    if args.slow_margin < 1.0:
        raise AuditInputError("--slow-margin must be at least 1")
    if args.audit_batch_size < 1 or args.audit_parallel < 1:
        raise AuditInputError("--audit-batch-size and --audit-parallel must be positive")
    return AuditSettings(runs=args.runs, hog_runs=min(args.hog_runs, args.runs - 1), hog_cores=args.hog_cores,
                         max_correctness=args.max_correctness, slow_margin=args.slow_margin, families=families,
                         spec_column=args.audit_spec_column, reference_column=args.reference_column,
                         batch_size=args.audit_batch_size, parallel=args.audit_parallel)


def run_and_report(args: argparse.Namespace, *, server: str | None, config=None, credentials=None,
                   rows: list[dict] | None = None) -> tuple[int, dict[str, Any], list[RowAudit]]:
    """Runs the audit the flags describe, prints the summary; (exit code, summary, the rows' audits)."""
    from rich.console import Console

    settings = settings_from_args(args)
    console = Console(stderr=True)
    if server and settings.hog_runs:
        console.print("note: the CPU hog loads this machine; it tests the reference under load only when the "
                      f"service at {server} runs here")
    audits, summary = run_audit(args.audit_dataset, args.audit_output, settings, server=server, config=config,
                           credentials=credentials, inspection=args.inspection, rows=rows,
                           show_progress=True)
    console.print(summary_table(summary))
    console.print(f"audit: {args.audit_output / 'audit.jsonl'}; page: {args.audit_output / 'report.html'} "
                  f"({summary['verifications_per_s']} verifications/s)")
    code = exit_code(summary)
    if code == EXIT_INFRA:
        console.print(f"[bold red]{summary['infra_errors']} row(s) could not be judged (INFRA_ERROR): the audit is "
                      "inconclusive; fix the service and run it again[/]")
    return code, summary, audits
