"""The candidate process: the completion runs here, and only answers the judge's requests over its own two
pipes (``judge.py`` tells the whole split). How it starts (forked by the judge, or a step's standby become
it), how it answers, and how it and all it started are ended.

Standard library only.
"""

import _signal
import builtins
import fcntl
import gc
import os
import resource
import signal
import sys
import time
import traceback
import types

import procs
from judge import Candidate
from judge_values import dumps, encode, loads, type_name


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
        return {"t": "ref", "h": handle, "r": type_name(type(obj))}


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
    out = {"error": name, "detail": str.__str__(text)[:600] if type(text) is str else name}
    args = _plain_args(exc)
    if args is not None:
        out["args"] = args
    return out


def _plain_args(exc):
    """The exception's arguments when they are plain (str, bool, None, a small int, a float), read without its
    methods, so that the judge raises the error as the completion did (``err.exception.args[0] == "msg"``,
    Exercism's pattern); None otherwise."""
    try:
        args = BaseException.args.__get__(exc)
    except BaseException:  # noqa: BLE001
        return None
    if type(args) is not tuple or len(args) > 8:
        return None
    out = []
    for a in args:
        t = type(a)
        if a is None or t is bool or t is float or (t is int and -2 ** 63 <= a < 2 ** 63):
            out.append(a)
        elif t is str and len(a) <= 600:
            out.append(a)
        else:
            return None
    return out


# Arguments a call can change in place, whose new contents go back to the judge after the call (a list it sorted,
# a dict it filled), so that the tests' own objects change as they would with the function in their process.
MUTABLE_TAGS = ("list", "dict", "set")


def _changed(args, wires, refer):
    """{key: new wire data} of the plain mutable arguments (``MUTABLE_TAGS``) the call changed, by key ("0",
    "1", ... or a keyword)."""
    out = {}
    for key, arg in args.items():
        wire = wires.get(key)
        if type(wire) is dict and wire.get("t") in MUTABLE_TAGS and wire.get("sub") is None:
            try:
                now = encode(arg, refer)
            except Exception:  # noqa: BLE001 - not sendable now (nested too deeply): the judge sees the failure
                now = {"t": "unsendable"}
            if now != wire:
                out[key] = now
    return out


def _candidate_main(requests, answers):  # pragma: no cover - runs in the candidate process
    handles = _Handles()
    namespace = {"__name__": "solution", "__builtins__": builtins}
    reader = os.fdopen(requests, "rb")

    def answer(obj):
        data = (dumps(obj) + "\n").encode()
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
            if tag == "builtin":
                return getattr(builtins, wire["v"])
            raise ValueError(f"unknown value tag {tag!r}")
        return wire

    def state(obj):
        """What a value comparison of ``obj`` reads: its class and its instance data (fields, slots, an enum
        member's name), read without running its methods; classes, functions and modules compare by identity."""
        cls = type(obj)
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType)):
            return {"identity": True}
        data = {}
        try:
            data.update(object.__getattribute__(obj, "__dict__"))
        except (AttributeError, TypeError):
            pass
        for klass in type.__dict__["__mro__"].__get__(cls):
            slots = klass.__dict__.get("__slots__", ())
            for slot in ((slots,) if isinstance(slots, str) else slots):
                if slot not in ("__dict__", "__weakref__"):
                    try:
                        data[slot] = object.__getattribute__(obj, slot)
                    except AttributeError:
                        pass
        return {"cls": cls, "data": data}

    while True:
        line = reader.readline()
        if not line:
            os._exit(0)
        request = loads(line)
        op = request["op"]
        changed = {}
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
                    args = [value(a) for a in request["args"]]
                    kwargs = {k: value(v) for k, v in request["kwargs"].items()}
                    result = target(*args, **kwargs)
                    changed = {str(i): arg for i, arg in enumerate(args)}
                    changed.update(kwargs)
                    wires = {str(i): wire for i, wire in enumerate(request["args"])}
                    wires.update(request["kwargs"])
                    changed = _changed(changed, wires, handles.refer)
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
                elif op == "state":
                    result = state(target)
                elif op == "bool":
                    result = bool(target)
                elif op == "isinstance":
                    result = isinstance(value(request["item"]), value(request["cls"]))
                else:
                    raise ValueError(f"unknown request {op!r}")
            encoded = encode(result, handles.refer) if op != "load" else result
            answer({"value": encoded, "changed": changed} if changed else {"value": encoded})
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
        procs.reap_ended()
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
