"""Reading JSONL input files, with errors that name the file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verifier_service.errors import VerifierError


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """(line number, value) for each non-blank line of ``path``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise VerifierError(f"cannot read {path}: {exc.strerror}") from exc
    values = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            values.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise VerifierError(f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    return values
