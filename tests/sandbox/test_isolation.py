"""Hostile completions against the real sandbox, on each backend (Docker, bubblewrap).

Each test runs code that attacks the sandbox or the harness (memory, processes,
time, output, network, the file system, privileges, the runner, the report) and
checks that it gets the right verdict, and that the service is still healthy
afterwards: a plain passing verification still PASSES and the gRPC health
service still reports SERVING. The autouse fixture of conftest checks that no
sandbox is left behind. Where a layer cannot hold on a bubblewrap host (no cgroup
to delegate, sandboxes that must run as host root) the test says so and does not run.
"""

from __future__ import annotations

import socket
import textwrap

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from support.service import brief, probe, requires

pytestmark = pytest.mark.backends("docker", "bwrap")

SERVICE_NAME = "rlvr.verifier.v1.Verifier"
OK_SPEC = {"kind": "python_assert", "tests": "assert f() == 1", "timeout_s": 5}
OK_CODE = "def f():\n    return 1\n"


def assert_healthy(service) -> None:
    r = service.verify(OK_CODE, OK_SPEC, id="healthy")
    assert (r["verdict"], r["reward"]) == ("PASSED", 1.0), r
    stub = health_pb2_grpc.HealthStub(service.channel)
    status = stub.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=10).status
    assert status == health_pb2.HealthCheckResponse.SERVING


@pytest.fixture(autouse=True)
def stays_healthy(service):
    """After every hostile job, the service still verifies and reports SERVING."""
    yield
    assert_healthy(service)


# ---- memory ---------------------------------------------------------------

class TestMemory:
    def test_one_huge_allocation(self, service):
        r = service.verify("x = bytearray(2 * 1024**3)\n", OK_SPEC)
        assert r["verdict"] == "MEMORY_LIMIT", brief(r)
        assert r["reward"] <= 0.2

    def test_growing_list(self, service):
        code = "x = []\nwhile True:\n    x.append(bytearray(10 * 1024**2))\n"
        r = service.verify(code, OK_SPEC)
        assert r["verdict"] == "MEMORY_LIMIT", brief(r)

    def test_allocation_inside_the_tested_function(self, service):
        code = "def f():\n    return len([0] * (1024**3))\n"
        r = service.verify(code, OK_SPEC)
        assert r["verdict"] == "MEMORY_LIMIT", brief(r)
        assert r["tests"][0]["verdict"] == "MEMORY_LIMIT"

    def test_memory_spread_over_child_processes(self, service):
        # Each child stays under the per-process address-space limit; together
        # they would need far more than the container's 256 MB: the container's
        # memory limit must hold (the OOM killer ends children, not the host).
        requires(service, "memory")
        r = service.verify("pass", probe("""\
            import os, signal, time
            children = []
            for _ in range(5):
                pid = os.fork()
                if pid == 0:
                    block = bytearray(150 * 1024**2)
                    for i in range(0, len(block), 4096):
                        block[i] = 1
                    time.sleep(60)
                    os._exit(0)
                children.append(pid)
            time.sleep(3)
            alive = [pid for pid in children if os.waitpid(pid, os.WNOHANG) == (0, 0)]
            for pid in alive:
                os.kill(pid, signal.SIGKILL)
            assert len(alive) <= 1, f'{len(alive)} children hold 150 MB each'
        """, timeout_s=8))
        assert r["verdict"] == "PASSED", brief(r)


# ---- processes --------------------------------------------------------------

