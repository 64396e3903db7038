"""Cgroup limits for sandboxes that are plain processes (the bubblewrap backend).

Docker puts each container in a cgroup of its own. A bubblewrap sandbox gets
one only where this process may create child cgroups:

- cgroup v2: a cgroup whose ``cgroup.subtree_control`` enables ``memory`` and
  ``pids`` (``cpu`` when it can), writable by us. ``auto`` tries this
  process's own cgroup; that works when it is the root cgroup or when the
  controllers are already on there (v2 forbids enabling them in a cgroup that
  holds processes, so a service in an ordinary cgroup must be given one with
  ``bwrap_cgroup=/sys/fs/cgroup/...``).
- cgroup v1 (hybrid hosts): this process's own cgroup in the ``memory``,
  ``pids`` and ``cpu`` hierarchies, if writable.

Each sandbox gets a child ``rlvr-bwrap-<owner>-<n>`` with ``memory`` (no swap),
``pids`` and ``cpu`` limits. bubblewrap's processes are moved in (``add``)
while the sandbox waits to run its command, so nothing of it runs outside.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "rlvr-bwrap-"
WANTED = ("memory", "pids", "cpu")
REQUIRED = ("memory", "pids")
# v1 controllers a sandbox gets a cgroup in only to be shown it, no limit set: the JVM reads its container limits
# from v1 cgroups only where cpuset, cpu, cpuacct and memory are all mounted (else it sizes itself by the host)
SHOWN_V1 = ("cpuset", "cpuacct")


@dataclass(frozen=True)
class CgroupPlan:
    """Where sandbox cgroups are made: one parent per controller (v2: the same for all)."""

    version: int
    parents: dict[str, Path]

    @property
    def controllers(self) -> tuple[str, ...]:
        return tuple(c for c in WANTED if c in self.parents)

    def describe(self) -> str:
        where = sorted({str(p) for p in self.parents.values()})
        return f"cgroup v{self.version} under {', '.join(where)}"


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(fstype, mount root, mount point, super options) of every cgroup mount."""
    out = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        parts, tail = left.split(), right.split()
        if len(parts) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        out.append((tail[0], parts[3], parts[4].replace("\\040", " "), set(tail[2].split(","))))
    return out


def _under(mount_root: str, mount_point: str, path: str) -> Path | None:
    """The directory of cgroup ``path`` (as /proc/self/cgroup names it) in a mount, if visible there."""
    root = mount_root.rstrip("/")
    if root and path != root and not path.startswith(root + "/"):
        return None
    return Path(mount_point) / path[len(root):].lstrip("/")


def _enabled(directory: Path) -> set[str]:
    try:
        return set((directory / "cgroup.subtree_control").read_text().split())
    except OSError:
        return set()


def _v2_plan(directory: Path) -> tuple[CgroupPlan | None, str]:
    try:
        available = set((directory / "cgroup.controllers").read_text().split())
    except OSError as exc:
        return None, f"{directory} is not a cgroup v2 directory ({exc.strerror})"
    missing = [c for c in REQUIRED if c not in available]
    if missing:
        return None, f"cgroup v2 at {directory} lacks the {', '.join(missing)} controller(s)"
    if not os.access(directory, os.W_OK):
        return None, f"cgroup v2 at {directory} is not writable by this process"
    wanted = [c for c in WANTED if c in available and c not in _enabled(directory)]
    if wanted:
        try:
            (directory / "cgroup.subtree_control").write_text(" ".join("+" + c for c in wanted))
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                return None, (f"cgroup v2 at {directory} holds processes, so it cannot enable controllers for "
                              f"children; set bwrap_cgroup to a delegated cgroup with memory and pids enabled in "
                              f"its cgroup.subtree_control")
            return None, f"cannot enable {' '.join(wanted)} in {directory}/cgroup.subtree_control ({exc.strerror})"
    enabled = _enabled(directory)
    if any(c not in enabled for c in REQUIRED):
        return None, f"cgroup v2 at {directory} does not enable memory and pids for its children"
    return CgroupPlan(2, {c: directory for c in WANTED if c in enabled}), ""


def detect(setting: str, proc_cgroup: str | None = None, mountinfo: str | None = None) -> tuple[CgroupPlan | None, str]:
    """The cgroup plan for ``bwrap_cgroup`` (``auto``, ``off`` or a v2 directory), or None and why not."""
    if setting == "off":
        return None, "turned off (bwrap_cgroup=off)"
    if setting != "auto":
        return _v2_plan(Path(setting))
    try:
        proc_cgroup = Path("/proc/self/cgroup").read_text() if proc_cgroup is None else proc_cgroup
        mountinfo = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
    except OSError as exc:
        return None, f"cannot read this process's cgroups ({exc})"
    own: dict[str, str] = {}  # controller ("" for v2) -> path
    for line in proc_cgroup.splitlines():
        hierarchy, controllers, path = [*line.split(":", 2), "", ""][:3]
        if hierarchy == "0" and controllers == "":
            own[""] = path
        for name in controllers.split(","):
            if name:
                own[name] = path
    reasons = []
    mounts = _mounts(mountinfo)
    for fstype, root, point, _ in mounts:
        if fstype == "cgroup2" and "" in own:
            directory = _under(root, point, own[""])
            if directory is None:
                continue
            plan, why = _v2_plan(directory)
            if plan is not None:
                return plan, ""
            reasons.append(why)
    parents: dict[str, Path] = {}
    for fstype, root, point, options in mounts:
        if fstype != "cgroup":
            continue
        for name in (*WANTED, *SHOWN_V1):
            if name in options and name in own and name not in parents:
                directory = _under(root, point, own[name])
                if directory is not None and os.access(directory, os.W_OK):
                    parents[name] = directory
    if all(c in parents for c in REQUIRED):
        return CgroupPlan(1, parents), ""
    if any(fstype == "cgroup" for fstype, *_ in mounts):
        reasons.append("cgroup v1: this process's memory and pids cgroups are not both writable")
    return None, "; ".join(reasons) or "no cgroup file system is mounted"


