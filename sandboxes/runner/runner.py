"""The sandbox runner: the trusted process inside every sandbox container.

It reads one job (JSON) from stdin, writes the job's files into a fresh work
directory, runs the job's steps one after another as child processes with
resource limits, and prints one JSON line per finished step, then a final
``{"event": "done"}`` line. It never runs untrusted code in its own process.
With ``--serve`` it stays up (a warm container) and runs one job per stdin
line; after each job it scrubs the scratch dirs, so the next job starts clean.

Run as PID 1 of the container (no ``--init``): signals sent from inside the
container cannot kill it (the kernel drops those PID 1 has no handler for, and
the runner ignores the rest), and after every step it kills every other process
(``kill(-1)``), so nothing a step started outlives it. It makes itself
non-dumpable, so a step running as the same uid cannot open its
``/proc/<pid>/fd`` or memory.

Standard library only: it runs on whatever Python the sandbox image has.
"""

import ctypes
import fcntl
import gc
import io
import json
import os
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assert_harness
import io_harness

HARNESS_DIR = os.path.dirname(os.path.abspath(__file__))
HARNESSES = {"assert_harness": assert_harness, "io_harness": io_harness}
PR_SET_DUMPABLE = 4
# Signals a candidate could send to PID 1 that Python would otherwise handle
# (SIGINT raises KeyboardInterrupt); ignored by the runner, reset for children.
IGNORED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                   signal.SIGUSR2, signal.SIGALRM, signal.SIGPIPE)
STDERR_TAIL = 8192
REPORT_LIMIT = 4 * 1024 * 1024
COLLECT_LIMIT = 4 * 1024 * 1024


def _make_undumpable():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _limits(step, job):
    cpu = int(step["timeout_s"]) + 2
    memory = step.get("memory_bytes")
    fsize = job.get("file_size_limit")
    nofile = job.get("open_files", 256)

    def apply():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if fsize:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        for sig in (*IGNORED_SIGNALS, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)

    return apply


def _kill_everything_else(proc):
    """Kills the step's whole process tree, including processes that escaped it."""
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
    """The zygote: a child forked from this warm interpreter *before* the next job is read.

    It holds no job data. When a job's first step runs one of the harnesses
    (``step["harness"]``), the standby is told which one and becomes that step's
    process: no interpreter start, no imports (the harnesses are imported here
    already). It is a direct child, waited for like a subprocess.
    """

    REPORT_FD = 3  # and 0-2 the step's stdin/stdout/stderr, 4 the control pipe

    def __init__(self):
        pipes = [os.pipe() for _ in range(5)]  # stdin, stdout, stderr, report, control
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            self._become_worker(pipes)
        (in_r, in_w), (out_r, out_w), (err_r, err_w), (rep_r, rep_w), (ctl_r, ctl_w) = pipes
        for fd in (in_r, out_w, err_w, rep_w, ctl_r):
            os.close(fd)
        self.pid = pid
        self.returncode = None
        self.stdin = os.fdopen(in_w, "wb", buffering=0)
        self.stdout = os.fdopen(out_r, "rb", buffering=0)
        self.stderr = os.fdopen(err_r, "rb", buffering=0)
        self.report_r = rep_r
        self._control = ctl_w

    @staticmethod
    def _become_worker(pipes):
        stdin, stdout, stderr, report, control = pipes
        try:
            os.setsid()
            # The child's ends onto fds 0-4 (by way of copies above any of them, so no dup2 clobbers
            # an end still needed), then every other descriptor closed: the parent's ends and the
            # runner's own stdin/stdout (the container's attach stream) are gone.
            ends = (stdin[0], stdout[1], stderr[1], report[1], control[0])
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in ends]
            for target, fd in enumerate(high):
                os.dup2(fd, target)
            os.closerange(5, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
            with os.fdopen(4, "rb") as control:
                order = json.loads(control.read() or b"null")
            if not order:
                os._exit(0)
            _limits(order["step"], order["job"])()
            # What a freshly started interpreter would have: SIGPIPE / SIGXFSZ ignored (writes fail
            # with an error instead), SIGINT raising KeyboardInterrupt.
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.chdir(order["workdir"])
            os.environ.clear()
            os.environ.update(_step_env(order["workdir"], Standby.REPORT_FD))
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=True)
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", write_through=True)
            sys.argv = [os.path.join(HARNESS_DIR, order["harness"] + ".py")]
            module = HARNESSES[order["harness"]]
        except BaseException:  # noqa: BLE001 - a broken standby must not become a second runner
            os._exit(70)
        code = 0
        try:
            module.main()
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

    def start(self, harness, step, job, workdir):
        # Only what the limits need: the step's stdin (the tests, the nonce) never enters the standby's
        # memory by this way, so a process it forks before reading stdin cannot hold them.
        order = {"harness": harness, "step": {k: step[k] for k in ("timeout_s", "memory_bytes") if k in step},
                 "job": {k: job[k] for k in ("file_size_limit", "open_files") if k in job}, "workdir": workdir}
        os.write(self._control, json.dumps(order).encode())
        os.close(self._control)
        self._control = None

    def discard(self):
        if self._control is not None:
            os.close(self._control)
            self._control = None
        for f in (self.stdin, self.stdout, self.stderr):
            f.close()
        os.close(self.report_r)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        self.wait()

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("standby", timeout)
            time.sleep(0.001)
        return self.returncode


