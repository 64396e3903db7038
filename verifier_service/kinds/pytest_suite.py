"""pytest: the completion is written as a module next to a pytest suite; per-test
results are read from pytest's JUnit XML report.

pytest runs as the judge (``verifier_service/runner/run_pytest.py``): the completion's
module runs in a process of its own, forked before the nonce is read, and the
tests reach it only through calls that return plain values."""

from __future__ import annotations

import ast
import posixpath
from pathlib import Path

from defusedxml import ElementTree

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import probe, register
from verifier_service.kinds._sandboxed import (
    HARNESS_DIR,
    PYTHON,
    exit_detail,
    limit_verdict,
    new_nonce,
    python_without_code,
    run_job,
    streams,
)
from verifier_service.kinds.base import Context, Param, VerifierKind
from verifier_service.runner import wire as runner_wire
from verifier_service.sandbox.base import Job, Step
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

REPORT = ".rlvr-junit.xml"


def parse_junit(xml: str, nonce: str) -> list[TestOutcome]:
    """Per-test outcomes of a JUnit report; ValueError unless our plugin stamped it with ``nonce``."""
    root = ElementTree.fromstring(xml)
    stamps = [p.get("value") for p in root.iter("property") if p.get("name") == "rlvr_nonce"]
    if stamps != [nonce]:
        raise ValueError("the report was not written by the sandbox's pytest run")
    tests = []
    for case in root.iter("testcase"):
        name = "::".join(p for p in (case.get("classname", ""), case.get("name", "")) if p)
        duration = float(case.get("time") or 0.0)
        verdict, detail = Verdict.PASSED, ""
        for child in case:
            if child.tag == "failure":
                verdict, detail = Verdict.FAILED, child.get("message") or (child.text or "")
            elif child.tag == "error":
                verdict, detail = Verdict.RUNTIME_ERROR, child.get("message") or (child.text or "")
            elif child.tag == "skipped":
                verdict, detail = Verdict.FAILED, "skipped: " + (child.get("message") or "")
        tests.append(TestOutcome(name, verdict, truncate(detail.strip(), 600), duration))
    return tests


def junit_asserts(xml: str) -> int | None:
    """The asserts the run executed (the plugin's ``rlvr_asserts`` property), None if the report lacks it."""
    root = ElementTree.fromstring(xml)
    counts = [p.get("value") for p in root.iter("property") if p.get("name") == "rlvr_asserts"]
    return int(counts[0]) if len(counts) == 1 and (counts[0] or "").isdigit() else None


_CONFIG_FILES = ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "conftest.py")


def _check_suite(files: dict[str, str]) -> None:
    """A suite that could pass without checking anything is refused: the .py files must parse, hold a check
    (``_is_check``) and (unless a config file changes what pytest collects) a test function."""
    has_assert = has_test = False
    for path, text in files.items():
        if not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError) as exc:
            raise InvalidSpec(f"spec.files[{path!r}] is not valid Python: {exc}") from exc
        except RecursionError as exc:
            raise InvalidSpec(f"spec.files[{path!r}] is nested too deeply to check") from exc
        has_assert = has_assert or any(_is_check(n) for n in ast.walk(tree))
        name = posixpath.basename(path)
        if name.startswith("test_") or name.endswith("_test.py"):
            has_test = has_test or any(_is_test_def(node) for node in tree.body)
    if not has_test and not any(posixpath.basename(p) in _CONFIG_FILES for p in files):
        raise InvalidSpec("spec.files holds no test for pytest to collect (a test_*.py or *_test.py file with a "
                          "test_* function or a Test* class): nothing would be tested")
    if not has_assert:
        raise InvalidSpec("spec.files holds no assert statement (nor pytest.raises, nor a unittest assert method): "
                          "the suite could pass without checking anything")


def _is_check(node: ast.AST) -> bool:
    """What the sandbox's pytest plugin counts when it runs: ``assert``, ``pytest.raises``, ``self.assert*``."""
    if isinstance(node, ast.Assert):
        return True
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    return name == "raises" or name.startswith("assert")


