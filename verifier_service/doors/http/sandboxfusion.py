"""SandboxFusion's ``POST /run_code``: run a program on one stdin, answer with its compile and run results.

The wire contract is SandboxFusion's (``RunCodeRequest`` -> ``RunCodeResponse``, sandbox/server/sandbox_api.py):
``code``, ``language``, ``stdin``, ``compile_timeout``, ``run_timeout``, ``memory_limit_MB``, ``files``
(path -> base64), ``fetch_files``; the answer's ``status`` is ``Success`` (every command exited 0),
``Failed`` (a non-zero exit or a time limit) or ``SandboxError`` (the sandbox could not run it), and
``compile_result`` / ``run_result`` are ``{status: Finished | TimeLimitExceeded | Error, execution_time,
return_code, stdout, stderr}``. The caller compares the output (verl's ``sandbox_fusion`` utilities do), so
the whole stdout comes back, up to the service's ``output_limit_bytes`` (a program past it is stopped, with
a note on stderr and return code -9).

The job runs in the service's warm sandbox pool, built from the stdio kind's language table
(``languages.resolve``); the tenant's quota and the service's admission count it as one verification.
"""

from __future__ import annotations

import base64
import binascii
import math
import posixpath
import signal
from typing import Any

from verifier_service.doors.http import languages
from verifier_service.doors.http.calls import REFUSALS, HttpError, call, refusal
from verifier_service.errors import SandboxUnavailable
from verifier_service.sandbox.base import Job, SandboxRun, Step, StepResult

SIGKILL_CODE = -int(signal.SIGKILL)


def _invalid(field: str, message: str, value: Any = None) -> HttpError:
    """FastAPI's request-validation answer (what SandboxFusion sends for a bad request), with our message."""
    detail = [{"type": "value_error", "loc": ["body", field], "msg": message,
               **({"input": value} if isinstance(value, (str, int, float)) else {})}]
    return HttpError(422, f"{field}: {message}", body={"detail": detail, "error": f"{field}: {message}"})


