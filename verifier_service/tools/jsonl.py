"""Reading JSONL input files, with errors that name the file and line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from verifier_service.errors import VerifierError

_STDIN: list[bytes] = []  # stdin's bytes, once read (a command may read its input twice)


def _read_bytes(path: Path) -> bytes:
    if str(path) == "-":
        if not _STDIN:
            _STDIN.append(sys.stdin.buffer.read())
        return _STDIN[0]
    try:
        return path.read_bytes()
    except OSError as exc:
        raise VerifierError(f"cannot read {path}: {exc.strerror}") from exc


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """(line number, value) for each non-blank line of ``path`` (``-``: standard input)."""
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        name = "stdin" if str(path) == "-" else path
        raise VerifierError(f"{name}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}): "
                            f"save the file as UTF-8 (JSON escapes such as \\u00e9 are fine)") from exc
    lines = text.split("\n")  # (not splitlines: a JSON string may hold U+2028 and other line separators)
    values = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            values.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise VerifierError(f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
        except RecursionError as exc:
            raise VerifierError(f"{path}:{number}: JSON nested too deeply to read") from exc
    return values
