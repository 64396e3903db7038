"""What the languages image builds once, built for the bubblewrap host's own toolchains: Go's standard library
(and testify) precompiled (``sandboxes/langs/prepare-go.sh``) and Rust's crates rand, regex and md5
(``sandboxes/langs/rust-crates.sh``).

The languages image has them under ``/opt/rlvr-langs/go`` and ``/opt/rlvr-langs/rust-crates``; a bubblewrap
sandbox runs the host's ``go`` and ``rustc`` (``/usr``), so they are built here, on the host, by the same scripts,
for the toolchain the host has, once per toolchain (a directory per toolchain's identity: its version, its
sources, the script), and bound read-only at those paths in every sandbox. Each directory is made (empty) when the
backend starts and bound from then on; it is filled the first time a check needs the language
(``kinds/probe.py`` awaits ``BwrapSandbox.prepare`` before its hello-world program), so a service starts at once
and a warm sandbox sees the files as soon as they are there. The files a compile reads first to find the others
(``importcfg``, ``rustc.args``) are moved in last.

Nothing here runs a completion: the scripts compile Debian's sources of the host's packages, as root where the
service is root, into the cache directory (``bwrap_langs_cache``). What fails is the backend's, never the
completion's: ``prepare`` answers why, and the probe turns that into INFRA_ERROR naming the backend.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

HOST_PATH = "/usr/local/bin:/usr/bin:/bin"  # the sandbox's PATH: the toolchains its programs run
LANGS_DIR = "/opt/rlvr-langs"  # where the languages image has its helpers (kinds/languages.py); bound there here
BUILD_TIMEOUT_S = 1200.0
READY = "READY"
LAST = ("tooldir", "VERSIONS", "importcfg", "rustc.args")  # moved in last, in this order: what a compile reads first


def default_cache_root() -> Path:
    """Where the builds go when ``bwrap_langs_cache`` is '': /var/cache for a root service (a path every uid can
    reach: the sandboxes run as an unprivileged uid), the user's cache directory otherwise."""
    if os.geteuid() == 0:
        return Path("/var/cache/rlvr-verifier/bwrap-langs")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rlvr-verifier" / "bwrap-langs"


def _output(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={"PATH": HOST_PATH, "HOME": "/"})
    except (OSError, subprocess.SubprocessError) as exc:
        return f"! {exc}"
    return f"{out.returncode}\n{out.stdout}{out.stderr}"


@dataclass
class LangBuild:
    """One thing to build for the host's toolchain: ``name`` (``go``, ``rust-crates``) is also its directory under
    ``/opt/rlvr-langs`` in the sandbox."""

    name: str
    script: Path
    directory: Path | None = None  # the cache directory bound in the sandbox; None: nothing to build or bind
    missing: str = ""               # why there is nothing (the INFRA_ERROR's reason)
    error: str | None = None        # a build that failed: why
    done: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def mount(self) -> str:
        return f"{LANGS_DIR}/{self.name}"

    def ensure(self) -> str | None:
        """Builds the directory's files unless they are there (blocking; once per process, and once per host:
        other services wait on the same lock file); None when they are, else why not."""
        if self.directory is None:
            return self.missing or f"nothing to build {self.name} with"
        with self.lock:
            if self.done:
                return self.error
            self.error = self._build()
            self.done = True
            return self.error

    def _build(self) -> str | None:
        assert self.directory is not None
        if (self.directory / READY).is_file():
            return None
        root = self.directory.parent
        with open(root / f".lock-{self.name}", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another service process on this host may be building it
            if (self.directory / READY).is_file():
                return None
            work = root / f".build-{self.directory.name}-{os.getpid()}"
            shutil.rmtree(work, ignore_errors=True)
            log.info("bwrap: building %s for the host's toolchain into %s (once)", self.name, self.directory)
            try:
                out = subprocess.run(["sh", str(self.script), str(work), self.mount], capture_output=True, text=True,
                                     timeout=BUILD_TIMEOUT_S, env={"PATH": HOST_PATH, "HOME": "/",
                                                                   "TMPDIR": str(root)}, cwd=root)
            except (OSError, subprocess.SubprocessError) as exc:
                shutil.rmtree(work, ignore_errors=True)
                return f"building {self.name} for the host's toolchain failed ({self.script.name}: {exc})"
            if out.returncode != 0 or not work.is_dir():
                shutil.rmtree(work, ignore_errors=True)
                said = " | ".join((out.stderr or out.stdout).strip().splitlines()[-3:])[-400:]
                return (f"building {self.name} for the host's toolchain failed ({self.script.name} exit "
                        f"{out.returncode}: {said})")
            for path in sorted(work.rglob("*")):
                with contextlib.suppress(OSError):
                    path.chmod(0o755 if path.is_dir() else 0o644)
            entries = sorted(work.iterdir(), key=lambda p: (p.name in LAST, LAST.index(p.name) if p.name in LAST
                                                             else 0, p.name))
            for entry in entries:  # into the directory the sandboxes bind (a new directory would not show there)
                target = self.directory / entry.name
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                os.replace(entry, target)
            shutil.rmtree(work, ignore_errors=True)
            (self.directory / READY).write_text(out.stdout.strip()[-2000:] + "\n")
            log.info("bwrap: %s", out.stdout.strip().splitlines()[-1] if out.stdout.strip() else self.name)
            return None


def plan(helpers: Path | None, cache_root: Path) -> dict[str, LangBuild]:
    """The builds this host's toolchains need: {name: LangBuild}, each with its cache directory made (empty), or
    ``missing`` saying why there is none (no toolchain, no script, a cache directory that cannot be made)."""
    builds: dict[str, LangBuild] = {}
    for name, script, tools in (("go", "prepare-go.sh", ("go",)), ("rust-crates", "rust-crates.sh",
                                                                    ("rustc", "cargo"))):
        build = builds[name] = LangBuild(name, (helpers or Path("/nonexistent")) / script)
        if helpers is None or not build.script.is_file():
            build.missing = f"the helper script {script} is not here (sandboxes/langs of a source checkout)"
            continue
        found = {tool: shutil.which(tool, path=HOST_PATH) for tool in tools}
        absent = [tool for tool, path in found.items() if path is None]
        if absent:
            build.missing = f"the host has no {' or '.join(absent)} (on {HOST_PATH})"
            continue
        identity = [build.script.read_bytes().decode("utf-8", "replace")]
        if name == "go":
            identity += [_output([found["go"], "version"]), _output([found["go"], "env", "GOROOT", "GOTOOLDIR"])]
            testify = Path("/usr/share/gocode/src/github.com/stretchr/testify")
            identity.append(str(testify.stat().st_mtime_ns) if testify.is_dir() else "no testify")
        else:
            identity += [_output([found["rustc"], "-vV"]), _output([found["cargo"], "--version"])]
            registry = Path("/usr/share/cargo/registry")
            identity.append(" ".join(sorted(p.name for p in registry.iterdir())) if registry.is_dir() else "none")
        key = hashlib.sha256("\0".join(identity).encode()).hexdigest()[:16]
        directory = cache_root / f"{name}-{key}"
        try:
            directory.mkdir(mode=0o755, parents=True, exist_ok=True)
            for p in (cache_root, directory):  # (mkdir's mode is masked by the umask)
                if p.stat().st_uid == os.geteuid():
                    p.chmod(0o755)
        except OSError as exc:
            build.missing = f"the cache directory {directory} cannot be made ({exc})"
            continue
        build.directory = directory
    return builds