@dataclass
class SandboxCgroup:
    """The cgroup(s) of one sandbox: limits set, joined by the sandbox's first process."""

    plan: CgroupPlan
    name: str
    dirs: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def create(cls, plan: CgroupPlan, name: str, memory_bytes: int, pids: int, cpus: float) -> SandboxCgroup:
        self = cls(plan, name)
        try:
            for controller, parent in plan.parents.items():
                directory = parent / name
                if directory not in self.dirs.values():
                    directory.mkdir()
                    if controller == "cpuset":  # (v1: a new cpuset has no CPUs or memory nodes until given some)
                        for key in ("cpuset.cpus", "cpuset.mems"):
                            (directory / key).write_text((parent / key).read_text())
                self.dirs[controller] = directory
            self._limit(memory_bytes, pids, cpus)
        except OSError:
            self.remove()
            raise
        return self

    def _limit(self, memory_bytes: int, pids: int, cpus: float) -> None:
        period = 100_000
        quota = max(1000, int(cpus * period))
        if self.plan.version == 2:
            d = self.dirs["memory"]
            (d / "memory.max").write_text(str(memory_bytes))
            if (d / "memory.swap.max").exists():
                (d / "memory.swap.max").write_text("0")
            (self.dirs["pids"] / "pids.max").write_text(str(pids))
            if "cpu" in self.dirs:
                (self.dirs["cpu"] / "cpu.max").write_text(f"{quota} {period}")
            return
        d = self.dirs["memory"]
        (d / "memory.limit_in_bytes").write_text(str(memory_bytes))
        if (d / "memory.memsw.limit_in_bytes").exists():  # swap accounting on: no swap either
            (d / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (self.dirs["pids"] / "pids.max").write_text(str(pids))
        if "cpu" in self.dirs:
            (self.dirs["cpu"] / "cpu.cfs_period_us").write_text(str(period))
            (self.dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(quota))

    def shown(self) -> list[tuple[Path, str]]:
        """(directory, where the sandbox sees it) of each of its cgroups, as a container's cgroup namespace shows
        them: v2 at /sys/fs/cgroup, v1 each controller's at /sys/fs/cgroup/<controller>."""
        if self.plan.version == 2:
            return [(self.dirs["memory"], "/sys/fs/cgroup")]
        names: dict[Path, list[str]] = {}
        for controller, directory in self.dirs.items():
            names.setdefault(directory, []).append(controller)
        return [(d, f"/sys/fs/cgroup/{','.join(sorted(c))}") for d, c in names.items()]

    def add(self, *pids: int) -> None:
        """Moves processes (not yet running anything of the sandbox's) into the sandbox's cgroup(s)."""
        for directory in dict.fromkeys(self.dirs.values()):
            for pid in pids:
                (directory / "cgroup.procs").write_text(str(pid))

    def oom_kills(self) -> int:
        directory = self.dirs.get("memory")
        if directory is None:
            return 0
        name = "memory.events" if self.plan.version == 2 else "memory.oom_control"
        try:
            for line in (directory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def pids(self) -> set[int]:
        found: set[int] = set()
        for directory in set(self.dirs.values()):
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in (directory / "cgroup.procs").read_text().split())
        return found

    def kill(self, timeout: float = 5.0) -> None:
        """Kills every process in the sandbox's cgroup(s) and waits until they are gone."""
        deadline = time.monotonic() + timeout
        kill_file = self.dirs.get("pids", Path("/nonexistent")) / "cgroup.kill"
        while True:
            pids = self.pids()
            if not pids or time.monotonic() > deadline:
                return
            if self.plan.version == 2 and kill_file.exists():
                with contextlib.suppress(OSError):
                    kill_file.write_text("1")
            else:
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self, timeout: float = 5.0) -> bool:
        """Removes the cgroup directories (after ``kill``); False if one would not go."""
        deadline = time.monotonic() + timeout
        ok = True
        for directory in dict.fromkeys(self.dirs.values()):
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        ok = False
                        break
                    time.sleep(0.02)
        return ok


def leftovers(plan: CgroupPlan) -> list[Path]:
    """Sandbox cgroups under the plan's parents (of this or any other service)."""
    found = []
    for directory in dict.fromkeys(plan.parents.values()):
        with contextlib.suppress(OSError):
            found += [p for p in directory.iterdir() if p.name.startswith(PREFIX) and p.is_dir()]
    return found
