"""What every process the runner starts gets: its limits, signals and environment (the harnesses a standby
can become are in ``harnesses.py``).

Standard library only.
"""

# The C module, not signal.py: its signal() converts handlers to and from enums, which in a freshly forked
# process costs some hundred page copies (page faults are slow in virtual machines).
import _signal as signal
import ctypes
import os
import resource
import select
import socket
import time

HARNESS_DIR = os.path.dirname(os.path.abspath(__file__))
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
# Signals a candidate could send to PID 1 that Python would otherwise handle
# (SIGINT raises KeyboardInterrupt); ignored by the runner, reset for children.
IGNORED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                   signal.SIGUSR2, signal.SIGALRM, signal.SIGPIPE)


def prctl(option, value):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def make_undumpable():
    prctl(PR_SET_DUMPABLE, 0)


def limit_numbers(step, job):
    """CPU seconds, address space, file size (0: none) and open files of a step."""
    return (int(step["timeout_s"]) + 2, int(step.get("memory_bytes") or 0), int(job.get("file_size_limit") or 0),
            int(job.get("open_files", 256)))


# The stack of a program's main thread when no address-space limit is set (every language but Python): as contest
# judges give it (deep recursion in C, C++, Rust; Node.js's --stack-size below it, so V8 throws RangeError before
# the stack ends). The sandbox's memory limit still bounds what it uses.
STACK_BYTES = 256 << 20


def rlimits(cpu, memory, fsize, nofile):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if not memory:
        _, hard = resource.getrlimit(resource.RLIMIT_STACK)
        soft = STACK_BYTES if hard == resource.RLIM_INFINITY else min(STACK_BYTES, hard)
        try:
            resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))
        except (ValueError, OSError):
            pass
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    if fsize:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))


def default_signals():
    for sig in (*IGNORED_SIGNALS, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)


def limits(step, job):
    """A subprocess's preexec_fn: the step's limits, signals as a program started afresh has them."""
    numbers = limit_numbers(step, job)

    def apply():
        rlimits(*numbers)
        default_signals()

    return apply


def channel():
    """(read end, write end) of a one-way byte stream to or from a step's process: a Unix socket pair, not a
    pipe. Another process of the sandbox cannot open a socket through ``/proc/<pid>/fd/`` (the kernel, and
    gVisor's, answer ENXIO) as it can a pipe wherever non-dumpable is not honoured (gVisor): a step's stdin
    (the job's tests and nonce) and its report channel are these, so a candidate process cannot take the
    judge's job or write the judge's reports through ``/proc``."""
    read, write = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    read.shutdown(socket.SHUT_WR)
    write.shutdown(socket.SHUT_RD)
    return read.detach(), write.detach()


def step_env(workdir, report_fd):
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "RLVR_REPORT_FD": str(report_fd),
    }


SLOW_ANSWER_LIMIT_S = 60.0  # how long a live, running process of the runner's own is waited for, at most


def runnable(pid):
    """Whether process ``pid`` exists and is not stopped, traced, a zombie or dead."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    state = data[data.rfind(b")") + 2:][:1]
    return state not in (b"", b"T", b"t", b"Z", b"X", b"x")


def await_answer(fd, pid, first_s):
    """Whether ``fd`` (the channel of the runner's own process ``pid``: the zygote, a program host) becomes
    readable. Waits ``first_s``, then goes on waiting, up to SLOW_ANSWER_LIMIT_S in all, while ``pid`` is alive
    and not stopped: on a loaded machine an answer can come late (at load 16 a program host's answer came past
    5 s, and its case, an honest one, was voided as RUNTIME_ERROR). A process that a step stopped or killed is
    given up at once, as before; how loaded the machine is never decides a verdict."""
    give_up = time.monotonic() + SLOW_ANSWER_LIMIT_S
    wait = first_s
    while True:
        if select.select([fd], [], [], max(0.0, wait))[0]:
            return True
        left = give_up - time.monotonic()
        if left <= 0 or not runnable(pid):
            return False
        wait = min(0.5, left)


def alive(pid):
    """Whether a process is there and not a zombie (a zombie runs nothing; its parent reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def kill(pid, sig=signal.SIGKILL, group=False):
    """Sends ``sig`` to process ``pid`` (to its process group: ``group``); a process already gone is no error."""
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except OSError:
        pass


def close_all(*files):
    """Closes each of ``files``, going on past one whose close fails (OSError)."""
    for f in files:
        try:
            f.close()
        except OSError:
            pass


def reap_ended():
    """Reaps every child of this process that has ended, without waiting for the others."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def wake_on_sigchld(wake_r, wake_w):
    """Every SIGCHLD writes a byte to ``wake_w`` (``signal.set_wakeup_fd``), for a loop that waits on ``wake_r``;
    both ends non-blocking."""
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, _noop)


def _noop(*_):
    pass


def reap_children(give_up_s=2.0, wake_fd=None):
    """Reaps this process's children until it has none (they were all SIGKILLed: dying takes a moment);
    ({pid: exit code} of those reaped, whether none was left before ``give_up_s``). ``wake_fd``: the read end
    (non-blocking) of a pipe a SIGCHLD writes to (``signal.set_wakeup_fd``): waited on between tries instead of
    polling."""
    codes = {}
    give_up = time.monotonic() + give_up_s
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return codes, True
        if pid == 0:
            left = give_up - time.monotonic()
            if left <= 0:
                return codes, False
            if wake_fd is None:
                time.sleep(0.0002)
            elif select.select([wake_fd], [], [], left)[0]:
                try:
                    os.read(wake_fd, 512)
                except BlockingIOError:
                    pass
            continue
        codes[pid] = os.waitstatus_to_exitcode(status)
