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

Standard library only.
"""

import _signal
import builtins
import ctypes
import fcntl
import gc
import json
import os
import resource
import signal
import sys
import time
import traceback

PR_SET_DUMPABLE = 4
MAX_DEPTH = 100
# Modules the judge never imports for the completion's names (importing them does something).
NOT_IMPORTED = frozenset({"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "webbrowser"})
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)  # big ints cross the pipe as JSON numbers (decimal text)
_loads = json.loads
_dumps = json.dumps


def make_undumpable():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


# ---- values on the wire ------------------------------------------------------
# Raw JSON for exact None, bool, int, float and str; a tagged dict for everything else:
# {"t": list|tuple|set|frozenset|dict|bytes|complex|ref, "v": ..., "sub": <subclass name>}.

_CONTAINERS = ((list, "list"), (tuple, "tuple"), (set, "set"), (frozenset, "frozenset"))
_SCALARS = ((int, "int"), (float, "float"), (str, "str"), (bytes, "bytes"), (complex, "complex"))


def encode(value, refer, depth=0):
    """``value`` as wire data, read with the built-in types' own methods; other objects go to ``refer``."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deeply")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return int.__index__(value)
    if t is float:
        return float.__float__(value)
    for base, tag in _SCALARS:
        if isinstance(value, base):
            if base is int:
                raw = int(int.__repr__(value))
            elif base is float:
                raw = float(float.__repr__(value))
            elif base is str:
                raw = str.__str__(value)
            elif base is bytes:
                raw = bytes.hex(value)
            else:
                raw = [complex.real.__get__(value), complex.imag.__get__(value)]
            out = {"t": tag, "v": raw}
            if t is not base:
                out["sub"] = _type_name(t)
            return out
    for base, tag in _CONTAINERS:
        if isinstance(value, base):
            items = list(base.__iter__(value))
            out = {"t": tag, "v": [encode(v, refer, depth + 1) for v in items]}
            if t is not base:
                out["sub"] = _type_name(t)
            return out
    if isinstance(value, dict):
        out = {"t": "dict", "v": [[encode(k, refer, depth + 1), encode(v, refer, depth + 1)]
                                  for k, v in dict.items(value)]}
        if t is not dict:
            out["sub"] = _type_name(t)
        return out
    return refer(value)


def _type_name(t):
    try:
        name = type.__dict__["__name__"].__get__(t)
        return str.__str__(name) if isinstance(name, str) else "?"
    except BaseException:  # noqa: BLE001 - whatever the candidate's metaclass does
        return "?"


# ---- the candidate process ---------------------------------------------------

class _Handles:
    def __init__(self):
        self.objects = {}
        self.ids = {}

    def refer(self, obj):
        key = id(obj)
        handle = self.ids.get(key)
        if handle is None:
            handle = len(self.objects) + 1
            self.objects[handle] = obj
            self.ids[key] = handle
        if type(obj) is type(sys):
            try:
                mod = str.__str__(obj.__name__)
            except BaseException:  # noqa: BLE001
                mod = ""
            return {"t": "module", "v": mod, "h": handle}
        return {"t": "ref", "h": handle, "r": _type_name(type(obj))}


def _exception(exc):
    try:
        name = type(exc).__name__
        name = name if type(name) is str else "Exception"
    except BaseException:  # noqa: BLE001
        name = "Exception"
    try:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<")]
        if frames:
            text += f" (at {frames[-1].filename} line {frames[-1].lineno})"
    except BaseException:  # noqa: BLE001 - a hostile __str__ is the candidate's problem
        text = name
    return {"error": name, "detail": str.__str__(text)[:600] if type(text) is str else name}


