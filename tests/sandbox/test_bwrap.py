"""What only the bubblewrap backend has: its configuration, its report, its file system view, its
binary and interpreter given by path, unprivileged host uids, cgroups, orphans and a missing bwrap.

The hostile-code suite (test_isolation.py) and the kinds (test_code_kinds.py) run on bwrap too.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from verifier_service.config import ServiceConfig, load_config
from verifier_service.errors import VerifierError
from verifier_service.sandbox import cgroups, format_isolation, make_sandbox, seccomp
from verifier_service.sandbox.base import Job, Step
from verifier_service.sandbox.bwrap import ETC_TOOLCHAIN_GLOBS, BwrapSandbox, owner_alive, owner_tag

from support.sandboxes import bwrap_sandboxes
from support.service import TEST_CONFIG, RunningService, brief, probe
from support.wait import wait_for

pytestmark = pytest.mark.backends("bwrap")

REPO = Path(__file__).resolve().parents[2]
SERVICE_NAME = "rlvr.verifier.v1.Verifier"
OK_CODE = "def f():\n    return 1\n"
OK_SPEC = {"kind": "python_assert", "tests": "assert f() == 1", "timeout_s": 5}
BWRAP_CONFIG = replace(TEST_CONFIG, sandbox_backend="bwrap")


def health(svc) -> int:
    stub = health_pb2_grpc.HealthStub(svc.channel)
    return stub.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=10).status


def report(svc) -> dict[str, str]:
    return dict(svc.app.sandbox.isolation())


@pytest.fixture(scope="module")
def system_venv():
    """A venv of the system Python in a world-readable directory, like a GPU host's /opt/torch/.venv."""
    if not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("no /usr/bin/python3 to make a venv from")
    root = Path(tempfile.mkdtemp(prefix="rlvr-bwrap-venv-", dir="/var/tmp"))  # the sandbox has a /tmp of its own
    try:
        root.chmod(0o755)
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(root / "venv")], check=True,
                       capture_output=True, timeout=120)
        yield root / "venv" / "bin" / "python3"
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ---- configuration -------------------------------------------------------------------------------------------

class TestConfig:
    def test_backend_from_yaml_env_and_flag(self, tmp_path):
        (tmp_path / "c.yaml").write_text("sandbox_backend: bwrap\nbwrap_path: /opt/bw/bwrap\n")
        import argparse

        from verifier_service.config import add_config_flags

        parser = argparse.ArgumentParser()
        add_config_flags(parser)
        assert load_config(parser.parse_args(["--config", str(tmp_path / "c.yaml")]), {}).sandbox_backend == "bwrap"
        assert load_config(None, {"RLVR_VERIFIER_SANDBOX_BACKEND": "bwrap"}).sandbox_backend == "bwrap"
        args = parser.parse_args(["--sandbox-backend", "bwrap", "--bwrap-python", "/opt/torch/.venv/bin/python3"])
        config = load_config(args, {})
        assert (config.sandbox_backend, config.bwrap_python) == ("bwrap", "/opt/torch/.venv/bin/python3")
        assert ServiceConfig().sandbox_backend == "docker"

    @pytest.mark.parametrize(("changes", "field"), [
        ({"sandbox_backend": "lxc"}, "sandbox_backend"),
        ({"bwrap_path": ""}, "bwrap_path"),
        ({"bwrap_cgroup": "relative/dir"}, "bwrap_cgroup"),
        ({"bwrap_unprivileged": "maybe"}, "bwrap_unprivileged"),
        ({"bwrap_host_uid": 0}, "bwrap_host_uid"),
    ])
    def test_errors_name_the_field(self, changes, field):
        with pytest.raises(VerifierError, match=field):
            replace(ServiceConfig(), **changes).validate()

    def test_factory(self):
        assert make_sandbox(ServiceConfig()).backend == "docker"
        assert isinstance(make_sandbox(BWRAP_CONFIG), BwrapSandbox)

    def test_jobs_get_the_configured_interpreter(self):
        sandbox = make_sandbox(BWRAP_CONFIG)
        sandbox.check_blocking()
        job = Job(steps=[Step("a", ["python3", "-I", "x.py"], 1.0), Step("b", ["g++", "x.cpp"], 1.0)])
        steps = sandbox._runner_job(job)["steps"]
        assert steps[0]["argv"] == [sandbox.interpreter.sandbox_path, "-I", "x.py"]
        assert steps[1]["argv"] == ["g++", "x.cpp"]