def _spawn(step, job, workdir, standby):
    """The step's process and the read end of its report pipe: the standby when it can serve."""
    harness = step.get("harness")
    if standby is not None and harness in HARNESSES:
        standby.start(harness, step, job, workdir)
        return standby, standby.report_r
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


def run_step(step, job, workdir, standby=None):
    output_limit = int(step.get("output_limit", 1 << 20))
    started = time.monotonic()
    try:
        proc, report_r = _spawn(step, job, workdir, standby)
    except OSError as exc:
        return {"exit_code": None, "signal": None, "spawn_error": str(exc), "timed_out": False,
                "output_limited": False, "duration_s": 0.0, "stdout": "", "stderr": "", "report": ""}

    stdin_data = step.get("stdin", "").encode()
    stdout = bytearray()
    stderr = bytearray()
    stderr_total = 0
    report = bytearray()
    timed_out = output_limited = False
    deadline = started + float(step["timeout_s"])

    sel = selectors.DefaultSelector()
    for f in (proc.stdout, proc.stderr):
        os.set_blocking(f.fileno(), False)
        sel.register(f, selectors.EVENT_READ)
    os.set_blocking(report_r, False)
    sel.register(report_r, selectors.EVENT_READ)
    if stdin_data:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    written = 0

    drain_deadline = None  # once the step exited, stray holders of its pipes get a short grace
    while sel.get_map():
        now = time.monotonic()
        if proc.poll() is not None:
            if drain_deadline is None:
                drain_deadline = now + 0.25
            elif now > drain_deadline:
                break
        elif now >= deadline:
            timed_out = True
            break
        remaining = (drain_deadline or deadline) - now
        for key, _ in sel.select(timeout=min(remaining, 0.5)):
            if key.fileobj is proc.stdin:
                try:
                    written += os.write(proc.stdin.fileno(), stdin_data[written:written + 65536])
                except (BrokenPipeError, OSError):
                    written = len(stdin_data)
                if written >= len(stdin_data):
                    sel.unregister(proc.stdin)
                    proc.stdin.close()
                continue
            fd = key.fd
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                sel.unregister(key.fileobj)
                continue
            if key.fileobj is proc.stdout:
                stdout += chunk
                if len(stdout) > output_limit:
                    del stdout[output_limit:]
                    output_limited = True
            elif key.fileobj is proc.stderr:
                stderr_total += len(chunk)
                stderr += chunk
                del stderr[:-STDERR_TAIL]
                if stderr_total > 4 * output_limit:
                    output_limited = True
            else:
                report += chunk
                if len(report) > REPORT_LIMIT:
                    output_limited = True
        if output_limited:
            break
        if proc.poll() is not None and all(k.fileobj is proc.stdin for k in sel.get_map().values()):
            break

    if timed_out or output_limited:
        _kill_everything_else(proc)
    else:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
        _kill_everything_else(proc)
    duration = time.monotonic() - started
    sel.close()
    for f in (proc.stdin, proc.stdout, proc.stderr):
        try:
            f.close()
        except OSError:
            pass
    os.close(report_r)

    code = proc.returncode
    result = {
        "exit_code": code if code is not None and code >= 0 else None,
        "signal": -code if code is not None and code < 0 else None,
        "timed_out": timed_out,
        "output_limited": output_limited,
        "duration_s": round(duration, 6),
        "stdout": stdout.decode("utf-8", "replace"),
        "stderr": stderr.decode("utf-8", "replace"),
        "report": report[:REPORT_LIMIT].decode("utf-8", "replace"),
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


def run_job(job, out, standby=None):
    """Runs one job's steps in a fresh work dir, then scrubs; ends with a "done" event.
    A standby (zygote child) may serve the first step; an unused one is discarded."""
    token = job.get("token")  # echoed on every event: the host ignores lines without it
    workdir = tempfile.mkdtemp(prefix="job-", dir="/tmp")
    for rel, content in job.get("files", {}).items():
        path = os.path.normpath(os.path.join(workdir, rel))
        if not path.startswith(workdir + os.sep):
            raise SystemExit(f"file path escapes the work dir: {rel!r}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(content)
    for index, step in enumerate(job["steps"]):
        use = standby if index == 0 and step.get("harness") in HARNESSES else None
        if standby is not None and use is None:
            standby.discard()
        standby = None
        result = run_step(step, job, workdir, use)
        result.update(event="step", index=index, name=step.get("name", str(index)), token=token)
        out.write(json.dumps(result) + "\n")
        out.flush()
        if step.get("stop_on_failure") and _failed(result):
            break
    dirty = _scrub()
    out.write(json.dumps({"event": "done", "dirty": dirty, "token": token}) + "\n")
    out.flush()


def main():
    for sig in IGNORED_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    _make_undumpable()
    if "--serve" in sys.argv[1:]:
        # A warm container: one job per stdin line, run one after another, until stdin closes.
        # The standby for a job is forked before the job is read, so it never holds job data.
        stdin = sys.stdin.buffer
        gc.freeze()  # forks (standby, candidate) then share these pages instead of each collection copying them
        while True:
            standby = Standby()
            line = stdin.readline()
            if not line:
                standby.discard()
                return
            job = json.loads(line)
            del line
            run_job(job, sys.stdout, standby)
            del job
    job = json.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    run_job(job, sys.stdout)


if __name__ == "__main__":
    main()