def _candidate_main(requests, answers):  # pragma: no cover - runs in the candidate process
    handles = _Handles()
    namespace = {"__name__": "solution", "__builtins__": builtins}
    reader = os.fdopen(requests, "rb")

    def answer(obj):
        data = (_dumps(obj) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(answers, view):]

    def value(wire):
        if type(wire) is dict:
            tag = wire.get("t")
            if tag == "ref":
                return handles.objects[wire["h"]]
            items = [value(v) for v in wire.get("v", ())]
            if tag == "list":
                return items
            if tag == "tuple":
                return tuple(items)
            if tag == "set":
                return set(items)
            if tag == "frozenset":
                return frozenset(items)
            if tag == "dict":
                return {value(k): value(v) for k, v in wire["v"]}
            if tag == "bytes":
                return bytes.fromhex(wire["v"])
            if tag == "complex":
                return complex(*wire["v"])
            if tag in ("int", "float", "str", "bool"):
                return wire["v"]
            raise ValueError(f"unknown value tag {tag!r}")
        return wire

    while True:
        line = reader.readline()
        if not line:
            os._exit(0)
        request = _loads(line)
        op = request["op"]
        try:
            if op == "load":
                filename = request.get("file") or "<solution>"
                try:
                    setup = compile(request["setup"], "<setup>", "exec")
                    solution = compile(request["solution"], filename, "exec")
                except (SyntaxError, ValueError) as exc:
                    answer({"compile_error": _exception(exc)["detail"]})
                    continue
                if request.get("module"):  # the pytest kind: the completion is a module beside the tests
                    module = type(sys)(request["module"])
                    module.__file__ = os.path.abspath(filename)
                    namespace = module.__dict__
                    namespace["__builtins__"] = builtins
                    sys.modules[request["module"]] = module
                    sys.path.insert(0, os.getcwd())
                exec(setup, namespace)
                exec(solution, namespace)
                names = {}
                for name in request["names"]:
                    if name in namespace:
                        names[name] = encode(namespace[name], handles.refer)
                result = names
            else:
                target = handles.objects[request["h"]] if "h" in request else None
                if op == "name":
                    if request["name"] not in namespace:
                        raise AttributeError(f"the completion does not define {request['name']!r}")
                    result = namespace[request["name"]]
                elif op == "call":
                    result = target(*[value(a) for a in request["args"]],
                                    **{k: value(v) for k, v in request["kwargs"].items()})
                elif op == "getattr":
                    result = getattr(target, request["name"])
                elif op == "setattr":
                    setattr(target, request["name"], value(request["value"]))
                    result = None
                elif op == "len":
                    result = len(target)
                elif op == "list":
                    result = list(target)
                elif op == "getitem":
                    result = target[value(request["key"])]
                elif op == "setitem":
                    target[value(request["key"])] = value(request["value"])
                    result = None
                elif op == "contains":
                    result = value(request["item"]) in target
                    result = result if type(result) is bool else bool(result)
                else:
                    raise ValueError(f"unknown request {op!r}")
            encoded = encode(result, handles.refer) if op != "load" else result
            answer({"value": encoded})
        except BaseException as exc:  # noqa: BLE001 - the candidate's failure is data
            try:
                answer(_exception(exc))
            except BaseException:  # noqa: BLE001
                os._exit(70)


def serve_candidate():  # pragma: no cover - runs in the candidate process
    """The candidate process of a step the runner judges itself (a step's standby become the candidate):
    requests on stdin, answers on the report pipe; the completion's own stdin is /dev/null, as in
    ``start_candidate``'s."""
    try:
        answers = int(os.environ["RLVR_REPORT_FD"])
        os.dup2(0, 4)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for name in [k for k in os.environ if k.startswith("RLVR_")]:
            os.environ.pop(name, None)
    except BaseException:  # noqa: BLE001
        os._exit(70)
    try:
        _candidate_main(4, answers)
    finally:
        os._exit(0)


# Where a step's processes may write (the root is read-only in every backend): the scratch tmpfs and the work dir.
WRITABLE_ROOTS = ("/tmp", "/dev/shm", "/var/tmp")