# ---- the running backend ---------------------------------------------------------------------------------------

def test_isolation_report_names_every_layer(service):
    rows = report(service)
    assert set(rows) >= {"backend", "network", "user", "filesystem", "cgroup limits", "rlimits", "seccomp"}
    assert rows["backend"].startswith("bwrap ")
    assert "loopback only" in rows["network"]
    assert "uid 10001:10001" in rows["user"] and "capability dropped" in rows["user"]
    assert rows["cgroup limits"].startswith(("on:", "off ("))
    text = format_isolation(service.app.sandbox.isolation())
    assert "cgroup limits: " in text
    assert service.app.sandbox.image_id.startswith("bwrap:")


def test_the_sandbox_sees_only_what_it_needs(service):
    backend = service.app.sandbox
    cgroups, memory = backend.cgroup_plan is not None, backend.config.memory_mb << 20
    r = service.verify("pass", probe(f"""\
        import os
        for path in ('/home', '/run', '/var', '/var/run/docker.sock', '/run/docker.sock',
                     {str(REPO / 'verifier_service')!r}, {str(REPO / 'sandboxes' / 'python')!r}, '/boot', '/mnt'):
            assert not os.path.exists(path), path
        if {cgroups!r}:  # of /sys only its own cgroups, read-only, each the root of its cgroup namespace
            assert os.listdir('/sys') == ['fs'] and os.listdir('/sys/fs') == ['cgroup']
            limit = '/sys/fs/cgroup/memory.max'
            if not os.path.exists(limit):
                limit = '/sys/fs/cgroup/memory/memory.limit_in_bytes'
            assert open(limit).read().strip() == str({memory}), open(limit).read()
            own = [line.split(':', 2) for line in open('/proc/self/cgroup').read().splitlines()]
            assert all(path == '/' for _, names, path in own if names in ('', 'memory', 'pids')), own
            for root, dirs, files in os.walk('/sys/fs/cgroup'):
                assert not dirs or root == '/sys/fs/cgroup', (root, dirs)  # (v1: a directory per hierarchy)
                for name in files:
                    try:
                        open(os.path.join(root, name), 'a').close()
                    except OSError:
                        continue
                    raise AssertionError('writable: ' + os.path.join(root, name))
        else:
            assert not os.path.exists('/sys')
        import fnmatch
        toolchains = {{n for n in os.listdir('/etc') if any(fnmatch.fnmatch(n, g) for g in {ETC_TOOLCHAIN_GLOBS!r})}}
        assert set(os.listdir('/etc')) <= {{'passwd', 'group', 'hosts', 'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d',
                                           'localtime', 'alternatives', 'nsswitch.conf'}} | {{
            n for n in os.listdir('/etc') if n.startswith('python3')}} | toolchains
        assert 'runner.py' in os.listdir('/opt/rlvr')
        import socket
        assert socket.gethostname() == 'sandbox'
        assert socket.gethostbyname('localhost') == '127.0.0.1'
        import pwd
        assert pwd.getpwuid(os.getuid()).pw_name == 'sandbox'
        for path in ('/tmp', '/dev/shm'):
            st = os.statvfs(path)
            assert st.f_blocks * st.f_frsize <= 64 * 1024 * 1024
    """))
    assert r["verdict"] == "PASSED", brief(r)


