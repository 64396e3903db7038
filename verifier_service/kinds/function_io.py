"""function_io: python_io for other languages. A driver of the service's (``kinds/drivers.py``) calls the
completion's function on each case's arguments and prints what it returned; the host compares that with the
case's expected value, which never enters the sandbox. Nothing in the sandbox can tell a wrong answer from a
right one, so no in-process trick (the completion reading its own binary or memory, patching the driver,
printing fake lines) forges a pass: a case passes only when a value equal to its expected one was printed for it.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from dataclasses import replace

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import register
from verifier_service.kinds._sandboxed import exit_detail, limit_verdict
from verifier_service.kinds.base import Context, Param, VerifierKind
from verifier_service.kinds.compiled import prepare, run_compiled
from verifier_service.kinds.drivers import SUPPORTED, DriverError, driver, open_braces, signature
from verifier_service.kinds.dynamic_drivers import DYNAMIC, close_blocks, loosen
from verifier_service.kinds.languages import LANGUAGES, run_argv
from verifier_service.kinds.python_io import _show, values_match
from verifier_service.sandbox.base import Job, Step
from verifier_service.spec import MISSING, Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, tail, truncate


def program(language: str, entry: str, setup: str, completion: str, cases: list[list], mark: str, name: str) -> str:
    """setup + completion + the braces (Lua: ``end``s) they left open + the driver. PHP: the program opens with
    ``<?php`` (a setup without it gets one) and the driver is PHP code (after a closing ``?>``, a new ``<?php``)."""
    sig = signature(language, entry, setup, completion)
    body = f"{setup}{completion}"
    if language == "php" and not body.lstrip().startswith("<?php"):
        body = f"<?php\n{body}"
    close = close_blocks(language, open_braces(language, body))
    if language == "php" and re.search(r"\?>\s*$", body) is not None:
        close = f"{close}<?php\n"
    return f"{body}{close}{driver(language, entry, sig, cases, mark, name)}"


def parse_lines(stdout: str, mark: str, count: int) -> dict[int, tuple[bool, object]]:
    """{case index: (ok, value or error name)} from the driver's lines (the first line for a case counts)."""
    out: dict[int, tuple[bool, object]] = {}
    prefix = mark + " "
    for line in stdout.splitlines():
        if not line.startswith(prefix):
            continue
        index_text, _, rest = line[len(prefix):].partition(" ")
        if not index_text.isdigit() or int(index_text) >= count or int(index_text) in out:
            continue
        if rest.startswith("!"):
            out[int(index_text)] = (False, rest[1:80])
            continue
        try:
            out[int(index_text)] = (True, json.loads(rest))
        except (ValueError, RecursionError):
            out[int(index_text)] = (False, "an unreadable value")
    return out


