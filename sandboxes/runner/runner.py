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
import json
import os
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import time

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
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break


def run_step(step, job, workdir):
    output_limit = int(step.get("output_limit", 1 << 20))
    report_r, report_w = os.pipe()
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "RLVR_REPORT_FD": str(report_w),
    }
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            step["argv"],
            cwd=workdir,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(report_w,),
            start_new_session=True,
            preexec_fn=_limits(step, job),
        )
    except OSError as exc:
        os.close(report_r)
        os.close(report_w)
        return {"exit_code": None, "signal": None, "spawn_error": str(exc), "timed_out": False,
                "output_limited": False, "duration_s": 0.0, "stdout": "", "stderr": "", "report": ""}
    os.close(report_w)

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


def run_job(job, out):
    """Runs one job's steps in a fresh work dir, then scrubs; ends with a "done" event."""
    workdir = tempfile.mkdtemp(prefix="job-", dir="/tmp")
    for rel, content in job.get("files", {}).items():
        path = os.path.normpath(os.path.join(workdir, rel))
        if not path.startswith(workdir + os.sep):
            raise SystemExit(f"file path escapes the work dir: {rel!r}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(content)
    for index, step in enumerate(job["steps"]):
        result = run_step(step, job, workdir)
        result.update(event="step", index=index, name=step.get("name", str(index)))
        out.write(json.dumps(result) + "\n")
        out.flush()
        if step.get("stop_on_failure") and _failed(result):
            break
    dirty = _scrub()
    out.write(json.dumps({"event": "done", "dirty": dirty}) + "\n")
    out.flush()


def main():
    for sig in IGNORED_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    _make_undumpable()
    if "--serve" in sys.argv[1:]:
        # A warm container: one job per stdin line, run one after another, until stdin closes.
        for line in sys.stdin.buffer:
            if line.strip():
                run_job(json.loads(line), sys.stdout)
        return
    job = json.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    run_job(job, sys.stdout)


if __name__ == "__main__":
    main()
