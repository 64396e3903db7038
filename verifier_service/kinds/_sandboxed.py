"""Shared pieces of the kinds that run code in the sandbox."""

from __future__ import annotations

import math
import secrets
import signal
from collections.abc import Callable
from typing import Any

from verifier_service.errors import SandboxUnavailable
from verifier_service.kinds import strict_json
from verifier_service.kinds.base import Context
from verifier_service.runner import wire
from verifier_service.sandbox.base import Job, SandboxRun, StepResult
from verifier_service.verdict import Outcome, TestOutcome, Verdict, tail, truncate

HARNESS_DIR = wire.RUNNER_DIR
# -s (no user site), not -I: -I ignores PYTHONHASHSEED, which the runner sets to 0 in the (otherwise
# empty) environment of every step, so set and dict orders are the same run after run.
PYTHON = ["python3", "-s"]


async def run_job(ctx: Context, job: Job, on_step: Callable[[StepResult], bool] | None = None
                  ) -> SandboxRun | Outcome:
    """Runs a job; an Outcome (INFRA_ERROR) when the sandbox itself failed."""
    if ctx.sandbox is None:
        return Outcome.infra_error("no sandbox backend is configured")
    try:
        run = await ctx.sandbox.run(job, on_step=on_step, tenant=ctx.tenant)
    except SandboxUnavailable as exc:
        return Outcome.infra_error(str(exc))
    ctx.queue_s += run.queue_s
    if run.killed_sandbox:
        return Outcome(Verdict.RUNTIME_ERROR, detail="the completion took the sandbox down (twice, the second "
                       f"time a fresh one): {truncate(run.runner_error, 300)}")
    if run.runner_error and not run.steps and not run.oom_killed:
        return Outcome.infra_error(run.runner_error)
    return run


def limit_verdict(step: StepResult, run: SandboxRun, limit_s: float) -> tuple[Verdict, str] | None:
    """The resource limit a step hit, if any (checked in this order)."""
    if step.timed_out or run.host_timeout:
        return Verdict.TIMEOUT, f"time limit of {limit_s:g}s exceeded"
    if step.output_limited:
        return Verdict.OUTPUT_LIMIT, "output limit exceeded"
    if step.signal == signal.SIGXFSZ:
        return Verdict.OUTPUT_LIMIT, "file size limit exceeded"
    if "File too large" in step.stderr[-400:]:
        return Verdict.OUTPUT_LIMIT, "file size limit exceeded"
    if run.oom_killed or step.signal == signal.SIGKILL or "MemoryError" in step.stderr[-400:]:
        return Verdict.MEMORY_LIMIT, "memory limit exceeded"
    if step.signal == signal.SIGXCPU:
        return Verdict.TIMEOUT, "CPU time limit exceeded"
    return None


def error_verdict(error: str, detail: str) -> Verdict:
    """The verdict of an exception the harness caught in the candidate's code."""
    if error == "MemoryError":
        return Verdict.MEMORY_LIMIT
    if error == "OSError" and "File too large" in detail:
        return Verdict.OUTPUT_LIMIT  # RLIMIT_FSIZE (Python ignores SIGXFSZ, so the write fails instead)
    return Verdict.RUNTIME_ERROR


def exit_detail(step: StepResult) -> str:
    if step.spawn_error:
        return f"could not start: {step.spawn_error}"
    if step.signal:
        try:
            name = signal.Signals(step.signal).name
        except ValueError:
            name = f"signal {step.signal}"
        return f"killed by {name}"
    last = step.stderr.strip().splitlines()[-1:] or [""]
    return f"exit code {step.exit_code}" + (f": {truncate(last[0], 300)}" if last[0] else "")


def python_without_code(text: str) -> Outcome | None:
    """MALFORMED for Python that holds nothing but comments and blank lines (a task's prose behind ``#``, a
    fenced block of notes): it compiles, to nothing, so the tests would score it as a well-formed wrong
    answer; with no code in it, it is not a well-formed answer (format 0, as prose that does not compile)."""
    if all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        return Outcome.malformed("the completion's code holds only comments and blank lines: no code",
                                 extracted=truncate(text, 4000))
    return None


def new_nonce() -> str:
    """A per-job secret: harness events (and reports) must carry it to count."""
    return secrets.token_hex(16)


def read_reports(step: StepResult, nonce: str) -> list[dict[str, Any]]:
    """The harness's events; lines without the job's nonce were not written by it."""
    events = []
    for line in step.report.splitlines():
        event, error = strict_json.parse(line, events=True)  # (the same parser as every kind's)
        if error is None and isinstance(event, dict) and event.get("nonce") == nonce:
            events.append(event)
    return events


def event_duration(event: dict[str, Any]) -> float:
    """An event's ``duration_s``; 0 unless it is a finite number (a harness in the candidate's process can
    write anything there)."""
    duration = event.get("duration_s")
    if type(duration) is float and math.isfinite(duration):
        return duration
    return float(duration) if type(duration) is int and abs(duration) < 1 << 53 else 0.0


def streams(step: StepResult | None) -> dict[str, str]:
    if step is None:
        return {}
    return {"stdout_tail": tail(step.stdout), "stderr_tail": tail(step.stderr)}


def unfinished_tests(names: list[str], step: StepResult, run: SandboxRun, limit_s: float) -> list[TestOutcome]:
    """Tests the harness never reported: the process stopped before them."""
    hit = limit_verdict(step, run, limit_s)
    if hit is not None:
        verdict, detail = hit
    else:
        verdict, detail = Verdict.RUNTIME_ERROR, f"the test process stopped early ({exit_detail(step)})"
    out = []
    for i, name in enumerate(names):
        out.append(TestOutcome(name, verdict, detail if i == 0 else f"not run: {detail}"))
    return out