def test_seccomp_denies_what_no_verification_needs(service):
    if service.app.sandbox.seccomp is None:
        pytest.skip(f"no seccomp table for {platform.machine()}")
    numbers = {name: nr for name, nr in seccomp.TABLES[platform.machine()][1].items()
               if name in ("keyctl", "unshare", "perf_event_open", "io_uring_setup", "ptrace", "setns", "bpf")}
    r = service.verify("pass", probe(f"""\
        import ctypes, errno, os, platform
        libc = ctypes.CDLL(None, use_errno=True)
        def errno_of(nr):
            ctypes.set_errno(0)
            result = libc.syscall(nr, 0, 0, 0, 0, 0)
            return 0 if result >= 0 else ctypes.get_errno()
        refused = {{name: errno_of(nr) for name, nr in {numbers!r}.items()}}
        assert all(e == errno.EPERM for e in refused.values()), refused
        if platform.machine() == 'x86_64':
            assert errno_of(0x40000000 | 39) == errno.EPERM  # getpid through the x32 ABI
        assert errno_of(39 if platform.machine() == 'x86_64' else 172) == 0  # getpid itself still works
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        assert os.waitpid(pid, 0)[1] >> 8 == 7
    """))
    assert r["verdict"] == "PASSED", brief(r)


@pytest.mark.parametrize("machine", sorted(seccomp.TABLES))
def test_seccomp_tables_match_the_kernel_headers(machine):
    header = {"x86_64": "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
              "aarch64": "/usr/include/asm-generic/unistd.h"}[machine]
    if not os.path.exists(header):
        pytest.skip(f"no {header} here")
    defined = {}
    for line in Path(header).read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "#define" and parts[2].isdigit():
            defined[parts[1].removeprefix("__NR3264_").removeprefix("__NR_")] = int(parts[2])
    table = seccomp.TABLES[machine][1]
    named = set(seccomp.DENIED) | set(seccomp.CONDITIONS) | {"read", "write", "clone3", "getpid", "futex"}
    assert {name: nr for name, nr in table.items() if name in defined} == {
        name: defined[name] for name in table if name in defined}
    assert all(defined.get(name) == table[name] for name in named if name in table and name in defined)
    program = seccomp.program(machine)
    assert program is not None and len(program) % 8 == 0


def test_bwrap_missing_is_not_serving_and_infra_error(make_service):
    svc = make_service(bwrap_path="/nonexistent/bwrap")
    assert health(svc) == health_pb2.HealthCheckResponse.NOT_SERVING
    assert "bubblewrap not found" in (svc.app.sandbox_problem or "")
    r = svc.verify(OK_CODE, OK_SPEC)
    assert (r["verdict"], r["reward"]) == ("INFRA_ERROR", None), r
    assert "bubblewrap" in r["detail"] and "apt-get install bubblewrap" in r["detail"]
    r = svc.verify("{}", {"kind": "json_schema", "schema": {"type": "object"}})
    assert r["verdict"] == "PASSED"  # the pure kinds need no sandbox


