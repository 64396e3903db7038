"""A stdio Python program's host: the program compiled once per job, each case a fork of it.

A stdio job in Python has a "compile" step (``harness: python_program``) and one
step per case (``harness: python_case``). Where the runner has a zygote, the
compile step's standby becomes the job's *program host* (``main``, in the
sandbox): it compiles ``solution.py`` to bytecode, once, with the step's limits,
says so, and then only forks: for each case the runner asks for a process and
gets its stdin, stdout and stderr pipes (SCM_RIGHTS); the case's process is a
fork of the host that runs the compiled program as ``__main__`` with that
case's stdin, its own limits, and the environment, ``sys`` state and exit
rules of ``python3 -s solution.py``. The runner writes the case's stdin and
reads its output within the case's deadline and output cap (``CaseProc`` and
``stepio.StepIO``, as for any step); the expected output never enters the
sandbox. When the case's process ends (or the runner has it killed), the host
kills every process the case left (it is their subreaper) before it answers,
so the next case starts from a fresh fork of a process that never ran any of
the candidate's code. The host holds no case's stdin.

Without a zygote (a one-job runner), or once the host is gone (a case killed
it: same uid), the steps run their ``argv``: a fresh ``python3`` per case.

Standard library only.
"""

# The C module, not signal.py (see procs.py).
import _signal as signal
import atexit
import builtins
import gc
import io
import os
import resource
import select
import socket
import sys
import time

import procs

# The runner's modules: a case's program sees none of them (``import judge`` fails there as in a fresh python3).
RUNNER_MODULES = ("procs", "stepio", "zygote", "judge", "judge_values", "candidate_process", "remote_objects",
                  "exact_types", "sealed_workdir", "remote_module", "assert_harness", "io_harness", "pyprog",
                  "rlvr_pytest", "run_pytest", "runner")
ANSWER_TIMEOUT_S = 5.0
DEFAULT_INT_MAX_STR_DIGITS = 4300  # a fresh interpreter's (the judge lifts it in the zygote; a case gets it back)


# ---- the runner's side ------------------------------------------------------------------------------------

class ProgramHost:
    """The runner's handle on a job's program host (a standby that became ``main``)."""

    def __init__(self, standby):
        self.standby = standby
        self.channel = standby.report_r  # the host's answers (a socket: descriptors come with them)
        self.gone = False
        self.unclean = False  # a case left processes that would not go: the sandbox is reported dirty
        self.current = None
        self._pending = b""

    def fileno(self):
        return self.channel

    def fork_case(self, step, job):
        """A case's process (``CaseProc``) with the step's limits; None when the host is gone."""
        numbers = "%d %d %d %d" % procs.limit_numbers(step, job)
        if not self._send(f"F {numbers}\n".encode()):
            return None
        give_up = time.monotonic() + ANSWER_TIMEOUT_S
        while not self.gone:
            message, fds = self._next(max(0.0, give_up - time.monotonic()))
            if message is None:
                break
            if message[0] == b"P" and len(fds) == 3:
                self.current = CaseProc(self, int(message[1]), fds)
                return self.current
            for fd in fds:
                os.close(fd)
        self.lost()
        return None

    def read_events(self):
        """The host's messages that are there (the case's exit), without waiting."""
        while not self.gone and select.select([self.channel], [], [], 0)[0]:
            message, fds = self._next(0, waiting=False)
            for fd in fds:
                os.close(fd)
            if message is None:
                return

    def end_case(self):
        """After a case: its process and every process it left killed and reaped (the host's answer waited for)."""
        case = self.current
        if case is None or self.gone:
            return
        if case.returncode is None:
            self._send(b"K\n")
            give_up = time.monotonic() + ANSWER_TIMEOUT_S
            while not self.gone and case.returncode is None:
                message, fds = self._next(max(0.0, give_up - time.monotonic()))
                for fd in fds:
                    os.close(fd)
                if message is None:
                    break
        if case.returncode is None:
            self.lost()
        self.current = None

    def close(self):
        """Ends the host: the zygote kills it and everything else, then forks the next standby."""
        self.gone = True
        self.standby.close()
        self.standby.kill_tree()

    def lost(self):
        """The host died or does not answer (a case killed or stopped it): everything but the runner and the zygote
        is killed now; the steps left run as fresh interpreters."""
        if not self.gone:
            self.close()
        if self.current is not None and self.current.returncode is None:
            self.current.host_lost = True

    def _send(self, data):
        try:
            os.write(self.standby.stdin.fileno(), data)
            return True
        except OSError:
            self.lost()
            return False

    def _next(self, timeout, waiting=True):
        """The host's next message (its words, split) and the descriptors it carried; (None, []) when it is gone
        or, ``waiting`` for an answer, silent past ``timeout`` (then it is lost; not ``waiting``, a message not yet
        whole stays for the next call)."""
        while b"\n" not in self._pending:
            ready = (procs.await_answer(self.channel, self.standby.pid, timeout) if waiting  # (late under load:
                     else select.select([self.channel], [], [], timeout)[0])  # still waited for while it runs)
            if not ready:
                if waiting:
                    self.lost()
                return None, []
            try:
                data, fds, _, _ = socket.recv_fds(_ChannelView(self.channel), 4096, 4)
            except OSError:
                data, fds = b"", []
            if not data:
                for fd in fds:
                    os.close(fd)
                self.lost()
                return None, []
            self._pending += data
            if fds:
                line, _, self._pending = self._pending.partition(b"\n")
                return line.split(), fds
        line, _, self._pending = self._pending.partition(b"\n")
        words = line.split()
        if words and words[0] == b"X" and self.current is not None and int(words[1]) == self.current.pid:
            self.current.returncode = int(words[2])
            self.current.unclean = words[3:4] == [b"0"]
        return words, []