def _number(body: dict, field: str, default: float, limit: float) -> float:
    value = body.get(field, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise _invalid(field, "must be a positive number of seconds", value)
    if value > limit:
        raise _invalid(field, f"must be at most {limit:g} seconds on this service", value)
    return float(value)


def _files(body: dict) -> dict[str, str]:
    raw = body.get("files") or {}
    if not isinstance(raw, dict):
        raise _invalid("files", "must map file paths to base64 contents")
    out = {}
    for path, content in raw.items():
        if content is None:
            continue
        where = f"files[{path!r}]"
        if not isinstance(content, str):
            raise _invalid("files", f"{where} must be a base64 string")
        norm = posixpath.normpath(path)
        if not path or path.startswith("/") or norm.startswith("..") or norm == ".":
            raise _invalid("files", f"{where}: a path inside the working directory, without '..'")
        try:
            out[norm] = base64.b64decode(content, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise _invalid("files", f"{where} is not base64 of UTF-8 text (binary files are not supported "
                                    "here)") from None
    return out


def parse(body: Any, config) -> dict[str, Any]:
    """The request's fields, checked; HttpError 422 names the first bad one."""
    if not isinstance(body, dict):
        raise HttpError(422, "the body must be a JSON object (SandboxFusion's RunCodeRequest)",
                        body={"detail": [{"type": "model_attributes_type", "loc": ["body"],
                                          "msg": "Input should be a valid dictionary"}]})
    code, language = body.get("code"), body.get("language")
    if not isinstance(code, str):
        raise _invalid("code", "is required: the program's source, a string")
    if not isinstance(language, str) or language not in languages.SANDBOX_FUSION_LANGUAGES:
        allowed = ", ".join(f"'{name}'" for name in languages.SANDBOX_FUSION_LANGUAGES)
        raise _invalid("language", f"Input should be {allowed}", language)
    stdin = body.get("stdin")
    if stdin is not None and not isinstance(stdin, str):
        raise _invalid("stdin", "must be a string or null")
    memory = body.get("memory_limit_MB", -1)
    if isinstance(memory, bool) or not isinstance(memory, int):
        raise _invalid("memory_limit_MB", "must be a whole number of megabytes (-1: the service's limit)", memory)
    fetch = body.get("fetch_files") or []
    if not isinstance(fetch, list) or not all(isinstance(p, str) and p for p in fetch):
        raise _invalid("fetch_files", "must be a list of file paths")
    if any(p.startswith("/") or posixpath.normpath(p).startswith("..") for p in fetch):
        raise _invalid("fetch_files", "paths inside the working directory, without '..'")
    return {"code": code, "language": language, "stdin": stdin or "", "memory_mb": memory,
            "compile_timeout": _number(body, "compile_timeout", 10, config.max_timeout_s),
            "run_timeout": _number(body, "run_timeout", 10, config.max_timeout_s),
            "files": _files(body), "fetch_files": tuple(posixpath.normpath(p) for p in fetch)}


def unsupported(language: str) -> dict[str, Any]:
    """A language SandboxFusion knows and this service does not run: their answer for a run that could not
    happen (SandboxError, with the reason), never a server error."""
    return {"status": "SandboxError", "message": f"language {language!r} is not supported by this service; it "
            f"runs: {', '.join(languages.supported())}", "compile_result": None, "run_result": None,
            "executor_pod_name": None, "files": {}}


def build_job(request: dict[str, Any], lang: languages.Language, config) -> Job:
    file, compile_argv, run = lang.for_source(request["code"])
    steps = []
    if lang.compiled:
        steps.append(Step("compile", list(compile_argv), request["compile_timeout"], output_limit=64 * 1024,
                          stop_on_failure=True))
    memory_mb = request["memory_mb"] if request["memory_mb"] > 0 else config.memory_mb
    steps.append(Step("run", languages.run_argv(lang, run, config.cpus, config.memory_mb), request["run_timeout"],
                      stdin=request["stdin"],
                      memory_bytes=min(memory_mb, config.memory_mb) << 20 if lang.address_space_limit else None,
                      output_limit=config.output_limit_bytes, collect=request["fetch_files"],
                      stdin_pipe=True))  # the program's own input: a pipe, as ``< input`` (open("/dev/stdin") works)
    files = {**request["files"], file: request["code"]}
    if lang.image and "image" in getattr(Job, "__dataclass_fields__", {}):
        return Job(steps=steps, files=files, image=lang.image)  # type: ignore[call-arg]
    return Job(steps=steps, files=files)


def command_result(step: StepResult, output_limit: int) -> dict[str, Any]:
    """One step as SandboxFusion's ``CommandRunResult``."""
    if step.spawn_error:
        return {"status": "Error", "execution_time": step.duration_s, "return_code": None, "stdout": "",
                "stderr": f"could not start: {step.spawn_error}"}
    if step.timed_out:
        return {"status": "TimeLimitExceeded", "execution_time": step.duration_s, "return_code": None,
                "stdout": step.stdout, "stderr": step.stderr}
    code = step.exit_code if step.exit_code is not None else (-step.signal if step.signal else SIGKILL_CODE)
    stderr = step.stderr
    if step.output_limited:
        code = code if code else SIGKILL_CODE
        stderr += f"\n[stopped: more than {output_limit} bytes of output]"
    return {"status": "Finished", "execution_time": step.duration_s, "return_code": code, "stdout": step.stdout,
            "stderr": stderr}


def _killed(reason: str, duration_s: float = 0.0) -> dict[str, Any]:
    return {"status": "Finished", "execution_time": duration_s, "return_code": SIGKILL_CODE, "stdout": "",
            "stderr": reason}


def response(run: SandboxRun, lang: languages.Language, config) -> dict[str, Any]:
    """The job's outcome as SandboxFusion's ``RunCodeResponse``."""
    steps = {step.name: step for step in run.steps}
    compile_result = run_result = None
    if lang.compiled:
        step = steps.get("compile")
        if step is not None:
            compile_result = command_result(step, 64 * 1024)
        elif run.host_timeout:
            compile_result = {"status": "TimeLimitExceeded", "execution_time": run.run_s, "return_code": None,
                              "stdout": "", "stderr": ""}
        elif run.oom_killed or run.killed_sandbox:
            compile_result = _killed("memory limit exceeded" if run.oom_killed else "the sandbox was stopped")
    compiled_ok = compile_result is None or (compile_result["status"] == "Finished"
                                             and compile_result["return_code"] == 0)
    step = steps.get("run")
    if step is not None:
        run_result = command_result(step, config.output_limit_bytes)
        if run.oom_killed and run_result["status"] == "Finished" and not run_result["return_code"]:
            run_result = _killed("memory limit exceeded", step.duration_s)
    elif compiled_ok and (compile_result is not None or not lang.compiled):
        if run.host_timeout:
            run_result = {"status": "TimeLimitExceeded", "execution_time": run.run_s, "return_code": None,
                          "stdout": "", "stderr": ""}
        elif run.oom_killed:
            run_result = _killed("memory limit exceeded", run.run_s)
        elif run.killed_sandbox:
            run_result = _killed(f"the program took the sandbox down: {run.runner_error[:300]}", run.run_s)
    files = {}
    if step is not None:
        files = {path: base64.b64encode(text.encode("utf-8")).decode("ascii") for path, text in step.collected.items()}
    status, message = "Success", ""
    results = [r for r in (compile_result, run_result) if r is not None]
    if not results:
        status, message = "SandboxError", run.runner_error or "the sandbox returned no result"
    elif any(r["status"] == "Error" for r in results):
        status, message = "SandboxError", next(r["stderr"] for r in results if r["status"] == "Error")
    elif any(r["status"] == "TimeLimitExceeded" or r["return_code"] != 0 for r in results):
        status = "Failed"
    return {"status": status, "message": message, "compile_result": compile_result, "run_result": run_result,
            "executor_pod_name": None, "files": files}


async def run_code(app, body: Any, tenant, audit_fields: dict) -> dict[str, Any]:
    """Runs one ``/run_code`` request on ``app``'s sandbox (a ``VerifierApp``)."""
    config = app.config
    request = parse(body, config)
    audit_fields["language"] = request["language"]
    lang = languages.resolve(request["language"])
    if lang is None:
        audit_fields["status"] = "UNSUPPORTED"
        return unsupported(request["language"])
    try:
        run = await app.verifier.run_program(call("POST /run_code"), build_job(request, lang, config))
    except REFUSALS as exc:
        raise refusal(exc) from exc
    except SandboxUnavailable as exc:
        audit_fields["status"] = "SandboxError"
        return {"status": "SandboxError", "message": f"the sandbox backend is unavailable: {exc}",
                "compile_result": None, "run_result": None, "executor_pod_name": None, "files": {}}
    answer = response(run, lang, config)
    audit_fields["status"] = answer["status"]
    return answer
