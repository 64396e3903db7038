"""python_assert: the completion's code, then assert-style tests (HumanEval / MBPP).

Each top-level statement of ``tests`` that contains an ``assert``, or calls a
function the tests define that asserts (``test_sum()``, ``check(f)``), is one
test, and ``unittest.main()`` one that runs the tests' TestCase classes; the
body of ``if __name__ == "__main__":`` counts as top level (the tests are the
main program, as ``python FILE`` runs them); the other statements (imports, helpers, ``def check``) run in order
between them. With ``entry_point``, ``check(<entry_point>)`` runs last as a
test of its own (HumanEval's convention). In the sandbox the completion runs
in a process of its own and the tests in a judge process it cannot reach
(``verifier_service/runner/judge.py``): the judge asks the completion's process for
calls and gets back plain values, so nothing the completion defines or patches
decides whether an assert holds. Results come back over the judge's report pipe.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import probe, register
from verifier_service.kinds._sandboxed import (
    HARNESS_DIR,
    PYTHON,
    error_verdict,
    event_duration,
    new_nonce,
    python_without_code,
    read_reports,
    run_job,
    streams,
    unfinished_tests,
)
from verifier_service.kinds.base import Context, Param, VerifierKind
from verifier_service.runner import wire
from verifier_service.sandbox.base import Job, SandboxRun, Step
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

ANALYSIS_CACHE = 1024  # distinct (tests, entry_point, exact_types) kept: a batch repeats each prompt's spec
# Lines as the parser splits them (only \r, \n, \r\n end one), the way ast.get_source_segment splits them.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def split_tests(tests: str, entry_point: str, exact_types: bool = False) -> list[dict[str, str]]:
    """Ordered items: {"kind": "stmt"|"test", "name", "code"}."""
    items, _, _ = _analysed(tests, entry_point, exact_types)
    return [{"kind": kind, "name": name, "code": code} for kind, name, code in items]


def _tree(tests: str) -> ast.Module:
    """The tests' syntax tree, each top-level ``if __name__ == "__main__":`` replaced by its body: the tests are
    the main program, as ``python FILE`` runs a dataset's test file (an ``else`` branch never runs)."""
    try:
        tree = ast.parse(tests)
    except SyntaxError as exc:
        raise InvalidSpec(f"spec.tests is not valid Python: {exc.msg} (line {exc.lineno})") from exc
    tree.body = [stmt for node in tree.body for stmt in (node.body if _is_main_guard(node) else [node])]
    return tree


def _is_main_guard(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    return (any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
            and any(isinstance(side, ast.Constant) and side.value == "__main__" for side in sides))


def _is_unittest_main(node: ast.stmt) -> bool:
    """``unittest.main(...)``: one test, which runs the tests' own TestCase classes in the judge
    (``assert_harness``'s ``__rlvr_unittest``: unittest's own main would look for them in the harness)."""
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "main"
            and isinstance(node.value.func.value, ast.Name) and node.value.func.value.id == "unittest")


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)  # run as statements, never tests


def _is_test(node: ast.stmt, checking: frozenset[str]) -> bool:
    """A top-level statement that holds an assert or calls a function of ``checking`` (``test_sum()``,
    ``check(candidate)``: McEval's and many datasets' form); a definition is not a test, it runs as a statement."""
    return _is_unittest_main(node) or (not isinstance(node, _DEFINITIONS) and any(
        isinstance(n, ast.Assert) or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in
                                      checking) for n in ast.walk(node)))


def _checking(tree: ast.Module) -> frozenset[str]:
    """The functions the tests define at top level that check something: their body holds an assert statement,
    or calls one of them."""
    bodies = {node.name: [n for n in ast.walk(node)] for node in tree.body
              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    names = {name for name, nodes in bodies.items() if any(isinstance(n, ast.Assert) for n in nodes)}
    while True:
        more = {name for name, nodes in bodies.items() if name not in names and any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names for n in nodes)}
        if not more:
            return frozenset(names)
        names |= more