class TestProcesses:
    def test_fork_bomb(self, service):
        requires(service, "pids")
        r = service.verify("import os\nwhile True:\n    os.fork()\n", {**OK_SPEC, "timeout_s": 3})
        assert r["verdict"] in ("TIMEOUT", "RUNTIME_ERROR"), brief(r)
        assert r["reward"] <= 0.2

    def test_fork_bomb_that_swallows_errors(self, service):
        requires(service, "pids")
        code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
        r = service.verify(code, {**OK_SPEC, "timeout_s": 3})
        assert r["verdict"] in ("TIMEOUT", "RUNTIME_ERROR"), brief(r)

    def test_infinite_loop(self, service):
        r = service.verify("while True:\n    pass\n", {**OK_SPEC, "timeout_s": 2})
        assert r["verdict"] == "TIMEOUT", brief(r)
        assert r["tests"][0]["verdict"] == "TIMEOUT"
        assert "time limit of 2s" in r["detail"], brief(r)  # the spec's limit ended it, not a later guard's

    def test_loop_ignoring_sigterm(self, service):
        code = textwrap.dedent("""\
            import signal
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):
                signal.signal(sig, signal.SIG_IGN)
            while True:
                pass
        """)
        r = service.verify(code, {**OK_SPEC, "timeout_s": 2})
        assert r["verdict"] == "TIMEOUT", brief(r)
        assert "time limit of 2s" in r["detail"], brief(r)

    def test_detached_child_does_not_survive_the_job(self, service):
        code = textwrap.dedent("""\
            import subprocess
            subprocess.Popen(['sleep', '1000'], start_new_session=True)
            subprocess.Popen(['sh', '-c', 'trap "" TERM HUP; sleep 1000 & sleep 1000'],
                             start_new_session=True)
            def f():
                return 1
        """)
        r = service.verify(code, OK_SPEC)
        assert r["verdict"] == "PASSED", brief(r)
        # The next job (a new container) sees only its runner, the zygote (the judge's parent, which forks each
        # step's process), the tests' judge (running this probe) and the completion's process (the judge's child).
        r = service.verify("pass", probe("""\
            import os
            def parent(pid):
                return int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])
            def others():
                found = []
                for pid in os.listdir('/proc'):
                    if pid.isdigit() and int(pid) not in (1, os.getpid(), os.getppid()) and parent(pid) != os.getpid():
                        try:
                            found.append(open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\\0', b' '))
                        except OSError:
                            pass
                return found
            assert others() == []
            assert not any(b'sleep' in c for c in open('/proc/1/cmdline', 'rb').read().split(b'\\0'))
        """))
        assert r["verdict"] == "PASSED", brief(r)

    def test_detached_child_killed_between_steps_of_one_container(self, service):
        # stdio runs every case as a step of the same container: a process that
        # case 0 leaves behind must be gone before case 1 starts.
        program = textwrap.dedent("""\
            import os, subprocess
            if input().strip() == 'spawn':
                subprocess.Popen(['sleep', '1000'], start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                print('spawned')
            else:
                me = os.getpid()
                count = 0
                for pid in os.listdir('/proc'):
                    if pid.isdigit() and int(pid) not in (1, me):
                        try:
                            if b'sleep' in open(f'/proc/{pid}/cmdline', 'rb').read():
                                count += 1
                        except OSError:
                            pass
                print(count)
        """)
        spec = {"kind": "stdio", "language": "python", "timeout_s": 5,
                "cases": [{"stdin": "spawn\n", "expected_stdout": "spawned\n"},
                          {"stdin": "look\n", "expected_stdout": "0\n"}]}
        r = service.verify(program, spec)
        assert r["verdict"] == "PASSED", f"{brief(r)} {r['tests']}"


# ---- output -----------------------------------------------------------------

class TestOutput:
    def test_endless_stdout(self, service):
        r = service.verify("while True:\n    print('x' * 10000)\n", OK_SPEC)
        assert r["verdict"] == "OUTPUT_LIMIT", brief(r)
        assert len(r["stdout_tail"]) <= 4000

    def test_endless_stderr(self, service):
        code = "import sys\nwhile True:\n    sys.stderr.write('e' * 10000)\n"
        r = service.verify(code, OK_SPEC)
        assert r["verdict"] == "OUTPUT_LIMIT", brief(r)

    def test_big_file_in_tmp(self, service):
        # The per-file size limit (16 MB) stops it before the 64 MB tmpfs fills.
        code = "open('/tmp/big', 'wb').write(b'0' * (40 * 1024**2))\n"
        r = service.verify(code, OK_SPEC)
        assert r["verdict"] == "OUTPUT_LIMIT" and "File too large" in r["detail"], brief(r)


# ---- network ----------------------------------------------------------------

