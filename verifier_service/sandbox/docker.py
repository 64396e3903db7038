"""The Docker sandbox backend: locked-down containers, warm or one per job.

Every container: no network, read-only root, a tmpfs /tmp, uid 10001, every
capability dropped, no-new-privileges, memory / pids / CPU limits, and the
runner's per-step limits (time, file size, output, process-tree kill) inside.
Jobs travel over a stream, so test inputs never touch the image or the host's
disk; step results stream back, one JSON line each. The stream of a warm
container (``sandbox_transport``) is a Unix socket of this service's, bound in
read-only: the runner connects to it before its first job, the service checks
that the peer is the container's init process and removes the socket, so no
other process can reach it (jobs then go past the engine's copies of the attach
stream); or the container's stdin/stdout through the engine (attach: gVisor,
remote engines, one-job containers). The pool (warm containers or one per job)
is ``warm.PooledSandbox``'s.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import selectors
import shutil
import socket
import struct
import tempfile
import time
import uuid

from verifier_service.config import ServiceConfig
from verifier_service.errors import SandboxUnavailable
from verifier_service.sandbox import seccomp
from verifier_service.sandbox.base import SANDBOX_ENV
from verifier_service.sandbox.protocol import DirectStream, SocketStream
from verifier_service.sandbox.warm import Instance, PooledSandbox

log = logging.getLogger(__name__)

LABEL = "rlvr.verifier.sandbox"
EXPIRES_LABEL = "rlvr.verifier.expires"  # unix time after which the container has no business running
OWNER_LABEL = "rlvr.verifier.owner"  # host/pid/start time of the service process that started it
ORPHAN_GRACE_S = 60.0
SANDBOX_USER = "10001:10001"
FIX_DOCKER = ("start a Docker engine (as root: `dockerd &`, or run scripts/setup.sh, which installs "
              "docker.io and starts it) or point DOCKER_HOST / --docker-url at one")
FIX_IMAGE = "build it with `sandboxes/build.sh` (or `verifier-service build-sandbox`)"


def _docker():
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise SandboxUnavailable("the 'docker' Python package is missing: pip install docker") from exc
    return docker


def process_identity(pid: int) -> str:
    """``host/pid/start ticks`` of a process: names it uniquely on this host, pid reuse included."""
    return f"{os.uname().nodename}/{pid}/{_start_ticks(pid)}"


def _start_ticks(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]  # field 22: starttime
    except (OSError, IndexError):
        return ""


def owner_is_gone(owner: str) -> bool:
    """Whether the service process named by an owner label ran on this host and has exited (its sandboxes are
    orphans at once, not only after they expire). Another host's owner, or an unreadable label: not known."""
    host, _, rest = owner.partition("/")
    pid, _, ticks = rest.partition("/")
    if host != os.uname().nodename or not pid.isdigit() or not ticks:
        return False
    return _start_ticks(int(pid)) != ticks


RUNSC_PIDS_FLOOR = 1024
SOCKET_DIR_INSIDE = "/run/rlvr"  # where a warm container sees the directory of the socket its runner connects to
CONNECT_TIMEOUT_S = 20.0
PROTOCOL_LABEL = "rlvr.sandbox.protocol"  # set by sandboxes/python/Dockerfile
RUNNER_PROTOCOL = "3"