@functools.lru_cache(maxsize=ANALYSIS_CACHE)
def _checked(tests: str, entry_point: str) -> None:
    """What makes the tests valid (they parse, and something is tested): the cheap part of ``_analysed``, for
    validation, so that a batch's items are checked quickly and the first jobs start while later items are
    being analysed (``verify`` analyses each spec once)."""
    tree = _tree(tests)
    checking = _checking(tree)
    if not entry_point and not any(_is_test(node, checking) for node in tree.body):
        raise InvalidSpec("spec.tests holds no top-level assert, no top-level call of a function of its own that "
                          "asserts, and no entry_point is given: nothing would be tested")
    if not any(is_check(n) for n in ast.walk(tree)):
        raise InvalidSpec("spec.tests holds no assert statement: the tests could pass without checking anything "
                          "(write the checks as assert statements)")
    if entry_point and "check" not in _bound_names(tree):
        raise InvalidSpec(f"entry_point is set, so check({entry_point}) runs, but spec.tests defines no "
                          "check function")


def is_check(node: ast.AST) -> bool:
    """An ``assert`` statement, or a call of a unittest-style ``assert*`` method (``tc.assertEqual(...)``)."""
    if isinstance(node, ast.Assert):
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr.startswith("assert"))


def _bound_names(tree: ast.Module) -> set[str]:
    """Names the top level of ``tests`` binds (definitions, assignments, imports)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, _DEFINITIONS):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


@functools.lru_cache(maxsize=ANALYSIS_CACHE)
def _analysed(tests: str, entry_point: str, exact_types: bool
              ) -> tuple[tuple[tuple[str, str, str], ...], tuple[str, ...], list[dict] | None]:
    """The tests' (kind, name, code) items, the names they read and their calls on literals (``literal_calls``,
    setup aside), from one parse; cached, since verify asks for every item of a batch and a GRPO group shares
    one spec (immutable: callers share it). Validation asks only ``_checked``."""
    tree = _tree(tests)
    lines = [line.encode() for line in _LINE.findall(tests)]
    items = []
    loaded: set[str] = set()
    checking = _checking(tree)
    for node in tree.body:
        if _is_unittest_main(node):
            items.append(("test", "unittest.main()", "__rlvr_unittest()"))
            continue
        code = _source_segment(lines, node) or ast.unparse(node)
        has_assert = False
        for n in ast.walk(node):  # one walk for both: whether it checks, and the names it reads
            if isinstance(n, ast.Name):
                if isinstance(n.ctx, ast.Load):
                    loaded.add(n.id)
            elif isinstance(n, ast.Assert) or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                                               and n.func.id in checking):
                has_assert = True
        is_test = has_assert and not isinstance(node, _DEFINITIONS)  # as _is_test, from the walk made for names
        name = " ".join(code.split())
        if is_test:
            code = _explained(node, exact_types) or code
            if exact_types:
                code = ast.unparse(ast.fix_missing_locations(_ExactTypes().visit(ast.parse(code))))
        items.append(("test" if is_test else "stmt", truncate(name, 120), code))
    if entry_point:
        items.append(("test", f"check({entry_point})", f"check({entry_point})"))
    if not any(kind == "test" for kind, _, _ in items):
        raise InvalidSpec("spec.tests holds no top-level assert, no top-level call of a function of its own that "
                          "asserts, and no entry_point is given: nothing would be tested")
    names = _names(loaded, entry_point)
    callable_names = set(names)  # a builtin's name goes to the judge process (the builtin, if not redefined)
    if not entry_point:
        names = sorted({*names, *shadowed_builtins(tree)})
    return tuple(items), tuple(names), _calls(tree, entry_point, callable_names, lines)


def shadowed_builtins(tree: ast.Module) -> set[str]:
    """Builtin names the tests use only as the function under test (MBPP 126: ``assert sum(10, 15) == 6``, a
    completion's ``def sum``): every use is a call that is a whole assert (``assert f(x)``, ``assert not
    f(x)``) or one side of a comparison whose other side is a literal. Those the completion defines are what
    the tests get, as in MBPP's own harness; a builtin the tests use any other way (``set(f(x)) == set(...)``,
    the expected side) stays the builtin, so a completion cannot redefine how its answer is judged."""
    uses: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and hasattr(builtins, node.id):
            uses[node.id] = uses.get(node.id, 0) + 1
    under_test: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        test = node.test.operand if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) \
            else node.test
        sides = [test]
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPS:
            left, right = test.left, test.comparators[0]
            sides = [left] if _is_literal(right) else [right] if _is_literal(left) else []
        for side in sides:
            if isinstance(side, ast.Call) and isinstance(side.func, ast.Name) and side.func.id in uses \
                    and not any(isinstance(n, ast.Name) and n.id == side.func.id
                                for a in [*side.args, *side.keywords] for n in ast.walk(a)):
                under_test[side.func.id] = under_test.get(side.func.id, 0) + 1
    return {name for name, count in under_test.items() if count == uses[name] and name not in _NEVER_SHADOWED}


# Names the judge itself relies on: never the completion's, whatever the tests do with them.
_NEVER_SHADOWED = frozenset({"isinstance", "type", "print", "__import__", "globals", "locals", "vars", "exec",
                             "eval", "compile", "getattr", "setattr", "object", "super"})


def _source_segment(lines: list[bytes], node: ast.stmt) -> str | None:
    """``ast.get_source_segment`` over lines split once (it splits the whole source again for every node)."""
    if node.end_lineno is None or node.end_col_offset is None:
        return None
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first][node.col_offset:node.end_col_offset].decode()
    return (lines[first][node.col_offset:] + b"".join(lines[first + 1:last])
            + lines[last][:node.end_col_offset]).decode()


_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Is: "is",
        ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}


class _ExactTypes(ast.NodeTransformer):
    """``assert a == b`` (anywhere, also inside ``check``) becomes ``assert __rlvr_same(a, b)``, and ``assert a
    in b`` ``assert __rlvr_same_in(a, b)`` (``!=`` and ``not in`` their negations)."""

    _FUNCTIONS = {ast.Eq: ("__rlvr_same", True), ast.NotEq: ("__rlvr_same", False),
                  ast.In: ("__rlvr_same_in", True), ast.NotIn: ("__rlvr_same_in", False)}

    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in self._FUNCTIONS:
            function, positive = self._FUNCTIONS[type(test.ops[0])]
            call = ast.Call(ast.Name(function, ast.Load()), [test.left, test.comparators[0]], [])
            node.test = call if positive else ast.UnaryOp(ast.Not(), call)
        return node


def used_names(tests: str, entry_point: str) -> list[str]:
    """Names the tests read that the completion may define: the judge binds these to the completion's
    objects (never a builtin's name, except the entry point)."""
    tree = _tree(tests)
    names = _names({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)},
                   entry_point)
    return names if entry_point else sorted({*names, *shadowed_builtins(tree)})


