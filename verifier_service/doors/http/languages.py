"""SandboxFusion's language names -> the languages the stdio kind runs, read from its table at call time.

The stdio kind's language table (``verifier_service.kinds.stdio.LANGUAGES``, or a ``languages`` module of
the kinds package that it imports) says how each language is compiled and run: a source ``file``, an
optional ``compile`` argv and a ``run`` argv. Nothing here copies it: a language added to that table is
served by ``/run_code`` without a change here, under its own name or the SandboxFusion alias below.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

# SandboxFusion's ``Language`` names (sandbox/runners/types.py): a name outside this list gets their
# request-validation answer (HTTP 422), one inside it that the table lacks their "unsupported" result.
SANDBOX_FUSION_LANGUAGES = (
    "python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash", "typescript", "sql", "rust",
    "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala", "julia", "pytest", "junit", "kotlin_script", "jest",
    "verilog", "python_gpu", "lean", "swift", "racket", "python2", "gtest", "react")
# SandboxFusion name -> the names the table may use for it, first match wins.
ALIASES = {
    "python": ("python", "python3"),
    "cpp": ("cpp", "c++"),
    "nodejs": ("javascript", "nodejs", "js", "node"),
    "typescript": ("typescript", "ts"),
    "go": ("go", "golang"),
    "java": ("java",),
    "rust": ("rust",),
    "bash": ("bash", "sh"),
    "R": ("r", "R"),
}


@dataclass(frozen=True)
class Language:
    """How one language is compiled (``compile`` empty: it is not) and run, and the table's name for it."""

    name: str
    file: str
    compile: tuple[str, ...]
    run: tuple[str, ...]
    image: str = ""  # the image family with its toolchain, where the table names one
    entry: Any = None  # the table's own row (its ``files(source)``: Java names the file after the class)
    compiled: bool = False  # a build step makes what runs (not a syntax check: SandboxFusion has none)
    address_space_limit: bool = False  # RLIMIT_AS on the run (Python), else the sandbox's memory limit

    def for_source(self, source: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """(file name, compile argv, run argv) for this source."""
        files = getattr(self.entry, "files", None)
        if callable(files):
            file, compile_argv, run = files(source)
            return file, tuple(compile_argv), tuple(run)
        return self.file, self.compile, self.run


def _is_syntax_check(argv: tuple[str, ...]) -> bool:
    return bool(argv) and ((argv[0].startswith("python") and any("compile(" in a for a in argv))
                           or any(f in argv[1:2] for f in ("-n", "-l", "-c", "-p")) or "--check" in argv
                           or any("parse(" in a for a in argv))


def run_argv(lang: Language, run: tuple[str, ...], cpus: float, memory_mb: int) -> list[str]:
    """The run step's argv: the table module's ``run_argv`` where it has one (Go's GOMAXPROCS), else ``run``."""
    try:
        module = importlib.import_module("verifier_service.kinds.languages")
    except ImportError:
        return list(run)
    adjust = getattr(module, "run_argv", None)
    return list(adjust(lang.entry, run, cpus, memory_mb)) if callable(adjust) and lang.entry is not None \
        else list(run)


def table() -> dict[str, Any]:
    """The stdio kind's language table as it is now."""
    try:
        module = importlib.import_module("verifier_service.kinds.languages")
        for attr in ("LANGUAGES", "TABLE"):
            found = getattr(module, attr, None)
            if isinstance(found, dict) and found:
                return found
    except ImportError:
        pass
    from verifier_service.kinds import stdio

    return stdio.LANGUAGES


def _field(entry: Any, name: str) -> Any:
    return entry.get(name) if isinstance(entry, dict) else getattr(entry, name, None)


def _argv(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    if isinstance(value, str):
        return ("sh", "-c", value)
    return tuple(str(v) for v in value)


def resolve(sandbox_fusion_name: str) -> Language | None:
    """The table's language for a SandboxFusion language name, None when the table has none."""
    languages = table()
    for name in ALIASES.get(sandbox_fusion_name, (sandbox_fusion_name,)):
        entry = languages.get(name)
        if entry is None:
            continue
        run, file = _argv(_field(entry, "run")), _field(entry, "file")
        if not run or not isinstance(file, str) or not file:
            continue
        compile_argv = _argv(_field(entry, "compile"))
        artifacts = _field(entry, "artifacts")
        compiled = bool(artifacts) if artifacts is not None else bool(compile_argv) and not _is_syntax_check(
            compile_argv)
        limit = _field(entry, "address_space_limit")
        return Language(name=name, file=file, compile=compile_argv, run=run, image=str(_field(entry, "image") or ""),
                        entry=None if isinstance(entry, dict) else entry, compiled=compiled,
                        address_space_limit=bool(limit) if limit is not None else run[0].startswith("python"))
    return None


def supported() -> list[str]:
    """The SandboxFusion names this service runs now."""
    return [name for name in SANDBOX_FUSION_LANGUAGES if resolve(name) is not None]
