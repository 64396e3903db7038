"""SandboxFusion's ``POST /run_jupyter``: run notebook cells in order in one live Python kernel, answer per cell.

The wire contract is SandboxFusion's (``RunJupyterRequest`` -> ``RunJupyterResponse``,
sandbox/server/sandbox_api.py and sandbox/runners/types.py): ``cells`` (code strings), ``cell_timeout`` (0: no
limit of its own), ``total_timeout`` (default 45), ``memory_limit_MB`` (-1: the service's), ``kernel``
(``python3``), ``files`` (path -> base64), ``fetch_files``; the answer's ``status`` is ``Success`` (every cell
ran; a cell that raised is still a success, as in a notebook), ``Failed`` (the time ran out, or the kernel's
sandbox died) or ``SandboxError``; ``driver`` is the run as a ``CommandRunResult``; ``cells`` hold
``{stdout, stderr, display: [mime -> data], error: [{ename, evalue, traceback}]}``.

One request is one sandbox session (``service/sessions.py``): opened for the caller's tenant (its session quota
and the replica's ``max_sessions`` apply), the cells run one after the other with the request's limits, and the
session is closed whatever happens, so nothing of one request reaches another.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import posixpath
import time
from typing import Any

from verifier_service.doors.http.calls import REFUSALS, HttpError, refusal
from verifier_service.doors.http.sandboxfusion import _invalid
from verifier_service.errors import SessionGone
from verifier_service.sandbox.sessions import CellOutcome, SessionLimits

KERNELS = ("python3",)
MIN_MEMORY_MB = 32

# Run in the fresh kernel before the first cell: writes the request's files (names and base64 as JSON
# literals), leaving nothing in the namespace.
PUT_FILES = """def __rlvr_put(files):
    import base64, os
    for path, content in files.items():
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(content))
__rlvr_put(json_files)
del __rlvr_put
"""

# Run after the last cell: prints the requested files that exist, as one JSON object of base64.
GET_FILES = """def __rlvr_get(paths):
    import base64, json, os
    found = {}
    for path in paths:
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                found[path] = base64.b64encode(handle.read()).decode("ascii")
    print(json.dumps(found))