class TestNetwork:
    def test_only_loopback_and_no_routes(self, service):
        r = service.verify("pass", probe("""\
            import os
            devices = [line.split(':')[0].strip() for line in open('/proc/net/dev').read().splitlines()[2:]]
            assert devices == ['lo']
            routes = open('/proc/net/route').read().splitlines()
            assert routes[1:] == []
            v6 = open('/proc/net/ipv6_route').read() if os.path.exists('/proc/net/ipv6_route') else ''
            assert all(line.split()[-1] == 'lo' for line in v6.splitlines())
        """))
        assert r["verdict"] == "PASSED", brief(r)

    def test_host_loopback_listener_is_unreachable(self, service):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(8)
            port = listener.getsockname()[1]
            r = service.verify("pass", probe(f"""\
                import socket
                def reach(port):
                    try:
                        socket.create_connection(('127.0.0.1', port), timeout=1).close()
                        return 'connected'
                    except OSError as exc:
                        return type(exc).__name__
                result = reach({port})
                assert result != 'connected', result
            """))
            assert r["verdict"] == "PASSED", brief(r)
            listener.setblocking(False)
            with pytest.raises(BlockingIOError):
                listener.accept()  # nothing ever connected from the sandbox


# ---- file system ------------------------------------------------------------

class TestFileSystem:
    def test_files_do_not_survive_into_the_next_job(self, service):
        writer = probe("""\
            import os
            for path in ('/tmp/marker', os.path.expanduser('~/marker_home'), 'marker_cwd'):
                with open(path, 'w') as fh:
                    fh.write('left behind')
            try:
                open('/dev/shm/marker_shm', 'w').write('x')
            except OSError:
                pass
            assert os.path.exists('/tmp/marker') and os.path.exists('marker_cwd')
            assert os.path.exists(os.path.expanduser('~/marker_home'))
        """)
        r = service.verify("pass", writer)
        assert r["verdict"] == "PASSED", brief(r)
        reader = probe("""\
            import os
            def markers():
                found = []
                for root in ('/tmp', '/dev/shm', os.path.expanduser('~'), os.getcwd()):
                    for dirpath, _, names in os.walk(root):
                        found += [os.path.join(dirpath, n) for n in names if n.startswith('marker')]
                return found
            assert not os.path.exists('/tmp/marker')
            assert not os.path.exists(os.path.expanduser('~/marker_home'))
            assert not os.path.exists('marker_cwd')
            assert markers() == []
        """)
        r = service.verify("pass", reader)
        assert r["verdict"] == "PASSED", brief(r)

    def test_root_file_system_is_read_only(self, service):
        r = service.verify("pass", probe("""\
            import os
            def cannot_write(path):
                try:
                    with open(path, 'a') as fh:
                        fh.write('x')
                except OSError:
                    return True
                return False
            assert cannot_write('/etc/x')
            assert cannot_write('/opt/rlvr/x')
            assert cannot_write('/opt/rlvr/assert_harness.py')
            assert cannot_write('/usr/bin/x')
            assert cannot_write('/x')
            def cannot_remove(path):
                try:
                    os.remove(path)
                except OSError:
                    return True
                return False
            assert cannot_remove('/opt/rlvr/runner.py')
        """))
        assert r["verdict"] == "PASSED", brief(r)


# ---- privileges -------------------------------------------------------------

