"""The ``trainer diagnose`` command's report: the diagnosis and the patch, as tables and as YAML."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.diagnose.checks import CRITICAL, Diagnosis, Thresholds, run_checks
from trainer.diagnose.patch import MergedPatch, merge_patches, patched_config, validate_patched
from trainer.diagnose.run import Run, load_run
from trainer.errors import ConfigError, TrainerError

# ---- the command ---------------------------------------------------------------------

EXIT_HEALTHY, EXIT_FINDINGS = 0, 1


@dataclass
class Report:
    run: Run
    diagnosis: Diagnosis
    thresholds: Thresholds
    merged: MergedPatch
    patched: dict[str, Any] | None          # the run config with the patch on top (None: base config unknown)
    deviations: list[str]                  # what the patched config records as deviations

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": str(self.run.source),
            "healthy": self.diagnosis.healthy,
            "checks_run": self.diagnosis.ran,
            "findings": [f.to_dict() for f in self.diagnosis.findings],
            "skipped": self.diagnosis.skipped,
            "patch": self.merged.patch,
            "patch_reasons": self.merged.reasons,
            "patch_notes": self.merged.notes,
            "patched_deviations": self.deviations,
            "thresholds": dataclasses.asdict(self.thresholds),
        }


def build_report(run_dir: str | Path, thresholds: Thresholds = Thresholds(),
                 base_config: str | Path | None = None) -> Report:
    """Diagnoses a run and builds the validated, merged patch on top of its config."""
    run = load_run(run_dir)
    config = run.config
    if base_config is not None:
        from trainer.config import RunConfig

        config = RunConfig.from_yaml(base_config).to_dict()
    diagnosis = run_checks(run.history, thresholds, config)
    merged = merge_patches(diagnosis.findings)
    patched, deviations = None, []
    if config is not None and merged.patch:
        patched = patched_config(config, merged)
        try:
            deviations = validate_patched(patched)
        except ConfigError as exc:
            raise TrainerError(f"the proposed patch {merged.patch} does not validate on this run's config: {exc}") \
                from exc
    elif merged.patch:
        validate_patched(merged.patch)  # at least on the recipe's defaults
    return Report(run, diagnosis, thresholds, merged, patched, deviations)


def patch_yaml(report: Report) -> str:
    """The YAML for ``trainer train --config``: the run's config patched, or the bare patch when it is unknown."""
    import yaml

    head = [f"# trainer diagnose {report.run.source}: {len(report.diagnosis.findings)} finding(s)"]
    head += [f"#   {f.severity}: {f.name}: {f.summary}" for f in report.diagnosis.findings]
    head += [f"# not applied: {note}" for note in report.merged.notes]
    if report.patched is None:
        head.append("# the run's config is unknown: merge these settings into it (or rerun with --config RUN.yaml)")
        body = {**report.merged.patch, "deviation_reasons": report.merged.reasons}
    else:
        head.append("# the run's config with the patch on top; output_dir moved so the first run's record stays")
        body = report.patched
    return "\n".join(head) + "\n" + yaml.safe_dump(body, sort_keys=False)


def render(report: Report, file=None) -> None:
    """The report as rich tables: findings with their evidence and patch, then reasons, skipped checks, the patch."""
    import yaml
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=file, width=140, highlight=False)
    findings = report.diagnosis.findings
    console.print(f"[bold]run:[/bold] {report.run.source} ({len(report.run.history)} log entries)")
    if findings:
        table = Table(title="Findings", show_lines=True)
        for column in ("severity", "finding", "evidence (metric, steps, threshold)", "patch"):
            table.add_column(column, overflow="fold")
        for f in findings:
            style = "red" if f.severity == CRITICAL else "yellow"
            table.add_row(f"[{style}]{f.severity}[/{style}]", escape(f"{f.name}\n{f.summary}"),
                          escape("\n".join(f"- {e}" for e in f.evidence)),
                          escape(yaml.safe_dump(f.patch, sort_keys=False).strip()) if f.patch else "none")
        console.print(table)
        for f in findings:
            console.print(f"[bold]{f.name}[/bold]: {escape(f.reason)}")
            if f.paper:
                console.print(f"  paper: {f.paper}", markup=False)
            if f.action:
                console.print(f"  action: {f.action}", markup=False)
    elif report.diagnosis.ran:
        console.print("[green]no finding[/green]: the base recipe behaves on the metrics logged; keep it")
    else:
        console.print("[yellow]nothing diagnosed[/yellow]: every check was skipped (below: why)")
    if report.diagnosis.skipped:
        table = Table(title="Checks not run")
        table.add_column("check")
        table.add_column("why", overflow="fold")
        for name, why in report.diagnosis.skipped.items():
            table.add_row(name, escape(why))
        console.print(table)
    if report.merged.patch:
        console.print("[bold]proposed patch[/bold] (validated on the run's config):", markup=True)
        console.print(yaml.safe_dump(report.merged.patch, sort_keys=False).rstrip(), markup=False)
        for note in report.merged.notes:
            console.print(f"not applied: {note}", markup=False)
        if report.deviations:
            console.print("the patched run records these deviations:")
            for d in report.deviations:
                console.print(f"  - {d}", markup=False)