class SealedImports:
    """The judge's imports, once the completion can have written files: never from a place it can write.

    The first finder of ``sys.meta_path``: it asks the others, and refuses a module (or package) found in a
    writable place (the work dir, the scratch dirs), so a module the completion plants there (``pprint.py``,
    imported later by pytest's assertion messages, or a standard module the tests use) never runs in the
    judge. Modules of the work dir that existed before the completion ran (the spec's own helpers) are served
    from the copy ``snapshot`` took then (``{real path: source}``), never from the disk. ``sys.path`` loses
    its writable entries too (``seal_imports``)."""

    def __init__(self, roots, snapshot, dirs):
        import importlib.util  # now: an import inside find_spec would come back to find_spec

        self.spec_from_loader = importlib.util.spec_from_loader
        self.roots = tuple(roots)
        self.snapshot = snapshot or {}
        self.dirs = tuple(dirs)  # the writable sys.path entries taken out: where the snapshot's modules were

    def writable(self, path):
        real = os.path.realpath(path or ".")
        return any(real == root or real.startswith(root + os.sep) for root in self.roots)

    def find_spec(self, name, path=None, target=None):
        last = name.rpartition(".")[2]
        for folder in (path if path is not None else self.dirs):
            if not self.writable(folder):
                continue
            for file, package in ((os.path.join(folder, last + ".py"), False),
                                  (os.path.join(folder, last, "__init__.py"), True)):
                real = os.path.realpath(file)
                if real in self.snapshot:
                    spec = self.spec_from_loader(name, _SnapshotLoader(self.snapshot[real], real),
                                                           origin=real, is_package=package)
                    if package:
                        spec.submodule_search_locations = [os.path.dirname(real)]
                    spec.has_location = True
                    return spec
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is None:
                continue
            places = [spec.origin] if spec.origin and spec.has_location else []
            places += list(spec.submodule_search_locations or ())
            for place in places:
                if self.writable(place):
                    raise ImportError(f"module {name!r} is not imported from {place}: a place the completion "
                                      "can write", name=name)
            return spec
        return None


class _SnapshotLoader:
    def __init__(self, source, path):
        self.source, self.path = source, path

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__file__ = self.path
        exec(compile(self.source, self.path, "exec"), module.__dict__)


def snapshot_workdir(skip=(), max_files=2000, max_bytes=32 << 20):
    """The Python sources under the work dir now, before the completion runs: ``{real path: source}``."""
    out, total = {}, 0
    skip = {os.path.realpath(p) for p in skip}
    for folder, dirs, files in os.walk(os.getcwd()):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for file in files:
            real = os.path.realpath(os.path.join(folder, file))
            if not file.endswith(".py") or real in skip or len(out) >= max_files:
                continue
            try:
                with open(real, "rb") as fh:
                    data = fh.read(max_bytes - total + 1)
            except OSError:
                continue
            total += len(data)
            if total > max_bytes:
                return out
            out[real] = data
    return out


def seal_imports(snapshot=None):
    """From now on the judge imports nothing from a place the completion can write (``SealedImports``)."""
    roots = {os.path.realpath(r) for r in (*WRITABLE_ROOTS, os.getcwd())}
    roots.discard("/")
    sealed = SealedImports(sorted(roots), snapshot, ())
    taken = [p for p in sys.path if sealed.writable(p)]
    sys.path[:] = [p for p in sys.path if not sealed.writable(p)]
    sealed.dirs = tuple(taken)
    sys.path_importer_cache.clear()
    sys.meta_path.insert(0, sealed)
    return sealed


def end_other_processes(give_up_s=2.0):
    """Kills every process of the sandbox but the runner (PID 1), this process's parent (the zygote, or the
    runner) and itself: the candidate process and all it started, wherever they were reparented. The pytest
    judge calls it before it writes its report file (the work dir is the candidate's too: a process of the
    candidate's left alive could rewrite the report between its write and its collection, with the judge's own
    nonce read from it). Only inside a sandbox (PID 1 is the runner); True when none is left."""
    try:
        with open("/proc/1/cmdline", "rb") as fh:
            if b"runner.py" not in fh.read():
                return False
    except OSError:
        return False
    keep, uid = {1, os.getpid(), os.getppid()}, os.getuid()
    deadline = time.monotonic() + give_up_s
    while True:
        left = 0
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in keep:
                continue
            try:
                if os.stat(f"/proc/{name}").st_uid != uid:
                    continue
                with open(f"/proc/{name}/stat", "rb") as fh:
                    if fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                        continue  # dead already: its parent reaps it
                os.kill(int(name), signal.SIGKILL)
                left += 1
            except (OSError, IndexError):
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)