class _ChannelView:
    """Lets ``socket.recv_fds`` read a raw descriptor without taking it over (closing it when collected)."""

    def __init__(self, fd):
        self._fd = fd

    def recvmsg(self, bufsize, ancbufsize, flags=0):
        sock = socket.socket(fileno=self._fd)
        try:
            return sock.recvmsg(bufsize, ancbufsize, flags)
        finally:
            sock.detach()


class CaseProc:
    """One case's process as ``stepio.StepIO`` sees a step's process: its pipes, its exit (a message of the
    host's, on ``exit_fd``), ``poll``."""

    def __init__(self, host, pid, fds):
        stdin, stdout, stderr = fds
        self.host = self.zygote = host  # (StepIO asks ``proc.zygote.gone``)
        self.pid = pid
        self.returncode = None
        self.unclean = False
        self.host_lost = False
        self.stdin = os.fdopen(stdin, "wb", buffering=0)
        self.stdout = os.fdopen(stdout, "rb", buffering=0)
        self.stderr = os.fdopen(stderr, "rb", buffering=0)
        self.exit_fd = host.channel

    def poll(self):
        if self.returncode is None and not self.host.gone:
            self.host.read_events()
        return self.returncode

    def close(self):
        procs.close_all(self.stdin, self.stdout, self.stderr)


# ---- the host (in the sandbox, a standby become it) -------------------------------------------------------

def main():  # pragma: no cover - runs in the program host
    """Compiles ``solution.py`` of the work dir (exit 1 with Python's own message when it does not compile), says
    "R", then forks a case's process per "F" order until its stdin ends."""
    workdir = os.getcwd()
    path = os.path.join(workdir, "solution.py")
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(DEFAULT_INT_MAX_STR_DIGITS)  # before compiling: a long literal fails as in python3
    try:
        with open(path, "rb") as fh:
            source = fh.read()
        code = compile(source, path, "exec", dont_inherit=True)
    except BaseException as exc:  # noqa: BLE001 - what python3 solution.py would print, and its exit code
        import traceback

        traceback.print_exception(type(exc), exc, None)
        sys.stderr.flush()
        os._exit(1)
    del source
    report = int(os.environ.pop("RLVR_REPORT_FD"))
    _as_fresh_interpreter(workdir)
    procs.prctl(procs.PR_SET_CHILD_SUBREAPER, 1)
    keep = _ancestors()
    # The SIGCHLD wake-up channel a socket pair, not a pipe: no case can open it through /proc (see procs.channel).
    wake_r, wake_w = procs.channel()
    procs.wake_on_sigchld(wake_r, wake_w)
    fresh = _fresh_objects(code.co_filename)
    null = os.open(os.devnull, os.O_WRONLY)  # its own stdout and stderr: nothing reads them from now on
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    gc.collect()
    gc.freeze()  # the cases share these pages instead of the collector touching them in every fork
    _send(report, b"R\n")
    _host_loop(code, fresh, report, keep, wake_r, wake_w)


def _send(fd, data, fds=()):  # pragma: no cover - runs in the program host
    sock = socket.socket(fileno=fd)
    try:
        if fds:
            socket.send_fds(sock, [data], fds)
        else:
            sock.sendall(data)
    except OSError:  # the runner is done with this host
        os._exit(0)
    finally:
        sock.detach()


def _as_fresh_interpreter(workdir):  # pragma: no cover - runs in the program host
    """What ``python3 -s solution.py`` would see, done once for every case: no module or path of the runner's,
    the script's dir first on ``sys.path``, the argv it was started with."""
    here = procs.HARNESS_DIR
    for name in RUNNER_MODULES:
        sys.modules.pop(name, None)
    sys.path[:] = [workdir] + [p for p in sys.path if p not in (here, "")]
    sys.argv[:] = ["solution.py"]
    sys.path_importer_cache.clear()