def _stored(tree: ast.AST) -> set[str] | None:
    """Every name ``tree`` binds anywhere, at any scope (coarse on purpose: a name bound anywhere counts as
    defined); None when a star import makes that unknowable."""
    names: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, (*_DEFINITIONS, ast.alias)) or isinstance(n, ast.arg):
            name = n.arg if isinstance(n, ast.arg) else n.name
            names.add((n.asname or n.name).split(".")[0] if isinstance(n, ast.alias) else name)
            if isinstance(n, ast.alias) and n.name == "*":
                return None
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            names.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            names.add(n.rest)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            names.update(n.names)
    return names


@functools.lru_cache(maxsize=ANALYSIS_CACHE)
def undefined_names(tests: str, setup: str, entry_point: str) -> list[str]:
    """Names the tests read that nothing defines: not the tests (anywhere), not ``setup``, not the entry point,
    not a builtin. With an entry point the completion supplies only that name, so such a test could never pass
    (HumanEval's tests that call the prompt's helpers need the prompt as setup)."""
    tree = _tree(tests)
    bound = _stored(tree)
    try:
        setup_bound = _stored(ast.parse(setup)) if setup.strip() else set()
    except SyntaxError as exc:
        raise InvalidSpec(f"spec.setup is not valid Python: {exc.msg} (line {exc.lineno})") from exc
    if bound is None or setup_bound is None:
        return []
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return sorted(n for n in loaded - bound - setup_bound - {entry_point, "__rlvr_explain"}
                  if not hasattr(builtins, n))


