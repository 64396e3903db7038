"""The sandbox runner: the trusted process inside every sandbox container.

It reads one job (JSON) from stdin, writes the job's files into a fresh work
directory, runs the job's steps one after another as child processes with
resource limits, and prints one JSON line per finished step, then a final
``{"event": "done"}`` line. It never runs untrusted code in its own process.
With ``--serve`` it stays up (a warm container) and runs one job per stdin
line; after each job it scrubs the scratch dirs, so the next job starts clean.
With ``--serve --connect PATH`` the jobs and events go over the host's Unix
socket at PATH instead of stdin and stdout (``_job_stream``).

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
copy pages. The zygote and the standbys are in ``zygote.py``; what every step's
process gets (limits, signals, environment) in ``procs.py``; a step's pipes and
the runner's own judging of tests that are calls on literals in ``stepio.py``.

Standard library only: it runs on whatever Python the sandbox image has.
"""

import gc
import json
import os
import resource
import select
import shutil
import socket
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import procs
import session  # registers the session kernel as a harness (before the zygote is forked)
import stepio
import wire
from harnesses import HARNESSES
from procs import IGNORED_SIGNALS, signal
from pyprog import ProgramHost
from stepclock import StepClock
from stepio import REPORT_LIMIT
from zygote import Standby, Zygote, usage_of

SANDBOX_ENV = wire.SANDBOX_ENV
COLLECT_LIMIT = 4 * 1024 * 1024


def _kill_everything_else(proc):
    """Kills the step's whole process tree, including processes that escaped it."""
    import subprocess

    procs.kill(proc.pid, group=True)
    if os.getpid() == 1:  # only as the container's init: kill(-1) spares just us
        procs.kill(-1)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    if os.getpid() == 1:
        procs.reap_children()  # every one of them, so no zombie of this job is there for the next one to see


def _executable(argv0, workdir, path):
    """Whether ``argv0`` names a program the step can start (else the step reports a spawn error)."""
    if os.sep in argv0:
        candidate = os.path.join(workdir, argv0)
        return os.path.isfile(candidate) and os.access(candidate, os.X_OK)
    return shutil.which(argv0, path=path) is not None


def _spawn(step, job, workdir, standby):
    """The step's process and the read end of its report pipe: the standby when there is one."""
    if step.get("no_fork") and not procs.no_fork_works():
        raise OSError("this sandbox cannot keep the step from starting processes (no seccomp filter)")
    if standby is not None:
        if step.get("harness") not in HARNESSES and not _executable(step["argv"][0], workdir,
                                                                  procs.step_env(workdir, 0)["PATH"]):
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

    report_r, report_w = procs.channel()  # sockets, not pipes: see procs.channel
    # A judge's stdin (its tests, the job's nonce) is a socket no other process can open through /proc; a
    # program's own input (``stdin_pipe``: stdio cases) is a pipe, as a shell's ``< input`` gives: programs that
    # open "/dev/stdin" fail on a socket (ENXIO).
    stdin_r, stdin_w = os.pipe() if step.get("stdin_pipe") else procs.channel()
    try:
        proc = subprocess.Popen(
            step["argv"],
            cwd=workdir,
            env=procs.step_env(workdir, report_w),
            stdin=stdin_r,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(report_w,),
            start_new_session=True,
            preexec_fn=procs.limits(step, job),
        )
    except (OSError, subprocess.SubprocessError) as exc:  # (an error of the preexec_fn's: the latter)
        os.close(report_r)
        os.close(stdin_w)
        raise exc if isinstance(exc, OSError) else OSError(f"{step['argv'][0]}: {exc}") from None
    finally:
        os.close(report_w)
        os.close(stdin_r)
    proc.stdin = os.fdopen(stdin_w, "wb", buffering=0)
    return proc, report_r


def run_step(step, job, workdir, standby=None):
    output_limit = int(step.get("output_limit", 1 << 20))
    started = time.monotonic()
    judged_here = standby is not None and step.get("judge") == "calls" and step.get("harness") == "assert_harness"
    try:
        if judged_here:
            io, timed_out, report, clock = stepio.judge_calls(step, job, workdir, standby, started)
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
        io = stepio.StepIO(proc, report_r, stepio.stdin_bytes(step), output_limit)
        clock = StepClock(proc.pid, step["timeout_s"], started)
        timed_out = False
        # Until the step's process exits: a subprocess's exit shows as the end of its pipes (or the short
        # poll), a standby's as the zygote's message.
        idle_poll = 0.5 if io.exit_fd is not None else 0.05
        while proc.poll() is None and not io.limited:
            remaining = clock.left()
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
    return _result(step, workdir, code, timed_out, io, report, time.monotonic() - started, clock)