def start_candidate():
    """Forks the candidate process now (before any job data is read); the judge's end of its pipes."""
    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    gc.freeze()  # the collector then leaves the inherited objects alone: fewer copy-on-write faults in both
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the candidate process
        try:
            # Its pipe ends onto fds 3 and 4 (by way of copies above any of them), then every other
            # descriptor closed: the report pipe, the judge's stdin and its ends of these pipes are gone.
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in (req_r, ans_w)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)
            os.closerange(5, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
            for name in [k for k in os.environ if k.startswith("RLVR_")]:
                os.environ.pop(name, None)
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)  # (no enum conversions: see runner.py)
        except BaseException:  # noqa: BLE001
            os._exit(70)
        try:
            _candidate_main(3, 4)
        finally:
            os._exit(0)
    os.close(req_r)
    os.close(ans_w)
    return Candidate(pid, req_w, ans_r)


# ---- the judge's side --------------------------------------------------------

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
    loads = staticmethod(_loads)  # an answer line as data

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
            line = self._exchange((_dumps(request) + "\n").encode())
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
            try:
                error = cls(detail) if cls is not None else CandidateError(
                    detail if detail.startswith(name) else f"{name}: {detail}")
            except Exception:  # noqa: BLE001 - a built-in error that takes other arguments
                error = CandidateError(f"{name}: {detail}")
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


class Remote:
    """An object of the completion's, living in the candidate process; the judge only holds its handle.

    Calls, attributes, ``len``, iteration and indexing are asked of the candidate
    (they are its class's behaviour, which is what the tests test). Nothing else is
    decided by it, nor by the handle: a handle never has more power than a built-in
    value the candidate could have returned instead. It is unequal to every judge
    value; equality of two handles and truth are refused (``f(a) == f(b)`` of one
    object would otherwise hold by identity, whatever the object is), and ``x in obj``
    is the judge's own comparison of ``x`` with the items the object's iteration
    gives (as for a list of them), not the candidate's
    ``__contains__`` (which could hold for everything). Hashing is the handle's.
    """

    __slots__ = ("_candidate", "_handle", "_type")

    def __init__(self, candidate, handle, type_name):
        object.__setattr__(self, "_candidate", candidate)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_type", type_name)

    def _ask(self, op, **request):
        return object.__getattribute__(self, "_candidate").call(op, h=object.__getattribute__(self, "_handle"),
                                                                **request)

    def _wire(self, value):
        return object.__getattribute__(self, "_candidate").wire(value)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._ask("getattr", name=name)

    def __setattr__(self, name, value):
        self._ask("setattr", name=name, value=self._wire(value))

    def __call__(self, *args, **kwargs):
        return self._ask("call", args=[self._wire(a) for a in args],
                         kwargs={str(k): self._wire(v) for k, v in kwargs.items()})

    def __len__(self):
        n = self._ask("len")
        if type(n) is not int:
            raise TypeError("len() of a completion object did not give an int")
        return n

    def __iter__(self):
        items = self._ask("list")
        if type(items) is not list:
            raise TypeError("iterating a completion object did not give a list")
        return iter(items)

    def __getitem__(self, key):
        return self._ask("getitem", key=self._wire(key))

    def __setitem__(self, key, value):
        self._ask("setitem", key=self._wire(key), value=self._wire(value))

    def __contains__(self, item):
        if isinstance(item, Remote):
            return any(element is item for element in self.__iter__())
        return any(element is item or (not isinstance(element, Remote) and element == item)
                   for element in self.__iter__())

    def __eq__(self, other):
        if not isinstance(other, Remote):
            return False  # as a built-in value of another type would not be
        raise TypeError(f"equality of {object.__getattribute__(self, '_type')} objects of the completion's is "
                        "not decided by the tests' judge (compare their attributes or their items)")

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash((Remote, object.__getattribute__(self, "_handle")))

    def __bool__(self):
        raise TypeError(f"the truth of a {object.__getattribute__(self, '_type')} object of the completion's "
                        "is not decided by the tests' judge")

    def __repr__(self):
        return f"<{object.__getattribute__(self, '_type')} object of the completion's>"


def same(left, right):
    """Equality with exact types at every position (``exact_types``): 1 is not 1.0 nor True, a subclass is not
    its base; in a list, tuple, dict (keys too: {1: x} is not {True: x} nor {1.0: x}), set or frozenset every
    element's type counts, and the same in the marker subclasses of a candidate's subclassed containers."""
    if type(left) is not type(right):
        return False
    if isinstance(left, (list, tuple)):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict):
        if len(left) != len(right):
            return False
        keys = {k: k for k in dict.keys(right)}  # right's own key objects, found by equality with left's
        for k, v in dict.items(left):
            other = keys.get(k, _MISSING_KEY)
            if other is _MISSING_KEY or not same(k, other) or not same(v, dict.__getitem__(right, other)):
                return False
        return True
    if isinstance(left, (set, frozenset)):
        if len(left) != len(right):
            return False
        items = {b: b for b in right}
        return all(same(a, items.get(a, _MISSING_KEY)) for a in left)
    return left == right


