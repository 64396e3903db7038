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


# seccomp's view of a system call (struct seccomp_data): its number at offset 0, the ABI at 4, arguments from 16
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_NEW_PROCESS = {"x86_64": {"fork": 57, "vfork": 58, "clone": 56, "clone3": 435},
                "aarch64": {"clone": 220, "clone3": 435}}
_ALLOW, _EPERM, _ENOSYS = 0x7FFF0000, 0x00050001, 0x00050026  # SECCOMP_RET_ALLOW, _ERRNO | EPERM, _ERRNO | ENOSYS
CLONE_THREAD = 0x10000


def _no_fork_filter(machine):
    """The BPF program of ``no_new_processes`` for ``machine`` (classic BPF: (code, jt, jf, k) each)."""
    calls = _NEW_PROCESS[machine]
    deny = [calls[name] for name in ("fork", "vfork") if name in calls]
    head = [(0x20, 0, 0, 4), (0x15, 1, 0, _AUDIT_ARCH[machine]), (0x06, 0, 0, _EPERM), (0x20, 0, 0, 0)]
    # then: another ABI's numbers (x32), fork, vfork -> EPERM; clone3 -> ENOSYS; clone -> its flags
    checks = ([(0x35, 0x40000000)] if machine == "x86_64" else []) + [(0x15, nr) for nr in deny]
    n = len(head) + len(checks) + 4  # the index of ALLOW (after clone3, clone, its flags' load and test)
    allow, eperm, enosys = n, n + 1, n + 2
    body = []
    for code, k in checks:
        body.append((code, eperm - (len(head) + len(body) + 1), 0, k))
    i = len(head) + len(body)
    body.append((0x15, enosys - (i + 1), 0, calls["clone3"]))
    body.append((0x15, 0, allow - (i + 2), calls["clone"]))
    body.append((0x20, 0, 0, 16))  # clone's flags (its first argument's low half)
    body.append((0x45, allow - (i + 4), eperm - (i + 4), CLONE_THREAD))
    return head + body + [(0x06, 0, 0, _ALLOW), (0x06, 0, 0, _EPERM), (0x06, 0, 0, _ENOSYS)]


_NO_FORK_WORKS = []  # [whether no_new_processes can be installed here], once asked


def no_fork_works():
    """Whether ``no_new_processes`` can be installed in this sandbox (tried once, in a child that then ends): a
    step that needs it and cannot have it is not run (the runner reports why)."""
    if not _NO_FORK_WORKS:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                no_new_processes()
                os._exit(0)
            except BaseException:  # noqa: BLE001
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        _NO_FORK_WORKS.append(os.waitstatus_to_exitcode(status) == 0)
    return _NO_FORK_WORKS[0]


def no_new_processes():
    """From here on, this process and whatever it becomes (a seccomp filter survives exec) start no new process:
    fork, vfork, clone without CLONE_THREAD and any call of another ABI fail (EPERM), clone3 is ENOSYS (the C
    library falls back to clone); threads stay. A test program whose completion could fork would otherwise be a
    fork oracle: a copy tries an answer on the tests' next steps and tells the original which one passed.
    Raises OSError where the filter cannot be installed (the step is then not run: never run without it)."""
    import platform
    import struct

    machine = platform.machine()
    if machine not in _NEW_PROCESS:
        raise OSError(f"no new-process filter for {machine}")
    code = _no_fork_filter(machine)
    buf = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *ins) for ins in code))

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    program = _Program(len(code), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or \
            libc.prctl(22, 2, ctypes.c_void_p(ctypes.addressof(program)), 0, 0) != 0:  # NO_NEW_PRIVS, SECCOMP
        raise OSError(ctypes.get_errno(), "the new-process filter could not be installed")


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

    no_fork = bool(step.get("no_fork"))

    def apply():
        rlimits(*numbers)
        default_signals()
        if no_fork:
            no_new_processes()

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