def _open_same(dir_fd, name, flags, is_kind):
    """``name`` in ``dir_fd`` opened with ``flags``, or None unless it is, without following anything, of the kind
    ``is_kind`` tells and the very object opened (lstat before, fstat after: O_NOFOLLOW alone is not honoured for
    a symlinked directory on every kernel; gVisor follows it)."""
    before = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if not is_kind(before.st_mode):
        return None
    opened = os.open(name, flags, dir_fd=dir_fd)
    after = os.fstat(opened)
    if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) or not is_kind(after.st_mode):
        os.close(opened)
        return None
    return opened


def read_inside(workdir, rel, limit):
    """The first ``limit`` bytes of the regular file ``rel`` under ``workdir``, or None. The program may have
    replaced any part of the path (a symlink to a file only the runner may read, a FIFO that would block it, a
    hard link to a file from outside): each component is opened relative to the one before, without following
    a symlink (O_NOFOLLOW), and only a regular file with one link is read, never blocking (O_NONBLOCK)."""
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    try:
        fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    leaf = None
    try:
        for part in parts[:-1]:
            inner = _open_same(fd, part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, stat.S_ISDIR)
            os.close(fd)
            fd = inner
            if fd is None:
                return None
        leaf = _open_same(fd, parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, stat.S_ISREG)
    except OSError:
        return None
    finally:
        if fd is not None:
            os.close(fd)
    if leaf is None:
        return None
    try:
        info = os.fstat(leaf)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return None
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(leaf, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(leaf)


def _result(step, workdir, code, timed_out, io, report, duration, clock=None):
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
    if clock is not None and clock.own_time:
        result["run_queue_s"] = round(clock.waited_s, 6)  # the run-queue delay not counted (stepclock.py)
    collected = {}
    for rel in step.get("collect", ()):
        data = read_inside(workdir, rel, COLLECT_LIMIT)
        if data is not None:
            collected[rel] = data.decode("utf-8", "replace")
    if collected:
        result["collected"] = collected
    return result


def start_program(step, job, workdir, standby):
    """A stdio Python job's compile step (``harness: python_program``): the standby becomes the job's program host
    (``pyprog``), which compiles the program once; (the step's result, the host, or None when it did not
    compile or is gone). Its CPU limit spans the job: it lives through every case."""
    started = time.monotonic()
    output_limit = int(step.get("output_limit", 1 << 20))
    whole_job = sum(float(s["timeout_s"]) for s in job["steps"])
    try:
        standby.start({**step, "timeout_s": whole_job}, job, workdir)
    except OSError as exc:
        standby.discard()
        return {"exit_code": None, "signal": None, "spawn_error": str(exc), "timed_out": False,
                "output_limited": False, "duration_s": 0.0, "stdout": "", "stderr": "", "report": ""}, None
    io = stepio.StepIO(standby, standby.report_r, b"", output_limit, keep_stdin=True)  # (its stdin: the orders)
    clock = StepClock(standby.pid, step["timeout_s"], started)
    timed_out = False
    while standby.poll() is None and not io.limited and b"\n" not in io.report:
        remaining = clock.left()
        if remaining <= 0:
            timed_out = True
            break
        io.pump(min(remaining, 0.5))
    if bytes(io.report) == b"R\n" and standby.returncode is None and not io.limited and not timed_out:
        # Compiled: the host stays for the cases; what it wrote so far (warnings) is the step's output.
        io.sel.close()
        for f in (standby.stdout, standby.stderr):
            f.close()
        result = _result(step, workdir, 0, False, io, "", time.monotonic() - started, clock)
        return result, ProgramHost(standby)
    standby.kill_tree()
    io.finish()
    standby.close()
    code = standby.returncode
    if standby.zygote.gone:
        code = None
        io.stderr += b"\n[runner] the sandbox's zygote is gone\n"
    return _result(step, workdir, code, timed_out, io, "", time.monotonic() - started, clock), None


def run_case(step, job, workdir, host, zygote):
    """A stdio Python case (``harness: python_case``) as a fork of the job's program host, with the step's stdin,
    deadline, limits and output cap; None when the host is gone (the step then runs as a fresh interpreter)."""
    started = time.monotonic()
    case = host.fork_case(step, job)
    if case is None:
        return None
    io = stepio.StepIO(case, None, step.get("stdin", "").encode(), int(step.get("output_limit", 1 << 20)))
    clock = StepClock(case.pid, step["timeout_s"], started)
    timed_out = False
    while case.poll() is None and not io.limited and not host.gone:
        remaining = clock.left()
        if remaining <= 0:
            timed_out = True
            break
        io.pump(min(remaining, 0.5))
    host.end_case()  # the case's process and all it left killed and reaped
    io.finish()
    case.close()
    if os.getpid() == 1:  # where the host cannot be the subreaper (gVisor), what it killed comes here: reaped now
        procs.reap_ended()
    if zygote is not None:
        zygote.read_events()
    code = case.returncode
    if case.host_lost or zygote is None or zygote.gone:
        # The case killed or stopped its host or the zygote (same uid: it can): what it did is void, a runtime
        # error, as for a step that kills the zygote.
        code = None
        io.stderr += b"\n[runner] the case stopped or killed the sandbox's own processes: its result is void\n"
    elif case.unclean:
        host.unclean = True
    return _result(step, workdir, code, timed_out, io, "", time.monotonic() - started, clock)


def _failed(result):
    return bool(
        result.get("spawn_error") or result["timed_out"] or result["output_limited"]
        or result["signal"] or result["exit_code"]
    )


SCRATCH_DIRS = ("/tmp", "/dev/shm")
SYSV_IPC = ("/proc/sysvipc/shm", "/proc/sysvipc/sem", "/proc/sysvipc/msg")
MQUEUE_DIR = "/dev/mqueue"  # POSIX message queues: Docker and bwrap (--mqueue) mount the IPC namespace's here
RLIMITS = tuple(getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_"))


def process_state(pid):
    """What a process of the sandbox passes on to what it forks and that another process of the same uid can
    change: its resource limits (``prlimit``), nice value, CPU affinity and scheduling policy. The runner
    records its own and the zygote's before the first job and compares them after each (``_scrub``): a step
    that changed them (on its parents: same uid) would make honest jobs fail or crawl, so the sandbox is then
    retired. None for a process that is gone."""
    try:
        return (tuple(resource.prlimit(pid, r) for r in RLIMITS), os.getpriority(os.PRIO_PROCESS, pid),
                tuple(sorted(os.sched_getaffinity(pid))), os.sched_getscheduler(pid))
    except OSError:
        return None


def _remove_tree(path):
    """Removes a path the candidate may have made unreadable or unwritable (it is ours: same uid)."""
    try:
        os.rmdir(path)  # the common case, a job's emptied work dir: one call (a file, a link or the rest: below)
        return
    except OSError:
        pass
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return
    os.chmod(path, 0o700)
    for name in os.listdir(path):
        _remove_tree(os.path.join(path, name))
    os.rmdir(path)


_UNLISTED_IPC = None


def unlisted_ipc():
    """The kinds of IPC object this sandbox lets a process make but gives the runner no way to list (gVisor shows
    neither ``/proc/sysvipc`` nor ``/dev/mqueue``; its seccomp profile then refuses making them). Found once, by
    making one of each (and removing it) where the list is missing: a kind that can be made but not listed makes
    every job's sandbox dirty (it is retired), since a job could leave one for the next."""
    global _UNLISTED_IPC
    if _UNLISTED_IPC is not None:
        return _UNLISTED_IPC
    found = []
    sysv_listed = all(os.path.exists(t) for t in SYSV_IPC)
    mqueue_listed = os.path.isdir(MQUEUE_DIR) and os.path.ismount(MQUEUE_DIR)
    if not (sysv_listed and mqueue_listed):
        try:
            import ctypes  # only here: an image whose kernel lists everything never loads it

            libc = ctypes.CDLL(None, use_errno=True)
            if not sysv_listed:
                for kind, make, remove in (("shm", lambda: libc.shmget(0, 4096, 0o1600), libc.shmctl),
                                           ("msg", lambda: libc.msgget(0, 0o1600), libc.msgctl),
                                           ("sem", lambda: libc.semget(0, 1, 0o1600), None)):
                    ident = make()
                    if ident >= 0:
                        found.append(kind)
                        if remove is None:
                            libc.semctl(ident, 0, 0)  # IPC_RMID
                        else:
                            remove(ident, 0, None)  # IPC_RMID
            if not mqueue_listed:
                name = b"/rlvr-probe-" + os.urandom(6).hex().encode()
                fd = libc.mq_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, None)
                if fd >= 0:
                    found.append("mqueue")
                    os.close(fd)
                    libc.mq_unlink(name)
        except (OSError, AttributeError):
            found.append("unknown")  # cannot even probe: not verifiable
    _UNLISTED_IPC = found
    return found


def _scrub(baseline=None):
    """Leaves nothing of a job for the next one; True when something could not be removed or verified clean.

    Files live only in the tmpfs scratch dirs (the root is read-only) and
    processes were killed after each step. SysV IPC objects and POSIX message
    queues would outlive the job: if any exist the container is reported dirty
    and the host replaces it; so it is when the message queues cannot be
    listed (no ``/dev/mqueue``), or when the runner's or the zygote's limits,
    priority, affinity or scheduling differ from ``baseline`` (``process_state``).
    """
    dirty = False
    if baseline is not None and any(process_state(pid) != state for pid, state in baseline.items()):
        dirty = True
    if unlisted_ipc():
        dirty = True  # cannot be verified: an object there would reach the next job
    try:
        if os.listdir(MQUEUE_DIR):
            dirty = True
    except OSError:
        pass  # not there: unlisted_ipc() says whether queues can be made at all
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
            with open(table, "rb", buffering=0) as fh:  # (unbuffered bytes: no tty probe, no seeks)
                if len(fh.read().strip().splitlines()) > 1:
                    dirty = True
        except OSError:
            pass
    return dirty


def run_job(job, out, zygote=None, jobs_in=None):
    """Runs one job's steps in a fresh work dir, then scrubs; ends with a "done" event.
    With a zygote, each step's process is one of its standbys; a stdio Python job's cases are forks of its
    program host (``pyprog``). ``jobs_in``: the job stream, where the host may say "stop" between steps
    (a job marked ``stoppable``: the host judges each step's output and needs no more)."""
    token = job.get("token")  # echoed on every event: the host ignores lines without it
    before = (usage_of(resource.RUSAGE_SELF), list(zygote.usage) if zygote is not None else None)
    workdir = f"/tmp/job-{os.urandom(8).hex()}"  # not tempfile: it imports random (an at-fork hook)
    os.mkdir(workdir, 0o700)
    for rel, content in job.get("files", {}).items():
        path = os.path.normpath(os.path.join(workdir, rel))
        if not path.startswith(workdir + os.sep):
            raise SystemExit(f"file path escapes the work dir: {rel!r}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(content)
    steps = job["steps"]
    stoppable = bool(job.get("stoppable")) and jobs_in is not None
    # Each step's event goes out as it ends when the host may act on it (fast-fail); else they go out together.
    each = job.get("stream", True)
    host = None
    host_unclean = False
    stopped = False
    for index, step in enumerate(steps):
        if stoppable and index and _stop_asked(jobs_in, token):
            stopped = True
            break
        result = None
        if step.get("harness") == wire.PYTHON_CASE and host is not None and not host.gone:
            result = run_case(step, job, workdir, host, zygote)
        if result is None:
            if host is not None:
                host_unclean |= host.unclean
                host.close()  # the zygote kills it (and all else) and forks the next standby
                host = None
            standby = zygote.standby() if zygote is not None and not zygote.gone else None
            if step.get("harness") == "python_program" and standby is not None:
                result, host = start_program(step, job, workdir, standby)
            else:
                result = run_step(step, job, workdir, standby)
        result.update(event="step", index=index, name=step.get("name", str(index)), token=token)
        if stoppable:
            result["stoppable"] = True
        out.write(json.dumps(result) + "\n")
        if step.get("stop_on_failure") and _failed(result):
            break
        if index + 1 < len(steps) and each:
            out.flush()  # the host sees each step as it ends (fast-fail); the last one goes out with "done"
    if host is not None:
        host_unclean |= host.unclean
        if not host.gone:
            host.close()
    # A zygote a step killed or stopped is an anomaly: the host replaces the sandbox.
    dirty = _scrub(getattr(zygote, "baseline", None)) or host_unclean or (
        zygote is not None and (zygote.gone or zygote.unclean))
    done = {"event": "done", "dirty": dirty, "token": token, "usage": _job_usage(before, zygote)}
    if stopped:
        done["stopped"] = True
    out.write(json.dumps(done) + "\n")
    out.flush()


def _stop_asked(jobs_in, token):
    """Whether the host said "stop" for this job (a line ``{"stop": token}`` on the job stream, read only when
    there is one: the host sends nothing else while a job runs)."""
    try:
        if not select.select([jobs_in], [], [], 0)[0]:
            return False
        line = jobs_in.readline()
    except (OSError, ValueError):
        return False
    if not line:
        return True  # the stream ended: nobody wants the rest
    try:
        return json.loads(line).get("stop") == token
    except (ValueError, AttributeError):
        return False


def _job_usage(before, zygote):
    """CPU seconds and page faults of the job, by process: the runner, the zygote, the steps' processes (those
    the zygote reaped; a one-job runner's steps are its own children)."""
    (cpu, faults), zygote_before = before
    now_cpu, now_faults = usage_of(resource.RUSAGE_SELF)
    usage = {"runner": [round((now_cpu - cpu) / 1e6, 6), now_faults - faults]}
    if zygote is not None and zygote_before is not None and not zygote.gone:
        z = [a - b for a, b in zip(zygote.usage, zygote_before, strict=True)]
        usage.update(zygote=[round(z[0] / 1e6, 6), z[1]], steps=[round(z[2] / 1e6, 6), z[3]])
    return usage


def _job_stream(args):
    """Where a warm runner reads its jobs and writes its events: stdin and stdout, or with ``--connect PATH``
    the Unix socket the host listens on there (bound in read-only; the host removes it once this process is
    connected, before the first job): the jobs then go past the container engine's stream copies. When the
    socket cannot be reached (an engine on another machine), stdin and stdout, and a line that says so."""
    if "--connect" in args and args.index("--connect") + 1 < len(args):
        path = args[args.index("--connect") + 1]
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # not inheritable: no step's process holds it
        try:
            conn.connect(path)
        except OSError as exc:
            conn.close()
            sys.stdout.write(json.dumps({"event": "transport", "socket": False, "error": str(exc)}) + "\n")
            sys.stdout.flush()
        else:
            return conn.makefile("rb"), conn.makefile("w", encoding="utf-8", newline="\n")
    return sys.stdin.buffer, sys.stdout


def main():
    if os.environ.get(SANDBOX_ENV) != "1":
        # Between jobs the runner empties /tmp and /dev/shm: run on a host, it would wipe the host's.
        sys.stderr.write(f"runner.py runs only inside a sandbox ({SANDBOX_ENV}=1, set by the sandbox images and "
                         "the Docker and bwrap backends); it empties /tmp and /dev/shm between jobs\n")
        sys.exit(2)
    for sig in IGNORED_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    procs.make_undumpable()
    if "--serve" in sys.argv[1:]:
        # A warm container: one job per line, run one after another, until the stream ends. The zygote is
        # forked before any job is read and the next standby before the next job is, so neither holds job
        # data.
        stdin, stdout = _job_stream(sys.argv[1:])
        gc.freeze()  # the zygote then shares these pages instead of each collection copying them
        zygote = None
        while True:
            if zygote is None or zygote.gone:
                zygote = Zygote()
                zygote.baseline = {0: process_state(0), zygote.pid: process_state(zygote.pid)}
                unlisted_ipc()  # before any job: probing later would be probing what a job may have left
            zygote.ask_standby()
            line = stdin.readline()
            if not line:
                zygote.close()
                return
            job = json.loads(line)
            del line
            if "stop" in job:
                continue  # a "stop" that came after its job had ended
            if "session" in job:  # this sandbox now belongs to one session, until the host removes it
                session.serve(job, stdin, stdout, zygote, _scrub)
                return
            run_job(job, stdout, zygote, stdin)
            del job
    job = json.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    run_job(job, sys.stdout)


if __name__ == "__main__":
    main()