_MISSING_KEY = object()


def same_in(item, container):
    """``item in container`` with ``same`` for the elements (``exact_types``): True is not in [1, 2], 1.0 not
    in {1: x}; a substring must be of the string's own type; other containers (the completion's objects,
    ranges) answer as ``in`` does."""
    if isinstance(container, (list, tuple, set, frozenset)):
        return any(same(item, element) for element in container)
    if isinstance(container, dict):
        return any(same(item, key) for key in dict.keys(container))
    if isinstance(container, (str, bytes)):
        return type(item) is type(container) and item in container
    return item in container


class SolutionModule(type(sys)):
    """The completion's module as the pytest judge sees it: each attribute a ``LazyName``.

    Nothing of the completion runs until a test first uses one of its names, so by then
    pytest has imported every test module: the completion cannot rewrite a test file
    before it is read.
    """

    def __init__(self, name, candidate, path):
        super().__init__(name)
        self.__file__ = os.path.abspath(path)
        self._rlvr = {"candidate": candidate, "path": path, "loaded": None, "names": {}}

    def __getattr__(self, name):
        if name == "__all__":  # ``from solution import *``: the public names its source defines, not run
            return _public_names(self.__dict__["_rlvr"]["path"])
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        names = self.__dict__["_rlvr"]["names"]
        if name not in names:
            names[name] = LazyName(self, name)
        return names[name]

    def _rlvr_value(self, name):
        state = self.__dict__["_rlvr"]
        candidate = state["candidate"]
        if state["loaded"] is None:
            with open(state["path"], encoding="utf-8") as fh:
                source = fh.read()
            _, error = candidate.load("", source, (), module=self.__name__, file=state["path"])
            state["loaded"] = error or ""
        if state["loaded"]:
            raise ImportError(f"the completion does not compile: {state['loaded']}")
        return candidate.call("name", name=name)


def _public_names(path):
    """What ``from solution import *`` takes, read from the completion's source without running it: its literal
    ``__all__``, else the top-level names it defines, assigns or imports that do not start with ``_``."""
    import ast

    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
                if isinstance(target, ast.Name) and target.id == "__all__":
                    try:
                        declared = ast.literal_eval(node.value)
                        if all(isinstance(n, str) for n in declared):
                            return list(declared)
                    except (ValueError, TypeError, SyntaxError):
                        pass
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    return sorted({n for n in names if not n.startswith("_")})


class LazyName:
    """A name of the completion's module, asked of the candidate process on first use."""

    __slots__ = ("_done", "_module", "_name", "_value")

    def __init__(self, module, name):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_done", False)

    def _rlvr_resolve(self):
        if not object.__getattribute__(self, "_done"):
            value = object.__getattribute__(self, "_module")._rlvr_value(object.__getattribute__(self, "_name"))
            object.__setattr__(self, "_value", value)
            object.__setattr__(self, "_done", True)
        return object.__getattribute__(self, "_value")

    def __getattr__(self, name):
        return getattr(self._rlvr_resolve(), name)

    def __setattr__(self, name, value):
        setattr(self._rlvr_resolve(), name, value)

    def __call__(self, *args, **kwargs):
        return self._rlvr_resolve()(*args, **kwargs)

    def __len__(self):
        return len(self._rlvr_resolve())

    def __iter__(self):
        return iter(self._rlvr_resolve())

    def __getitem__(self, key):
        return self._rlvr_resolve()[key]

    def __contains__(self, item):
        return item in self._rlvr_resolve()

    def __eq__(self, other):
        return self._rlvr_resolve() == (other._rlvr_resolve() if isinstance(other, LazyName) else other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self._rlvr_resolve())

    def __bool__(self):
        return bool(self._rlvr_resolve())

    def __repr__(self):
        return repr(self._rlvr_resolve())
