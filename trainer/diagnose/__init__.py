"""``trainer diagnose RUN_DIR``: name what a GRPO run did wrong, from its own metrics, and propose a change.

The package's modules, along the seams of the job (see ``checks.py`` for the method).
"""

from trainer.diagnose.checks import (
    CHECKS,
    EXIT_FINDINGS,
    EXIT_HEALTHY,
    Context,
    Diagnosis,
    Finding,
    MergedPatch,
    Report,
    Run,
    Thresholds,
    build_report,
    diagnose,
    load_history,
    load_run,
    merge_patches,
    patch_yaml,
    patched_config,
    render,
    run_checks,
    series,
    validate_patched,
)

__all__ = ["CHECKS", "EXIT_FINDINGS", "EXIT_HEALTHY", "Context", "Diagnosis", "Finding", "MergedPatch", "Report",
           "Run", "Thresholds", "build_report", "diagnose", "load_history", "load_run", "merge_patches", "patch_yaml",
           "patched_config", "render", "run_checks", "series", "validate_patched"]