class DockerSandbox(PooledSandbox):
    backend = "docker"

    def __init__(self, config: ServiceConfig):
        super().__init__(config)
        self._api_version: str | None = None
        self._runtime = ""
        self._extra_labels = dict(item.strip().split("=", 1) for item in config.sandbox_labels.split(",")
                                  if item.strip())
        self._owner = process_identity(os.getpid())
        self._socket_failed = False  # a runner could not reach its socket (an engine on another machine)
        self.image_ids: dict[str, str] = {}  # image family -> the image's id, once checked

    # ---- engine access ---------------------------------------------------

    def _client(self):
        docker = _docker()
        base_url = self.config.docker_url or os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        try:
            api = docker.APIClient(base_url=base_url, version=self._api_version or "auto", timeout=60)
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(f"Docker engine is not reachable ({exc}); {FIX_DOCKER}") from exc
        self._api_version = api.api_version
        return api

    def check_blocking(self) -> None:
        """Raises SandboxUnavailable (saying how to fix it) unless jobs can run."""
        docker = _docker()
        api = self._client()
        try:
            api.ping()
            self.image_id = self._check_image(api, "")
            if not self._runtime:
                self._runtime = self.config.sandbox_runtime or api.info().get("DefaultRuntime", "") or "runc"
        except (docker.errors.DockerException, OSError) as exc:
            raise SandboxUnavailable(f"Docker engine is not reachable ({exc}); {FIX_DOCKER}") from exc
        finally:
            api.close()

    def image_of(self, family: str) -> str:
        """The Docker image of an image family: "" the default image, "langs" the languages image."""
        return self.config.sandbox_langs_image if family == "langs" else self.config.sandbox_image

    def family_of(self, image: str) -> str:
        return "langs" if image == "langs" else ""

    def _check_image(self, api, family: str) -> str:
        """The id of ``family``'s image, once it is known to be built and to speak the runner's protocol."""
        name = self.image_of(family)
        try:
            image = api.inspect_image(name)
        except _docker().errors.ImageNotFound as exc:
            raise SandboxUnavailable(f"sandbox image {name!r} is not built; {FIX_IMAGE}") from exc
        speaks = ((image.get("Config") or {}).get("Labels") or {}).get(PROTOCOL_LABEL)
        if speaks != RUNNER_PROTOCOL:
            raise SandboxUnavailable(
                f"sandbox image {name!r} speaks runner protocol {speaks or 'unknown'}, this "
                f"service needs {RUNNER_PROTOCOL} (a step's stdin as JSON data, events stamped with the job's token); "
                f"rebuild it: {FIX_IMAGE}")
        self.image_ids[family] = image["Id"]
        return image["Id"]

    def isolation(self) -> list[tuple[str, str]]:
        """The layers every sandbox container gets, read from the settings this backend creates it with."""
        c = self.config
        runtime = self._runtime or c.sandbox_runtime or "?"
        gvisor = runtime == "runsc"
        profile = seccomp.docker_profile() if c.sandbox_seccomp else None
        if profile is not None:
            filtered = f"{seccomp.describe()}; Docker's default profile as the base"
            seccomp_line = ("inside gVisor's kernel (applied by runsc only with --oci-seccomp): the deny-list form "
                            "of the service's policy (its refused calls with EPERM, socket of other families, clone "
                            "with namespace flags, prlimit64 on another process, and "
                            f"{', '.join(seccomp.GVISOR_DENIED)}: gVisor lists no IPC objects, so none may be made); "
                            "every other call to gVisor's kernel, which answers ENOSYS to what it does not implement"
                            if gvisor else filtered)
        elif c.sandbox_seccomp:
            seccomp_line = "Docker's default profile (no system call table of ours for this machine)"
        else:
            seccomp_line = "Docker's default profile (sandbox_seccomp is false)"
        return [
            ("backend", f"docker (image {c.sandbox_image}, languages image {c.sandbox_langs_image}, runtime {runtime}"
                        f"{': gVisor, a user-space kernel between the code and the host' if gvisor else ''})"),
            ("namespaces", "pid, net, ipc (private), uts, mount (the engine's); no user namespace remapping"),
            ("network", "none (--network none: loopback only; no route)"),
            ("user", f"uid {SANDBOX_USER}, every capability dropped, no-new-privileges"),
            ("filesystem", f"read-only image root; tmpfs /tmp {c.tmpfs_mb} MB (nosuid, nodev); "
                           + (f"one read-only bind: {SOCKET_DIR_INSIDE}, the directory of the job socket, empty once "
                              "the runner is connected; no Docker socket and no other host file inside"
                              if self.socket_transport() else "no bind mounts, so no Docker socket and no host file "
                              "inside")),
            ("job stream", "a Unix socket of the service's (the runner connects before its first job; peer checked "
                           "with SO_PEERCRED, then the socket is removed)" if self.socket_transport() else
                           "the container's stdin/stdout, attached through the engine"),
            ("cgroup limits", f"memory {c.memory_mb} MB (no swap), pids {self._pids_limit()}"
                              f"{' (host threads of gVisor included)' if gvisor else ''}, cpus {c.cpus:g} (engine)"),
            ("rlimits", f"per step: address space, CPU time, file size ({c.file_size_mb} MB), open files "
                        f"({c.open_files})"),
            ("seccomp", seccomp_line),
        ]

    def remove_orphans_blocking(self) -> int:
        """Removes sandbox containers left by a process that died: past their expiry, or at once when the
        owner label names a service process of this host that is gone (a replica SIGKILLed and restarted).
        Live containers (of this or another replica on the engine) have neither expired nor lost their owner."""
        api = self._client()
        removed = 0
        try:
            for c in api.containers(all=True, filters={"label": LABEL}):
                try:
                    expires = float(c.get("Labels", {}).get(EXPIRES_LABEL, "0"))
                except ValueError:
                    expires = 0.0
                owner = c.get("Labels", {}).get(OWNER_LABEL, "")
                if c["Id"] in self._live:
                    continue
                if expires + ORPHAN_GRACE_S < time.time() or owner_is_gone(owner):
                    self._remove(c["Id"])
                    removed += 1
            return removed
        finally:
            api.close()

    def _remove(self, cid: str | None) -> None:
        if not cid:
            return
        self._live.discard(cid)
        try:
            api = self._client()
            try:
                api.remove_container(cid, force=True)
            finally:
                api.close()
        except Exception as exc:  # noqa: BLE001 - best effort; the expiry label lets a later sweep find it
            if "No such container" not in str(exc) and "already in progress" not in str(exc):
                log.warning("could not remove sandbox container %s: %s", cid[:12], exc)

    def _host_config(self, api, binds=None):
        c = self.config
        kwargs = dict(
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={c.tmpfs_mb}m,mode=1777"},
            cap_drop=["ALL"],
            security_opt=self._security_opt(),
            mem_limit=f"{c.memory_mb}m",
            memswap_limit=f"{c.memory_mb}m",
            pids_limit=self._pids_limit(),
            nano_cpus=int(c.cpus * 1e9),
            ulimits=[_docker().types.Ulimit(name="nofile", soft=c.open_files, hard=c.open_files)],
            log_config={"type": "json-file", "config": {"max-size": "1m", "max-file": "1"}},
            ipc_mode="private",
        )
        if c.sandbox_runtime:
            kwargs["runtime"] = c.sandbox_runtime
        if binds:
            kwargs["binds"] = binds
        return api.create_host_config(**kwargs)

    def _security_opt(self) -> list[str]:
        opts = ["no-new-privileges"]
        gvisor = (self._runtime or self.config.sandbox_runtime) == "runsc"
        profile = seccomp.docker_security_opt(gvisor=gvisor) if self.config.sandbox_seccomp else None
        if profile is not None:
            opts.append(profile)
        return opts

    def _pids_limit(self) -> int:
        """gVisor's kernel runs as host threads in the container's cgroup: at the sandbox's own pids limit a fork
        bomb leaves the Go runtime no thread to start, and the whole sandbox dies (exit 2, read as INFRA_ERROR).
        Under runsc the host limit leaves it room; inside, processes are bounded by memory and time."""
        if (self._runtime or self.config.sandbox_runtime) == "runsc":
            return max(RUNSC_PIDS_FLOOR, 16 * self.config.pids_limit)
        return self.config.pids_limit

    def socket_transport(self) -> bool:
        """Whether warm containers get jobs over a socket of this service's (see the module's docstring)."""
        transport = self.config.sandbox_transport
        if transport == "attach" or self._socket_failed:
            return False
        if transport == "socket":
            return True
        base_url = self.config.docker_url or os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        # auto: the engine must see this process's files (a local engine; where it does not, as for a service in a
        # container of its own, the runner says it cannot connect and the attach stream takes over) and the
        # container must reach a host socket (runc: gVisor's kernel does not connect to them).
        return base_url.startswith("unix://") and (self._runtime or self.config.sandbox_runtime or "runc") != "runsc"

    def _listen(self) -> tuple[socket.socket, str, str]:
        """A listening socket in a fresh private directory: (socket, directory, file name)."""
        directory = tempfile.mkdtemp(prefix="rlvr-sbx-")
        try:
            os.chmod(directory, 0o711)  # the runner's uid may pass through to the socket, not list the directory
            name = f"{secrets.token_hex(16)}.sock"
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(os.path.join(directory, name))
            os.chmod(os.path.join(directory, name), 0o666)  # connecting takes write permission
            listener.listen(4)
            return listener, directory, name
        except OSError:
            shutil.rmtree(directory, ignore_errors=True)
            raise

    def _accept(self, listener: socket.socket, init_pid: int, attach: socket.socket) -> socket.socket | None:
        """The runner's connection: the first whose peer is the container's init process (SO_PEERCRED; others
        are closed). None when the runner said on its stdout that it could not connect (then the attach stream
        carries its jobs); SandboxUnavailable when it ended first or did not come in time."""
        listener.setblocking(False)
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        with selectors.DefaultSelector() as sel:
            sel.register(listener, selectors.EVENT_READ, "listener")
            sel.register(attach, selectors.EVENT_READ, "attach")
            while (left := deadline - time.monotonic()) > 0:
                for key, _ in sel.select(left):
                    if key.data == "attach":
                        said = attach.recv(65536, socket.MSG_PEEK)  # left in place for the attach stream
                        if b'"event": "transport"' in said:
                            return None
                        if not said or b"\n" in said:
                            detail = said[8:].decode("utf-8", "replace").strip()[-300:]
                            raise SandboxUnavailable("the sandbox runner ended before it connected to its job "
                                                     "socket" + (f": {detail}" if detail else ""))
                        time.sleep(0.01)  # the rest of its line is on the way
                        continue
                    try:
                        conn, _ = listener.accept()
                    except BlockingIOError:
                        continue
                    peer = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                               struct.calcsize("3i")))
                    if peer[0] == init_pid:
                        conn.setblocking(True)
                        return conn
                    log.warning("a process (pid %d, uid %d) that is not the sandbox's runner connected to its job "
                                "socket; closed", peer[0], peer[1])
                    conn.close()
        raise SandboxUnavailable(f"the sandbox runner did not connect to its job socket in {CONNECT_TIMEOUT_S:.0f} s")

    def _start_instance(self, lifetime_s: float, serve: bool, family: str = "") -> Instance:
        """Creates, attaches and starts one container of ``family``'s image (blocking); a warm one gets its jobs
        over a socket where ``socket_transport()`` says so."""
        docker = _docker()
        api = self._client()
        cid = None
        listener = directory = None
        image = self.image_of(family)
        try:
            if family not in self.image_ids:
                self._check_image(api, family)
            command = ["--serve"] if serve else None
            binds = None
            if serve and self.socket_transport():
                listener, directory, name = self._listen()
                command = ["--serve", "--connect", f"{SOCKET_DIR_INSIDE}/{name}"]
                binds = {directory: {"bind": SOCKET_DIR_INSIDE, "mode": "ro"}}
            cid = api.create_container(
                image,
                command=command,
                name=f"rlvr-sbx-{uuid.uuid4().hex[:16]}",
                stdin_open=True,
                environment={SANDBOX_ENV: "1"},  # the runner refuses to run (and scrub /tmp) without it
                network_disabled=True,
                user=SANDBOX_USER,
                working_dir="/tmp",
                labels={**self._extra_labels, LABEL: "1", EXPIRES_LABEL: f"{time.time() + lifetime_s:.0f}",
                        OWNER_LABEL: self._owner},
                volumes=[SOCKET_DIR_INSIDE] if binds else None,
                host_config=self._host_config(api, binds),
            )["Id"]
            self._live.add(cid)
            sock = api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            attach = getattr(sock, "_sock", sock)
            api.start(cid)
            if listener is not None:
                try:
                    conn = self._accept(listener, api.inspect_container(cid)["State"]["Pid"], attach)
                except SandboxUnavailable:
                    attach.close()
                    raise
                if conn is not None:
                    return Instance(cid, DirectStream(conn, SocketStream(attach)), family)
                log.warning("the sandbox runner could not reach its job socket (is the Docker engine on another "
                            "machine?); jobs go over the container's attach stream from now on")
                self._socket_failed = True
            return Instance(cid, SocketStream(attach), family)
        except docker.errors.ImageNotFound as exc:
            self._remove(cid)
            self.image_ids.pop(family, None)
            raise SandboxUnavailable(f"sandbox image {image!r} is not built; {FIX_IMAGE}") from exc
        except SandboxUnavailable:
            self._remove(cid)
            raise
        except (docker.errors.DockerException, OSError) as exc:
            self._remove(cid)
            raise SandboxUnavailable(f"could not start a sandbox container: {exc}") from exc
        finally:
            if listener is not None:
                listener.close()
            if directory is not None:
                # The runner is connected (or will never be): nothing may connect there any more. The container
                # keeps seeing an empty directory.
                shutil.rmtree(directory, ignore_errors=True)
            api.close()

    def _discard(self, instance: Instance) -> None:
        instance.stream.close()
        self._remove(instance.id)

    async def _remove_remaining(self) -> None:
        for cid in list(self._live):  # containers of jobs still running
            await asyncio.to_thread(self._remove, cid)

    def _oom_killed(self, instance: Instance) -> bool:
        try:
            api = self._client()
            try:
                return bool(api.inspect_container(instance.id)["State"].get("OOMKilled"))
            finally:
                api.close()
        except Exception:  # noqa: BLE001 - only a diagnosis
            return False

    def _killed_outside(self, instance: Instance) -> bool:
        """A ``kill`` event of the engine for this container: someone sent it a signal through Docker (``docker
        kill``; this service removes its sandboxes only after asking this). A runner that crashed, or a sandbox the
        job took down (a gVisor sandbox under a fork bomb), has only ``die``."""
        try:
            api = self._client()
            try:
                age_s = time.monotonic() - instance.started
                since = int(time.time() - age_s) - 2
                events = api.events(since=since, until=int(time.time()) + 1, decode=True,
                                    filters={"container": instance.id, "event": "kill"})
                return any(True for _ in events)
            finally:
                api.close()
        except Exception:  # noqa: BLE001 - only a diagnosis: unknown counts against the job
            return False
