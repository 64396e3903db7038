"""The sandbox runner: the trusted process inside every sandbox container.

It reads one job (JSON) from stdin, writes the job's files into a fresh work
directory, runs the job's steps one after another as child processes with
resource limits, and prints one JSON line per finished step, then a final
``{"event": "done"}`` line. It never runs untrusted code in its own process.
With ``--serve`` it stays up (a warm container) and runs one job per stdin
line; after each job it scrubs the scratch dirs, so the next job starts clean.

Run as PID 1 of the container (no ``--init``): signals sent from inside the
container cannot kill it (the kernel drops those PID 1 has no handler for, and
the runner ignores the rest), and after every step every other process of the
step is killed (``kill(-1)``), so nothing a step started outlives it. It makes
itself non-dumpable, so a step running as the same uid cannot open its
``/proc/<pid>/fd`` or memory.

In ``--serve`` mode the steps' processes come from the zygote (``Zygote``): a
child forked once, before the first job is read, that only forks. Each step's
process is forked from it ahead of the job (a standby holding no job data) and
becomes the step's harness without an interpreter start, or ``exec``s the
step's program. The runner itself never forks per job, so the pages of its heap
stay its own: on machines where a page fault is expensive (virtual machines)
every fork would otherwise make the next thousand writes of the forking process
copy pages.

Standard library only: it runs on whatever Python the sandbox image has.
"""

# The C module, not signal.py: its signal() converts handlers to and from enums, which in a freshly forked
# process costs some hundred page copies (page faults are slow in virtual machines).
import _signal as signal
import ctypes
import fcntl
import gc
import io
import json
import os
import resource
import select
import selectors
import shutil
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assert_harness
import io_harness
import judge

HARNESS_DIR = os.path.dirname(os.path.abspath(__file__))
# What a standby can become without an interpreter start: the harnesses, and the candidate process of a step
# the runner judges itself (see ``_judge_calls``).
HARNESSES = {"assert_harness": assert_harness.main, "io_harness": io_harness.main, "candidate": judge.serve_candidate}
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
# Signals a candidate could send to PID 1 that Python would otherwise handle
# (SIGINT raises KeyboardInterrupt); ignored by the runner, reset for children.
IGNORED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                   signal.SIGUSR2, signal.SIGALRM, signal.SIGPIPE)
STDERR_TAIL = 8192
REPORT_LIMIT = 4 * 1024 * 1024
COLLECT_LIMIT = 4 * 1024 * 1024


def _prctl(option, value):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _make_undumpable():
    _prctl(PR_SET_DUMPABLE, 0)


def _limit_numbers(step, job):
    """CPU seconds, address space, file size (0: none) and open files of a step."""
    return (int(step["timeout_s"]) + 2, int(step.get("memory_bytes") or 0), int(job.get("file_size_limit") or 0),
            int(job.get("open_files", 256)))


def _rlimits(cpu, memory, fsize, nofile):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    if fsize:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))


def _default_signals():
    for sig in (*IGNORED_SIGNALS, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)


def _limits(step, job):
    """A subprocess's preexec_fn: the step's limits, signals as a program started afresh has them."""
    numbers = _limit_numbers(step, job)

    def apply():
        _rlimits(*numbers)
        _default_signals()

    return apply


def _kill_everything_else(proc):
    """Kills the step's whole process tree, including processes that escaped it."""
    import subprocess

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    if os.getpid() == 1:  # only as the container's init: kill(-1) spares just us
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    if os.getpid() == 1:
        # Reap every one of them (they were all SIGKILLed: dying takes a moment), so no zombie of this job
        # is there for the next one to see.
        give_up = time.monotonic() + 2.0
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                if time.monotonic() > give_up:
                    break
                time.sleep(0.0005)


def _step_env(workdir, report_fd):
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "RLVR_REPORT_FD": str(report_fd),
    }