class TestPrivileges:
    def test_not_root_no_capabilities_no_new_privileges(self, service):
        r = service.verify("pass", probe("""\
            import os
            status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines() if ':' in line)
            assert os.getuid() == 10001 and os.geteuid() == 10001
            assert os.getgid() == 10001
            assert int(status['CapEff'].strip(), 16) == 0
            assert int(status['CapPrm'].strip(), 16) == 0
            assert int(status['CapBnd'].strip(), 16) == 0
            assert status['NoNewPrivs'].strip() == '1'
        """))
        assert r["verdict"] == "PASSED", brief(r)

    def test_runner_is_untouchable(self, service):
        r = service.verify("pass", probe("""\
            import os, signal, time
            os.kill(1, signal.SIGKILL)
            time.sleep(0.2)
            def denied(path):
                try:
                    os.listdir(path) if path.endswith('fd') else open(path, 'rb').read(16)
                except PermissionError:
                    return True
                return False
            assert os.path.exists('/proc/1')
            assert denied('/proc/1/environ')
            assert denied('/proc/1/mem')
        """))
        # The runner survived to report: the harness ran every test to its end.
        assert r["verdict"] == "PASSED", brief(r)
        assert r["tests_total"] == 3

    def test_runner_fds_cannot_be_listed(self, service):
        # The non-dumpable runner's /proc entries belong to host root: hidden from an unprivileged
        # sandbox user, but a sandbox that is host root may list (not open) the runner's fds.
        requires(service, "unprivileged")
        r = service.verify("pass", probe("""\
            import os
            try:
                os.listdir('/proc/1/fd')
                listed = True
            except PermissionError:
                listed = False
            assert not listed
            try:
                os.readlink('/proc/1/fd/0')
                opened = True
            except PermissionError:
                opened = False
            assert not opened
        """))
        assert r["verdict"] == "PASSED", brief(r)

    @pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGSTOP"])
    def test_runner_ignores_signals_from_the_candidate(self, service, sig):
        # PID 1 of a PID namespace only receives signals it has a handler for;
        # a runner that kept a handler could be stopped by the code it runs,
        # turning any failing completion into a reward-less INFRA_ERROR.
        code = (f"import os, signal, time\nos.kill(1, signal.{sig})\ntime.sleep(0.3)\n"
                f"os.kill(1, signal.SIGCONT)\ndef f():\n    return 1\n")
        r = service.verify(code, OK_SPEC)
        assert r["verdict"] == "PASSED", brief(r)

    def test_kill_everything_does_not_reach_the_runner(self, service):
        # kill(-1) hits every process the caller may signal, except itself and init.
        code = textwrap.dedent("""\
            import os, signal, subprocess, time
            child = subprocess.Popen(['sleep', '1000'], start_new_session=True)
            os.kill(-1, signal.SIGKILL)
            assert child.wait(5) == -signal.SIGKILL
            def f():
                return 1
        """)
        r = service.verify(code, OK_SPEC)
        # It also killed the tests' judge or the zygote (the completion runs in a process of its own): the tests'
        # results are void, no pass.
        assert r["verdict"] != "PASSED" and r["correctness_score"] == 0, brief(r)
        r = service.verify(OK_CODE, OK_SPEC)
        assert r["verdict"] == "PASSED", brief(r)


# ---- reward hacks -----------------------------------------------------------