def _fresh_objects(path):  # pragma: no cover - runs in the program host
    """What every case's process starts with, made once here (a fork shares them until it writes to them, where
    making them in each case's process costs it a hundred and more page faults): ``sys.std*`` as python3 makes them
    for pipes under LANG=C.UTF-8 (UTF-8 with surrogateescape; stdout block-buffered; stderr line-buffered, with
    backslashreplace; no newline translation), over fds 0-2, where each case's process puts its own pipes (this
    process never uses them: their buffers stay empty), and an empty ``__main__`` module for the program."""
    stdin = io.open(0, "r", encoding="utf-8", errors="surrogateescape", newline="\n", closefd=False)
    stdout = io.open(1, "w", encoding="utf-8", errors="surrogateescape", newline="\n", closefd=False)
    stderr = io.TextIOWrapper(io.open(2, "wb", closefd=False), encoding="utf-8", errors="backslashreplace",
                              newline="\n", line_buffering=True)
    main_module = type(sys)("__main__")
    main_module.__file__ = path
    main_module.__builtins__ = builtins
    main_module.__cached__ = None
    return stdin, stdout, stderr, main_module


def _ancestors():  # pragma: no cover - runs in the program host
    """This process and those above it (the zygote, the runner): never killed by a sweep. None when the runner
    is not the init of a pid namespace of its own (a runner started by hand): then a sweep must not look at
    every process of the machine, and kills the case's process group only."""
    keep = {os.getpid()}
    pid = os.getppid()
    while pid > 1 and pid not in keep:
        keep.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                pid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return None
    if pid != 1 or len(keep) != 2:  # this process and the zygote, under the runner, which is PID 1
        return None
    keep.add(1)
    return keep


def _host_loop(code, fresh, report, keep, wake_r, wake_w):  # pragma: no cover - runs in the program host
    case = None
    below = _frames_below()
    while True:
        ready = select.select([0, wake_r], [], [])[0]
        if wake_r in ready:
            try:
                os.read(wake_r, 512)
            except BlockingIOError:
                pass
            status = _reaped(case) if case is not None else None
            if status is not None:
                clean = _sweep(keep, wake_r, case)
                _send(report, b"X %d %d %d\n" % (case, status, clean))
                case = None
        if 0 not in ready:
            continue
        order = os.read(0, 4096)
        if not order:  # the runner is done with this host
            if case is not None:
                _sweep(keep, wake_r, case)
            os._exit(0)
        for line in order.splitlines():
            words = line.split()
            if words[:1] == [b"K"] and case is not None:
                procs.kill(case)
                status = _wait_for(case)
                clean = _sweep(keep, wake_r, case)
                _send(report, b"X %d %d %d\n" % (case, status, clean))
                case = None
            elif words[:1] == [b"F"] and case is None:
                limits = [int(n) for n in words[1:5]]
                # Pipes, as a fresh ``python3 solution.py < input`` has: open("/dev/stdin") fails on a socket
                # (ENXIO). A case's stdin holds only that case's input, the program's own to read; a judge's
                # stdin (tests, nonce) is a socket instead (procs.channel).
                ends = [os.pipe(), os.pipe(), os.pipe()]
                pid = os.fork()
                if pid == 0:
                    _case_main(code, fresh, ends, limits, below)
                (in_r, in_w), (out_r, out_w), (err_r, err_w) = ends
                for end in (in_r, out_w, err_w):
                    os.close(end)
                case = pid
                _send(report, b"P %d\n" % pid, [in_w, out_r, err_r])
                for end in (in_w, out_r, err_r):
                    os.close(end)


def _reaped(pid):  # pragma: no cover - runs in the program host
    """Reaps what has ended (orphans of the case too: this process is their subreaper); the exit code of ``pid``
    when it was among them, else None."""
    found = None
    while True:
        try:
            got, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if got == 0:
            break
        if got == pid:
            found = os.waitstatus_to_exitcode(status)
    return found


def _wait_for(pid):  # pragma: no cover - runs in the program host
    try:
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    except ChildProcessError:
        return -signal.SIGKILL


def _sweep(keep, wake_r, case, give_up_s=2.0):  # pragma: no cover - runs in the program host
    """Kills every process of the sandbox but ``keep`` (what the case left: background children, daemons,
    orphans) and reaps those that are this process's; 1 when none is left alive, 0 when some would not go.
    Without ``keep`` (not a sandbox's runner), the case's process group only."""
    give_up = time.monotonic() + give_up_s
    while True:
        if keep is None:
            procs.kill(case, group=True)
            left = []
        else:
            left = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
                    if pid not in keep and procs.alive(pid)]
        for pid in left:
            procs.kill(pid)
        procs.reap_ended()
        if not left:
            try:
                os.read(wake_r, 512)  # the SIGCHLDs of what was reaped
            except BlockingIOError:
                pass
            return 1
        if time.monotonic() > give_up:
            return 0
        select.select([wake_r], [], [], 0.001)


