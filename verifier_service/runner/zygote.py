"""The zygote: the one process that forks the steps' processes, so that the runner never forks per job.

A child of the runner, forked before the first job is read. For each step it
forks a ``Standby`` (a process that holds no job data: it is forked before its
job is read), hands the runner its pipes over a Unix socket (SCM_RIGHTS),
reports its exit, and after the step kills every process but itself and the
runner (``kill(-1)``) and reaps them: it is their subreaper. The runner's
heap pages then stay its own (on machines where a page fault is expensive,
every fork makes the forking process's next writes copy pages).

Standard library only.
"""

# The C module, not signal.py (see procs.py).
import _signal as signal
import fcntl
import gc
import io
import json
import os
import resource
import select
import shutil
import socket
import sys
import time

import procs
from harnesses import HARNESSES
from procs import HARNESS_DIR, PR_SET_CHILD_SUBREAPER


def _stdin_as_pipe():  # pragma: no cover - runs in a standby, before it execs a program
    """The standby's stdin is a socket (no process can open a judge's through /proc); a program's own input must be
    a pipe, as ``python3 solution.py < input`` has (``open("/dev/stdin")`` fails on a socket with ENXIO): a child
    copies the socket into a pipe that becomes fd 0, and ends with the socket's end (or the pipe's reader)."""
    read_end, write_end = os.pipe()
    if os.fork() == 0:
        try:
            os.close(read_end)
            os.closerange(1, write_end)  # (not the step's stdout, stderr or report: their readers see the end)
            while True:
                data = os.read(0, 65536)
                if not data:
                    break
                view = memoryview(data)
                while view:
                    view = view[os.write(write_end, view):]
        except BaseException:  # noqa: BLE001 - the program stopped reading: its stdin ends there
            pass
        os._exit(0)
    os.close(write_end)
    os.dup2(read_end, 0)
    os.close(read_end)


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
            # an error instead), SIGINT raising KeyboardInterrupt, the rest as the kernel has them: the
            # zygote has them so (``_zygote_main``) but for SIGINT, which it ignores. All that does not
            # depend on the step is done here, before the order comes (a standby is forked ahead of its
            # job: this is off the job's path); the environment and sys.std* the zygote set.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            order = _read_order(4)
            if not order:
                os._exit(0)
            # "<cpu s> <address space> <file size> <open files> <work dir> <harness or ->\n[argv as JSON]"
            head, _, rest = order.partition(b"\n")
            cpu, memory, fsize, nofile, workdir, harness = head.split()
            procs.rlimits(int(cpu), int(memory), int(fsize), int(nofile))
            workdir = workdir.decode()
            os.chdir(workdir)
            no_fork = harness in (b"-!", b"<!")
            harness = harness.rstrip(b"!")
            if harness in (b"-", b"<"):
                argv = json.loads(rest)
                env = procs.step_env(workdir, Standby.REPORT_FD)
                if harness == b"<":
                    _stdin_as_pipe()
                signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as a program started afresh has them
                signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
                if no_fork:  # (the runner checked that it can be installed here: procs.no_fork_works)
                    procs.no_new_processes()
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
        order = "%d %d %d %d " % procs.limit_numbers(step, job) + workdir
        if harness in HARNESSES and step.get("no_fork"):  # (a harness is no program to exec: never unfiltered)
            raise OSError(f"the {harness} harness cannot run without new processes")
        if harness in HARNESSES:
            order += f" {harness}\n"
        else:
            # "<": the program's own input (``stdin_pipe``) as a pipe, as ``< input`` gives (see _stdin_as_pipe)
            # "!": the program starts no new process (``no_fork``: procs.no_new_processes, before its exec)
            order += (" <" if step.get("stdin_pipe") else " -") + ("!" if step.get("no_fork") else "") + "\n" + \
                json.dumps(step["argv"])
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
        procs.close_all(self.stdin, self.stdout, self.stderr)
        if self.report_r is not None:
            os.close(self.report_r)
            self.report_r = None


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
        message, fds = self._answer("standby")
        if message is None:
            return None
        if len(fds) != 5:
            for fd in fds:
                os.close(fd)
            self._lost()
            return None
        self.current = Standby(self, message["standby"], fds)
        return self.current

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
        message, _ = self._answer("clean")
        if message is None:
            return self._lost()
        self.current = None
        self.usage = message["usage"]
        if not (message["clean"] and self._no_strays()):
            self.unclean = True
        return not self.unclean

    def _answer(self, kind):
        """The zygote's next message of ``kind`` ("standby", "clean") and its descriptors, taking the standby's
        exit report on the way; (None, []) when the zygote is gone or silent (it is then treated as lost)."""
        while not self.gone:
            if not procs.await_answer(self.sock.fileno(), self.pid, self.ANSWER_TIMEOUT_S):  # (late under load:
                self._lost()  # still waited for while the zygote runs; a stopped or dead one is lost at once)
                break
            message, fds = self._receive(0)
            if message is None:
                break
            if kind in message:
                return message, fds
        return None, []

    def _no_strays(self):
        """Waits until no process is left but the runner and the zygote, reaping the runner's zombies: processes
        orphaned where the zygote could not be their subreaper (gVisor) come to the runner (init). True when
        none is left."""
        if os.getpid() != 1:
            return True
        give_up = time.monotonic() + 2.0
        while True:
            procs.reap_ended()
            if not any(self._stray(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, self.pid)):
                return True
            if time.monotonic() > give_up:
                return False
            time.sleep(0.0005)

    def _stray(self, pid):
        """Whether a process is left from the step: any but the zygote's children (it answered only when it had
        none left, so a child of its now is the next standby, forked after the answer)."""
        try:
            with open(f"/proc/{pid}/stat", "rb", buffering=0) as fh:  # (unbuffered: no tty probe, no seeks)
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
        codes = kill_all_and_reap(self.pid)
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