def _names(loaded: set[str], entry_point: str) -> list[str]:
    names = {n for n in loaded if not hasattr(builtins, n) and not n.startswith("__rlvr")}
    if entry_point:
        names.add(entry_point)
    return sorted(names)


def literal_calls(tests: str, entry_point: str, setup: str) -> list[dict] | None:
    """The tests as calls on literals, when every test is made of them: ``assert f(2, 3) == 6``, ``assert 6 ==
    f(2, 3)`` (any one comparison operator), ``assert f(x)`` or ``assert not f(x)``, where ``f`` is a name the
    completion defines and every argument and expected value is a Python literal; or, with an entry point,
    HumanEval's form: a ``def check(candidate)`` whose body is only such asserts on ``candidate`` (with literal
    messages; ``assert True`` lines skipped), beside literal assignments (``METADATA = {...}``). Each call
    names the test it belongs to (``test``: top-level asserts are a test each, ``check(f)`` is one). Then the
    runner judges them itself, against the completion's process, with the judge's rules (no test code runs,
    and the step needs one process instead of two). None when a test is anything else (helpers, imports,
    loops, setup code): those run in the judge process. Read only (cached with the spec's analysis)."""
    if setup.strip():
        return None
    try:
        return _analysed(tests, entry_point, False)[2]
    except InvalidSpec:
        return None


def _calls(tree: ast.Module, entry_point: str, names: set[str], lines: list[bytes]) -> list[dict] | None:
    """``literal_calls`` of parsed tests that read ``names``."""
    if entry_point:
        return _check_calls(tree, entry_point, lines)
    calls = []
    for index, node in enumerate(tree.body):
        call = _literal_call(node, names, lines)
        if call is None:
            return None
        calls.append({**call, "test": index, "explain": True})
    return calls or None


def _check_calls(tree: ast.Module, entry_point: str, lines: list[bytes]) -> list[dict] | None:
    """HumanEval's ``check(candidate)`` as calls of the entry point (one test), or None."""
    check = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check" and check is None:
            check = node
        elif not (_is_docstring(node) or (isinstance(node, ast.Assign) and _is_literal(node.value) and all(
                isinstance(t, ast.Name) and t.id not in ("check", entry_point) for t in node.targets))):
            return None
    if check is None or check.decorator_list or check.returns is not None:
        return None
    a = check.args
    if a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg or a.defaults or len(a.args) != 1:
        return None
    calls = []
    for node in check.body:
        if _is_docstring(node) or (isinstance(node, ast.Assert) and _is_literal(node.test)
                                   and ast.literal_eval(node.test) and (node.msg is None or _is_literal(node.msg))):
            continue  # a docstring, ``assert True, "..."``
        call = _literal_call(node, {a.args[0].arg}, lines, messages=True)
        if call is None:
            return None
        calls.append({**call, "fn": entry_point, "test": 0, "explain": False})
    return calls or None


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Call, ast.Name, ast.Attribute, ast.Subscript)):  # never literals (no need to try)
        return False
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _literal_text(lines: list[bytes], node: ast.expr) -> str:
    """A literal's own source text, in parentheses (it may span lines), for ``ast.literal_eval`` in the runner:
    the same value as ``ast.unparse`` gives, without rebuilding the text."""
    text = _source_segment(lines, node)
    return f"({text})" if text is not None else ast.unparse(node)


