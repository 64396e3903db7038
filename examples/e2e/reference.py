"""An in-process reference scorer for the e2e tasks, written independently of the verifier service.

It is the yardstick the service is checked against (held-out evaluation through both must agree) and the
"in-process reward function" whose cost the run compares with the remote service's. It isolates nothing: the
candidate's code runs in a forked child with a timeout, as the HumanEval-style harnesses do. Never use it on
untrusted code outside an experiment like this one.

A completion is *well formed* when its first fenced block (```, any language tag or none, on the fence's line) holds
some code, as the ``fenced_code`` extraction is documented (an empty first block is malformed, even when a second
block follows), and *correct* when the function of that block returns, for every case, a value equal to the
expected one as JSON values compare (bool is not int; ints and floats by value; tuples and sets count as lists),
the semantics of ``python_io``. What the candidate prints is discarded.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import time
from dataclasses import dataclass
from typing import Any

FENCE = re.compile(r"```([^`\n]*)\n(.*?)```", re.DOTALL)  # group 1: the language tag (any), group 2: the code
DEFAULT_TIMEOUT_S = 10.0  # a spec without timeout_s: the service's default
# Each completion runs in a fork of the caller. Forking a trainer (GBs of address space, a CUDA context) costs
# ~40 ms a completion (GPU run 1: 2.3-2.9 s a 64-completion step). A fork server would fork a small process
# instead, but its children re-import the caller's __main__ (and fail silently when it has no file): not used.
START_METHOD = "fork"


@dataclass(frozen=True)
class Score:
    well_formed: bool
    passed: int
    total: int

    @property
    def correct(self) -> bool:
        return self.well_formed and self.total > 0 and self.passed == self.total


def extract_code(completion: str) -> str | None:
    match = FENCE.search(completion)
    if match is None or not match.group(2).strip():
        return None
    return match.group(2)


def _plain(value: Any) -> Any:
    """The value as the task's tests see it: tuples and sets become lists (sets sorted)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _same(actual: Any, expected: Any) -> bool:
    """Equal with JSON types: bools only equal bools; ints and floats compare by value; strings exactly."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return actual == expected
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(actual) == len(expected)
                and all(_same(a, e) for a, e in zip(actual, expected, strict=True)))
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and actual.keys() == expected.keys()
                and all(_same(actual[k], expected[k]) for k in expected))
    return type(actual) is type(expected) and actual == expected


def _child(code: str, entry_point: str, cases: list[dict[str, Any]], conn) -> None:
    """Runs the cases in order, sending True/False after each (as the service's harness reports each case), then
    None; a completion that cannot be defined sends None only."""
    devnull = os.open(os.devnull, os.O_WRONLY)  # what the candidate prints (and warnings) stays out of our logs
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        namespace: dict[str, Any] = {}
        exec(compile(code, "<completion>", "exec"), namespace)  # running the candidate is the point here
        function = namespace[entry_point]
    except BaseException:  # noqa: BLE001 - a completion that cannot even be defined passes nothing
        function = None
    for case in cases if function is not None else []:
        try:
            value = function(*case.get("args", []), **case.get("kwargs", {}))
            ok = _same(_plain(value), case["expected"])
        except Exception:  # noqa: BLE001 - a failing case is a failed case
            ok = False
        conn.send(ok)
    conn.send(None)
    conn.close()


def score(completion: str, spec: dict[str, Any] | str) -> Score:
    """The completion's score; its cases run in a child with the spec's time limit for all of them (``timeout_s``,
    as the service applies it): the cases finished before the limit count, as the service counts them."""
    spec = json.loads(spec) if isinstance(spec, str) else spec
    cases = spec["cases"]
    code = extract_code(completion)
    if code is None:
        return Score(False, 0, len(cases))
    try:  # code that does not compile is not well-formed (the service scores a compile error's format 0)
        compile(code, "<completion>", "exec")
    except (SyntaxError, ValueError):
        return Score(False, 0, len(cases))
    ctx = multiprocessing.get_context(START_METHOD)
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(code, spec["entry_point"], cases, child), daemon=True)
    deadline = time.monotonic() + float(spec.get("timeout_s") or DEFAULT_TIMEOUT_S)
    proc.start()
    child.close()
    passed = 0
    while (left := deadline - time.monotonic()) > 0 and parent.poll(left):
        try:
            message = parent.recv()
        except EOFError:
            break
        if message is None:
            break
        passed += bool(message)
    proc.kill()
    proc.join()
    parent.close()
    return Score(True, passed, len(cases))


def reward_components(completions: list[str], specs: list[Any], format_weight: float = 0.2,
                      correctness_weight: float = 0.8) -> list[float]:
    """The service's composite reward, computed in-process: format * w_f + fraction of cases * w_c."""
    out = []
    for completion, spec in zip(completions, specs, strict=True):
        s = score(completion, spec)
        fraction = s.passed / s.total if s.total and s.well_formed else 0.0
        out.append(format_weight * float(s.well_formed) + correctness_weight * fraction)
    return out