def usage_of(who):
    """(CPU microseconds, minor page faults) of this process (RUSAGE_SELF) or its reaped children."""
    ru = resource.getrusage(who)
    return int((ru.ru_utime + ru.ru_stime) * 1e6), ru.ru_minflt


def kill_all_and_reap(*pids):
    """Kills every process but this one (as the container's init: ``kill(-1)``; otherwise only ``pids``) and
    reaps its children; {pid: exit code} of those reaped."""
    if os.getpid() == 1:
        procs.kill(-1)
    else:
        for pid in pids:
            procs.kill(pid)
    return procs.reap_children()[0]


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
        procs.prctl(PR_SET_CHILD_SUBREAPER, 1)
        # What every standby inherits instead of making it: the steps' environment (a standby sets only its
        # work dir) and sys.stdin / stdout / stderr over fds 0-2, which a standby points at its own pipes.
        os.environ.clear()
        os.environ.update(procs.step_env("/tmp", Standby.REPORT_FD))
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", write_through=True)
        # The signals every standby has (set once here, where its forks inherit them): the runner's ignored
        # ones back to the kernel's defaults, SIGPIPE and SIGXFSZ ignored; SIGINT stays ignored here (a standby
        # has it raise KeyboardInterrupt), SIGCHLD wakes this process.
        procs.default_signals()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        wake_r, wake_w = os.pipe()
        procs.wake_on_sigchld(wake_r, wake_w)
        # What every step's process does first, done once here, then frozen: the forks share these pages and
        # the collector leaves them alone, instead of each fork copying them on first use.
        json.loads(json.dumps({"warm": [1, 2.5, "x", None, True, {"k": []}]}))
        exec(compile("def warm(a, b=1):\n    return [a, b]\nwarm(1)\n", "<warm>", "exec"), {})
        gc.collect()
        gc.freeze()
    except BaseException:  # noqa: BLE001
        os._exit(70)
    try:
        _zygote_loop(sock, wake_r)
    finally:  # whatever ends the loop (a signal a step sent it): never back into the runner's code
        os._exit(70)


def _zygote_loop(sock, wake_r):  # pragma: no cover - runs in the zygote
    standby = None

    def say(data, fds=()):
        try:
            if fds:
                socket.send_fds(sock, [data], fds)
            else:
                sock.send(data)
        except OSError:  # the runner is gone or done with it
            kill_all_and_reap(*([standby] if standby else []))
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
            kill_all_and_reap(*([standby] if standby else []))
            os._exit(0)
        if data.startswith(b"C"):
            codes = _kill_tree_as_zygote(standby, wake_r)
            answer = b"C %d %d %d %d %d" % (codes is not None, *usage_of(resource.RUSAGE_SELF),
                                               *usage_of(resource.RUSAGE_CHILDREN))
            if codes and standby in codes:
                answer += b" %d %d" % (standby, codes[standby])
            standby = None
            try:
                os.read(wake_r, 512)  # the SIGCHLDs of what was just reaped
            except BlockingIOError:
                pass
            say(answer)
        if data.endswith(b"S"):
            # stdin, stdout, stderr, report, control: stdin and report as sockets (``procs.channel``)
            pipes = [procs.channel(), os.pipe(), os.pipe(), procs.channel(), os.pipe()]
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


def _kill_tree_as_zygote(standby, wake_fd):  # pragma: no cover - runs in the zygote
    """kill(-1) from the zygote spares itself and the container's init (the runner); as the subreaper it then
    reaps every process of the step, orphans included. {pid: code}, or None when some would not die."""
    if os.getppid() == 1:
        procs.kill(-1)
    elif standby is not None:
        procs.kill(standby, group=True)
    codes, all_reaped = procs.reap_children(wake_fd=wake_fd)
    return codes if all_reaped else None
