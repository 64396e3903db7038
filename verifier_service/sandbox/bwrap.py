"""The bubblewrap sandbox backend, for hosts without Docker (HPC clusters, GPU nodes).

Each sandbox is a ``bwrap`` process running the same runner as the Docker
image (``verifier_service/runner``, bound read-only at ``/opt/rlvr``), with the same
job protocol over its stdin and stdout, warm (``--serve``) or one per job.
Every sandbox has its own user, pid, network (loopback only), IPC, UTS,
cgroup and mount namespaces; the runner is PID 1 in it; uid 10001 inside with
every capability dropped; nested user namespaces disabled; a root file system
of read-only binds of only what the interpreter needs (``/usr``, the
interpreter's prefixes, a few ``/etc`` files) with size-limited tmpfs ``/tmp``
and ``/dev/shm``. Limits for the whole sandbox come from a cgroup where one
can be made (see ``cgroups.py``), otherwise from rlimits only, and
``isolation()`` says which. A sandbox with cgroups starts in them and is shown
them, read-only, at ``/sys/fs/cgroup`` (its cgroup namespace rooted there, as
a container's), so runtimes size themselves by its limits, not the host's.
When the service runs as root each sandbox runs as an unprivileged host uid of
its own (so RLIMIT_NPROC binds and an escape is not root), unless a path it
needs is unreachable for such a uid.

Jobs name the sandbox interpreter ``python3`` (the image's); here that is the
configured interpreter (``bwrap_python``, default this service's own), bound
at its own path. What this backend does not isolate compared with Docker is in
docs/security.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import hashlib
import itertools
import json
import logging
import os
import pwd
import selectors
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifier_service.config import ServiceConfig
from verifier_service.errors import SandboxUnavailable
from verifier_service.runner import wire
from verifier_service.sandbox import bwrap_langs, cgroups, seccomp
from verifier_service.sandbox.base import SANDBOX_ENV, Job
from verifier_service.sandbox.bwrap_langs import LANGS_DIR
from verifier_service.sandbox.protocol import PipeStream
from verifier_service.sandbox.warm import Instance, PooledSandbox

log = logging.getLogger(__name__)

SANDBOX_UID = 10001
HARNESS_DIR = wire.RUNNER_DIR
OWNER_ENV = "RLVR_SANDBOX_OWNER"    # in bwrap's argv: which service process started the sandbox
LABELS_ENV = "RLVR_SANDBOX_LABELS"  # in bwrap's argv: sandbox_labels, for tests and operators
AS_SLACK = 64 << 20                 # the sandbox-wide address-space limit sits this far above memory_mb
FIX_BWRAP = ("install bubblewrap (as root: `apt-get install bubblewrap`; without a package manager, "
             "`dpkg -x bubblewrap_*.deb DIR` and point --bwrap-path at DIR/usr/bin/bwrap)")
REQUIRED_OPTIONS = ("--unshare-all", "--unshare-user", "--die-with-parent", "--as-pid-1", "--new-session",
                    "--cap-drop", "--uid", "--clearenv", "--ro-bind", "--ro-bind-data", "--info-fd", "--block-fd",
                    "--tmpfs", "--remount-ro")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "nsswitch.conf")
# The host toolchains' own configuration under /etc (the JVM's java.security, Mono's, PHP's, R's): bound where the
# host has them, so that a language installed there works in the sandbox (kinds/probe.py finds out whether it does).
ETC_TOOLCHAIN_GLOBS = ("java-*", "mono", "php", "R", "perl")
SANDBOX_OWN = ("/tmp", "/dev", "/proc", HARNESS_DIR)  # the sandbox's own mounts: nothing of the host under them
TOP_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_SERIAL = itertools.count(1)
PASSWD = (f"root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
          f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}::/tmp:/usr/sbin/nologin\n"
          f"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
GROUP = f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n"
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
PROBE = """
import importlib.util, json, os, sys
print(json.dumps({"version": sys.version.split()[0], "executable": sys.executable,
    "prefixes": [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix],
    "pytest": importlib.util.find_spec("pytest") is not None,
    "ok": all(os.path.isdir(p) for p in sys.path if p.endswith("lib-dynload"))}))
"""


def default_langs_dir() -> Path | None:
    """The languages' helper scripts (the TypeScript transpiler's driver, Go's build script, Node.js's stdout) of
    a source checkout (``sandboxes/langs``), bound at ``/opt/rlvr-langs`` as the languages image has them; None
    where the package was installed without them (those languages then fail their probe: INFRA_ERROR)."""
    found = Path(__file__).resolve().parents[2] / "sandboxes" / "langs"
    return found if (found / "tsc-transpile.js").is_file() else None


def default_runner_dir() -> Path:
    """The runner shipped in this package (``verifier_service/runner``, package data)."""
    return Path(__file__).resolve().parents[1] / "runner"


def _start_time(pid: int) -> str | None:
    """A process's start time (clock ticks since boot): with the pid, it names one process for good."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()[19]