def _literal_call(node: ast.stmt, names: set[str], lines: list[bytes], messages: bool = False) -> dict | None:
    if not isinstance(node, ast.Assert) or (node.msg is not None and not (messages and _is_literal(node.msg))):
        return None
    test, op, expected, swap = node.test, None, None, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, op = test.operand, "not"
    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPS:
        op = _OPS[type(test.ops[0])]
        left, right = test.left, test.comparators[0]
        if _is_literal(left) and not _is_literal(right):
            left, right, swap = right, left, True
        test, expected = left, right
        if not _is_literal(expected):
            return None
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id in names
            and all(not isinstance(a, ast.Starred) and _is_literal(a) for a in test.args)
            and all(k.arg is not None and _is_literal(k.value) for k in test.keywords)):
        return None
    return {"fn": test.func.id, "args": "(" + "".join(_literal_text(lines, a) + ", " for a in test.args) + ")",
            "kwargs": "{" + ", ".join(f"{k.arg!r}: {_literal_text(lines, k.value)}" for k in test.keywords) + "}",
            "op": op, "expected": _literal_text(lines, expected) if expected is not None else None, "swap": swap,
            "message": _literal_text(lines, node.msg) if node.msg is not None else None}


def _explained(node: ast.stmt, exact_types: bool = False) -> str | None:
    """``assert a == b`` rewritten to report both values when it fails (each side evaluated once)."""
    if not (isinstance(node, ast.Assert) and node.msg is None and isinstance(node.test, ast.Compare)
            and len(node.test.ops) == 1 and type(node.test.ops[0]) in _OPS):
        return None
    op = _OPS[type(node.test.ops[0])]
    left, right = ast.unparse(node.test.left), ast.unparse(node.test.comparators[0])
    if exact_types and op in ("==", "!="):
        same = "__rlvr_same(__rlvr_l, __rlvr_r)"
        return (f"__rlvr_l = {left}\n__rlvr_r = {right}\n"
                f"assert {same if op == '==' else 'not ' + same}, __rlvr_explain(__rlvr_l, {op!r}, __rlvr_r)")
    return (f"__rlvr_l = {left}\n__rlvr_r = {right}\n"
            f"assert __rlvr_l {op} __rlvr_r, __rlvr_explain(__rlvr_l, {op!r}, __rlvr_r)")


@register
class PythonAssert(VerifierKind):
    name = "python_assert"
    description = "runs the completion's Python code followed by assert-style tests in the sandbox"
    sandboxed = True
    params = (
        Param("tests", "string", "assert-style test code; each top-level statement that asserts, or calls a "
              "function of the tests that asserts (test_f(), check(f)), is one test", required=True),
        Param("entry_point", "string", "function name; when set, check(<entry_point>) runs after the tests"),
        Param("setup", "string", "code run before the completion (imports, helpers)"),
        Param("fast_fail", "bool", "stop at the first failing test", default=False),
        Param("exact_types", "bool", "==, !=, in and not in in the tests also compare types exactly, at every "
                                     "position and dict keys too (1 is not 1.0 nor True; a subclass of a built-in "
                                     "type is not that type)", default=False),
    )

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "tests")
        if spec.entry_point and not spec.entry_point.isidentifier():
            raise InvalidSpec(f"spec.entry_point {spec.entry_point!r} is not a Python identifier")
        _checked(spec.tests, spec.entry_point)  # the rest of the analysis comes with verify (once per spec)
        if spec.entry_point:
            missing = undefined_names(spec.tests, spec.setup, spec.entry_point)
            if missing:
                raise InvalidSpec(f"spec.tests use {', '.join(missing)}, which neither the tests, spec.setup nor "
                                  f"the entry point {spec.entry_point!r} define (with an entry point, the tests "
                                  "get only that name from the completion: put the prompt's helpers in setup)")
        return spec

    async def verify(self, text: str, spec: Spec, ctx: Context) -> Outcome:
        if (empty := python_without_code(text)) is not None:
            return empty
        missing = await probe.python_module_problems(ctx, PYTHON, [spec.setup, spec.tests], set())
        if missing is not None:
            return Outcome(Verdict.INFRA_ERROR, detail=missing, extracted=truncate(text, 4000))
        items, used, calls = _analysed(spec.tests, spec.entry_point, spec.exact_types)
        names = [name for kind, name, _ in items if kind == "test"]
        nonce = new_nonce()
        payload = {"setup": spec.setup, "solution": text,
                   "items": [{"kind": kind, "name": name, "code": code} for kind, name, code in items],
                   "fast_fail": spec.fast_fail, "names": used, "entry_point": spec.entry_point, "nonce": nonce}
        if spec.setup.strip():
            calls = None  # setup code runs in the judge process (see literal_calls)
        if calls is not None:
            payload.update(calls=calls, exact_types=spec.exact_types)
        job = Job(steps=[Step("tests", [*PYTHON, f"{HARNESS_DIR}/assert_harness.py"], ctx.timeout_s,
                              stdin_json=payload, memory_bytes=ctx.config.memory_mb << 20,
                              output_limit=ctx.config.output_limit_bytes, harness=wire.ASSERT_HARNESS,
                              judge=wire.JUDGE_CALLS if calls is not None else "")])
        run = await run_job(ctx, job)
        if isinstance(run, Outcome):
            return run
        return interpret(run, names, ctx.timeout_s, text, nonce)


