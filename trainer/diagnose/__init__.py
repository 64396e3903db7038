"""``trainer diagnose RUN_DIR``: name what a GRPO run did wrong, from its own metrics, and propose a change.

The package's modules, along the seams of the job: ``run.py`` reads a run (its log history and config),
``checks.py`` holds the thresholds, the findings and the checks (and the method, in its docstring),
``patch.py`` merges the findings' patches into one validated run config, ``report.py`` renders the result
(tables, the YAML for ``trainer train --config``).
"""

from trainer.diagnose.checks import CHECKS, Context, Diagnosis, Finding, Thresholds, diagnose, run_checks, series
from trainer.diagnose.patch import MergedPatch, merge_patches, patched_config, validate_patched
from trainer.diagnose.report import EXIT_FINDINGS, EXIT_HEALTHY, Report, build_report, patch_yaml, render
from trainer.diagnose.run import Run, load_history, load_run

__all__ = ["CHECKS", "EXIT_FINDINGS", "EXIT_HEALTHY", "Context", "Diagnosis", "Finding", "MergedPatch", "Report",
           "Run", "Thresholds", "build_report", "diagnose", "load_history", "load_run", "merge_patches", "patch_yaml",
           "patched_config", "render", "run_checks", "series", "validate_patched"]