@register
class FunctionIO(VerifierKind):
    name = "function_io"
    description = ("python_io for other languages (" + ", ".join(SUPPORTED) + "): a driver of the service's calls "
                   "the completion's function on each case's arguments (typed by the function's signature in the "
                   "setup or the completion) and prints the results; they are compared outside the sandbox with "
                   "expected values that never enter it, so nothing a completion does in its process forges a pass")
    sandboxed = True
    default_extract = "raw"
    params = (
        Param("language", "string", "language of the completion", required=True, choices=SUPPORTED),
        Param("entry_point", "string", "name of the function to call", required=True),
        Param("cases", "cases", "list of {args: [...], expected: value} (JSON values)", required=True),
        Param("setup", "string", "code before the completion (the prompt, when the completion continues it)"),
        Param("float_tolerance", "number", "relative and absolute tolerance when a float is involved",
              default=0.0),
    )

    def image(self, spec: Spec) -> str:
        return LANGUAGES[spec.language].image

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "language", "entry_point", "cases")
        if spec.language not in SUPPORTED:
            raise InvalidSpec(f"spec.language {spec.language!r} is not supported; valid: {', '.join(SUPPORTED)}")
        if not spec.entry_point.isidentifier():
            raise InvalidSpec(f"spec.entry_point {spec.entry_point!r} is not an identifier")
        for i, case in enumerate(spec.cases):
            if case.expected is MISSING:
                raise InvalidSpec(f"spec.cases[{i}] has no expected value")
            if case.kwargs or case.stdin or case.expected_stdout is not None:
                raise InvalidSpec(f"spec.cases[{i}]: function_io takes args and expected only")
        if not (math.isfinite(spec.float_tolerance) and spec.float_tolerance >= 0):
            raise InvalidSpec("spec.float_tolerance must be a finite number, not negative")
        if spec.setup:
            try:
                signature(spec.language, spec.entry_point, spec.setup, "")
            except DriverError as exc:
                if "function named" not in str(exc):  # (none there: the completion may define it)
                    raise InvalidSpec(f"spec: {exc}") from exc
        return spec

    async def verify(self, text: str, spec: Spec, ctx: Context) -> Outcome:
        lang = LANGUAGES[spec.language]
        names = [c.name or f"case {i}" for i, c in enumerate(spec.cases)]
        extra = dict(extracted=truncate(text, 4000))
        cache = getattr(ctx.sandbox, "artifacts", None)
        ident = f"io\0{spec.language}\0{spec.setup}\0{text}\0{json.dumps([c.args for c in spec.cases])}"
        secret = cache.secret(ident, 22) if cache is not None else secrets.token_bytes(22)
        name, mark = "r" + secret[:6].hex(), secret[6:22].hex()
        try:
            source = program(spec.language, spec.entry_point, spec.setup, text, [list(c.args) for c in spec.cases],
                             mark, name)
        except DriverError as exc:  # the completion's function has no signature the driver can call
            return Outcome(Verdict.COMPILE_ERROR, detail=f"cannot call the completion's {spec.entry_point}: {exc}",
                           **extra)
        if spec.language == "java":  # the class run is the driver's
            lang = replace(lang, run=(*lang.run[:-1], name))
        prepared = await prepare(ctx, lang, source)
        if isinstance(prepared, Outcome):
            return Outcome(prepared.verdict, detail=prepared.detail, **extra, stdout_tail=prepared.stdout_tail,
                           stderr_tail=prepared.stderr_tail)
        limit = min(ctx.timeout_s, ctx.config.max_timeout_s)
        run_cmd = prepared.run if spec.language != "java" else (*prepared.run[:-1], name)
        steps = [*prepared.steps, Step("cases", run_argv(lang, run_cmd, ctx.config.cpus, ctx.config.memory_mb), limit,
                                       output_limit=ctx.config.output_limit_bytes)]
        on_step = prepared.then(lambda step: True)

        run = await run_compiled(ctx, prepared, lang, Job(steps=steps, files={prepared.file: source}, image=lang.image),
                                 on_step, extra)
        if isinstance(run, Outcome):
            return run
        step = run.steps[-1]
        if step.name != "cases":
            return Outcome(Verdict.TIMEOUT if run.host_timeout else Verdict.RUNTIME_ERROR,
                           detail=run.runner_error or "the cases did not run", **extra)
        reported = parse_lines(step.stdout, mark, len(spec.cases))
        hit = limit_verdict(step, run, limit)
        tests = []
        for i, case in enumerate(spec.cases):
            if i in reported:
                ok, value = reported[i]
                if ok and spec.language in DYNAMIC:  # (shapes the language cannot tell apart: dynamic_drivers)
                    value = loosen(spec.language, value, case.expected)
                if not ok:
                    tests.append(TestOutcome(names[i], Verdict.RUNTIME_ERROR, f"the function raised {value}"))
                elif values_match(value, case.expected, spec.float_tolerance):
                    tests.append(TestOutcome(names[i], Verdict.PASSED, ""))
                else:
                    tests.append(TestOutcome(names[i], Verdict.FAILED,
                                             f"expected {_show(case.expected)}, got {_show(value)}"))
            elif hit is not None:
                tests.append(TestOutcome(names[i], hit[0], hit[1]))
            else:
                tests.append(TestOutcome(names[i], Verdict.RUNTIME_ERROR,
                                         f"the program stopped before this case ({exit_detail(step)})"))
        return Outcome.from_tests(tests, **extra, stdout_tail=tail(step.stdout.replace(mark, "<case>")),
                                  stderr_tail=tail(step.stderr))
