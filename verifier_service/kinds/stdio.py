"""stdio: a program fed each case's stdin; its stdout is compared outside the sandbox.

Every language of ``kinds/languages.py`` (compiled or syntax-checked once per check, then run per case; a
compiled program is compiled once per unique source, ``sandbox/artifacts.py``). Python's cases are forks of a
warm program host that compiled the program once (``runner/pyprog.py``). Compile errors are their own
verdict. With ``fast_fail``, or with all-or-nothing scoring (where nothing after a failing case can change the
reward), the job stops at the first failing case.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from decimal import MAX_EMAX, MIN_EMIN, Decimal
from decimal import Context as DecimalContext

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import register
from verifier_service.kinds._sandboxed import exit_detail, limit_verdict, streams
from verifier_service.kinds.base import Context, Param, VerifierKind
from verifier_service.kinds.compiled import prepare, run_compiled
from verifier_service.kinds.languages import LANGUAGES, Language, run_argv
from verifier_service.kinds.stdio_checker import CheckedCase, run_checker
from verifier_service.runner import wire
from verifier_service.sandbox.base import Job, SandboxRun, Step, StepResult
from verifier_service.spec import MISSING, Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

COMPARE_MODES = ("exact", "tokens", "tokens_ci", "lines", "float")


def python_program(memory: int | None) -> dict:
    """The compile step's runner fields for Python: where the runner has a zygote, this step's process becomes the
    job's program host (the program compiled once; each case, ``harness="python_case"``, a fork of it); elsewhere
    the step runs its argv (a compile check) and each case ``python3 solution.py``."""
    return {"harness": wire.PYTHON_PROGRAM, "memory_bytes": memory}


# Contest judges' rules (testlib's checkers), on the output's characters:
_WHITESPACE = re.compile(r"[ \t\r\n]+")  # the only separators: ASCII space, tab, CR, LF (testlib's blanks)
_INTEGER = re.compile(r"[+-]?[0-9]+")  # ASCII digits only (\d would take any Unicode digit)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,10})?")
_EXACT_PRECISION = DecimalContext(prec=60, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[])


def tokens(text: str) -> list[str]:
    """The whitespace-separated tokens of an output: split on ASCII space, tab, CR and LF only (a non-ASCII
    space, a vertical tab or a control character is part of a token)."""
    return [t for t in _WHITESPACE.split(text) if t]


_ASCII_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_fold(text: str) -> str:
    """``text`` with ASCII A-Z as a-z and every other character as it is (testlib's ``lowerCase``): ``É`` is not
    ``é``, ``ß`` is not ``SS`` and the Kelvin sign is not ``k``, where ``str.lower`` / ``casefold`` would make
    some of them equal."""
    return text.translate(_ASCII_FOLD)


def lines(text: str) -> list[list[str]]:
    """The output as lines (split on LF; a CR before it is a blank like any other), each as its tokens, the
    lines at the end that hold no token dropped (testlib's lcmp: the answer's lines, each as tokens, and
    nothing but blanks after them)."""
    out = [tokens(line) for line in text.split("\n")]
    while out and not out[-1]:
        out.pop()
    return out


def _is_number(token: str) -> bool:
    """Whether a token is a number by the strict ASCII grammar (``_FLOAT``: an exponent of at most 10 digits,
    at most 100,000 characters; a longer one compares as text). ``inf``, ``nan``, ``0x1p3``, ``1_000`` and
    non-ASCII digits are not numbers: they compare as text."""
    return len(token) <= 100_000 and _FLOAT.fullmatch(token) is not None


def floats_match(got: str, want: str, tol: float) -> bool:
    """compare=float on one pair of tokens. An integer ``want`` (``[+-]?[0-9]+``) is matched only by a
    number of exactly its value (``7``, ``007``, ``7.0``, ``7e0``); a float ``want`` by a number ``g``
    with ``|g - want| <= tol * max(1, |want|)`` (testlib's doubleCompare: absolute or relative to the
    expected value; ``tol`` as its shortest decimal text, 1e-06 is 0.000001), decided on the tokens' decimal
    values (doubles where their rounding cannot change the answer, else decimals to 60 significant digits:
    a 400-digit number is never infinity); any other ``want`` (``inf``, ``nan``, words) only by the same text."""
    if got == want:
        return True  # the same text: the same word, or the same number
    if not (_is_number(want) and _is_number(got)):
        return False
    if not tol or _INTEGER.fullmatch(want):
        return Decimal(got) == Decimal(want)  # (exact)
    if len(got) <= 40 and len(want) <= 40:  # doubles first; decimals only where rounding could decide
        g, e = float(got), float(want)
        if math.isfinite(g) and math.isfinite(e):
            difference, bound = abs(g - e), tol * max(1.0, abs(e))
            margin = 1e-14 * max(1.0, abs(g), abs(e), bound)
            if difference < bound - margin:
                return True
            if difference > bound + margin:
                return False
    actual, expected = Decimal(got), Decimal(want)
    ctx = _EXACT_PRECISION
    difference = ctx.abs(ctx.subtract(actual, expected))
    bound = ctx.multiply(Decimal(repr(float(tol))), max(Decimal(1), ctx.abs(expected)))
    return difference <= bound


def outputs_match(actual: str, expected: str, mode: str, tol: float) -> bool:
    """Whether a program's stdout is the expected output, by ``mode`` (never raises):

    - ``exact``: the same characters, except that CRLF line ends equal LF ones and newlines at the very
      end do not count;
    - ``tokens``: the same tokens (``tokens``: split on ASCII whitespace only), compared as exact text;
    - ``tokens_ci``: the same tokens, ASCII letters compared case-insensitively (``ascii_fold``: ``YES`` is
      ``yes``; ``É`` is not ``é``);
    - ``lines``: the same lines (``lines``), each the same tokens: ``1 2`` is not ``1\\n2``, a blank line
      in the middle counts, blank lines at the end do not;
    - ``float``: the same number of tokens, each pair by ``floats_match``.
    """
    if mode == "exact":
        norm = lambda s: s.replace("\r\n", "\n").rstrip("\n")  # noqa: E731 - a trailing newline is not an answer
        return norm(actual) == norm(expected)
    if mode == "lines":
        return lines(actual) == lines(expected)
    if mode == "tokens_ci":
        return tokens(ascii_fold(actual)) == tokens(ascii_fold(expected))
    got, want = tokens(actual), tokens(expected)
    if mode == "tokens":
        return got == want
    return len(got) == len(want) and all(floats_match(g, w, tol) for g, w in zip(got, want, strict=True))


@register
class Stdio(VerifierKind):
    name = "stdio"
    description = ("runs a program (Python, C++, C, Bash, Java, JavaScript, TypeScript, Go or Rust) on each case's "
                   "stdin and compares its stdout outside the sandbox")
    sandboxed = True
    notes = (
        "`compare` (the rules of testlib's standard checkers, which Codeforces-style judges use): blanks are ASCII "
        "space, tab, CR and LF only (a non-breaking space, a vertical tab or U+2028 is part of a token). `exact`: "
        "the same characters, CRLF equal to LF and newlines at the very end not counted. `tokens` (wcmp): the same "
        "whitespace-separated tokens. `tokens_ci`: the same tokens with ASCII letters compared case-insensitively, "
        "for `YES`/`yes` answers (yesno, nyesno); only A-Z fold to a-z, as testlib's `upperCase` does: `É` is not "
        "`é`, `ß` is not `SS`, the Kelvin sign is not `k` (a Unicode case fold would make some of these equal). "
        "`lines` (lcmp): the same lines (split on LF), each holding the same tokens: `1 2` is not `1` and `2` on "
        "two lines, a blank line in the middle counts, blank lines at the end (and blanks at a line's ends) do "
        "not (lcmp itself splits a line on every C `isspace`, vertical tab and form feed too; stdio keeps the four "
        "blanks of wcmp and the rest of testlib). `scripts/datasets/testlib_agreement.py` runs testlib's wcmp, "
        "nyesno and lcmp beside `tokens`, `tokens_ci` and `lines` on generated outputs. `float` (rcmp): tokens, "
        "numbers within `float_tolerance` (below). An empty output equals an expected output of nothing but "
        "blanks in every mode but `exact`, where only newlines may differ.",
        "`float`: an integer expected token (`[+-]?[0-9]+`) is matched only by a number of exactly its value "
        "(`7`, `007`, `7.0`); a float expected token by a number within `float_tolerance * max(1, |expected|)`; "
        "anything else (`inf`, `nan`, words) only by the same text (case-sensitive).",
        "`checker` (problems with several right answers; Python only for now, whatever the completion's "
        "`language`): the source of a module that defines `check(input, output, answer)`, called with a case's "
        "stdin, the completion's stdout and the case's `expected_stdout` (the jury's answer); it returns `True` "
        "(accepted) or `False`, or a tuple `(bool, message)` whose message goes into the test's detail. It runs "
        "in the sandbox (the Python image's python3, or the host's under bubblewrap; standard library only; "
        "its syntax is not checked at validation, where the service's own Python may be another version) as a "
        "job of its own after the completion's: a "
        "fresh work dir holding only the checker, the outputs passed to it as data by the service, never "
        "anything the completion's program wrote; the completion's program never sees the checker or the "
        "jury's answers. Only cases whose program ended cleanly (exit 0, no limit hit) are checked; the others "
        "keep their verdict (TIMEOUT, RUNTIME_ERROR, ...). Before each case's output, `check(input, answer, "
        "answer)` must return True (a checker that rejects the jury's own answer is broken). Every checker "
        "failure is INFRA_ERROR (no reward: the spec's fault, never the completion's): it does not load, has no "
        "`check`, raises (SystemExit too), returns anything but a bool or `(bool, str)`, rejects a jury answer, "
        "or runs past `checker_timeout_s` (all cases together, or each run of cases holding up to 16 MiB of "
        "text where they hold more; default the case limit, at least the service's `default_timeout_s`; at most "
        "`max_timeout_s`) "
        "or the memory limit. So a checker must return False for output it cannot parse, never raise on it, and "
        "stay fast on any output up to `output_limit_bytes`: otherwise a completion could trade a penalty for "
        "INFRA_ERROR. Parse with care: `str.isdigit` accepts other scripts' digits and `int()` refuses more "
        "than 4,300 digits. What the checker prints is dropped. A checker excludes `compare` and "
        "`float_tolerance`; with one, `fast_fail` / all-or-nothing scoring stop early only at a case whose "
        "program failed to end cleanly (the outputs are judged after the job).",
    )
    params = (
        Param("cases", "cases", "list of {stdin: str, expected_stdout: str}", required=True),
        Param("language", "string", "language of the completion", default="python", choices=tuple(LANGUAGES)),
        Param("compare", "string", "exact (line endings and final newlines aside), whitespace tokens, tokens_ci "
              "(tokens, ASCII letters case-insensitive: YES = yes), lines (each line's tokens; line breaks count), "
              "or float (tokens with float tolerance)", default="tokens", choices=COMPARE_MODES),
        Param("float_tolerance", "number", "tolerance of compare=float", default=1e-6),
        Param("case_timeout_s", "number", "time limit of each case (default: timeout_s)"),
        Param("fast_fail", "bool", "stop at the first failing case (all-or-nothing scoring stops there too: "
              "nothing after it can change the reward)", default=False),
        Param("checker", "string", "Python source defining check(input, output, answer) -> bool, for problems with "
              "several right answers: it judges each case's output in place of compare (see below)"),
        Param("checker_timeout_s", "number", "time limit of the checker's run over all the cases (default: the "
              "case limit, at least the service's default_timeout_s)"),
    )

    def image(self, spec: Spec) -> str:
        return LANGUAGES[spec.language or "python"].image

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "cases")
        if spec.checker and spec.is_set("compare"):
            raise InvalidSpec("spec.compare and spec.checker exclude each other: the checker judges the outputs")
        if spec.checker and spec.is_set("float_tolerance"):
            raise InvalidSpec("spec.float_tolerance is compare=float's; a spec with a checker has no compare")
        if spec.is_set("checker_timeout_s") and not spec.checker:
            raise InvalidSpec("spec.checker_timeout_s needs a spec.checker")
        if not (math.isfinite(spec.checker_timeout_s) and spec.checker_timeout_s >= 0):
            raise InvalidSpec("spec.checker_timeout_s must be a finite number, not negative")
        spec = spec.with_defaults(language="python", compare="tokens")
        if spec.language not in LANGUAGES:
            raise InvalidSpec(f"spec.language {spec.language!r} is not supported; valid: {', '.join(LANGUAGES)}")
        if spec.compare not in COMPARE_MODES:
            raise InvalidSpec(f"spec.compare {spec.compare!r} is not valid; valid: {', '.join(COMPARE_MODES)}")
        for i, case in enumerate(spec.cases):
            if case.expected_stdout is None:
                raise InvalidSpec(f"spec.cases[{i}] has no expected_stdout")
            if case.args or case.kwargs or case.expected is not MISSING:
                raise InvalidSpec(f"spec.cases[{i}]: args / kwargs / expected belong to kind 'python_io'")
        if spec.case_timeout_s < 0 or not (math.isfinite(spec.float_tolerance) and spec.float_tolerance >= 0):
            raise InvalidSpec("spec.case_timeout_s and spec.float_tolerance must not be negative "
                              "(float_tolerance: a finite number)")
        return spec

    async def verify(self, text: str, spec: Spec, ctx: Context) -> Outcome:
        lang = LANGUAGES[spec.language]
        case_limit = min(spec.case_timeout_s or ctx.timeout_s, ctx.config.max_timeout_s)
        tol = spec.float_tolerance if spec.is_set("float_tolerance") else 1e-6
        names = [c.name or f"case {i}" for i, c in enumerate(spec.cases)]
        extra = dict(extracted=truncate(text, 4000))
        prepared = await prepare(ctx, lang, text)
        if isinstance(prepared, Outcome):  # the same source failed to compile before
            return Outcome(prepared.verdict, detail=prepared.detail, **extra, stdout_tail=prepared.stdout_tail,
                           stderr_tail=prepared.stderr_tail)
        python = lang.name == "python"
        memory = (ctx.config.memory_mb << 20) if lang.address_space_limit else None
        # Stop at the first failing case when nothing after it can change the reward: fast_fail, or all-or-nothing
        # scoring (the runner stops at a case that fails inside the sandbox; the others are judged here and the
        # runner is told to stop, keeping its sandbox).
        stop_early = spec.fast_fail or spec.scoring != "fraction"
        run_cmd = run_argv(lang, prepared.run, ctx.config.cpus, ctx.config.memory_mb)
        steps = list(prepared.steps)
        if python:  # the syntax check's process becomes the program host (where the runner has a zygote)
            steps[0] = replace(steps[0], **python_program(memory))
        # stdin_pipe: a case's input is the program's own, on a pipe as ``prog < input`` gives (open("/dev/stdin")
        # works there; not on the socket a judge's stdin is)
        steps += [Step(name, run_cmd, case_limit, stdin=case.stdin, memory_bytes=memory,
                       output_limit=ctx.config.output_limit_bytes, stop_on_failure=stop_early,
                       harness=wire.PYTHON_CASE if python else "", stdin_pipe=True)
                  for name, case in zip(names, spec.cases, strict=False)]
        tests: list[TestOutcome] = []
        checked: dict[int, str] = {}  # with a checker: the cases it judges (their programs ran cleanly), by index

        def judge_case(step: StepResult) -> bool:
            case = spec.cases[len(tests)]
            if spec.checker:  # judged after the job, by the checker: a clean run passes until then
                ended = self._run_verdict(step, case_limit, lang)
                if ended is None:
                    checked[len(tests)] = step.stdout
                    ended = TestOutcome(step.name, Verdict.PASSED, "", step.duration_s)
                tests.append(ended)
            else:
                tests.append(self._judge_case(step, case.expected_stdout or "", spec.compare, tol, case_limit, lang))
            return tests[-1].passed or not stop_early

        job = Job(steps=steps, files={prepared.file: text}, image=lang.image, stoppable=stop_early,
                  stream=stop_early)
        run = await run_compiled(ctx, prepared, lang, job, prepared.then(judge_case), extra)
        if isinstance(run, Outcome):
            return run
        if run.oom_killed and len(tests) < len(names):
            tests.append(TestOutcome(names[len(tests)], Verdict.MEMORY_LIMIT, "memory limit exceeded"))
        failed_before = any(not t.passed for t in tests)
        if run.stopped_early or (stop_early and failed_before and run.completed):
            skipped = "not run (fast_fail)" if spec.fast_fail else "not run (all_or_nothing: an earlier case failed)"
        else:
            skipped = "not run: the sandbox timed out" if run.host_timeout else "not run"
        verdict_rest = Verdict.TIMEOUT if run.host_timeout and not run.stopped_early else Verdict.FAILED
        tests += [TestOutcome(n, verdict_rest, skipped) for n in names[len(tests):]]
        if checked:
            judged = await self._check(ctx, spec, checked, tests, case_limit)
            if judged is not None:
                return Outcome(judged.verdict, detail=judged.detail, **extra)
        last_step = run.steps[-1]
        outcome = Outcome.from_tests(tests, **extra, **streams(last_step))
        return outcome

    @staticmethod
    async def _check(ctx: Context, spec: Spec, checked: dict[int, str], tests: list[TestOutcome],
                     case_limit: float) -> Outcome | None:
        """The checker's verdicts put in ``tests`` (for the cases in ``checked``); an INFRA_ERROR Outcome when the
        checker failed."""
        order = sorted(checked)
        cases = [CheckedCase(spec.cases[i].stdin, checked[i], spec.cases[i].expected_stdout or "") for i in order]
        # (not less than the default limit unless the spec says so: a short case limit is the program's, and the
        # checker's interpreter has to start within it)
        limit = min(spec.checker_timeout_s or max(case_limit, ctx.config.default_timeout_s), ctx.config.max_timeout_s)
        judged = await run_checker(ctx, spec.checker, cases, [tests[i].name for i in order], limit)
        if isinstance(judged, Outcome):
            return judged
        for i, judgement in zip(order, judged, strict=True):
            if not judgement.accepted:
                why = f": {judgement.message}" if judgement.message else ""
                tests[i] = TestOutcome(tests[i].name, Verdict.FAILED, f"the checker rejected the output{why} (got "
                                       f"{truncate(checked[i], 120)!r})", tests[i].duration_s)
        return None

    @staticmethod
    def _run_verdict(step: StepResult, limit_s: float, lang: Language | None = None) -> TestOutcome | None:
        """A case's verdict when its program did not end cleanly (a limit, a crash); None when it did."""
        hit = limit_verdict(step, SandboxRun(steps=[], completed=False), limit_s)
        if hit is not None:
            return TestOutcome(step.name, hit[0], hit[1], step.duration_s)
        if not step.ok and lang is not None and any(m in step.stderr[-2000:] for m in lang.memory_markers):
            return TestOutcome(step.name, Verdict.MEMORY_LIMIT, "memory limit exceeded", step.duration_s)
        if not step.ok:
            return TestOutcome(step.name, Verdict.RUNTIME_ERROR, exit_detail(step), step.duration_s)
        return None

    @staticmethod
    def _judge_case(step: StepResult, expected: str, mode: str, tol: float, limit_s: float,
                    lang: Language | None = None) -> TestOutcome:
        ended = Stdio._run_verdict(step, limit_s, lang)
        if ended is not None:
            return ended
        if outputs_match(step.stdout, expected, mode, tol):
            return TestOutcome(step.name, Verdict.PASSED, "", step.duration_s)
        return TestOutcome(step.name, Verdict.FAILED,
                           f"expected {truncate(expected, 120)!r}, got {truncate(step.stdout, 120)!r}",
                           step.duration_s)
