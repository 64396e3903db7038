"""The session kernel: a Python interpreter that keeps its state between cells, like a notebook's.

A standby of the zygote becomes it (harness ``kernel``) when a session opens. It is the *untrusted* process of
the session: every cell runs in it, so everything in it belongs to the model's code. It only reads cells and
writes each cell's outcome; the runner (``session.py``) holds the limits: the wall clock and the output cap of
each cell, killing what a cell leaves running, and a new kernel when this one dies.

Its channels (the standby's descriptors): cells come as one JSON line each on fd 0, outcomes go as one JSON
line each on fd 3, the cell's output goes to fds 1 and 2. Fds 0 and 3 are moved above the ones a program
inherits (close-on-exec), and fd 0 becomes ``/dev/null``: a program a cell starts reads nothing of the next
cell. A cell's ``stdin`` is ``sys.stdin`` for that cell.

A cell: its last statement, when an expression, gives the cell's value (its ``repr``); an exception gives the
error and the traceback (without this module's frames); ``MemoryError`` is ``memory_limit``; SIGINT (the
runner's interrupt at the time limit or the output cap) is ``interrupted``; SIGXCPU (the cell's CPU seconds,
a soft ``RLIMIT_CPU`` under the session's hard one) is ``cpu_limit``.

Standard library only.
"""

import _signal as signal
import ast
import builtins
import fcntl
import io
import json
import os
import resource
import sys
import traceback

VALUE_LIMIT = 64 * 1024  # characters of a value's repr kept
TRACEBACK_LIMIT = 16 * 1024


class CpuLimit(BaseException):
    """The cell used its CPU seconds (SIGXCPU at the soft RLIMIT_CPU)."""


def _on_xcpu(*_):
    raise CpuLimit


def _high(fd):
    """``fd`` moved above the descriptors a program expects, close-on-exec; the low one closed."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64)
    os.close(fd)
    return high


def _cut(text, limit):
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


def _compile(code):
    """The cell as (statements, last expression or None), compiled; SyntaxError propagates."""
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, "<cell>", "exec")
    return body, compile(last, "<cell>", "eval") if last is not None else None


def _traceback(exc):
    """The traceback of a cell's exception, from the cell's own frames on."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return _cut("".join(traceback.format_exception(type(exc), exc, tb)), TRACEBACK_LIMIT)


def _cpu_used():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _set_cell_cpu(seconds):
    """A soft RLIMIT_CPU ``seconds`` past what this process used so far (never above the session's hard one)."""
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(_cpu_used() + seconds) + 1
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        pass


def _reap():
    """Reaps the children the runner killed after the last cell (their zombies would count as processes)."""
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def run_cell(namespace, cell):
    """Runs one cell in ``namespace``; its outcome (status, value, error, traceback)."""
    _reap()
    sys.stdin = io.StringIO(cell.get("stdin") or "")
    _set_cell_cpu(float(cell.get("cpu_s") or 10))
    outcome = {"status": "ok", "value": None, "error": "", "traceback": ""}
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the runner's interrupt lands in the cell only
        body, last = _compile(cell.get("code") or "")
        exec(body, namespace)
        if last is not None:
            value = eval(last, namespace)
            if value is not None:
                namespace["_"] = value
                outcome["value"] = _cut(repr(value), VALUE_LIMIT)
    except SystemExit as exc:  # sys.exit() in a cell ends the cell, not the session
        if exc.code not in (None, 0):
            outcome.update(status="error", error=f"SystemExit: {exc.code}", traceback=_traceback(exc))
    except KeyboardInterrupt as exc:
        outcome.update(status="interrupted", error="KeyboardInterrupt", traceback=_traceback(exc))
    except CpuLimit:
        outcome.update(status="cpu_limit", error="the cell used its CPU time")
    except MemoryError as exc:
        outcome.update(status="memory_limit", error="MemoryError", traceback=_traceback(exc))
    except BaseException as exc:  # noqa: BLE001 - every error of the cell is its outcome
        try:
            outcome.update(status="error", error=_cut(f"{type(exc).__name__}: {exc}", 2000),
                           traceback=_traceback(exc))
        except BaseException:  # noqa: BLE001 - an exception whose str() raises
            outcome.update(status="error", error=type(exc).__name__)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a late interrupt must not end the kernel between cells
        _set_cell_cpu(3600 * 24)  # back to the session's hard limit, in effect, between cells
    return outcome


def main():
    """The kernel's loop: one cell per line on fd 0 until it ends, each outcome a line on fd 3."""
    cells = os.fdopen(_high(0), "rb", buffering=0)
    report = _high(3)
    null = os.open(os.devnull, os.O_RDONLY)
    if null != 0:
        os.dup2(null, 0)
        os.close(null)
    signal.signal(signal.SIGXCPU, _on_xcpu)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    sys.argv = [""]
    sys.path.insert(0, os.getcwd())  # the session's files import as modules, as in a notebook's directory

    def say(obj):
        data = (json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(report, data):]

    say({"ready": True, "pid": os.getpid()})
    buffered = b""
    while True:
        while b"\n" not in buffered:
            chunk = cells.read(1 << 20)
            if not chunk:
                return
            buffered += chunk
        line, buffered = buffered.split(b"\n", 1)
        try:
            cell = json.loads(line)
        except ValueError:
            continue
        outcome = run_cell(namespace, cell)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - a stream the cell replaced or closed
                pass
        outcome["cell"] = cell.get("id")
        say(outcome)