class Standby:
    """A step's process, forked by the zygote ahead of its job: it holds no job data.

    Told what to run (``start``), it becomes the step's harness (imported already:
    no interpreter start, no imports) or ``exec``s the step's program. It is the
    zygote's child: its exit arrives as a message on the zygote's socket
    (``exit_fd``), and the zygote kills what the step left behind (``kill_tree``).
    """

    REPORT_FD = 3  # and 0-2 the step's stdin/stdout/stderr, 4 the control pipe

    def __init__(self, zygote, pid, fds):
        stdin, stdout, stderr, report, control = fds
        self.zygote = zygote
        self.pid = pid
        self.returncode = None
        self.stdin = os.fdopen(stdin, "wb", buffering=0)
        self.stdout = os.fdopen(stdout, "rb", buffering=0)
        self.stderr = os.fdopen(stderr, "rb", buffering=0)
        self.report_r = report
        self._control = control
        self.exit_fd = zygote.fileno()

    @staticmethod
    def become(pipes):  # pragma: no cover - runs in the standby
        stdin, stdout, stderr, report, control = pipes
        try:
            os.setsid()
            # The child's ends onto fds 0-4 (by way of copies above any of them, so no dup2 clobbers
            # an end still needed), then every other descriptor closed: the zygote's socket and the
            # parent's ends are gone.
            ends = (stdin[0], stdout[1], stderr[1], report[1], control[0])
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in ends]
            for target, fd in enumerate(high):
                os.dup2(fd, target)
            os.closerange(5, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
            # What a freshly started interpreter would have: SIGPIPE / SIGXFSZ ignored (writes fail with
            # an error instead), SIGINT raising KeyboardInterrupt, the rest as the kernel has them. All
            # that does not depend on the step is done here, before the order comes (a standby is forked
            # ahead of its job: this is off the job's path); the environment and sys.std* the zygote set.
            _default_signals()
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            order = _read_order(4)
            if not order:
                os._exit(0)
            # "<cpu s> <address space> <file size> <open files> <work dir> <harness or ->\n[argv as JSON]"
            head, _, rest = order.partition(b"\n")
            cpu, memory, fsize, nofile, workdir, harness = head.split()
            _rlimits(int(cpu), int(memory), int(fsize), int(nofile))
            workdir = workdir.decode()
            os.chdir(workdir)
            if harness == b"-":
                argv = json.loads(rest)
                env = _step_env(workdir, Standby.REPORT_FD)
                signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as a program started afresh has them
                signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
                try:
                    os.execve(shutil.which(argv[0], path=env["PATH"]) or argv[0], argv, env)
                except OSError as exc:
                    os.write(2, f"could not start {argv[0]!r}: {exc}\n".encode())
                os._exit(127)
            os.environ["HOME"] = os.environ["TMPDIR"] = workdir
            harness = harness.decode()
            sys.argv = [os.path.join(HARNESS_DIR, harness + ".py")]
            entry = HARNESSES[harness]
        except BaseException:  # noqa: BLE001 - a broken standby must not become a second zygote
            os._exit(70)
        code = 0
        try:
            entry()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:  # noqa: BLE001
                    pass
        os._exit(code)

    def start(self, step, job, workdir):
        # Only what the limits need and what to run: the step's stdin (the tests, the nonce) never enters
        # the standby's memory by this way, so a process it forks before reading stdin cannot hold them.
        harness = step.get("harness")
        order = "%d %d %d %d " % _limit_numbers(step, job) + workdir
        if harness in HARNESSES:
            order += f" {harness}\n"
        else:
            order += " -\n" + json.dumps(step["argv"])
        try:
            os.write(self._control, order.encode())
        finally:
            os.close(self._control)
            self._control = None

    def poll(self):
        if self.returncode is None:
            self.zygote.read_events()
        return self.returncode

    def kill_tree(self):
        """Kills the step's process and everything else but the runner and the zygote, and reaps them."""
        self.zygote.clean()
        if self.returncode is None:
            self.returncode = -signal.SIGKILL

    def discard(self):
        """An unused standby: its pipes closed, the process killed."""
        self.close()
        self.kill_tree()

    def close(self):
        if self._control is not None:
            os.close(self._control)
            self._control = None
        for f in (self.stdin, self.stdout, self.stderr):
            try:
                f.close()
            except OSError:
                pass
        if self.report_r is not None:
            os.close(self.report_r)
            self.report_r = None


def _noop(*_):
    pass


def _read_order(fd):
    """The standby's order (up to the end of the control pipe: see ``Standby.start``); empty when there is none."""
    data = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    os.close(fd)
    return data


class Zygote:
    """The fork server: a child of the runner, forked before the first job is read, that only forks.

    For each step it forks a ``Standby`` (its pipes come to the runner over a Unix
    socket, SCM_RIGHTS), reports the standby's exit, and after the step kills every
    process but itself and the runner (``kill(-1)``: it is the processes' subreaper,
    so it reaps them all, orphans included). It holds no job data and runs no
    step code. A step may kill or stop it (same uid): then the runner kills every
    process itself, this one included, and starts another for the next job.
    """

    ANSWER_TIMEOUT_S = 5.0

    def __init__(self):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the zygote
            mine.detach()
            _zygote_main(theirs.detach())
        theirs.close()
        self.pid = pid
        self.sock = mine
        self.current = None
        self.gone = False
        self.unclean = False  # a step left processes behind that would not go
        self.usage = [0, 0, 0, 0]  # its CPU microseconds and faults, then those of the processes it reaped
        self._asked = False

    def fileno(self):
        return self.sock.fileno()

    def ask_standby(self):
        """Has the next standby forked now (while the runner waits for the job); ``standby()`` takes it."""
        if not self._asked and self._send(b"S"):
            self._asked = True

    def standby(self):
        """The standby for the next step, or None when the zygote is gone (the step then starts as a subprocess)."""
        self.ask_standby()
        self._asked = False
        while not self.gone:
            message, fds = self._receive(self.ANSWER_TIMEOUT_S)
            if message is None:
                break
            if "standby" in message:
                if len(fds) != 5:
                    for fd in fds:
                        os.close(fd)
                    self._lost()
                    break
                self.current = Standby(self, message["standby"], fds)
                return self.current
        return None

    def read_events(self):
        """Takes the zygote's messages that are there (the standby's exit) without waiting."""
        while not self.gone and select.select([self.sock], [], [], 0)[0]:
            self._receive(0)

    def clean(self):
        """After a step: every process but the runner and the zygote killed and reaped (False: not all, and the
        sandbox is reported dirty); the zygote then forks the next standby at once (``standby()`` takes it)."""
        if self.gone or not self._send(b"CS"):
            return self._lost()
        self._asked = True
        while not self.gone:
            message, _ = self._receive(self.ANSWER_TIMEOUT_S)
            if message is None:
                break
            if "clean" in message:
                self.current = None
                self.usage = message["usage"]
                if not (message["clean"] and self._no_strays()):
                    self.unclean = True
                return not self.unclean
        return self._lost()

    def _no_strays(self):
        """Waits until no process is left but the runner and the zygote, reaping the runner's zombies: processes
        orphaned where the zygote could not be their subreaper (gVisor) come to the runner (init). True when
        none is left."""
        if os.getpid() != 1:
            return True
        give_up = time.monotonic() + 2.0
        while True:
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                pass
            if not any(self._stray(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, self.pid)):
                return True
            if time.monotonic() > give_up:
                return False
            time.sleep(0.0005)

    def _stray(self, pid):
        """Whether a process is left from the step: any but the zygote's children (it answered only when it had
        none left, so a child of its now is the next standby, forked after the answer)."""
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                return int(fh.read().rsplit(b")", 1)[1].split()[1]) != self.pid
        except (OSError, IndexError, ValueError):
            return False  # gone already

    def close(self):
        """Ends the zygote (it kills what it forked, then exits) and reaps it."""
        if not self.gone:
            self.sock.close()
            self.gone = True
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass

    def _send(self, message):
        try:
            self.sock.send(message)
            return True
        except OSError:
            self._lost()
            return False

    def _receive(self, timeout):
        """One message (and the descriptors it carries), handling exit reports; (None, []) when the zygote is
        gone or silent past ``timeout`` (then it is treated as lost)."""
        if not select.select([self.sock], [], [], timeout)[0]:
            self._lost()
            return None, []
        try:
            data, fds, _, _ = socket.recv_fds(self.sock, 4096, 8)
        except OSError:
            data, fds = b"", []
        if not data:
            self._lost()
            return None, []
        message = _zygote_message(data)
        if "exit" in message and self.current is not None and message["exit"] == self.current.pid:
            self.current.returncode = message["code"]
        return message, fds

    def _lost(self):
        """The zygote died or does not answer (a step killed or stopped it): every process but the runner is
        killed (the zygote too) and reaped; the standby's exit code is what the reaping found."""
        if self.gone and self.sock.fileno() < 0:
            return False
        self.gone = True
        self.sock.close()
        codes = _kill_all_and_reap(self.pid)
        if self.current is not None and self.current.returncode is None:
            self.current.returncode = codes.get(self.current.pid, -signal.SIGKILL)
        return False


def _zygote_message(data):
    """The zygote's few words as a dict: ``S <pid>`` (a standby, its pipes attached), ``X <pid> <code>`` (the
    standby exited), ``C <all reaped: 0|1> <usage: 4 numbers> [<pid> <code>]`` (cleaned, with its CPU
    microseconds and page faults so far, then those of the steps' processes it reaped, and the standby's exit
    if it came then)."""
    kind, *numbers = data.split()
    numbers = [int(n) for n in numbers]
    if kind == b"S":
        return {"standby": numbers[0]}
    if kind == b"X":
        return {"exit": numbers[0], "code": numbers[1]}
    message = {"clean": bool(numbers[0]), "usage": numbers[1:5]}
    if len(numbers) == 7:
        message.update(exit=numbers[5], code=numbers[6])
    return message


def _usage(who):
    """(CPU microseconds, minor page faults) of this process (RUSAGE_SELF) or its reaped children."""
    ru = resource.getrusage(who)
    return int((ru.ru_utime + ru.ru_stime) * 1e6), ru.ru_minflt


def _kill_all_and_reap(*pids):
    """Kills every process but this one (as the container's init: ``kill(-1)``; otherwise only ``pids``) and
    reaps its children; {pid: exit code} of those reaped."""
    if os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
    else:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    codes = {}
    give_up = time.monotonic() + 2.0
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            if time.monotonic() > give_up:
                break
            time.sleep(0.0005)
            continue
        codes[pid] = os.waitstatus_to_exitcode(status)
    return codes


def _zygote_main(fd):  # pragma: no cover - runs in the zygote
    try:
        # Its socket onto fd 3, /dev/null onto stdin and stdout (the container's stream is the runner's alone),
        # stderr kept for its own last words, every other descriptor closed.
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 64)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(high, 3)
        os.closerange(4, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        sock = socket.socket(fileno=3)
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        # What every standby inherits instead of making it: the steps' environment (a standby sets only its
        # work dir) and sys.stdin / stdout / stderr over fds 0-2, which a standby points at its own pipes.
        os.environ.clear()
        os.environ.update(_step_env("/tmp", Standby.REPORT_FD))
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", write_through=True)
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, _noop)
        # What every step's process does first, done once here, then frozen: the forks share these pages and
        # the collector leaves them alone, instead of each fork copying them on first use.
        json.loads(json.dumps({"warm": [1, 2.5, "x", None, True, {"k": []}]}))
        exec(compile("def warm(a, b=1):\n    return [a, b]\nwarm(1)\n", "<warm>", "exec"), {})
        gc.collect()
        gc.freeze()
    except BaseException:  # noqa: BLE001
        os._exit(70)
    _zygote_loop(sock, wake_r)


