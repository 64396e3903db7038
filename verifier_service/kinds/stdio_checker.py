"""A stdio spec's checker (problems with several right answers): trusted code of the spec's author, run in the
sandbox as its own job after the candidate's, on data the host passes it.

Why its own job: the candidate's job shares a work dir and /tmp between its steps, so a file the candidate's program
left there (a ``json.py`` that shadows the standard library's, a forged result) would be seen by a step after it. A
job starts in a fresh work dir holding only the files the host sends (``checker.py`` and the program that runs it,
``stdio_checker_main.py``), after the runner killed every process of the job before and scrubbed /tmp and /dev/shm
(or in another sandbox). The candidate's outputs reach the checker only as strings in its stdin (the host's copy of
each case's stdout); the jury's answers and the checker never enter the candidate's job. The result comes back on
the report channel with a per-job nonce, not on stdout.

Whatever goes wrong with the checker (it does not load, raises, returns something that is not a verdict, rejects a
jury answer, runs past its time, memory or output limit, or the sandbox fails) is the spec's fault: INFRA_ERROR,
never a verdict with a reward.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verifier_service.kinds._sandboxed import PYTHON, exit_detail, limit_verdict, new_nonce, read_reports, run_job
from verifier_service.kinds.base import Context
from verifier_service.sandbox.base import Job, Step
from verifier_service.verdict import Outcome, truncate

CHECKER_FILE = "checker.py"
MAIN_FILE = "stdio_checker_main.py"
MAIN_SOURCE = (Path(__file__).resolve().parent / MAIN_FILE).read_text(encoding="utf-8")
CHECKER_OUTPUT_LIMIT = 64 * 1024  # what the checker's process may write to stdout (the main keeps its prints)
# The cases' text one checker job gets at most (more: the cases are split over jobs, run one after another), so a
# completion that prints up to its output limit on every case of a long spec cannot push the checker past its
# memory limit (an INFRA_ERROR it would have caused).
JOB_TEXT_LIMIT = 16 << 20


@dataclass(frozen=True)
class CheckedCase:
    input: str
    output: str  # the candidate's stdout, as the host holds it
    answer: str  # the jury's answer (the case's expected_stdout)


@dataclass(frozen=True)
class Judgement:
    accepted: bool
    message: str = ""


def batches(cases: list[CheckedCase], limit: int = JOB_TEXT_LIMIT) -> list[tuple[int, int]]:
    """``cases`` split into runs of consecutive cases (start, end) holding at most ``limit`` characters of text
    each (a case over the limit alone)."""
    out: list[tuple[int, int]] = []
    start, size = 0, 0
    for i, case in enumerate(cases):
        text = len(case.input) + len(case.output) + 2 * len(case.answer)
        if i > start and size + text > limit:
            out.append((start, i))
            start, size = i, 0
        size += text
    if start < len(cases):
        out.append((start, len(cases)))
    return out


async def run_checker(ctx: Context, source: str, cases: list[CheckedCase], names: list[str],
                      timeout_s: float) -> list[Judgement] | Outcome:
    """The checker's judgement of each case, in order; an INFRA_ERROR Outcome when the checker or its sandbox
    failed (``names``: the cases' names, for the detail). One job per ``batches`` run of cases, each within
    ``timeout_s``."""
    judgements: list[Judgement] = []
    for start, end in batches(cases, JOB_TEXT_LIMIT):
        judged = await _run_batch(ctx, source, cases[start:end], names[start:end], timeout_s)
        if isinstance(judged, Outcome):
            return judged
        judgements += judged
    return judgements


async def _run_batch(ctx: Context, source: str, cases: list[CheckedCase], names: list[str],
                     timeout_s: float) -> list[Judgement] | Outcome:
    nonce = new_nonce()
    payload = {"nonce": nonce, "cases": [{"input": c.input, "output": c.output, "answer": c.answer} for c in cases]}
    memory = ctx.config.memory_mb << 20
    step = Step("checker", [*PYTHON, MAIN_FILE], timeout_s, stdin_json=payload, memory_bytes=memory,
                output_limit=CHECKER_OUTPUT_LIMIT)
    job = Job(steps=[step], files={CHECKER_FILE: source, MAIN_FILE: MAIN_SOURCE})
    run = await run_job(ctx, job)
    if isinstance(run, Outcome):
        return Outcome.infra_error(f"the spec's checker could not run: {run.detail}")
    if not run.steps:
        return Outcome.infra_error(f"the spec's checker could not run: {run.runner_error or 'the sandbox stopped'}")
    result = run.steps[0]
    judgements: list[Judgement] = []
    for event in read_reports(result, nonce):
        where = _where(event, names)
        if "error" in event:
            return Outcome.infra_error(f"the spec's checker failed{where}: {truncate(str(event['error']), 600)}")
        if event.get("done") is True and len(judgements) == len(cases):
            return judgements
        if type(event.get("ok")) is not bool or event.get("case") != len(judgements):
            return Outcome.infra_error(f"the spec's checker reported out of order{where}")
        message = truncate(str(event.get("message", "")), 300)
        if event.get("role") == "answer":
            if not event["ok"]:
                return Outcome.infra_error(f"the spec's checker rejects the jury's own answer{where}"
                                           + (f": {message}" if message else ""))
        elif event.get("role") == "output":
            judgements.append(Judgement(event["ok"], message))
        else:
            return Outcome.infra_error(f"the spec's checker reported an unknown role{where}")
    hit = limit_verdict(result, run, timeout_s)
    why = hit[1] if hit is not None else exit_detail(result)
    at = f" (at {names[len(judgements)]})" if len(judgements) < len(names) else ""
    return Outcome.infra_error(f"the spec's checker did not finish{at}: {why}")


def _where(event: dict, names: list[str]) -> str:
    case = event.get("case")
    if type(case) is int and 0 <= case < len(names):
        return f" on {names[case]} ({'the jury answer' if event.get('role') == 'answer' else 'the output'})"
    return ""
