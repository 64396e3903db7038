"""The judge/candidate split of assert-style tests: the candidate's code never runs in the judge.

The judge process (the step's process: it holds the job, the nonce and the
report pipe) forks the candidate process *before* it reads the job, so the
candidate's memory never held the tests, the expected values or the nonce. The
candidate process closes the report pipe and the judge's stdin, runs the
completion, and then only answers requests over its own two pipes: call this
function, get this attribute, the length of this object. Every value crosses the
pipe as tagged JSON data, encoded with the built-in types' own methods; the judge
turns it back into plain built-in values (or ``Remote`` handles for the
candidate's own objects) and evaluates every assert itself. So no ``__eq__``,
``__bool__`` or ``__repr__`` of the candidate's runs when the judge decides, and
patching builtins, the harness, tracing hooks or exiting early only changes the
candidate's own process. The judge is non-dumpable: the candidate (same uid) can
neither ptrace it nor open its ``/proc/<pid>/fd`` or memory. Killing the judge
loses the end event, which fails the tests.

This module is the judge's side: its handle on the candidate process (``Candidate``)
and the errors it raises. The rest: ``judge_values.py`` (values on the pipe),
``candidate_process.py`` (the candidate process), ``remote_objects.py`` (the
handles on the completion's objects), ``exact_types.py`` (the ``exact_types``
comparisons), ``sealed_workdir.py`` (the work dir's snapshots and the judge's
sealed imports), ``remote_module.py`` (the pytest judge's completion module).

Standard library only.
"""

import builtins
import os
import signal
import sys

from judge_values import MAX_DEPTH, dumps, encode, loads
from remote_module import LazyName
from remote_objects import Remote

