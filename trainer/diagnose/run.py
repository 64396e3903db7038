"""Reading a run: TRL's log history and the run config, from run.json or a checkpoint's trainer_state.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.errors import TrainerError

# ---- reading a run --------------------------------------------------------------


@dataclass
class Run:
    source: Path
    history: list[dict[str, Any]]
    config: dict[str, Any] | None = None   # the run's RunConfig, when run.json holds it
    record: dict[str, Any] | None = None   # run.json itself


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise TrainerError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("log_history"), list):
        raise TrainerError(f"{path} holds no log_history (expected a run.json of trainer train, or TRL's "
                           "trainer_state.json)")
    return data


def _checkpoint_number(path: Path) -> int:
    try:
        return int(path.name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return -1


def load_run(path: str | Path) -> Run:
    """A run from its directory (run.json, else the latest checkpoint's trainer_state.json) or either file."""
    path = Path(path)
    if path.is_file():
        candidates = [path]
    elif path.is_dir():
        checkpoints = sorted(path.glob("checkpoint-*/trainer_state.json"), key=lambda p: _checkpoint_number(p.parent))
        candidates = [p for p in (path / "run.json", path / "trainer_state.json") if p.is_file()] + checkpoints[-1:]
    else:
        raise TrainerError(f"{path} does not exist")
    if not candidates:
        raise TrainerError(f"no run.json or trainer_state.json under {path}")
    source = candidates[0]
    data = _read_json(source)
    if source.name == "trainer_state.json":  # the run's config lives in run.json of the run directory, if any
        for parent in (source.parent, source.parent.parent):
            if (parent / "run.json").is_file():
                record = json.loads((parent / "run.json").read_text())
                return Run(source, data["log_history"], record.get("config"), record)
        return Run(source, data["log_history"])
    return Run(source, data["log_history"], data.get("config"), data)


def load_history(run_dir: str | Path) -> list[dict[str, Any]]:
    """TRL's log history of a run (run.json's log_history, or trainer_state.json's)."""
    return load_run(run_dir).history