def _zygote_loop(sock, wake_r):  # pragma: no cover - runs in the zygote
    standby = None

    def say(data, fds=()):
        try:
            if fds:
                socket.send_fds(sock, [data], fds)
            else:
                sock.send(data)
        except OSError:  # the runner is gone or done with it
            _kill_all_and_reap(*([standby] if standby else []))
            os._exit(0)

    while True:
        ready = select.select([sock, wake_r], [], [])[0]
        if wake_r in ready:
            try:
                os.read(wake_r, 512)
            except BlockingIOError:
                pass
            while standby is not None:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                if pid == standby:
                    say(b"X %d %d" % (pid, os.waitstatus_to_exitcode(status)))
                    standby = None
        if sock not in ready:
            continue
        try:
            data = sock.recv(4096)
        except OSError:
            data = b""
        if not data:  # the runner is done with it
            _kill_all_and_reap(*([standby] if standby else []))
            os._exit(0)
        if data.startswith(b"C"):
            codes = _kill_tree_as_zygote(standby)
            answer = b"C %d %d %d %d %d" % (codes is not None, *_usage(resource.RUSAGE_SELF),
                                               *_usage(resource.RUSAGE_CHILDREN))
            if codes and standby in codes:
                answer += b" %d %d" % (standby, codes[standby])
            standby = None
            try:
                os.read(wake_r, 512)  # the SIGCHLDs of what was just reaped
            except BlockingIOError:
                pass
            say(answer)
        if data.endswith(b"S"):
            pipes = [os.pipe() for _ in range(5)]  # stdin, stdout, stderr, report, control
            gc.freeze()
            pid = os.fork()
            if pid == 0:
                sock.detach()
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                Standby.become(pipes)
            (in_r, in_w), (out_r, out_w), (err_r, err_w), (rep_r, rep_w), (ctl_r, ctl_w) = pipes
            for end in (in_r, out_w, err_w, rep_w, ctl_r):
                os.close(end)
            theirs = [in_w, out_r, err_r, rep_r, ctl_w]
            standby = pid
            say(b"S %d" % pid, theirs)
            for end in theirs:
                os.close(end)