__rlvr_get(json_paths)
del __rlvr_get
"""


def _seconds(body: dict, field: str, default: float, zero_ok: bool, limit: float) -> float:
    value = body.get(field, default)
    if value is None:
        value = default
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value < 0 or (value == 0 and not zero_ok)):
        raise _invalid(field, "must be a " + ("non-negative" if zero_ok else "positive") + " number of seconds",
                       value)
    if value > limit:
        raise _invalid(field, f"must be at most {limit:g} seconds on this service", value)
    return float(value)


def _inside(path: Any) -> bool:
    norm = posixpath.normpath(path) if isinstance(path, str) and path else ""
    return bool(norm) and not path.startswith("/") and not norm.startswith("..") and norm != "."


def parse(body: Any, config) -> dict[str, Any]:
    """The request's fields, checked; HttpError 422 (FastAPI's ``detail`` list, as theirs) names the first bad one."""
    if not isinstance(body, dict):
        raise HttpError(422, "the body must be a JSON object (SandboxFusion's RunJupyterRequest)",
                        body={"detail": [{"type": "model_attributes_type", "loc": ["body"],
                                          "msg": "Input should be a valid dictionary"}],
                              "error": "the body must be a JSON object (SandboxFusion's RunJupyterRequest)"})
    cells = body.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, str) for c in cells):
        raise _invalid("cells", "is required: a list of code strings, one per cell")
    kernel = body.get("kernel", "python3")
    if kernel not in KERNELS:
        raise _invalid("kernel", "Input should be 'python3'", kernel)
    memory = body.get("memory_limit_MB", -1)
    if isinstance(memory, bool) or not isinstance(memory, int):
        raise _invalid("memory_limit_MB", "must be a whole number of megabytes (-1: the service's limit)", memory)
    memory = config.memory_mb if memory <= 0 else min(memory, config.memory_mb)
    if memory < MIN_MEMORY_MB:
        raise _invalid("memory_limit_MB", f"must be at least {MIN_MEMORY_MB} (a Python kernel needs it)", memory)
    files = body.get("files") or {}
    if not isinstance(files, dict):
        raise _invalid("files", "must map file paths to base64 contents")
    for path, content in files.items():
        if not _inside(path):
            raise _invalid("files", f"files[{path!r}]: a path inside the working directory, without '..'")
        try:
            base64.b64decode(content if isinstance(content, str) else b"\0", validate=True)
        except (binascii.Error, ValueError):
            raise _invalid("files", f"files[{path!r}] must be a base64 string") from None
    fetch = body.get("fetch_files") or []
    if not isinstance(fetch, list) or not all(_inside(p) for p in fetch):
        raise _invalid("fetch_files", "must be a list of file paths inside the working directory, without '..'")
    total = _seconds(body, "total_timeout", 45, False, 10 * config.session_budget_s)
    cell = _seconds(body, "cell_timeout", 0, True, config.max_timeout_s)
    return {"cells": cells, "cell_timeout": cell, "total_timeout": total, "memory_mb": memory,
            "files": {posixpath.normpath(p): c for p, c in files.items()},
            "fetch_files": [posixpath.normpath(p) for p in fetch]}


def _error_entry(ename: str, evalue: str, traceback: str = "") -> dict[str, Any]:
    return {"ename": ename, "evalue": evalue, "traceback": traceback.splitlines()}


def cell_result(outcome: CellOutcome, limit_s: float, output_limit: int) -> dict[str, Any]:
    """One cell as SandboxFusion's ``CellRunResult`` (Jupyter's stream, display and error messages)."""
    display = [{"text/plain": outcome.value}] if outcome.value is not None else []
    restarted = " (the kernel died and a fresh one took its place: the variables are lost)" \
        if outcome.restarted else ""
    error = []
    if outcome.status == "error":
        name, _, value = outcome.error.partition(": ")
        error.append(_error_entry(name or "Error", value + restarted, outcome.traceback))
    elif outcome.status == "memory_limit":
        error.append(_error_entry("MemoryError", f"the cell went past the memory limit{restarted}",
                                  outcome.traceback))
    elif outcome.status == "output_limit":
        error.append(_error_entry("OutputLimitExceeded", f"the cell printed more than {output_limit} bytes and "
                                  f"was stopped{restarted}"))
    elif outcome.status == "timeout":
        error.append(_error_entry("TimeLimitExceeded", f"the cell ran past its time limit of {limit_s:g} s and "
                                  f"was stopped{restarted}"))
    elif outcome.status == "infra_error":
        error.append(_error_entry("SandboxError", outcome.error))
    return {"stdout": outcome.stdout, "stderr": outcome.stderr, "display": display, "error": error}


def _driver(status: str, elapsed_s: float, stderr: str = "") -> dict[str, Any]:
    return {"status": status, "execution_time": round(elapsed_s, 6),
            "return_code": 0 if status == "Finished" else None, "stdout": "", "stderr": stderr}


def _answer(status: str, message: str, driver: dict | None, cells: list, files: dict | None = None) -> dict:
    return {"status": status, "message": message, "driver": driver, "cells": cells, "executor_pod_name": None,
            "files": files or {}}


async def _open(sessions, tenant, request: dict[str, Any], config):
    cell_limit = min(request["cell_timeout"] or request["total_timeout"], config.max_timeout_s)
    limits = SessionLimits(cell_timeout_s=cell_limit, output_limit_bytes=config.output_limit_bytes,
                           memory_mb=request["memory_mb"], budget_s=request["total_timeout"],
                           idle_ttl_s=0, max_lifetime_s=0)
    try:
        return await sessions.open(tenant, "python", limits, {"via": "POST /run_jupyter"})
    except REFUSALS as exc:  # (a tenant held to catalog verifiers: 403, checked by the core)
        raise refusal(exc) from exc


async def _run(sessions, tenant, session_id: str, request: dict[str, Any], config) -> dict[str, Any]:
    started = time.monotonic()
    output_limit = min(config.session_output_limit_bytes, config.output_limit_bytes)
    if request["files"]:
        code = PUT_FILES.replace("json_files", json.dumps(request["files"]))
        _, outcome = await sessions.execute(tenant, session_id, code, timeout_s=request["total_timeout"])
        if outcome.status != "ok":
            return _answer("SandboxError", f"could not write the request's files: {outcome.status} "
                           f"{outcome.error}".strip(), _driver("Error", time.monotonic() - started), [])
    cells: list = []
    output = 0  # bytes of all cells' output so far (jupyter_max_output_bytes)
    for code in request["cells"]:
        if output > config.jupyter_max_output_bytes:
            return _answer("Failed", f"the cells' output together passed this service's limit of "
                           f"{config.jupyter_max_output_bytes} bytes (jupyter_max_output_bytes) after cell "
                           f"{len(cells) - 1}; the {len(request['cells']) - len(cells)} cell(s) left were not run",
                           _driver("Error", time.monotonic() - started, "output limit"), cells)
        left = request["total_timeout"] - (time.monotonic() - started)
        if left <= 0:
            return _answer("Failed", "", _driver("TimeLimitExceeded", time.monotonic() - started,
                           f"total_timeout of {request['total_timeout']:g} s reached"), cells)
        limit = min(request["cell_timeout"] or left, left, config.max_timeout_s)
        _, outcome = await sessions.execute(tenant, session_id, code, timeout_s=limit,
                                            output_limit_bytes=output_limit)
        cells.append(cell_result(outcome, limit, output_limit))
        output += (len(outcome.stdout) + len(outcome.stderr) + len(outcome.value or "") + len(outcome.traceback)
                   + len(outcome.error))
        elapsed = time.monotonic() - started
        if outcome.status == "infra_error":
            return _answer("SandboxError", f"the sandbox could not run cell {len(cells) - 1}: {outcome.error}",
                           _driver("Error", elapsed, outcome.error), cells)
        if outcome.status == "timeout":
            return _answer("Failed", "", _driver("TimeLimitExceeded", elapsed,
                                                 f"cell {len(cells) - 1} ran past {limit:g} s"), cells)
        if outcome.session_ended:
            return _answer("Failed", "", _driver("Error", elapsed, f"the kernel's sandbox ended after cell "
                                                 f"{len(cells) - 1}: {outcome.session_ended}"), cells)
    files, message = {}, ""
    if request["fetch_files"]:
        code = GET_FILES.replace("json_paths", json.dumps(request["fetch_files"]))
        _, outcome = await sessions.execute(tenant, session_id, code, timeout_s=config.max_timeout_s,
                                            output_limit_bytes=config.output_limit_bytes)
        try:
            found = json.loads(outcome.stdout) if outcome.status == "ok" else None
        except ValueError:
            found = None
        if isinstance(found, dict) and all(isinstance(v, str) for v in found.values()):
            files = {p: v for p, v in found.items() if p in request["fetch_files"]}
        else:
            message = (f"fetch_files: the files could not be read back ({outcome.status}"
                       f"{': ' + outcome.error if outcome.error else ''}; over output_limit_bytes="
                       f"{config.output_limit_bytes} together, or the cells changed the kernel's print/open)")
    return _answer("Success", message, _driver("Finished", time.monotonic() - started), cells, files)


async def run_jupyter(app, body: Any, tenant, audit_fields: dict) -> dict[str, Any]:
    """Runs one ``/run_jupyter`` request in a session of ``app`` (a ``VerifierApp``), closed before returning."""
    config = app.config
    request = parse(body, config)
    sessions = getattr(app, "sessions", None)
    if sessions is None:
        raise HttpError(501, "/run_jupyter needs sandbox sessions, which this service does not run")
    audit_fields["cells"] = len(request["cells"])
    entry = await _open(sessions, tenant, request, config)
    audit_fields["session"] = entry.id
    try:
        answer = await _run(sessions, tenant, entry.id, request, config)
    except SessionGone as exc:
        answer = _answer("SandboxError", f"the kernel's session ended: {exc}", _driver("Error", 0.0, str(exc)), [])
    finally:
        try:
            await sessions.close(tenant, entry.id)
        except SessionGone:
            pass  # it ended on its own (budget spent, sandbox died): nothing left to close
    audit_fields["status"] = answer["status"]
    return answer