# Modules the judge never imports for the completion's names (importing them does something).
NOT_IMPORTED = frozenset({"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "webbrowser"})


class Interrupted(BaseException):
    """The judge must stop now (the step's time or output is up); never a test's failure."""


class CandidateGone(Exception):
    """The candidate process ended (or broke its pipe) before it answered."""


class CandidateError(Exception):
    """An exception of a type the candidate defined (or a BaseException it raised) in its code."""


# A candidate's exception crosses as the built-in type of that name, so tests can catch it, except the types that
# end the judge's own iterations when they pass through them: a StopIteration out of a call inside ``map``,
# ``filter``, ``zip``, ``iter(f, x)`` (or a StopAsyncIteration in async iteration) would end the loop early and
# the asserts never made would count as held. Those arrive as CandidateError: the test fails.
_CONTROL_FLOW = (StopIteration, StopAsyncIteration)
_BUILTIN_ERRORS = {name: obj for name, obj in vars(builtins).items()
                   if isinstance(obj, type) and issubclass(obj, Exception) and not issubclass(obj, _CONTROL_FLOW)}


def _plain_args(args):
    """An error's arguments as the candidate sent them (``candidate_process._plain_args``), when they are plain
    values (a built-in error raised with them has no more power than one raised with its message); else None."""
    if type(args) is not list or len(args) > 8:
        return None
    if not all(a is None or type(a) in (str, bool, int, float) for a in args):
        return None
    return args


def end_detail(code):
    """Why a candidate process that ended with ``code`` (an exit code, or minus the signal) stopped answering."""
    if code == -signal.SIGKILL:
        return MemoryError("the completion's process was killed (SIGKILL: the memory limit)")
    if code == -signal.SIGXCPU:
        return CandidateGone("the completion's process hit its CPU time limit (SIGXCPU)")
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return CandidateGone(f"the completion's process was killed by {name}")
    return CandidateGone(f"the completion's process exited (exit code {code}) before the tests ended")


class Candidate:
    loads = staticmethod(loads)  # an answer line as data

    def __init__(self, pid, requests, answers):
        self.pid = pid
        self.requests = requests
        self.answers = os.fdopen(answers, "rb")
        self.gone = None
        self.remotes = {}

    def ask(self, **request):
        if self.gone is not None:
            raise type(self.gone)(*self.gone.args)
        try:
            line = self._exchange((dumps(request) + "\n").encode())
        except OSError:
            line = b""
        if not line:
            self.gone = self._end_detail()
            raise self.gone
        try:
            answer = self.loads(line)
        except ValueError:
            self.gone = CandidateGone("the completion's process broke its answer pipe")
            raise self.gone from None
        if type(answer) is not dict:
            raise CandidateGone("the completion's process sent an unreadable answer")
        if "error" in answer:
            name, detail = str(answer["error"]), str(answer.get("detail", ""))
            cls = _BUILTIN_ERRORS.get(name)
            args = _plain_args(answer.get("args"))
            try:
                error = (cls(*args) if args is not None else cls(detail)) if cls is not None else CandidateError(
                    detail if detail.startswith(name) else f"{name}: {detail}")
            except Exception:  # noqa: BLE001 - a built-in error that takes other arguments
                error = CandidateError(f"{name}: {detail}")
            where = detail.rfind(" (at <")
            if args is not None and where >= 0 and isinstance(error, Exception):
                error.add_note(detail[where + 1:])  # where in the completion (its message is the args)
            raise error
        return answer

    def _exchange(self, data):
        """Sends one request line; the answer line (empty when the candidate is gone)."""
        view = memoryview(data)
        while view:
            view = view[os.write(self.requests, view):]
        return self.answers.readline()

    def _end_detail(self):
        """Why the candidate stopped answering, as the exception each later request raises."""
        try:
            _, status = os.waitpid(self.pid, 0)
            code = os.waitstatus_to_exitcode(status)
        except OSError:
            return CandidateGone("the completion's process ended")
        return end_detail(code)

    def value(self, wire, depth=0):
        """Wire data as plain built-in values (subclass values as the judge's own marker subclasses)."""
        if depth > MAX_DEPTH + 1:
            raise ValueError("value nested too deeply")
        if type(wire) is not dict:
            if wire is None or type(wire) in (bool, int, float, str):
                return wire
            raise CandidateGone("the completion's process sent an unreadable value")
        tag = wire.get("t")
        if tag == "ref":
            handle = wire.get("h")
            if type(handle) is not int:
                raise CandidateGone("the completion's process sent an unreadable handle")
            remote = self.remotes.get(handle)
            if remote is None:
                remote = self.remotes[handle] = Remote(self, handle, str(wire.get("r", "object")))
            return remote
        if tag == "builtin":  # never sent by the candidate's encode; a forged one gets a built-in type at most
            name = wire.get("v")
            if type(name) is not str or name not in PASSABLE_BUILTINS or not isinstance(getattr(builtins, name),
                                                                                         type):
                raise CandidateGone("the completion's process sent an unknown built-in")
            return getattr(builtins, name)
        if tag == "module":
            name = str(wire.get("v", ""))
            top = name.split(".")[0]
            if top in getattr(sys, "stdlib_module_names", ()) and top not in NOT_IMPORTED and not top.startswith("_"):
                import importlib

                try:
                    return importlib.import_module(name)
                except ImportError:
                    pass
            return self.value({"t": "ref", "h": wire["h"], "r": "module"})
        raw = wire.get("v")
        if tag in ("list", "tuple", "set", "frozenset"):
            items = [self.value(v, depth + 1) for v in raw]
            out = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        elif tag == "dict":
            out = {self.value(k, depth + 1): self.value(v, depth + 1) for k, v in raw}
        elif tag == "bytes":
            out = bytes.fromhex(raw)
        elif tag == "complex":
            out = complex(float(raw[0]), float(raw[1]))
        elif tag in ("int", "float", "str", "bool"):
            # Only the JSON type ``encode`` writes: a tagged string of a million digits is never converted
            # (int(str) takes time quadratic in its length, and the runner cannot be killed while it runs).
            if type(raw) not in {"int": (int,), "float": (float, int), "str": (str,), "bool": (bool,)}[tag]:
                raise CandidateGone(f"the completion's process sent an unreadable {tag} value")
            out = {"int": int, "float": float, "str": str, "bool": bool}[tag](raw)
        else:
            raise CandidateGone(f"the completion's process sent an unknown value tag {tag!r}")
        if "sub" in wire:
            out = _SUBCLASS[type(out)](out)
        return out

    def wire(self, value, depth=0):
        """A judge value as wire data for the candidate (its own objects by handle)."""
        def refer(obj):
            if isinstance(obj, LazyName):
                obj = obj._rlvr_resolve()
                if not isinstance(obj, Remote):
                    return encode(obj, refer)
            if isinstance(obj, Remote) and object.__getattribute__(obj, "_candidate") is self:
                return {"t": "ref", "h": object.__getattribute__(obj, "_handle")}
            name = _builtin_name(obj)
            if name is not None:  # int, str, ... (MBPP 533 passes a type): by name, the candidate's own
                return {"t": "builtin", "v": name}
            raise TypeError(f"a {type(obj).__name__} cannot be passed to the completion's code "
                            "(only built-in values and the completion's own objects can)")

        return encode(value, refer)

    def call(self, op, **request):
        return self.value(self.ask(op=op, **request)["value"])

    def load(self, setup, solution, names, module="", file=""):
        answer = self.ask(op="load", setup=setup, solution=solution, names=sorted(names), module=module, file=file)
        if "compile_error" in answer:
            return None, str(answer["compile_error"])
        return {name: self.value(wire) for name, wire in answer["value"].items()}, None

    def close(self):
        """Kills the candidate process (its exit closes its ends of the step's pipes); the runner reaps it."""
        try:
            os.close(self.requests)
        except OSError:
            pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass


class _SubInt(int):
    pass


class _SubFloat(float):
    pass


class _SubStr(str):
    pass


class _SubBytes(bytes):
    pass


class _SubComplex(complex):
    pass


class _SubList(list):
    pass


class _SubTuple(tuple):
    pass


class _SubSet(set):
    pass


class _SubFrozenset(frozenset):
    pass


class _SubDict(dict):
    pass


_SUBCLASS = {int: _SubInt, bool: _SubInt, float: _SubFloat, str: _SubStr, bytes: _SubBytes, complex: _SubComplex,
             list: _SubList, tuple: _SubTuple, set: _SubSet, frozenset: _SubFrozenset, dict: _SubDict}


# Built-in types and functions that cross the pipe by name (a test passes ``int`` to the completion's function).
PASSABLE_BUILTINS = frozenset({"int", "float", "str", "bool", "bytes", "complex", "list", "tuple", "dict", "set",
                               "frozenset", "object", "type", "len", "abs", "min", "max", "sum", "sorted", "reversed",
                               "print", "range"})


def _builtin_name(obj):
    for name in PASSABLE_BUILTINS:
        if obj is getattr(builtins, name):
            return name
    return None