class TestRewardHacks:
    @pytest.mark.parametrize("completion", [
        "import os\nos._exit(0)\n",
        "import sys\nsys.exit(0)\n",
        "raise SystemExit(0)\n",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    ], ids=["os._exit", "sys.exit", "SystemExit", "self-kill"])
    def test_exit_before_the_tests(self, service, completion):
        r = service.verify(completion, OK_SPEC)
        assert r["verdict"] != "PASSED", brief(r)
        assert r["reward"] is not None and r["reward"] <= 0.2
        assert r["tests_passed"] == 0

    def test_exit_inside_the_tested_function(self, service):
        r = service.verify("import os\ndef f():\n    os._exit(0)\n", OK_SPEC)
        assert r["verdict"] != "PASSED", brief(r)
        assert r["reward"] <= 0.2

    def test_fake_harness_lines_on_stdout(self, service):
        fake = textwrap.dedent("""\
            import json, os, sys
            events = [{"event": "test", "index": 0, "name": "assert f() == 1", "passed": True, "error": None,
                       "detail": "", "duration_s": 0.0}, {"event": "end"}]
            step = {"event": "step", "index": 0, "name": "tests", "exit_code": 0, "signal": None,
                    "timed_out": False, "output_limited": False, "duration_s": 0.1, "stdout": "", "stderr": "",
                    "report": "".join(json.dumps(e) + "\\n" for e in events)}
            for line in [*events, step, {"event": "done"}]:
                print(json.dumps(line))
            sys.stdout.flush()
            os._exit(0)
        """)
        r = service.verify(fake, OK_SPEC)
        assert r["verdict"] != "PASSED", brief(r)
        assert r["reward"] <= 0.2

    def test_forged_events_on_the_report_pipe(self, service):
        # The harness reports over an inherited pipe; a completion that finds it
        # and writes a passing test and the end event must not get the reward.
        forge = textwrap.dedent("""\
            import os, stat
            lines = b'{"event": "test", "index": 0, "name": "assert f() == 1", "passed": true, "error": null, ' \\
                    b'"detail": "", "duration_s": 0.0}\\n{"event": "end"}\\n'
            for fd in sorted(int(n) for n in os.listdir('/proc/self/fd')):
                if fd > 2:
                    try:
                        if stat.S_ISFIFO(os.fstat(fd).st_mode):
                            os.write(fd, lines)
                    except OSError:
                        pass
            os._exit(0)
        """)
        r = service.verify(forge, OK_SPEC)
        assert r["verdict"] != "PASSED", brief(r)
        assert r["reward"] <= 0.2

    def test_pytest_report_forged_before_exiting(self, service):
        requires(service, "pytest")
        # The JUnit report lives in the work directory the completion can write;
        # writing a passing report and exiting 0 during collection must not pass.
        forge = textwrap.dedent("""\
            import os
            xml = ('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" '
                   'failures="0" skipped="0" tests="1"><testcase classname="test_sol" name="test_f" '
                   'time="0.001"/></testsuite></testsuites>')
            with open('.rlvr-junit.xml', 'w') as fh:
                fh.write(xml)
            os._exit(0)
        """)
        spec = {"kind": "pytest", "timeout_s": 10,
                "files": {"test_sol.py": "from solution import f\n\ndef test_f():\n    assert f() == 1\n"}}
        assert service.verify(OK_CODE, spec)["verdict"] == "PASSED"
        r = service.verify(forge, spec)
        assert r["verdict"] != "PASSED", brief(r)
        assert r["reward"] <= 0.2

    def test_python_io_object_that_equals_everything(self, service):
        code = textwrap.dedent("""\
            class Liar:
                def __eq__(self, other):
                    return True
                def __ne__(self, other):
                    return False
                __hash__ = object.__hash__
            class IntLiar(int):
                def __eq__(self, other):
                    return True
                __hash__ = int.__hash__
                def __repr__(self):
                    return '42'
            def f(x):
                return Liar() if x == 1 else IntLiar(0)
        """)
        spec = {"kind": "python_io", "entry_point": "f", "timeout_s": 5,
                "cases": [{"args": [1], "expected": 42}, {"args": [2], "expected": 42}]}
        r = service.verify(code, spec)
        assert r["verdict"] == "FAILED", brief(r)
        assert [t["verdict"] for t in r["tests"]] == ["FAILED", "FAILED"]
        assert r["reward"] == pytest.approx(0.2)


# ---- concurrency --------------------------------------------------------------

def test_concurrent_bombs_do_not_disturb_correct_solutions(service):
    requires(service, "pids")
    bombs = {
        "memory": ("x = bytearray(2 * 1024**3)\n", "MEMORY_LIMIT"),
        "fork": ("import os\nwhile True:\n    os.fork()\n", None),
        "loop": ("while True:\n    pass\n", "TIMEOUT"),
        "output": ("while True:\n    print('x' * 10000)\n", "OUTPUT_LIMIT"),
    }
    spec = {**OK_SPEC, "timeout_s": 3}
    items, expected = [], []
    for code, verdict in bombs.values():
        items.append((code, spec))
        expected.append(verdict)
        items.append((OK_CODE, spec))
        expected.append("PASSED")
    results = service.verify_batch(items)
    assert [r["id"] for r in results] == [str(i) for i in range(len(items))]
    for r, want in zip(results, expected, strict=False):
        if want is None:
            assert r["verdict"] in ("TIMEOUT", "RUNTIME_ERROR"), brief(r)
        else:
            assert r["verdict"] == want, f"request {r['id']}: {brief(r)}"
    assert sum(r["verdict"] == "PASSED" for r in results) == 4


def test_hash_seed_is_fixed_in_every_step(service):
    # Forked harness steps (the judge, the completion's process) and freshly started ones (stdio) alike.
    code = "import sys\ndef f():\n    return sys.flags.hash_randomization\n"
    r = service.verify(code, probe("import sys\nassert f() == 0\nassert sys.flags.hash_randomization == 0\n"))
    assert r["verdict"] == "PASSED", brief(r)
    stdio = {"kind": "stdio", "language": "python", "cases": [{"stdin": "", "expected_stdout": "0\n"}]}
    r = service.verify("import sys\nprint(sys.flags.hash_randomization)\n", stdio)
    assert r["verdict"] == "PASSED", brief(r)