def owner_tag(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{_start_time(pid)}"


def owner_alive(tag: str) -> bool:
    pid, _, started = tag.partition(".")
    return pid.isdigit() and _start_time(int(pid)) == started


def _ppid(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(text[text.rindex(")") + 2:].split()[1])


def sandbox_processes() -> dict[int, dict[str, str]]:
    """Every bubblewrap sandbox this backend started, on this host: bwrap's pid -> the env it set (owner,
    labels). A sandbox's PID 1 still setting up (a fork of bwrap, same command line) is not counted again."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        marks = {}
        for i in range(len(argv) - 2):
            if argv[i] == b"--setenv" and argv[i + 1] in (OWNER_ENV.encode(), LABELS_ENV.encode()):
                marks[argv[i + 1].decode()] = argv[i + 2].decode("utf-8", "replace")
            if argv[i] == b"--":
                break
        if OWNER_ENV in marks:
            found[int(entry)] = marks
    return {pid: marks for pid, marks in found.items() if _ppid(pid) not in found}


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


MOVED_ROOT = "/.rlvr-host"
"""Where interpreter directories that lie under one of the sandbox's own mounts (a venv in a checkout under /tmp)
are bound instead: ``MOVED_ROOT/<n>`` for the n-th such directory."""


@dataclass(frozen=True)
class Interpreter:
    path: str
    version: str
    binds: tuple[str, ...]  # host directories bound read-only (at their own paths unless moved)
    pytest: bool

    def inside(self, host_path: str) -> str:
        """Where ``host_path`` (a bind or a path in one) is inside the sandbox."""
        for n, bind in enumerate(b for b in self.binds if _hidden_by_sandbox(b)):
            if host_path == bind or host_path.startswith(bind + "/"):
                return f"{MOVED_ROOT}/{n}{host_path[len(bind):]}"
        return host_path

    @property
    def sandbox_path(self) -> str:
        """The interpreter's path inside the sandbox."""
        return self.inside(self.path)


def _hidden_by_sandbox(path: str) -> str | None:
    """The sandbox mount (``/tmp``, ``/dev``, ...) that would hide ``path`` at its own place, if any."""
    return next((d for d in SANDBOX_OWN if path == d or path.startswith(d + "/")), None)


def probe_interpreter(path: str) -> Interpreter:
    """Asks the interpreter (on the host) where it lives: the directories the sandbox must bind."""
    resolved = shutil.which(path) if os.sep not in path else path
    if not resolved or not os.access(resolved, os.X_OK):
        raise SandboxUnavailable(f"bwrap_python {path!r} is not an executable interpreter")
    resolved = os.path.abspath(resolved)
    try:
        out = subprocess.run([resolved, "-I", "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
        info = json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        raise SandboxUnavailable(f"bwrap_python {resolved!r} does not run as a Python interpreter: {exc}") from exc
    candidates = [*info["prefixes"], os.path.dirname(resolved), os.path.dirname(os.path.realpath(resolved)),
                  os.path.dirname(info["executable"] or resolved)]
    binds: list[str] = []
    for item in candidates:
        for p in (os.path.abspath(item), os.path.realpath(item)):
            if p.endswith("/bin"):  # a bin dir: bind its prefix, where the libraries are
                p = os.path.dirname(p)
            if p in ("/", "") or not os.path.isdir(p):
                continue
            if p == "/usr" or p.startswith("/usr/"):
                continue  # bound anyway
            binds.append(p)
    unique = sorted(set(binds), key=len)
    binds = [p for i, p in enumerate(unique) if not any(p.startswith(q + "/") for q in unique[:i])]
    for p in binds:  # a directory under the sandbox's own /tmp is bound elsewhere (Interpreter.inside)
        if p.count("/") < 2 and p not in ("/opt",):
            raise SandboxUnavailable(f"bwrap_python {resolved!r} lives in {p}: binding it would show the sandbox a "
                                     f"top-level directory of the host; use an interpreter in its own prefix")
    return Interpreter(resolved, info["version"], tuple(binds), bool(info["pytest"]))


def _reachable_by_others(path: str) -> bool:
    """Whether an unprivileged uid can reach (and read) ``path``: every directory above it o+x."""
    p = Path(path)
    for part in [*reversed(p.parents), p]:
        try:
            mode = os.stat(part).st_mode
        except OSError:
            return False
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return False
    try:
        return bool(os.stat(p).st_mode & stat.S_IROTH)
    except OSError:
        return False


@dataclass
class _Proc:
    """What one bubblewrap sandbox holds on the host."""

    proc: subprocess.Popen
    child_pid: int | None = None   # the runner: PID 1 of the sandbox's pid namespace, as the host sees it
    pidfd: int | None = None
    cgroup: cgroups.SandboxCgroup | None = None


class BwrapSandbox(PooledSandbox):
    backend = "bwrap"

    def __init__(self, config: ServiceConfig):
        super().__init__(config)
        self.owner = owner_tag()
        self._instances: dict[str, Instance] = {}
        self._ready = False  # the full check (binary, interpreter, a trial sandbox) has passed
        self._check_lock = threading.Lock()
        self.bwrap: str | None = None
        self.version = ""
        self.options: set[str] = set()
        self.interpreter: Interpreter | None = None
        self.runner_dir = Path(config.bwrap_runner_dir) if config.bwrap_runner_dir else default_runner_dir()
        self.cgroup_plan: cgroups.CgroupPlan | None = None
        self.cgroup_reason = ""
        self.host_uid: int | None = None  # None: sandboxes map to this service's own uid
        self.setpriv: str | None = None
        self.prlimit: str | None = None
        self.uid_reason = ""
        self.gxx = False
        self.lang_builds: dict[str, bwrap_langs.LangBuild] = {}  # what the host's Go and Rust need (bwrap_langs.py)
        self.seccomp: bytes | None = seccomp.program() if config.sandbox_seccomp else None

    # ---- checks --------------------------------------------------------------

    def _find_bwrap(self) -> str:
        path = self.config.bwrap_path
        found = shutil.which(path) if os.sep not in path else path
        if not found or not os.path.isfile(found):
            raise SandboxUnavailable(f"bubblewrap not found ({path!r}); {FIX_BWRAP}")
        if not os.access(found, os.X_OK):
            raise SandboxUnavailable(f"bubblewrap at {found} is not executable; {FIX_BWRAP}")
        return os.path.abspath(found)

    def check_blocking(self) -> None:
        """Raises SandboxUnavailable (saying how to fix it) unless sandboxes start and run Python.
        The full check (with a trial sandbox) runs once; later calls only look for the binaries."""
        bwrap = self._find_bwrap()
        if (self._ready and bwrap == self.bwrap and self.interpreter and os.access(self.interpreter.path, os.X_OK)
                and self.pool_error is None):
            return  # after a failed sandbox start (pool_error) the full check runs again
        with self._check_lock:
            self._full_check(bwrap)

    def _full_check(self, bwrap: str) -> None:
        self._ready = False
        try:
            out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=30)
            usage = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxUnavailable(f"bubblewrap at {bwrap} does not run ({exc}); {FIX_BWRAP}") from exc
        if out.returncode != 0:
            detail = (out.stderr or out.stdout).strip()[-500:]
            raise SandboxUnavailable(f"bubblewrap at {bwrap} does not run (`bwrap --version` exit {out.returncode}: "
                                     f"{detail}); {FIX_BWRAP}")
        self.version = out.stdout.strip().removeprefix("bubblewrap ") or "?"
        self.options = {line.split()[0] for line in usage.stdout.splitlines() if line.strip().startswith("--")}
        missing = [o for o in REQUIRED_OPTIONS if o not in self.options]
        if missing:
            raise SandboxUnavailable(f"bubblewrap {self.version} at {bwrap} lacks {', '.join(missing)}; "
                                     f"bubblewrap 0.4 or newer is needed")
        if not (self.runner_dir / "runner.py").is_file():
            raise SandboxUnavailable(f"the sandbox runner is not at {self.runner_dir}: reinstall the package (it "
                                     f"ships the runner in verifier_service/runner) or set --bwrap-runner-dir")
        self.bwrap = bwrap
        self.interpreter = probe_interpreter(self.config.bwrap_python or sys.executable)
        repo = Path(__file__).resolve().parents[2]  # the checkout (or site-packages) holding this package
        for p in self.interpreter.binds:
            if repo == Path(p) or Path(p) in repo.parents:
                raise SandboxUnavailable(f"bwrap_python's prefix {p} contains the service's checkout {repo}: the "
                                         f"sandbox would see it; use an interpreter installed elsewhere")
        self.gxx = shutil.which("g++", path="/usr/local/bin:/usr/bin:/bin") is not None
        if self.cgroup_plan is None:
            self.cgroup_plan, self.cgroup_reason = cgroups.detect(self.config.bwrap_cgroup)
            if self.cgroup_plan is None and self.config.bwrap_cgroup not in ("auto", "off"):
                raise SandboxUnavailable(f"bwrap_cgroup={self.config.bwrap_cgroup}: {self.cgroup_reason}")
        self.setpriv = shutil.which("setpriv")
        self.prlimit = next((p for p in ("/usr/bin/prlimit", "/bin/prlimit") if os.access(p, os.X_OK)), None)
        self._choose_host_uid()
        self._plan_lang_builds()
        version = self._trial()
        self.image_id = "bwrap:" + self._digest(version)
        self._ready = True
        if not self.process_limit():
            log.warning("bwrap sandboxes have no process limit on this host (no pids cgroup: %s; host uid %s): a fork "
                        "bomb can exhaust the host's pids until its time limit; give the service a cgroup "
                        "(--bwrap-cgroup) or a world-readable interpreter (unprivileged host uid)",
                        self.cgroup_reason or "not delegated", "root" if self.host_uid is None else self.host_uid)

    def _choose_host_uid(self) -> None:
        """Root service: sandboxes run as the unprivileged ``bwrap_host_uid`` (so an escape is not root and
        RLIMIT_NPROC binds), unless a path the sandbox needs is out of that uid's reach."""
        mode, uid = self.config.bwrap_unprivileged, self.config.bwrap_host_uid
        self.host_uid, self.uid_reason = None, ""
        if mode == "off":
            self.uid_reason = "bwrap_unprivileged=off"
            return
        if os.geteuid() != 0:
            self.uid_reason = f"the service runs as uid {os.geteuid()}, which the sandbox's uid maps to"
            if mode == "on":
                raise SandboxUnavailable("bwrap_unprivileged=on needs the service to run as root (to switch uid)")
            return
        try:
            owner = pwd.getpwuid(uid).pw_name
        except KeyError:
            owner = None
        if owner is not None:
            raise SandboxUnavailable(f"bwrap_host_uid {uid} belongs to user {owner!r}: sandboxes need a uid of "
                                     f"their own (set --bwrap-host-uid to an unused one)")
        assert self.interpreter is not None and self.bwrap is not None
        for path in (self.bwrap, self.interpreter.path, str(self.runner_dir), *self.interpreter.binds):
            if not _reachable_by_others(path):
                self.uid_reason = f"{path} is not reachable by an unprivileged uid"
                if mode == "on":
                    raise SandboxUnavailable(f"bwrap_unprivileged=on: {self.uid_reason} (make it world-readable, or "
                                             f"use bwrap_unprivileged=auto to run sandboxes as host root)")
                self._refuse_host_root()
                return
        self.host_uid = uid

    def _refuse_host_root(self) -> None:
        """A root service whose sandboxes would run as host root (``auto`` found no unprivileged uid that works):
        refused unless ``bwrap_allow_host_root`` says so; allowed, it is logged as a warning at every start."""
        problem = (f"bwrap sandboxes would run as HOST ROOT (capabilities dropped, but an escape is root and "
                   f"RLIMIT_NPROC does not bind): {self.uid_reason}")
        if not self.config.bwrap_allow_host_root:
            raise SandboxUnavailable(f"{problem}. Give the sandbox an interpreter an unprivileged uid can read "
                                     f"(--bwrap-python /usr/bin/python3, or a world-readable install), or allow "
                                     f"it explicitly with --bwrap-allow-host-root true (bwrap_allow_host_root: true)")
        log.warning("%s; allowed by bwrap_allow_host_root", problem)

    def _plan_lang_builds(self) -> None:
        """The directories of what the host's Go and Rust need (``bwrap_langs``), made once per backend: a sandbox
        binds them from its start, and they are filled when a check first needs them (``prepare``)."""
        if self.lang_builds:
            return
        root = Path(self.config.bwrap_langs_cache) if self.config.bwrap_langs_cache else \
            bwrap_langs.default_cache_root()
        builds = bwrap_langs.plan(default_langs_dir(), root)
        for build in builds.values():
            if build.directory is not None and self.host_uid is not None and \
                    not _reachable_by_others(str(build.directory)):
                build.missing = (f"bwrap_langs_cache {build.directory} is not reachable by the sandboxes' uid "
                                 f"{self.host_uid}")
                build.directory = None
        self.lang_builds = builds

    async def prepare(self, what: str) -> str | None:
        """Builds ``what`` (``go``: Go's standard library and testify precompiled; ``rust-crates``) for the host's
        toolchain unless it is built (once; the first call waits for the build): None when it is there, else
        why not (the probe's INFRA_ERROR names it)."""
        if not self._ready:
            await self.check()
        build = self.lang_builds.get(what)
        if build is None:
            return None
        return await asyncio.to_thread(build.ensure)

    def process_limit(self) -> bool:
        """Whether something bounds a sandbox's processes: a pids cgroup, or RLIMIT_NPROC (not for host root)."""
        if self.cgroup_plan is not None and "pids" in self.cgroup_plan.controllers:
            return True
        return self.host_uid is not None and self.prlimit is not None

    def _trial(self) -> str:
        """Runs the interpreter in a real sandbox; its version on success."""
        assert self.interpreter is not None
        code = ("import importlib.util, json, sys; print(json.dumps({'v': sys.version.split()[0], "
                "'pytest': importlib.util.find_spec('pytest') is not None}))")
        try:
            out = self._run_once([self.interpreter.sandbox_path, "-I", "-c", code])
        except SandboxUnavailable as exc:
            if self.host_uid is None or self.config.bwrap_unprivileged == "on":
                raise
            self.host_uid, self.uid_reason = None, f"an unprivileged sandbox failed to start ({exc})"
            self._refuse_host_root()
            out = self._run_once([self.interpreter.sandbox_path, "-I", "-c", code])
        try:
            info = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise SandboxUnavailable(f"the interpreter does not run in the sandbox: {out[-500:]!r}") from None
        self.interpreter = Interpreter(self.interpreter.path, info["v"], self.interpreter.binds, bool(info["pytest"]))
        return info["v"]

    def _run_once(self, command: list[str]) -> str:
        instance = self._launch(command)
        try:
            stream = instance.stream
            assert isinstance(stream, PipeStream)
            stream.close_input()
            deadline = time.monotonic() + 60
            stream.read_to_end(deadline)
            handle: _Proc = instance.handle
            code = handle.proc.wait(max(1.0, deadline - time.monotonic()))
            output = stream.line.decode("utf-8", "replace")
            if code != 0:
                detail = bytes(stream.stderr).decode("utf-8", "replace").strip()[-800:]
                raise SandboxUnavailable(f"bubblewrap could not run a sandbox (exit {code}): {detail or output[-300:]}")
            return output
        except subprocess.TimeoutExpired as exc:
            raise SandboxUnavailable("a trial sandbox did not finish in 60 s") from exc
        finally:
            self._discard(instance)

    def _digest(self, version: str) -> str:
        """The result cache's key for what runs the code: the runner's files and the interpreter's version."""
        h = hashlib.sha256(f"python {version}\n".encode())
        for path in sorted(self.runner_dir.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                h.update(str(path.relative_to(self.runner_dir)).encode() + b"\0" + path.read_bytes() + b"\0")
        return h.hexdigest()[:32]

    def isolation(self) -> list[tuple[str, str]]:
        c = self.config
        interp = self.interpreter
        mb = c.memory_mb
        if self.cgroup_plan is not None:
            limits = {"memory": f"memory {mb} MB (no swap)", "pids": f"pids {c.pids_limit}",
                      "cpu": f"cpus {c.cpus:g}"}
            on = [limits[k] for k in self.cgroup_plan.controllers]
            off = [k for k in cgroups.WANTED if k not in self.cgroup_plan.controllers]
            cgroup = f"on: {', '.join(on)} ({self.cgroup_plan.describe()})" + (
                f"; off: {', '.join(off)}" if off else "")
        else:
            cgroup = f"off ({self.cgroup_reason or 'not checked yet'})"
        whole = []
        if self.prlimit is None:
            whole.append("none for the whole sandbox (no prlimit binary)")
        else:
            whole.append(f"open files {c.open_files}")
            if self.host_uid is not None:
                whole.append(f"processes {c.pids_limit} (RLIMIT_NPROC)")
            if self.cgroup_plan is None:
                whole.append(f"address space {mb + (AS_SLACK >> 20)} MB per process (no total)")
        if not self.process_limit():
            whole.append("NO process limit (a fork bomb reaches the host's pid limit)")
        if self.host_uid is not None:
            host = f"host uid {self.host_uid} (unprivileged)"
        else:
            host = f"host uid: {os.geteuid()}{' (root)' if os.geteuid() == 0 else ''}" + (
                f" because {self.uid_reason}" if self.uid_reason else "")
        moved = [f"{b} (at {interp.inside(b)})" if interp.inside(b) != b else b for b in interp.binds] if interp else []
        built = [f"{b.name} {b.directory}" for b in self.lang_builds.values() if b.directory is not None]
        helpers = f"{LANGS_DIR} (language helpers{'; built for the host: ' + ', '.join(built) if built else ''})"
        binds = ["/usr", f"{HARNESS_DIR} (runner)", *moved, *([helpers] if default_langs_dir() else []),
                 "a few /etc files"]
        sys_text = ("of /sys only the sandbox's own cgroups, read-only (as a container sees its own)"
                    if self.cgroup_plan is not None else "no /sys")
        return [
            ("backend", f"bwrap {self.version or '?'} ({self.bwrap or c.bwrap_path}), "
                        f"{'warm pool of ' + str(c.max_concurrency) if c.sandbox_pool else 'a fresh sandbox per job'}"),
            ("interpreter", f"{interp.path} (Python {interp.version}); pytest: {'yes' if interp.pytest else 'no'}; "
                            f"g++: {'yes' if self.gxx else 'no'}" if interp else "not checked yet"),
            ("namespaces", "user, pid, net, ipc, uts, cgroup, mount" + (
                "; nested user namespaces disabled" if "--disable-userns" in self.options else "")),
            ("network", "none (own network namespace: loopback only)"),
            ("user", f"uid {SANDBOX_UID}:{SANDBOX_UID} inside, every capability dropped, no-new-privileges; {host}"),
            ("filesystem", f"read-only binds of {', '.join(binds)}; tmpfs /tmp and /dev/shm {c.tmpfs_mb} MB each; "
                           f"no /home, /run or service files; {sys_text}"),
            ("cgroup limits", cgroup),
            ("rlimits", f"per step: address space, CPU time, file size, open files; per sandbox: {', '.join(whole)}"),
            ("seccomp", seccomp.describe() if self.seccomp is not None else
             "OFF (sandbox_seccomp is false)" if not c.sandbox_seccomp else "none (no system call table for this "
                                                                            "machine)"),
        ]

    # ---- starting and stopping sandboxes ----------------------------------------

    def _argv(self, command: list[str], etc_fds: dict[str, int], info_fd: int, block_fd: int,
              seccomp_fd: int | None, cgroups_shown: list[tuple[Path, str]] | None = None) -> list[str]:
        c = self.config
        assert self.bwrap is not None and self.interpreter is not None
        argv = [self.bwrap, "--unshare-all", "--unshare-user"]
        if "--disable-userns" in self.options:
            argv.append("--disable-userns")
        argv += ["--die-with-parent", "--new-session", "--as-pid-1",
                 "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--cap-drop", "ALL", "--hostname", "sandbox",
                 "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
                 "--setenv", "HOME", "/tmp", "--setenv", "PYTHONHASHSEED", "0", "--setenv", SANDBOX_ENV, "1",
                 "--setenv", OWNER_ENV, self.owner]
        if c.sandbox_labels:
            argv += ["--setenv", LABELS_ENV, c.sandbox_labels]
        argv += ["--ro-bind", "/usr", "/usr"]
        for name in TOP_DIRS:
            path = f"/{name}"
            if os.path.islink(path):
                argv += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                argv += ["--ro-bind", path, path]
        for name in (*ETC_FILES, f"python{self.interpreter.version.rsplit('.', 1)[0]}"):
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        for pattern in ETC_TOOLCHAIN_GLOBS:
            for found in sorted(glob.glob(f"/etc/{pattern}")):
                argv += ["--ro-bind", found, found]
        helpers = default_langs_dir()
        built = {b.name: b for b in self.lang_builds.values() if b.directory is not None}
        if helpers is not None:  # the helper scripts, each at its place (a directory built for this host instead)
            for entry in sorted(helpers.iterdir()):
                if entry.name not in built and not entry.name.startswith("."):
                    argv += ["--ro-bind", str(entry), f"{LANGS_DIR}/{entry.name}"]
        for _, build in sorted(built.items()):
            argv += ["--ro-bind", str(build.directory), build.mount]
        for name, fd in etc_fds.items():
            argv += [*(["--perms", "0644"] if "--perms" in self.options else []), "--ro-bind-data", str(fd),
                     f"/etc/{name}"]
        for path in self.interpreter.binds:
            argv += ["--ro-bind", path, self.interpreter.inside(path)]
        # bwrap makes /proc/sys read-only only where it could write there itself; a sandbox that is host root
        # (without capabilities) could otherwise write the host-wide knobs that check only file modes
        # (vm/drop_caches, ...). The kernel answers /proc/sys by the reader's namespaces, not the mount's.
        argv += ["--ro-bind", str(self.runner_dir), HARNESS_DIR,
                 "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]
        for directory, inside in cgroups_shown or ():
            # The sandbox's own cgroups, read-only, where Docker shows a container its own: the runtimes that
            # size themselves from it (Node.js's heap, the JVM's MaxRAMPercentage, .NET's GC) see the sandbox's
            # limit, not the host's memory. Without it Node.js took a 4 GiB heap and the JVM an 8 GiB one in a
            # 512 MiB sandbox, collected late, and an honest program that makes much garbage (McEval's
            # JavaScript/41) was killed as MEMORY_LIMIT where Docker passed it.
            argv += ["--ro-bind", str(directory), inside]
        if "--mqueue" in self.options:  # the sandbox's POSIX message queues, listed (and checked) by the runner
            argv += ["--mqueue", "/dev/mqueue"]
        for path in ("/tmp", "/dev/shm"):
            if "--size" in self.options:
                argv += ["--size", str(c.tmpfs_mb << 20)]
            argv += ["--tmpfs", path]
        if seccomp_fd is not None:
            argv += ["--seccomp", str(seccomp_fd)]
        argv += ["--remount-ro", "/", "--chdir", "/tmp", "--info-fd", str(info_fd), "--block-fd", str(block_fd),
                 "--", *command]
        return argv

    def _limited(self, command: list[str]) -> list[str]:
        """``command`` behind util-linux's prlimit, run inside the sandbox (after its user namespace exists, so
        RLIMIT_NPROC counts this sandbox's processes only): the limits for the whole sandbox."""
        if self.prlimit is None:
            return command
        c = self.config
        limits = ["--core=0", f"--nofile={c.open_files}"]
        if self.host_uid is not None:
            limits.append(f"--nproc={c.pids_limit}")  # uid 0 on the host is exempt from RLIMIT_NPROC
        if self.cgroup_plan is None:
            limits.append(f"--as={(c.memory_mb << 20) + AS_SLACK}")
        return [self.prlimit, *limits, "--", *command]

    def _launch(self, command: list[str]) -> Instance:
        """Starts bubblewrap running ``command``; the sandbox's runner stream and host handle.

        bubblewrap sets the sandbox up and then waits (``--block-fd``) before it runs the command: meanwhile
        its processes join the sandbox's cgroup, so nothing the command starts ever runs outside it."""
        c = self.config
        cgroup = None
        fds: dict[str, int] = {}
        try:
            name = f"{cgroups.PREFIX}{self.owner}-{next(_SERIAL)}"  # unique in this process, all sandbox objects
            if self.cgroup_plan is not None:
                cgroup = cgroups.SandboxCgroup.create(self.cgroup_plan, name, c.memory_mb << 20, c.pids_limit, c.cpus)
            # Contents bubblewrap reads from pipes: the /etc files we make up, the seccomp program.
            contents = {"passwd": PASSWD.encode(), "group": GROUP.encode(), "hosts": HOSTS.encode()}
            if self.seccomp is not None:
                contents["seccomp"] = self.seccomp
            for key, content in contents.items():
                fds[key], w = os.pipe()
                os.write(w, content)  # a few hundred bytes: within a pipe's buffer
                os.close(w)
            for pipe in ("info", "block", "stdin", "stdout", "stderr"):
                fds[pipe + "_r"], fds[pipe + "_w"] = os.pipe()
            etc = {name: fds[name] for name in ("passwd", "group", "hosts")}
            shown = cgroup.shown() if cgroup is not None else []
            argv = self._argv(self._limited(command), etc, fds["info_w"], fds["block_r"], fds.get("seccomp"), shown)
            kwargs: dict[str, Any] = {}
            if self.host_uid is not None:
                uid = str(self.host_uid)
                if self.setpriv:  # not Popen(user=...): that forks this (threaded) process instead of vfork
                    argv = [self.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", *argv]
                else:
                    kwargs = {"user": self.host_uid, "group": self.host_uid, "extra_groups": []}
            if shown:
                # bubblewrap starts inside the sandbox's cgroups, so the cgroup namespace it makes is rooted there
                # (the sandbox sees "0::/", as in a container): a shell moves itself in, then execs the rest.
                moves = " && ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d, _ in shown)
                argv = ["/bin/sh", "-c", f'{moves} && exec "$@"', "sh", *argv]
            proc = subprocess.Popen(argv, stdin=fds["stdin_r"], stdout=fds["stdout_w"], stderr=fds["stderr_w"],
                                    pass_fds=(fds["info_w"], fds["block_r"], *(fds[k] for k in contents)),
                                    start_new_session=True, close_fds=True, **kwargs)
        except (OSError, subprocess.SubprocessError) as exc:
            for fd in fds.values():
                with contextlib.suppress(OSError):
                    os.close(fd)
            if cgroup is not None:
                cgroup.remove()
            raise SandboxUnavailable(f"could not start bubblewrap: {exc}") from exc
        for key in ("info_w", "block_r", "stdin_r", "stdout_w", "stderr_w", *contents):
            os.close(fds[key])
        handle = _Proc(proc, cgroup=cgroup)
        instance = Instance(f"bwrap-{proc.pid}", PipeStream(fds["stdin_w"], fds["stdout_r"], fds["stderr_r"]),
                            handle=handle)
        self._live.add(instance.id)
        self._instances[instance.id] = instance
        info = self._read_info(fds["info_r"])
        try:
            if not info.get("child-pid"):
                raise SandboxUnavailable("bubblewrap did not start a sandbox")
            handle.child_pid = int(info["child-pid"])
            with contextlib.suppress(OSError, AttributeError):
                handle.pidfd = os.pidfd_open(handle.child_pid)
            if cgroup is not None:
                cgroup.add(proc.pid, handle.child_pid)
            os.write(fds["block_w"], b"1")
        except (SandboxUnavailable, OSError) as exc:
            os.close(fds["block_w"])
            instance.stream.drain_stderr(2.0)  # type: ignore[attr-defined]
            detail = bytes(instance.stream.stderr).decode("utf-8", "replace").strip()[-800:]
            self._discard(instance)
            raise SandboxUnavailable(f"bubblewrap could not start a sandbox: {detail or exc}") from exc
        os.close(fds["block_w"])
        return instance

    @staticmethod
    def _read_info(fd: int, timeout: float = 10.0) -> dict:
        data = b""
        deadline = time.monotonic() + timeout
        try:
            os.set_blocking(fd, False)
            with selectors.DefaultSelector() as sel:
                sel.register(fd, selectors.EVENT_READ)
                while time.monotonic() < deadline:
                    if not sel.select(max(0.0, deadline - time.monotonic())):
                        continue
                    chunk = os.read(fd, 4096)
                    if not chunk:
                        break
                    data += chunk
                    with contextlib.suppress(ValueError):
                        return json.loads(data)
        finally:
            os.close(fd)
        try:
            return json.loads(data) if data else {}
        except ValueError:
            return {}

    def family_of(self, image: str) -> str:
        return ""  # one "image": the host's own /usr (a language whose toolchain it lacks cannot start)

    def _start_instance(self, lifetime_s: float, serve: bool, family: str = "") -> Instance:
        if not self._ready:
            self.check_blocking()
        assert self.interpreter is not None
        # -s, not -I: -I ignores PYTHONHASHSEED (set above, in an environment bwrap cleared).
        command = [self.interpreter.sandbox_path, "-s", f"{HARNESS_DIR}/runner.py", *(["--serve"] if serve else [])]
        return self._launch(command)

    def _discard(self, instance: Instance) -> None:
        """Kills the sandbox's PID 1 (the kernel then kills everything in its pid namespace), waits for
        bubblewrap to end, removes the cgroup and frees the host uid."""
        handle: _Proc = instance.handle
        proc = handle.proc
        instance.stream.close()
        if proc.poll() is None:
            if handle.pidfd is not None:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(handle.pidfd, signal.SIGKILL)
            elif handle.child_pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(handle.child_pid, signal.SIGKILL)
            else:
                proc.kill()
        if handle.cgroup is not None:
            handle.cgroup.kill()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()  # --die-with-parent: the sandbox's PID 1 gets SIGKILL when bwrap dies
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        if handle.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(handle.pidfd)
            handle.pidfd = None
        if handle.cgroup is not None:
            handle.cgroup.kill()
            if not handle.cgroup.remove():
                log.warning("could not remove the sandbox cgroup %s", handle.cgroup.name)
        self._live.discard(instance.id)
        self._instances.pop(instance.id, None)

    async def _remove_remaining(self) -> None:
        for instance in list(self._instances.values()):  # sandboxes of jobs still running
            await asyncio.to_thread(self._discard, instance)

    def _oom_killed(self, instance: Instance) -> bool:
        handle: _Proc = instance.handle
        return handle.cgroup is not None and handle.cgroup.oom_kills() > 0

    def _runner_job(self, job: Job) -> dict[str, Any]:
        data = super()._runner_job(job)
        assert self.interpreter is not None
        for step in data["steps"]:
            if step["argv"] and step["argv"][0] == "python3":
                step["argv"] = [self.interpreter.sandbox_path, *step["argv"][1:]]
        return data

    def remove_orphans_blocking(self) -> int:
        """Kills bubblewrap sandboxes whose service process is gone, and removes their cgroups."""
        removed = 0
        for pid, marks in sandbox_processes().items():
            if owner_alive(marks[OWNER_ENV]):
                continue
            for child in _children(pid):
                with contextlib.suppress(OSError):
                    os.kill(child, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            removed += 1
        if self.cgroup_plan is not None:
            for directory in cgroups.leftovers(self.cgroup_plan):
                tag = directory.name[len(cgroups.PREFIX):].rsplit("-", 1)[0]
                if owner_alive(tag):
                    continue
                leftover = cgroups.SandboxCgroup(self.cgroup_plan, directory.name,
                                                 {k: p / directory.name for k, p in self.cgroup_plan.parents.items()})
                leftover.kill()
                leftover.remove(timeout=1.0)
        return removed