def _is_test_def(node: ast.stmt) -> bool:
    """A test pytest collects: a ``test*`` function, or a class with ``test*`` methods that is named ``Test*``
    or is a ``unittest.TestCase`` (pytest collects those whatever their name: Exercism's ``ClockTest``,
    ClassEval's ``StackTestPush``)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name.startswith("test")
    return isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or any(
        (base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")).endswith("TestCase")
        for base in node.bases)) and any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test") for n in node.body)


def _safe_relative(path: str) -> bool:
    norm = posixpath.normpath(path)
    return bool(path) and not path.startswith("/") and norm != "." and not norm.startswith("..")


# The runner's modules, imported by bare name inside the sandbox: a solution or test module of the same name would
# take a judge module's place in ``sys.modules``.
RUNNER_MODULE_NAMES = frozenset(p.stem for p in Path(runner_wire.__file__).parent.glob("*.py")) - {"__init__"}


@register
class PytestSuite(VerifierKind):
    name = "pytest"
    description = "writes the completion as a module beside a pytest suite and runs pytest in the sandbox"
    sandboxed = True
    params = (
        Param("files", "files", "test files by relative path, e.g. {\"test_solution.py\": \"...\"}", required=True),
        Param("solution_path", "string", "where the completion is written", default="solution.py"),
    )

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "files")
        spec = spec.with_defaults(solution_path="solution.py")
        for path in [*spec.files, spec.solution_path]:
            if not _safe_relative(path):
                raise InvalidSpec(f"file path {path!r} must be relative and stay inside the work directory")
        if spec.solution_path in spec.files:
            raise InvalidSpec(f"spec.files must not contain the solution path {spec.solution_path!r}")
        if REPORT in spec.files:
            raise InvalidSpec(f"{REPORT} is reserved for the test report")
        for path in [*spec.files, spec.solution_path]:
            stem = posixpath.splitext(posixpath.basename(path))[0]
            if path.endswith(".py") and stem in RUNNER_MODULE_NAMES:
                raise InvalidSpec(f"file path {path!r}: the module name {stem!r} is one of the judge's own modules "
                                  "in the sandbox (it would replace it); choose another name")
        _check_suite(spec.files)
        return spec

    async def verify(self, text: str, spec: Spec, ctx: Context) -> Outcome:
        if (empty := python_without_code(text)) is not None:
            return empty
        own = {posixpath.splitext(path.split("/", 1)[0])[0] for path in [*spec.files, spec.solution_path]}
        missing = await probe.python_module_problems(
            ctx, PYTHON, [body for path, body in spec.files.items() if path.endswith(".py")], own)
        if missing is not None:
            return Outcome(Verdict.INFRA_ERROR, detail=missing, extracted=truncate(text, 4000))
        nonce = new_nonce()
        argv = [*PYTHON, f"{HARNESS_DIR}/run_pytest.py", "--solution", spec.solution_path,
                "-q", "-p", "no:cacheprovider", "-p", "rlvr_pytest",
                # Under bwrap the judge's interpreter is the service's: its dev plugins stay out of the judge
                # (hypothesis' made every pytest job here miss a 10 s limit).
                "-p", "no:hypothesispytest",
                "--color=no", f"--junitxml={REPORT}", "-o", "junit_family=xunit2",
                "-o", "enable_assertion_pass_hook=true"]
        step = Step("pytest", argv,
                    ctx.timeout_s, stdin=nonce + "\n", memory_bytes=ctx.config.memory_mb << 20,
                    output_limit=ctx.config.output_limit_bytes, collect=(REPORT,))
        run = await run_job(ctx, Job(steps=[step], files={**spec.files, spec.solution_path: text}))
        if isinstance(run, Outcome):
            return run
        extra = dict(extracted=truncate(text, 4000))
        if not run.steps:
            return Outcome(Verdict.TIMEOUT if run.host_timeout else Verdict.MEMORY_LIMIT,
                           detail=run.runner_error or "the sandbox stopped before pytest ran", **extra)
        result = run.steps[0]
        extra.update(streams(result))
        hit = limit_verdict(result, run, ctx.timeout_s)
        xml = result.collected.get(REPORT)
        tests: list[TestOutcome] = []
        if xml:
            try:
                tests = parse_junit(xml, nonce)
            except Exception as exc:  # noqa: BLE001 - a broken report (the candidate may write it) is a failure
                return Outcome(Verdict.RUNTIME_ERROR, detail=f"unreadable test report: {truncate(str(exc), 200)}",
                               **extra)
        if hit is not None:
            return Outcome(hit[0], tests=[t for t in tests], detail=hit[1], **extra)
        if not tests:
            detail = "no tests ran" if result.exit_code == 5 else f"pytest produced no report ({exit_detail(result)})"
            return Outcome(Verdict.RUNTIME_ERROR if result.exit_code not in (0, 5) else Verdict.FAILED,
                           detail=detail, **extra)
        outcome = Outcome.from_tests(tests, **extra)
        if outcome.verdict is Verdict.PASSED and junit_asserts(xml) == 0:
            return Outcome(Verdict.FAILED, tests=[TestOutcome(t.name, Verdict.FAILED, "no assert ran",
                                                              t.duration_s) for t in tests],
                           detail="every test passed, but no assert ran: the suite checked nothing", **extra)
        if outcome.verdict is Verdict.PASSED and result.exit_code != 0:
            # The report says all passed but pytest did not: the report cannot be trusted.
            outcome = Outcome(Verdict.RUNTIME_ERROR, tests=tests, **extra)
            outcome.detail = f"pytest failed although its report passed every test ({exit_detail(result)})"
            return outcome
        return outcome