def _kill_tree_as_zygote(standby):  # pragma: no cover - runs in the zygote
    """kill(-1) from the zygote spares itself and the container's init (the runner); as the subreaper it then
    reaps every process of the step, orphans included. {pid: code}, or None when some would not die."""
    if os.getppid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
    elif standby is not None:
        try:
            os.killpg(standby, signal.SIGKILL)
        except OSError:
            pass
    codes = {}
    give_up = time.monotonic() + 2.0
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return codes
        if pid == 0:
            if time.monotonic() > give_up:
                return None
            time.sleep(0.0002)
            continue
        codes[pid] = os.waitstatus_to_exitcode(status)


def _executable(argv0, workdir, path):
    """Whether ``argv0`` names a program the step can start (else the step reports a spawn error)."""
    if os.sep in argv0:
        candidate = os.path.join(workdir, argv0)
        return os.path.isfile(candidate) and os.access(candidate, os.X_OK)
    return shutil.which(argv0, path=path) is not None


def _spawn(step, job, workdir, standby):
    """The step's process and the read end of its report pipe: the standby when there is one."""
    if standby is not None:
        if step.get("harness") not in HARNESSES and not _executable(step["argv"][0], workdir,
                                                                  _step_env(workdir, 0)["PATH"]):
            standby.discard()
            raise FileNotFoundError(f"no such program: {step['argv'][0]!r}")
        try:
            standby.start(step, job, workdir)
        except OSError:
            standby.discard()
            raise
        return standby, standby.report_r
    # Imported here, not at the top: subprocess brings threading, whose at-fork hook would cost every
    # process the zygote forks a hundred page copies.
    import subprocess

    report_r, report_w = os.pipe()
    try:
        proc = subprocess.Popen(
            step["argv"],
            cwd=workdir,
            env=_step_env(workdir, report_w),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(report_w,),
            start_new_session=True,
            preexec_fn=_limits(step, job),
        )
    except OSError:
        os.close(report_r)
        raise
    finally:
        os.close(report_w)
    return proc, report_r