def test_bwrap_failing_is_not_serving(make_service, tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n")
    fake.chmod(0o755)
    svc = make_service(bwrap_path=str(fake))
    assert health(svc) == health_pb2.HealthCheckResponse.NOT_SERVING
    r = svc.verify(OK_CODE, OK_SPEC)
    assert r["verdict"] == "INFRA_ERROR" and r["reward"] is None, r


def test_bwrap_that_starts_failing_later_is_not_serving_until_it_works_again(make_service, tmp_path):
    binary = tmp_path / "bwrap"
    shutil.copy2(shutil.which("bwrap") or "/usr/bin/bwrap", binary)
    svc = make_service(bwrap_path=str(binary), max_concurrency=1)
    assert svc.verify(OK_CODE, OK_SPEC)["verdict"] == "PASSED"
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    broken.chmod(0o755)
    os.replace(broken, binary)
    (victim,) = svc.app.sandbox._instances.values()
    os.kill(victim.handle.child_pid, 9)  # the warm sandbox dies; its replacement cannot start
    r = svc.verify(OK_CODE, OK_SPEC)
    assert (r["verdict"], r["reward"]) == ("INFRA_ERROR", None), r
    assert "No permissions to create new namespace" in r["detail"]
    assert wait_for(lambda: health(svc) == health_pb2.HealthCheckResponse.NOT_SERVING, 10)
    shutil.copy2(shutil.which("bwrap") or "/usr/bin/bwrap", tmp_path / "fixed")
    os.replace(tmp_path / "fixed", binary)
    assert wait_for(lambda: health(svc) == health_pb2.HealthCheckResponse.SERVING, 20)
    assert wait_for(lambda: svc.verify(OK_CODE, OK_SPEC)["verdict"] == "PASSED", 20, 1.0)


def test_bwrap_binary_given_by_path(make_service, tmp_path):
    # As on a host where bubblewrap was unpacked from its .deb (dpkg -x), not installed.
    copy = tmp_path / "usr" / "bin" / "bwrap"
    copy.parent.mkdir(parents=True)
    shutil.copy2(shutil.which("bwrap") or "/usr/bin/bwrap", copy)
    copy.chmod(0o755)
    svc = make_service(bwrap_path=str(copy))
    assert svc.app.sandbox.bwrap == str(copy)
    assert str(copy) in report(svc)["backend"]
    assert svc.verify(OK_CODE, OK_SPEC)["verdict"] == "PASSED"
    pids = [int(s.removeprefix("bwrap-")) for s in bwrap_sandboxes()]
    assert any(os.readlink(f"/proc/{pid}/exe") == str(copy) for pid in pids)


def test_venv_interpreter_with_an_unprivileged_host_uid(make_service, system_venv):
    # The GPU host's layout: a venv interpreter, no cgroup to use, the service as root.
    svc = make_service(bwrap_python=str(system_venv), bwrap_cgroup="off")
    sandbox = svc.app.sandbox
    rows = report(svc)
    assert sandbox.interpreter.path == str(system_venv)
    assert rows["cgroup limits"].startswith("off")
    if os.geteuid() != 0:
        pytest.skip("the service is not root: no host uid to switch to")
    assert sandbox.host_uid == TEST_CONFIG.bwrap_host_uid, sandbox.uid_reason
    assert f"host uid {sandbox.host_uid} (unprivileged)" in rows["user"]
    assert "processes 64 (RLIMIT_NPROC)" in rows["rlimits"] and "address space" in rows["rlimits"]
    venv = str(system_venv.parent.parent)
    r = svc.verify("pass", probe(f"""\
        import os, sys
        assert sys.prefix == {venv!r} and sys.base_prefix == '/usr'
        assert os.getuid() == 10001
        try:
            os.listdir('/proc/1/fd')
            listed = True
        except PermissionError:
            listed = False
        assert not listed
    """))
    assert r["verdict"] == "PASSED", brief(r)
    runners = [i.handle.child_pid for i in list(sandbox._instances.values())]
    assert runners
    for pid in runners:
        uids = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("Uid:"))
        assert uids.split()[1:] == [str(sandbox.host_uid)] * 4
    # With no cgroup, RLIMIT_NPROC still stops a fork bomb, and RLIMIT_AS a memory bomb.
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    r = svc.verify(bomb, {**OK_SPEC, "timeout_s": 3})
    assert r["verdict"] in ("TIMEOUT", "RUNTIME_ERROR"), brief(r)
    r = svc.verify("x = bytearray(2 * 1024**3)\n", OK_SPEC)
    assert r["verdict"] == "MEMORY_LIMIT", brief(r)
    assert svc.verify(OK_CODE, OK_SPEC)["verdict"] == "PASSED"


def test_fresh_sandbox_per_job(make_service):
    svc = make_service(sandbox_pool=False)
    assert "a fresh sandbox per job" in report(svc)["backend"]
    results = svc.verify_batch([(OK_CODE, OK_SPEC), ("def f():\n    return 2\n", OK_SPEC),
                                ("while True:\n    pass\n", {**OK_SPEC, "timeout_s": 1})])
    assert [r["verdict"] for r in results] == ["PASSED", "FAILED", "TIMEOUT"], [brief(r) for r in results]
    assert not svc.app.sandbox._live


def test_no_cgroup_left_after_the_service_stops():
    probe_sandbox = make_sandbox(BWRAP_CONFIG)
    probe_sandbox.check_blocking()
    plan = probe_sandbox.cgroup_plan
    if plan is None:
        pytest.skip(f"no cgroups here: {probe_sandbox.cgroup_reason}")
    before = set(cgroups.leftovers(plan))  # of the services still up (their warm pools)
    svc = RunningService(BWRAP_CONFIG)
    try:
        assert svc.verify(OK_CODE, OK_SPEC)["verdict"] == "PASSED"
        assert set(cgroups.leftovers(plan)) - before  # the new warm pool's
    finally:
        svc.close()
    assert not set(cgroups.leftovers(plan)) - before


