"""The steps that make a program runnable before its cases run: compile it, or unpack the same source's
program compiled earlier (``sandbox/artifacts.py``: one compile per unique source).

``prepare`` chooses the steps; ``Prepared.on_step`` reads their results as they come (a compile's result,
failure or packed program, goes into the cache for the other jobs of that source) and says whether the job
goes on; ``compile_failure`` turns a failed preparation into the check's outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from verifier_service.kinds import probe
from verifier_service.kinds._sandboxed import exit_detail, run_job, streams
from verifier_service.kinds.base import Context
from verifier_service.kinds.languages import Language, first_error_line
from verifier_service.sandbox.artifacts import Built, artifact_key
from verifier_service.sandbox.base import Job, SandboxRun, Step, StepResult
from verifier_service.verdict import Outcome, Verdict, truncate

PACK_LIMIT = 48 << 20  # base64 of a packed program (the file size limit bounds what a compiler writes anyway)
UNPACK_TIMEOUT_S = 30.0
COMPILE_OUTPUT_LIMIT = 64 * 1024


@dataclass
class Prepared:
    file: str                              # the source file's name
    run: tuple[str, ...]                   # the program's argv
    steps: list[Step]                      # compile (and pack), or unpack
    on_step: Callable[[StepResult], bool]  # sees each of ``steps``' results; False stops the job
    done: Callable[[], None]               # the job is over (its compile, if any, no longer awaited)

    def then(self, rest: Callable[[StepResult], bool]) -> Callable[[StepResult], bool]:
        """A job's ``on_step``: the preparation's steps go to ``on_step``, every later step to ``rest``."""
        seen = [0]

        def on_step(step: StepResult) -> bool:
            if seen[0] < len(self.steps):
                seen[0] += 1
                return self.on_step(step)
            return rest(step)

        return on_step


def compile_detail(step: StepResult, lang: Language | None = None) -> str:
    """The first error line first, then the compiler's output."""
    if step.timed_out:
        return "compilation exceeded its time limit"
    output = step.stderr.strip() or step.stdout.strip()
    lines = output.splitlines()
    first = (first_error_line(lang, output) if lang is not None
             else next((line for line in lines if "error" in line.lower()), None)) or exit_detail(step)
    return truncate(f"{first.strip()}\n" + "\n".join(lines), 800)


# Compile errors that only a library missing from the sandbox causes (the languages image has it; a bubblewrap
# host may not): the backend's fault, not the completion's.
MISSING_LIBRARY = {"java": (("package org.javatuples does not exist", "javatuples"),)}


def _compile_error(step: StepResult, lang: Language) -> Outcome:
    output = step.stderr + step.stdout
    for text, library in MISSING_LIBRARY.get(lang.name, ()):
        if text in output:
            return Outcome.infra_error(f"{library} is not in this sandbox (the {lang.name} program imports it)")
    return Outcome(Verdict.COMPILE_ERROR, detail=compile_detail(step, lang), **streams(step))


def _cacheable_failure(step: StepResult) -> bool:
    """A compile that failed on its own (an exit status): the same source fails the same way. Not a compile
    stopped by a limit or a signal (the machine's load may have decided those)."""
    return (not step.ok and step.exit_code not in (None, 0) and not step.timed_out and not step.signal
            and not step.output_limited and not step.spawn_error)


async def prepare(ctx: Context, lang: Language, source: str) -> Prepared | Outcome:
    """The steps before the cases; an Outcome (COMPILE_ERROR) when this source failed to compile before, or
    INFRA_ERROR when the language does not work on this sandbox backend (``kinds/probe.py``: never the
    completion's fault)."""
    broken = await probe.problem(ctx, lang)
    if broken is not None:
        return Outcome.infra_error(broken)
    file, compile_argv, run = lang.files(source)
    compile_step = Step("compile", list(compile_argv), ctx.config.compile_timeout_s,
                        output_limit=COMPILE_OUTPUT_LIMIT, stop_on_failure=True)
    cache = getattr(ctx.sandbox, "artifacts", None)
    if not lang.artifacts or cache is None:
        return Prepared(file, run, [compile_step], on_step=lambda step: step.ok, done=lambda: None)
    key = artifact_key(lang.image, compile_argv, file, source)
    built = await cache.claim(key, ctx.config.compile_timeout_s + UNPACK_TIMEOUT_S)
    if built is not None:
        if built.failure is not None:
            return _compile_error(built.failure, lang)
        unpack = Step("unpack", ["sh", "-c", "base64 -d | tar -xf -"], UNPACK_TIMEOUT_S, stdin=built.packed,
                      stop_on_failure=True)
        return Prepared(file, run, [unpack], on_step=lambda step: step.ok, done=lambda: None)
    # Right after the compile, before any of the candidate's code runs in this job: what the compiler made, as
    # text (a failed pack only means nothing is cached; the cases still run).
    pack = Step("pack", ["bash", "-c", "set -o pipefail; tar -cf - -- " + " ".join(lang.artifacts) + " | base64 -w0"],
                UNPACK_TIMEOUT_S, output_limit=PACK_LIMIT)

    def on_step(step: StepResult) -> bool:
        if step.name == "compile":
            if _cacheable_failure(step):
                cache.put(key, Built(failure=step))
            return step.ok
        if step.ok and step.stdout:
            cache.put(key, Built(packed=step.stdout.strip()))
        return True

    return Prepared(file, run, [compile_step, pack], on_step=on_step, done=lambda: cache.release(key))


def compile_failure(prepared: Prepared, run: SandboxRun, lang: Language) -> Outcome | None:
    """The outcome of a check whose program never became runnable (None: it did)."""
    first = run.steps[0] if run.steps else None
    if first is None:
        if run.host_timeout:  # (a job whose steps report at its end: none reported before its time ran out)
            return Outcome(Verdict.TIMEOUT, detail="the job ran past its total time limit (max_job_s, or the "
                           "sum of its steps' limits) before its steps reported")
        return Outcome(Verdict.MEMORY_LIMIT, detail=run.runner_error or "the sandbox stopped before compiling")
    if first.ok:
        return None
    if first.spawn_error:
        return Outcome.infra_error(f"the {lang.name} toolchain is not in this sandbox ({first.spawn_error})")
    if first.name == "unpack":
        return Outcome.infra_error(f"the compiled program could not be unpacked: {exit_detail(first)}")
    return _compile_error(first, lang)


async def run_compiled(ctx: Context, prepared: Prepared, lang: Language, job: Job,
                       on_step: Callable[[StepResult], bool] | None, extra: dict) -> SandboxRun | Outcome:
    """Runs a compiled kind's job and ends it as they all end: the sandbox's own failure or the program's compile
    failure is the outcome (with the kind's ``extra`` fields); else the run, for the kind to judge."""
    try:
        run = await run_job(ctx, job, on_step=on_step)
    finally:
        prepared.done()
    if isinstance(run, Outcome):
        return run
    failed = compile_failure(prepared, run, lang)
    if failed is not None:
        return Outcome(failed.verdict, detail=failed.detail, **extra, stdout_tail=failed.stdout_tail,
                       stderr_tail=failed.stderr_tail)
    return run