class _StepIO:
    """The pipes of one step's process: stdin written and stdout, stderr and the report pipe read as they
    come, within the step's output limits."""

    def __init__(self, proc, report_r, stdin_data, output_limit, keep_stdin=False):
        self.proc = proc
        self.output_limit = output_limit
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.report = bytearray()
        self.stderr_total = 0
        self.limited = False
        self.report_open = True
        self.pending = memoryview(stdin_data)
        self.sel = selectors.DefaultSelector()
        for f in (proc.stdout, proc.stderr):
            os.set_blocking(f.fileno(), False)
            self.sel.register(f, selectors.EVENT_READ)
        os.set_blocking(report_r, False)
        self.sel.register(report_r, selectors.EVENT_READ, "report")
        self.exit_fd = getattr(proc, "exit_fd", None)  # a standby's exit is a message on the zygote's socket
        if self.exit_fd is not None:
            self.sel.register(self.exit_fd, selectors.EVENT_READ, "exit")
        self.stdin_open = True
        if stdin_data:
            self._want_write()
        elif not keep_stdin:
            self.close_stdin()

    def _want_write(self):
        os.set_blocking(self.proc.stdin.fileno(), False)
        self.sel.register(self.proc.stdin, selectors.EVENT_WRITE)

    def send(self, data):
        """Queues ``data`` for the step's stdin (written as the pipe takes it, by ``pump``)."""
        if not self.stdin_open:
            raise BrokenPipeError("the step's stdin is closed")
        if not self.pending:
            self.pending = memoryview(bytes(data))
            self._want_write()
        else:
            self.pending = memoryview(bytes(self.pending) + data)

    def close_stdin(self):
        if self.stdin_open:
            self.stdin_open = False
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def pump(self, timeout, keep_stdin=False):
        """One round: waits up to ``timeout`` for the pipes, writes and reads what they allow."""
        for key, _ in self.sel.select(timeout=timeout):
            if key.data == "exit":
                self.proc.poll()  # the zygote's message: the standby's exit, or the zygote gone
                if self.proc.zygote.gone:  # every process of the step was killed with it
                    self.sel.unregister(self.exit_fd)
                    self.exit_fd = None
                continue
            if key.fileobj is self.proc.stdin:
                try:
                    done = os.write(self.proc.stdin.fileno(), self.pending[:65536])
                except OSError:
                    done = len(self.pending)
                self.pending = self.pending[done:]
                if not self.pending:
                    self.sel.unregister(self.proc.stdin)
                    if not keep_stdin:
                        self.close_stdin()
                continue
            self._take(key)
            if self.limited:
                return

    def _take(self, key):
        try:
            chunk = os.read(key.fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            self.sel.unregister(key.fileobj)
            if key.data == "report":
                self.report_open = False
            return
        if key.fileobj is self.proc.stdout:
            self.stdout += chunk
            if len(self.stdout) > self.output_limit:
                del self.stdout[self.output_limit:]
                self.limited = True
        elif key.fileobj is self.proc.stderr:
            self.stderr_total += len(chunk)
            self.stderr += chunk
            del self.stderr[:-STDERR_TAIL]
            if self.stderr_total > 4 * self.output_limit:
                self.limited = True
        else:
            self.report += chunk
            if len(self.report) > REPORT_LIMIT:
                self.limited = True

    def finish(self):
        """After every writer of the pipes was killed: what they wrote is read to the end (the ends come at
        once), then the pipes are closed."""
        if self.exit_fd is not None:
            self.sel.unregister(self.exit_fd)
        if self.stdin_open:
            if self.pending:
                self.sel.unregister(self.proc.stdin)
            self.close_stdin()
        drain_until = time.monotonic() + 0.25
        while self.sel.get_map() and not self.limited and time.monotonic() < drain_until:
            for key, _ in self.sel.select(timeout=max(0.0, drain_until - time.monotonic())):
                self._take(key)
        self.sel.close()
        for f in (self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass


class _StepTimeout(judge.Interrupted):
    """The step's time is up (raised out of the runner's own judging)."""


class _Limited(judge.Interrupted):
    """The step's output went past its limits (raised out of the runner's own judging)."""


ANSWER_INT_DIGITS = 50_000


def _bounded_int(text):
    """An integer of an answer; past ANSWER_INT_DIGITS digits the answer is refused (turning decimal text into
    an int takes time quadratic in its length, and the runner, unlike a judge process, cannot be killed at the
    step's deadline)."""
    if len(text) > ANSWER_INT_DIGITS:
        raise ValueError("an integer of more than 50,000 digits")
    return int(text)


class _RunnerCandidate(judge.Candidate):
    """The candidate process of a step the runner judges itself: a standby become the candidate, asked over its
    stdin, answering on its report pipe, within the step's deadline and output limits."""

    loads = staticmethod(lambda line: json.loads(line, parse_int=_bounded_int))

    def __init__(self, standby, io, deadline):  # not the base's: the pipes are the step's
        self.pid = standby.pid
        self.standby = standby
        self.io = io
        self.deadline = deadline
        self.gone = None
        self.remotes = {}

    def _exchange(self, data):
        self.io.send(data)
        while True:
            end = self.io.report.find(b"\n")
            if end >= 0:
                line = bytes(self.io.report[:end + 1])
                del self.io.report[:end + 1]
                return line
            if self.io.limited:
                raise _Limited
            if not self.io.report_open:
                return b""
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise _StepTimeout
            self.io.pump(min(remaining, 0.5), keep_stdin=True)

    def _end_detail(self):
        # It is the zygote's child: its exit code comes from there.
        give_up = min(self.deadline, time.monotonic() + 1.0)
        while self.standby.poll() is None and time.monotonic() < give_up:  # (a lost zygote sets the code)
            select.select([self.standby.zygote.sock], [], [], max(0.0, give_up - time.monotonic()))
        code = self.standby.returncode
        return judge.end_detail(code) if code is not None else judge.CandidateGone("the completion's process ended")


def _judge_calls(step, job, workdir, standby, started):
    """A python_assert step whose every test calls one of the completion's functions on literal arguments and
    compares the answer with a literal (``payload["calls"]``, prepared by the service): the runner judges it
    itself, against the candidate process, with the judge's own rules (``assert_harness.judge_calls``). No
    test code runs anywhere, so nothing of one job's tests can reach the next job, and the step needs one
    process instead of two."""
    payload = json.loads(step["stdin"])
    standby.start({**step, "harness": "candidate"}, job, workdir)
    io = _StepIO(standby, standby.report_r, b"", int(step.get("output_limit", 1 << 20)), keep_stdin=True)
    deadline = started + float(step["timeout_s"])
    candidate = _RunnerCandidate(standby, io, deadline)
    events = []

    def report(**event):
        event["nonce"] = payload["nonce"]
        events.append(json.dumps(event))

    timed_out = False
    try:
        assert_harness.judge_calls(candidate, payload, report)
    except _StepTimeout:
        timed_out = True
    except _Limited:
        pass
    io.close_stdin()
    standby.kill_tree()
    io.finish()
    return io, timed_out, "".join(e + "\n" for e in events)


def run_step(step, job, workdir, standby=None):
    output_limit = int(step.get("output_limit", 1 << 20))
    started = time.monotonic()
    judged_here = standby is not None and step.get("judge") == "calls" and step.get("harness") == "assert_harness"
    try:
        if judged_here:
            io, timed_out, report = _judge_calls(step, job, workdir, standby, started)
            proc = io.proc
            code = 0 if not timed_out and not io.limited else proc.returncode
        else:
            proc, report_r = _spawn(step, job, workdir, standby)
    except OSError as exc:
        if standby is not None and standby.returncode is None and not standby.zygote.gone:
            standby.discard()
        return {"exit_code": None, "signal": None, "spawn_error": str(exc), "timed_out": False,
                "output_limited": False, "duration_s": 0.0, "stdout": "", "stderr": "", "report": ""}

    if not judged_here:
        io = _StepIO(proc, report_r, step.get("stdin", "").encode(), output_limit)
        deadline = started + float(step["timeout_s"])
        timed_out = False
        # Until the step's process exits: a subprocess's exit shows as the end of its pipes (or the short
        # poll), a standby's as the zygote's message.
        idle_poll = 0.5 if io.exit_fd is not None else 0.05
        while proc.poll() is None and not io.limited:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            io.pump(min(remaining, idle_poll))
        # Everything the step started is killed and reaped now; what it wrote before is read to the end.
        if isinstance(proc, Standby):
            proc.kill_tree()
        else:
            _kill_everything_else(proc)
        io.finish()
        report = io.report[:REPORT_LIMIT].decode("utf-8", "replace")
        code = proc.returncode
    if isinstance(proc, Standby):
        proc.close()
        if proc.zygote.gone:
            # The step killed or stopped the zygote (same uid: it can): what it reported is void, as when a step
            # kills its judge process, and the verdict a runtime error, not a limit.
            report, code = "", None
            io.stderr += b"\n[runner] the step stopped or killed the sandbox's zygote: its reports are void\n"
    else:
        os.close(report_r)
    duration = time.monotonic() - started

    result = {
        "exit_code": code if code is not None and code >= 0 else None,
        "signal": -code if code is not None and code < 0 else None,
        "timed_out": timed_out,
        "output_limited": io.limited,
        "duration_s": round(duration, 6),
        "stdout": io.stdout.decode("utf-8", "replace"),
        "stderr": io.stderr.decode("utf-8", "replace"),
        "report": report,
    }
    collected = {}
    for rel in step.get("collect", ()):
        path = os.path.join(workdir, rel)
        try:
            with open(path, "rb") as fh:
                collected[rel] = fh.read(COLLECT_LIMIT).decode("utf-8", "replace")
        except OSError:
            pass
    if collected:
        result["collected"] = collected
    return result


def _failed(result):
    return bool(
        result.get("spawn_error") or result["timed_out"] or result["output_limited"]
        or result["signal"] or result["exit_code"]
    )


SCRATCH_DIRS = ("/tmp", "/dev/shm")
SYSV_IPC = ("/proc/sysvipc/shm", "/proc/sysvipc/sem", "/proc/sysvipc/msg")


def _remove_tree(path):
    """Removes a path the candidate may have made unreadable or unwritable (it is ours: same uid)."""
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return
    os.chmod(path, 0o700)
    for name in os.listdir(path):
        _remove_tree(os.path.join(path, name))
    os.rmdir(path)


def _scrub():
    """Leaves nothing of a job for the next one; True when something could not be removed.

    Files live only in the tmpfs scratch dirs (the root is read-only) and
    processes were killed after each step. SysV IPC objects would outlive the
    job: if any exist the container is reported dirty and the host replaces it.
    """
    dirty = False
    for root in SCRATCH_DIRS:
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            try:
                _remove_tree(os.path.join(root, name))
            except OSError:
                dirty = True
    for table in SYSV_IPC:
        try:
            with open(table) as fh:
                if len(fh.read().strip().splitlines()) > 1:
                    dirty = True
        except OSError:
            pass
    return dirty


def run_job(job, out, zygote=None):
    """Runs one job's steps in a fresh work dir, then scrubs; ends with a "done" event.
    With a zygote, each step's process is one of its standbys."""
    token = job.get("token")  # echoed on every event: the host ignores lines without it
    before = (_usage(resource.RUSAGE_SELF), list(zygote.usage) if zygote is not None else None)
    workdir = f"/tmp/job-{os.urandom(8).hex()}"  # not tempfile: it imports random (an at-fork hook)
    os.mkdir(workdir, 0o700)
    for rel, content in job.get("files", {}).items():
        path = os.path.normpath(os.path.join(workdir, rel))
        if not path.startswith(workdir + os.sep):
            raise SystemExit(f"file path escapes the work dir: {rel!r}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(content)
    for index, step in enumerate(job["steps"]):
        standby = zygote.standby() if zygote is not None and not zygote.gone else None
        result = run_step(step, job, workdir, standby)
        result.update(event="step", index=index, name=step.get("name", str(index)), token=token)
        out.write(json.dumps(result) + "\n")
        out.flush()
        if step.get("stop_on_failure") and _failed(result):
            break
    # A zygote a step killed or stopped is an anomaly: the host replaces the sandbox.
    dirty = _scrub() or (zygote is not None and (zygote.gone or zygote.unclean))
    done = {"event": "done", "dirty": dirty, "token": token, "usage": _job_usage(before, zygote)}
    out.write(json.dumps(done) + "\n")
    out.flush()


def _job_usage(before, zygote):
    """CPU seconds and page faults of the job, by process: the runner, the zygote, the steps' processes (those
    the zygote reaped; a one-job runner's steps are its own children)."""
    (cpu, faults), zygote_before = before
    now_cpu, now_faults = _usage(resource.RUSAGE_SELF)
    usage = {"runner": [round((now_cpu - cpu) / 1e6, 6), now_faults - faults]}
    if zygote is not None and zygote_before is not None and not zygote.gone:
        z = [a - b for a, b in zip(zygote.usage, zygote_before, strict=True)]
        usage.update(zygote=[round(z[0] / 1e6, 6), z[1]], steps=[round(z[2] / 1e6, 6), z[3]])
    return usage


def main():
    for sig in IGNORED_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    _make_undumpable()
    if "--serve" in sys.argv[1:]:
        # A warm container: one job per stdin line, run one after another, until stdin closes. The zygote
        # is forked before any job is read and the next standby before the next job is, so neither holds
        # job data.
        stdin = sys.stdin.buffer
        gc.freeze()  # the zygote then shares these pages instead of each collection copying them
        zygote = None
        while True:
            if zygote is None or zygote.gone:
                zygote = Zygote()
            zygote.ask_standby()
            line = stdin.readline()
            if not line:
                zygote.close()
                return
            job = json.loads(line)
            del line
            run_job(job, sys.stdout, zygote)
            del job
    job = json.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    run_job(job, sys.stdout)


if __name__ == "__main__":
    main()
