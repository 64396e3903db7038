"""Calls a completion's function on each case's arguments and reports what it returned.

Input (stdin, JSON): {"setup": str, "solution": str, "entry_point": str,
"cases": [{"args": [...], "kwargs": {...}}]}. Expected values never enter
the sandbox: the host compares the reported return values. Return values are
encoded with the exact built-in types' own methods, so an object that
overrides __eq__ or __repr__ cannot pass for a correct answer.
"""

import builtins
import json
import os
import sys
import time
import traceback

_dumps = json.dumps
_monotonic = time.monotonic
UNENCODABLE = "__rlvr_unencodable__"


BIG_INT = "__rlvr_int__"  # an int too long for decimal JSON text (past ~3,900 digits): its hex digits
BIG_INT_BITS = 13_000


def _encode(value, depth=0):
    """``value`` as the JSON value ``json.dumps`` would make of it (tuples as arrays, int / float / bool /
    None keys as their JSON text), read with the built-in types' own methods; what JSON cannot hold (a set,
    bytes, an object, keys that collide once converted, a dict that uses the harness's own keys) is
    ``{UNENCODABLE: why}``, which the host never matches."""
    if depth > 50:
        return {UNENCODABLE: "nesting too deep"}
    t = type(value)
    if value is None or t is bool:
        return value
    if isinstance(value, int):
        number = int.__index__(value) if t is int else int(int.__repr__(value))
        if number.bit_length() > BIG_INT_BITS:
            return {BIG_INT: int.__format__(number, "x")}
        return number
    if isinstance(value, float):
        return float(float.__repr__(value))
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (list, tuple)):
        items = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        return [_encode(v, depth + 1) for v in items]
    if isinstance(value, dict):
        out = {}
        for k, v in dict.items(value):
            if type(k) not in (str, int, float, bool) and k is not None:
                return {UNENCODABLE: f"dict key of type {type(k).__name__}"}
            key = k if type(k) is str else _dumps(k)
            if key in out or key in (UNENCODABLE, BIG_INT):
                return {UNENCODABLE: f"dict keys that are the same JSON text {key[:40]!r}"}
            out[key] = _encode(v, depth + 1)
        return out
    return {UNENCODABLE: f"value of type {t.__name__}"}


def _error_detail(exc, limit=600):
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<")]
    if frames:
        text += f" (at {frames[-1].filename} line {frames[-1].lineno})"
    return text[:limit]


def main():
    job = json.loads(sys.stdin.read())
    sys.stdin.close()
    out = os.fdopen(int(os.environ.pop("RLVR_REPORT_FD")), "w", buffering=1)
    nonce = job.pop("nonce")

    def report(**event):
        event["nonce"] = nonce
        out.write(_dumps(event) + "\n")
        out.flush()

    namespace = {"__name__": "solution", "__builtins__": builtins}
    try:
        setup = compile(job.get("setup", ""), "<setup>", "exec")
        solution = compile(job["solution"], "<solution>", "exec")
    except (SyntaxError, ValueError) as exc:
        report(event="compile_error", detail=_error_detail(exc))
        return
    try:
        exec(setup, namespace)
        exec(solution, namespace)
        func = namespace[job["entry_point"]]
        if not callable(func):
            raise TypeError(f"{job['entry_point']} is not callable")
    except KeyError:
        report(event="solution_error", error="NameError",
               detail=f"the completion does not define {job['entry_point']!r}")
        report(event="end")
        return
    except BaseException as exc:  # noqa: BLE001 - the candidate's failure is data
        report(event="solution_error", error=type(exc).__name__, detail=_error_detail(exc))
        report(event="end")
        return
    for index, case in enumerate(job["cases"]):
        started = _monotonic()
        try:
            value = func(*case.get("args", []), **case.get("kwargs", {}))
            encoded = _encode(value)
            report(event="case", index=index, value=encoded, duration_s=round(_monotonic() - started, 6))
        except BaseException as exc:  # noqa: BLE001
            report(event="case", index=index, error=type(exc).__name__, detail=_error_detail(exc),
                   duration_s=round(_monotonic() - started, 6))
    report(event="end")


if __name__ == "__main__":
    main()