def interpret(run: SandboxRun, names: list[str], limit_s: float, text: str, nonce: str) -> Outcome:
    """Turns the harness's report events into per-test outcomes."""
    step = run.steps[0] if run.steps else None
    if step is None:
        return Outcome(Verdict.MEMORY_LIMIT if run.oom_killed else Verdict.TIMEOUT,
                       tests=[TestOutcome(n, Verdict.TIMEOUT, "not run") for n in names],
                       detail=run.runner_error or "the sandbox stopped before the tests ran", extracted=text)
    events = read_reports(step, nonce)
    extra = dict(extracted=truncate(text, 4000), **streams(step))
    tests: list[TestOutcome] = []
    finished = False
    for event in events:
        kind = event.get("event")
        if kind == "compile_error":
            return Outcome(Verdict.COMPILE_ERROR, detail=str(event.get("detail", "")), **extra)
        if kind in ("solution_error", "setup_error"):
            verdict = error_verdict(str(event.get("error", "")), str(event.get("detail", "")))
            detail = ("the completion raised " if kind == "solution_error" else "test setup failed: ") + str(
                event.get("detail", ""))
            rest = names[len(tests):]
            tests += [TestOutcome(n, verdict, detail if i == 0 else "not run") for i, n in enumerate(rest)]
        elif kind == "test":
            error = event.get("error")
            if event.get("passed") is True and not error and event.get("asserts", 1) == 0:
                verdict, event["detail"] = Verdict.FAILED, "no assert ran in this test: it checked nothing"
            elif event.get("passed") is True and not error:
                verdict = Verdict.PASSED
            elif error == "AssertionError":
                verdict = Verdict.FAILED
            else:
                verdict = error_verdict(str(error), str(event.get("detail", "")))
            index = len(tests)
            name = names[index] if index < len(names) else str(event.get("name", index))
            tests.append(TestOutcome(name, verdict, str(event.get("detail", "")), event_duration(event)))
        elif kind == "end":
            finished = True
            break
    if finished:
        rest = names[len(tests):]  # fast-fail skipped these
        tests += [TestOutcome(n, Verdict.FAILED, "not run (fast_fail)") for n in rest]
    else:
        tests += unfinished_tests(names[len(tests):], step, run, limit_s)
    tests = tests[: len(names)]
    if not finished and all(t.passed for t in tests):
        # Every test reported a pass but the harness never reached its end: no proof, no pass.
        tests = [TestOutcome(t.name, Verdict.RUNTIME_ERROR, "the test run did not reach its end, so its "
                             "results cannot be trusted", t.duration_s) for t in tests]
    return Outcome.from_tests(tests, **extra)