def _case_main(code, fresh, ends, limits, below):  # pragma: no cover - runs in a case's process
    """A case's process: its pipes on fds 0-2, nothing else open, its limits, then the program as ``__main__``
    with the exit rules of a fresh interpreter."""
    try:
        os.setsid()
        in_r, out_w, err_w = ends[0][0], ends[1][1], ends[2][1]  # (every other end goes with the closerange)
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _limits(*limits)
        stdin, stdout, stderr, main_module = fresh  # (see _fresh_objects)
        sys.stdin = sys.__stdin__ = stdin
        sys.stdout = sys.__stdout__ = stdout
        sys.stderr = sys.__stderr__ = stderr
        sys.modules["__main__"] = main_module
        _recursion_limit_below(below)
    except BaseException:  # noqa: BLE001 - a broken case must not become a second host
        os._exit(70)
    os._exit(_run_main(code, main_module.__dict__))


_DEPTH_PROBE = compile("def down(k):\n    global depth\n    depth = k\n    down(k + 1)\n"
                       "try:\n    down(1)\nexcept RecursionError:\n    pass\n", "<depth>", "exec")


def _frames_below():  # pragma: no cover - runs in the program host, as deep in its stack as _case_main
    """How much of the recursion limit a case's program finds used below its module frame (the host's frames and
    what the interpreter counts for ``exec``: it differs between versions), measured once: a module run as a case's
    program is (``_run_main``) counts how deep it can call under the limit; in python3 that is the limit less 1."""
    return _probe_as_program()


def _probe_as_program():  # pragma: no cover - as deep as _run_main
    namespace = {}
    exec(_DEPTH_PROBE, namespace)
    return max(0, sys.getrecursionlimit() - 1 - namespace.get("depth", 0))


def _recursion_limit_below(offset):  # pragma: no cover - runs in a case's process
    """The program's own frames get as many as in python3, whatever limit it sets: ``offset`` frames (the host's,
    below the program's module frame) are not counted against it. ``sys.setrecursionlimit(n + 5)`` before an
    ``n`` deep recursion fails in a fork of the host otherwise, and ``sys.getrecursionlimit()`` says 1000."""
    real_set, real_get = sys.setrecursionlimit, sys.getrecursionlimit

    def setrecursionlimit(limit, /):
        real_set(limit + offset if type(limit) is int and limit >= 1 else limit)  # (else python's own error)

    def getrecursionlimit():
        return real_get() - offset

    setrecursionlimit.__doc__, getrecursionlimit.__doc__ = real_set.__doc__, real_get.__doc__
    real_set(real_get() + offset)
    sys.setrecursionlimit, sys.getrecursionlimit = setrecursionlimit, getrecursionlimit


def _limits(cpu, memory, fsize, nofile):  # pragma: no cover - runs in a case's process
    """The case's limits, never above the host's own hard limits (an unprivileged process cannot raise them)."""
    for which, value in ((resource.RLIMIT_CPU, cpu), (resource.RLIMIT_AS, memory), (resource.RLIMIT_FSIZE, fsize),
                         (resource.RLIMIT_NOFILE, nofile)):
        if not value:
            continue
        hard = resource.getrlimit(which)[1]
        soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
        top = soft + 1 if which == resource.RLIMIT_CPU else soft
        resource.setrlimit(which, (soft, top if hard == resource.RLIM_INFINITY else min(top, hard)))


def _run_main(code, namespace):  # pragma: no cover - runs in a case's process
    """Runs the program; its exit code by python3's rules (SystemExit, an uncaught exception's traceback and 1,
    non-daemon threads joined, atexit handlers, stdout flushed: 120 when that fails)."""
    status = 0
    try:
        exec(code, namespace)
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException as exc:  # noqa: BLE001
        status = 1
        try:
            exc.__traceback__ = exc.__traceback__.tb_next  # the traceback starts at the program, as in python3
            sys.excepthook(type(exc), exc, exc.__traceback__)
        except BaseException:  # noqa: BLE001
            pass
    status = _finalize(status)
    return status


def _exit_status(exc):  # pragma: no cover - runs in a case's process
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except BaseException:  # noqa: BLE001
        pass
    return 1


def _finalize(status):  # pragma: no cover - runs in a case's process
    """Interpreter shutdown as ``Py_FinalizeEx`` does it, as far as a program can see: threads, atexit, flush."""
    threading = sys.modules.get("threading")
    try:
        if threading is not None:
            threading._shutdown()
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException:  # noqa: BLE001
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        pass
    for stream, failed in ((sys.stdout, 120), (sys.stderr, None)):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            if failed is not None:
                status = failed
    return status