def test_orphans_of_a_dead_service_are_removed():
    dead = subprocess.Popen(["sleep", "0"])
    tag = owner_tag(dead.pid)
    dead.wait()
    assert not owner_alive(tag) and owner_alive(owner_tag())
    orphaned = BwrapSandbox(BWRAP_CONFIG)
    orphaned.check_blocking()
    orphaned.owner = tag  # as if started by the process that just died
    instance = orphaned._start_instance(60, serve=True)
    try:
        assert f"bwrap-{instance.handle.proc.pid}" in bwrap_sandboxes()
        sweeper = BwrapSandbox(BWRAP_CONFIG)
        sweeper.check_blocking()
        assert sweeper.remove_orphans_blocking() >= 1
        instance.handle.proc.wait(10)
        deadline = time.monotonic() + 10
        while instance.handle.child_pid and os.path.exists(f"/proc/{instance.handle.child_pid}") \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{instance.handle.child_pid}")
        if orphaned.cgroup_plan is not None:
            assert not [d for d in cgroups.leftovers(orphaned.cgroup_plan) if tag in d.name]
    finally:
        orphaned._discard(instance)


def test_doctor_shows_the_layers():
    env = {**os.environ, "RLVR_VERIFIER_SANDBOX_BACKEND": "bwrap"}
    out = subprocess.run([sys.executable, "-m", "verifier_service.tools.cli", "doctor"], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "cgroup limits:" in out.stdout and "network: none" in out.stdout and "ok: the bwrap" in out.stdout
    out = subprocess.run([sys.executable, "-m", "verifier_service.tools.cli", "doctor", "--bwrap-path", "/nope/bwrap"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 3 and "bubblewrap not found" in out.stderr


# ---- cgroup detection and limits, on fake cgroup trees ---------------------------------------------------------

class TestCgroups:
    def test_v1_hierarchies_of_this_process(self, tmp_path):
        for name in ("memory", "pids", "cpu,cpuacct", "cpuset"):
            (tmp_path / name / "svc").mkdir(parents=True)
        (tmp_path / "cpuset" / "svc" / "cpuset.cpus").write_text("0-3\n")
        (tmp_path / "cpuset" / "svc" / "cpuset.mems").write_text("0\n")
        mountinfo = "\n".join(
            f"{30 + i} 25 0:{40 + i} / {tmp_path / name} rw,relatime shared:1 - cgroup cgroup rw,{name}"
            for i, name in enumerate(("memory", "pids", "cpu,cpuacct", "cpuset")))
        proc = "5:memory:/svc\n4:pids:/svc\n3:cpu,cpuacct:/svc\n2:cpuset:/svc\n0::/\n"
        plan, why = cgroups.detect("auto", proc, mountinfo)
        assert plan is not None, why
        assert plan.version == 1
        assert plan.parents == {"memory": tmp_path / "memory" / "svc", "pids": tmp_path / "pids" / "svc",
                                "cpu": tmp_path / "cpu,cpuacct" / "svc", "cpuacct": tmp_path / "cpu,cpuacct" / "svc",
                                "cpuset": tmp_path / "cpuset" / "svc"}
        assert plan.controllers == ("memory", "pids", "cpu")
        group = cgroups.SandboxCgroup.create(plan, "rlvr-bwrap-1.2-3", 256 << 20, 64, 0.5)
        memory = tmp_path / "memory" / "svc" / "rlvr-bwrap-1.2-3"
        assert (memory / "memory.limit_in_bytes").read_text() == str(256 << 20)
        assert (tmp_path / "pids" / "svc" / "rlvr-bwrap-1.2-3" / "pids.max").read_text() == "64"
        assert (tmp_path / "cpu,cpuacct" / "svc" / "rlvr-bwrap-1.2-3" / "cpu.cfs_quota_us").read_text() == "50000"
        cpuset = tmp_path / "cpuset" / "svc" / "rlvr-bwrap-1.2-3"  # (only shown: the service's own CPUs and nodes)
        assert [(cpuset / k).read_text() for k in ("cpuset.cpus", "cpuset.mems")] == ["0-3\n", "0\n"]
        (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
        assert group.oom_kills() == 2
        assert {p.name for p in cgroups.leftovers(plan)} == {"rlvr-bwrap-1.2-3"}
        # what the sandbox is shown: each of its cgroups once, where a container's cgroup namespace shows it
        assert sorted(group.shown()) == sorted([(memory, "/sys/fs/cgroup/memory"),
                                         (tmp_path / "cpu,cpuacct" / "svc" / "rlvr-bwrap-1.2-3",
                                          "/sys/fs/cgroup/cpu,cpuacct"),
                                         (cpuset, "/sys/fs/cgroup/cpuset"),
                                         (tmp_path / "pids" / "svc" / "rlvr-bwrap-1.2-3", "/sys/fs/cgroup/pids")])

    def test_v2_delegated_directory(self, tmp_path):
        (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        (tmp_path / "cgroup.subtree_control").write_text("cpu memory pids\n")
        plan, why = cgroups.detect(str(tmp_path))
        assert plan is not None, why
        assert (plan.version, plan.controllers) == (2, ("memory", "pids", "cpu"))
        group = cgroups.SandboxCgroup.create(plan, "rlvr-bwrap-1.2-3", 256 << 20, 64, 1.0)
        child = tmp_path / "rlvr-bwrap-1.2-3"
        assert (child / "memory.max").read_text() == str(256 << 20)
        assert (child / "pids.max").read_text() == "64"
        assert (child / "cpu.max").read_text() == "100000 100000"
        (child / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
        assert group.oom_kills() == 1
        assert group.shown() == [(child, "/sys/fs/cgroup")]

    def test_unusable_settings_say_why(self, tmp_path):
        assert cgroups.detect("off") == (None, "turned off (bwrap_cgroup=off)")
        plan, why = cgroups.detect(str(tmp_path / "missing"))
        assert plan is None and "not a cgroup v2 directory" in why
        (tmp_path / "cgroup.controllers").write_text("cpu io\n")
        plan, why = cgroups.detect(str(tmp_path))
        assert plan is None and "lacks the memory, pids controller(s)" in why
        plan, why = cgroups.detect("auto", "0::/\n", "")
        assert plan is None and why == "no cgroup file system is mounted"


def test_interpreter_under_the_sandbox_own_tmp_is_bound_elsewhere(tmp_path):
    """A venv in a checkout under /tmp (a CI clone) would be hidden by the sandbox's own /tmp: it is bound at
    /.rlvr-host/<n> instead, and jobs run with it; the sandbox's /tmp stays its own, empty tmpfs."""
    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    sandbox = make_sandbox(replace(BWRAP_CONFIG, bwrap_python=str(venv / "bin" / "python3"), sandbox_pool=False))
    sandbox.check_blocking()
    assert sandbox.interpreter.sandbox_path == "/.rlvr-host/0/bin/python3"
    code = f"import os, sys; print(sys.prefix, os.path.exists({str(tmp_path)!r}))"
    out = sandbox._run_once([sandbox.interpreter.sandbox_path, "-I", "-c", code])
    assert out.strip().splitlines()[-1] == "/.rlvr-host/0 False"


def test_trial_failure_message_names_the_interpreter(tmp_path):
    bad = tmp_path / "python3"
    bad.write_text("#!/bin/sh\nexit 3\n")
    bad.chmod(0o755)
    sandbox = make_sandbox(replace(BWRAP_CONFIG, bwrap_python=str(bad)))
    with pytest.raises(VerifierError, match="does not run as a Python interpreter"):
        sandbox.check_blocking()


def test_interpreter_probe_reports_pytest():
    sandbox = make_sandbox(BWRAP_CONFIG)
    sandbox.check_blocking()
    out = subprocess.run([sandbox.interpreter.path, "-I", "-c", "import importlib.util, json; "
                          "print(json.dumps(importlib.util.find_spec('pytest') is not None))"],
                         capture_output=True, text=True, check=True)
    assert sandbox.interpreter.pytest == json.loads(out.stdout)
