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
}


@dataclass(frozen=True)
class Language:
    """How one language is compiled (``compile`` empty: it is not) and run, and the table's name for it."""

    name: str
    file: str
    compile: tuple[str, ...]
    run: tuple[str, ...]
    image: str = ""  # a sandbox image of its own, where the table names one

    @property
    def compiled(self) -> bool:
        """Whether a build step makes something else to run (not the interpreter's syntax check)."""
        return bool(self.compile) and not _is_syntax_check(self.compile)


def _is_syntax_check(argv: tuple[str, ...]) -> bool:
    return bool(argv) and argv[0].startswith("python") and any("compile(" in a for a in argv)


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
        return Language(name=name, file=file, compile=_argv(_field(entry, "compile")), run=run,
                        image=str(_field(entry, "image") or ""))
    return None


def supported() -> list[str]:
    """The SandboxFusion names this service runs now."""
    return [name for name in SANDBOX_FUSION_LANGUAGES if resolve(name) is not None]
