"""Sandbox sessions through gRPC on real sandboxes: state kept between cells, per-cell limits, a dying kernel,
no leak between sessions, admission, gone sessions, close by label, and the manager used from Python."""

from __future__ import annotations

import time
from dataclasses import replace

import grpc
import pytest

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client.errors import RemoteInvalidSpec, RemoteOverloaded, RemoteSessionGone
from verifier_service.client.sessions import SessionClient
from verifier_service.sandbox.sessions import SessionLimits
from verifier_service.tenancy.auth import LOCAL_TENANT

from support.sandboxes import live_sandboxes, stray_sandboxes
from support.service import TEST_CONFIG, RunningService
from support.wait import wait_for

LIMITS = pb.SessionLimits(cell_timeout_s=5, output_limit_bytes=4096, memory_mb=200)


@pytest.fixture(scope="module")
def svc(docker_ready):
    running = RunningService(replace(TEST_CONFIG, session_spares=2, max_sessions=6, max_concurrency=1))
    yield running
    running.close()
    # (stray: not owned by a service still up, such as the test session's shared one with its warm pool)
    assert not stray_sandboxes("docker"), "session sandboxes left after the service stopped"


@pytest.fixture
def client(svc):
    with SessionClient(svc.address, max_wait_s=0) as c:
        yield c


@pytest.fixture
def sid(client):
    """A session of LIMITS, closed after the test."""
    session = client.open(limits=LIMITS).session_id
    yield session
    client.close_session(session)


def run(client, sid, code, **kw):
    return client.execute(sid, code, **kw)


def value(result):
    return result.value if result.HasField("value") else None


@pytest.mark.docker
def test_state_is_kept_between_cells(client, sid):
    assert run(client, sid, "import math\nx = 41\ndef f(n):\n    return n * 2").status == pb.CELL_OK
    r = run(client, sid, "x += 1\nprint('out'); import sys; print('err', file=sys.stderr)\nf(x)")
    assert (r.status, r.stdout, r.stderr, value(r), r.cell_index) == (pb.CELL_OK, "out\n", "err\n", "84", 2)
    assert value(run(client, sid, "open('notes.txt', 'w').write('kept'); None")) is None
    assert value(run(client, sid, "open('notes.txt').read(), math.pi > 3")) == "('kept', True)"
    err = run(client, sid, "y = x\n1 / 0")
    assert err.status == pb.CELL_ERROR and err.error.startswith("ZeroDivisionError")
    assert 'File "<cell>", line 2' in err.traceback and "kernel.py" not in err.traceback
    assert value(run(client, sid, "y")) == "42"  # the statement before the error ran
    assert value(run(client, sid, "input() + '!'", stdin="typed\n")) == "'typed!'"
    assert run(client, sid, "def broken(:").status == pb.CELL_ERROR


@pytest.mark.docker
def test_cell_limits(client, sid):
    run(client, sid, "kept = 'yes'\nopen('f', 'w').write('file')")
    slow = run(client, sid, "import time\ntime.sleep(30)", timeout_s=1)
    assert slow.status == pb.CELL_TIMEOUT and not slow.restarted
    spin = run(client, sid, "while True: pass", timeout_s=1)
    assert spin.status == pb.CELL_TIMEOUT and not spin.restarted
    assert value(run(client, sid, "kept")) == "'yes'"  # an interrupted cell keeps the session's state
    loud = run(client, sid, "while True: print('x' * 1000)")
    assert loud.status == pb.CELL_OUTPUT_LIMIT and len(loud.stdout) <= 4096 and loud.stdout.startswith("x")
    small = run(client, sid, "print('y' * 300)", output_limit_bytes=100)
    assert small.status == pb.CELL_OUTPUT_LIMIT and len(small.stdout) == 100
    big = run(client, sid, "block = bytearray(400 * 1024 * 1024)")
    assert big.status == pb.CELL_MEMORY_LIMIT and not big.restarted
    assert value(run(client, sid, "kept")) == "'yes'"
    # A cell that will not be interrupted is killed: its kernel is replaced (variables lost, files kept).
    # (It sleeps: a spinning one could meet its CPU-seconds limit first, which ends the cell without a kill.)
    stubborn = run(client, sid, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                   "while True: time.sleep(0.05)", timeout_s=1)
    assert stubborn.status == pb.CELL_TIMEOUT and stubborn.restarted
    assert run(client, sid, "kept").error.startswith("NameError")
    assert value(run(client, sid, "open('f').read()")) == "'file'"


@pytest.mark.docker
def test_a_dying_kernel_is_reported_and_replaced(client, sid):
    run(client, sid, "x = 1")
    died = run(client, sid, "import os\nos._exit(3)")
    assert died.status == pb.CELL_ERROR and died.restarted and "exit code 3" in died.error
    killed = run(client, sid, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert killed.status in (pb.CELL_ERROR, pb.CELL_MEMORY_LIMIT) and killed.restarted
    assert "signal 9" in killed.error
    assert run(client, sid, "x").error.startswith("NameError")
    assert value(run(client, sid, "1 + 1")) == "2"  # the session goes on with a fresh interpreter


ADVERSARY = """
import os, subprocess
open('secret.txt', 'w').write('A-secret')
open('/tmp/planted', 'w').write('A')
open('/dev/shm/planted', 'w').write('A')
subprocess.Popen(['sh', '-c', 'while true; do echo A > /tmp/from-background; sleep 0.05; done'])
os.system('sleep 300 &')
pid = os.fork()
if pid == 0:
    os.setsid()
    import time
    time.sleep(300)
    os._exit(0)
os.getcwd()
"""

PROCESSES = """
import os
def cmd(p):
    try:
        return open(f'/proc/{p}/cmdline', 'rb').read().replace(b'\\0', b' ').decode().strip()
    except OSError:
        return ''
sorted(cmd(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid() and cmd(p))
"""


@pytest.mark.backends("docker", "bwrap")
def test_sessions_never_see_each_other(make_service, sandbox_backend):
    isolated = make_service(session_spares=1, max_concurrency=1)
    with SessionClient(isolated.address, max_wait_s=0) as client:
        a = client.open(limits=LIMITS).session_id
        b = client.open(limits=LIMITS).session_id
        a_dir = value(run(client, a, ADVERSARY)).strip("'")
        # Nothing the cell started outlives it in its own session: no sleeper, no background writer.
        time.sleep(0.2)
        assert not any("sleep" in p or "while true" in p for p in eval(value(run(client, a, PROCESSES))))
        # Session B: none of A's files, processes or work dir.
        seen = eval(value(run(client, b, "import os\n(os.listdir('/tmp'), os.listdir('/dev/shm'))")))
        assert all(name.startswith("session-") for name in seen[0]) and seen[1] == []
        assert a_dir.split("/")[-1] not in seen[0]
        probe = run(client, b, f"open({a_dir + '/secret.txt'!r}).read()")
        assert probe.status == pb.CELL_ERROR and "FileNotFoundError" in probe.error
        assert not any("sleep" in p for p in eval(value(run(client, b, PROCESSES))))
        # A's sandbox is removed when it closes; the next session's sandbox is a fresh one.
        a_sandbox = isolated.app.sessions.sessions[a].sandbox.instance.id
        client.close_session(a)
        assert wait_for(lambda: a_sandbox not in live_sandboxes(sandbox_backend), timeout=30)
        c = client.open(limits=LIMITS).session_id
        seen = eval(value(run(client, c, "import os\n(os.listdir('/tmp'), os.listdir('/dev/shm'))")))
        assert "planted" not in seen[0] and "from-background" not in seen[0] and seen[1] == []
        for sid in (b, c):
            client.close_session(sid)


THREAD_SPAWNER = """
import os, subprocess, threading, time
def spawn():
    time.sleep(2.5)  # once the runner has killed what the cell left
    subprocess.Popen(['sleep', '300'])
    while True:
        with open('beats', 'a') as fh:
            fh.write('.')
        time.sleep(0.02)
threading.Thread(target=spawn, daemon=True).start()
"""


@pytest.mark.docker
def test_nothing_of_a_cell_runs_between_cells(client, sid):
    # A thread the cell left in the kernel (its state, kept) must not run between cells: it would start
    # processes after the runner killed the cell's, and use CPU no cell's limit covers.
    assert not run(client, sid, THREAD_SPAWNER).restarted
    time.sleep(3.0)
    run(client, sid, "None")  # (the thread's wait: over at once where it ran between cells, else in this cell)
    before = value(run(client, sid, "import os\nlen(open('beats').read()) if os.path.exists('beats') else 0"))
    time.sleep(1.0)
    after = value(run(client, sid, "import os\nlen(open('beats').read()) if os.path.exists('beats') else 0"))
    assert int(after) - int(before) < 10, (before, after)  # 50 a second while it ran


@pytest.mark.docker
def test_reset_empties_the_session(client, sid):
    run(client, sid, "x = 1\nopen('f', 'w').write('1')\nopen('/tmp/g', 'w').write('1')")
    info = client.reset(sid)
    assert info.session_id == sid
    assert run(client, sid, "x").error.startswith("NameError")
    assert value(run(client, sid, "import os\nos.listdir('.'), sorted(os.listdir('/tmp'))"))[:6] == "([], ["
    assert "'g'" not in value(run(client, sid, "import os\nos.listdir('/tmp')"))


@pytest.mark.docker
def test_gone_sessions_answer_not_found_saying_why(client, svc):
    sid = client.open(limits=LIMITS).session_id
    client.close_session(sid)
    with pytest.raises(RemoteSessionGone, match="closed by its client"):
        run(client, sid, "1")
    with pytest.raises(RemoteSessionGone, match="restarted"):
        run(client, "s-00000000-" + "0" * 24, "1")
    with pytest.raises(RemoteSessionGone, match="no session"):
        run(client, "nonsense", "1")
    short = client.open(limits=pb.SessionLimits(idle_ttl_s=0.5)).session_id
    assert wait_for(lambda: short not in svc.app.sessions.sessions, timeout=10)
    with pytest.raises(RemoteSessionGone, match="idle"):
        run(client, short, "1")
    budget = client.open(limits=pb.SessionLimits(budget_s=1.0)).session_id
    assert run(client, budget, "import time\ntime.sleep(5)", timeout_s=5).status == pb.CELL_TIMEOUT
    with pytest.raises(RemoteSessionGone, match="budget"):
        run(client, budget, "1")


@pytest.mark.docker
def test_bad_requests_are_invalid_argument(client):
    with pytest.raises(RemoteInvalidSpec, match="python"):
        client.open(language="cobol")
    with pytest.raises(RemoteInvalidSpec, match="memory_mb"):
        client.open(limits=pb.SessionLimits(memory_mb=100000))
    with pytest.raises(RemoteInvalidSpec, match="label"):
        client.close_labelled({})


@pytest.mark.docker
def test_close_by_label(client, svc):
    ids = [client.open(labels={"run": "r1", "i": str(i)}).session_id for i in range(2)]
    other = client.open(labels={"run": "r2"}).session_id
    assert client.close_labelled({"run": "r1"}) == 2
    for sid in ids:
        with pytest.raises(RemoteSessionGone):
            run(client, sid, "1")
    assert value(run(client, other, "2")) == "2"
    assert client.close_labelled({"run": "r2"}) == 1
    owned = svc.app.sandbox._live  # this service's sandboxes (another service of the test run may be up)
    assert wait_for(lambda: len([c for c in live_sandboxes("docker") if c in owned])
                    <= svc.app.config.session_spares + 1, timeout=30)


@pytest.mark.docker
def test_admission_caps_live_sessions_and_opens(make_service, docker_ready):
    capped = make_service(session_spares=0, max_sessions=2, max_concurrency=1)
    with SessionClient(capped.address, max_wait_s=0) as c:
        first = c.open().session_id
        c.open()
        with pytest.raises(RemoteOverloaded, match="max_sessions=2") as refused:
            c.open()
        assert refused.value.retryable
        with pytest.raises(grpc.RpcError) as raw:
            c.stub.OpenSession(pb.OpenSessionRequest(), timeout=30)
        assert raw.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert dict(raw.value.trailing_metadata()).get("retry-after-ms") == "1000"
        c.close_session(first)
        c.open()  # room again
    rated = make_service(session_spares=0, session_open_rate=0.2, max_concurrency=1)
    with SessionClient(rated.address, max_wait_s=0) as c:
        c.open(), c.open()  # the burst (at least 2)
        with pytest.raises(RemoteOverloaded, match="open rate"):
            c.open()
    manager = rated.app.sessions
    assert manager.live_metrics()["rlvr_sessions_live"] == 2


@pytest.mark.docker
def test_the_manager_is_usable_from_python(svc):
    """What an HTTP front door does: the session manager without gRPC."""
    manager = svc.app.sessions

    async def scenario():
        entry = await manager.open(LOCAL_TENANT, "python", SessionLimits(cell_timeout_s=5, memory_mb=200),
                                   {"via": "python"})
        _, first = await manager.execute(LOCAL_TENANT, entry.id, "z = 6 * 7")
        _, second = await manager.execute(LOCAL_TENANT, entry.id, "z")
        closed = await manager.close_labelled(LOCAL_TENANT, {"via": "python"})
        return first.status, second.value, closed

    assert svc.call(scenario()) == ("ok", "42", 1)
    assert manager.cells_by_status["ok"] >= 2


@pytest.mark.docker
def test_a_restarted_replica_drops_its_sessions(docker_ready):
    """SIGKILL the service with a live session, start it again on its port: the session's sandbox is swept, and
    a call for it answers NOT_FOUND saying the service restarted."""
    from verifier_service.testing import ServedProcess

    from support.sandboxes import sandbox_containers

    before = set(sandbox_containers())
    served = ServedProcess("--sandbox-image", TEST_CONFIG.sandbox_image, "--max-concurrency", "1",
                           "--session-spares", "0", "--log-level", "WARNING")
    served.start(timeout=120)
    try:
        with SessionClient(served.address, max_wait_s=0) as client:
            sid = client.open().session_id
            assert value(run(client, sid, "x = 1\nx")) == "1"
            served.kill()
            served.start(timeout=120)  # the same port; its start sweeps the dead replica's sandboxes
            with pytest.raises(RemoteSessionGone, match="restarted"):
                run(client, sid, "x")
            assert wait_for(lambda: set(sandbox_containers()) <= before | set(served_sandboxes(served)), timeout=30)
    finally:
        served.stop(60)


def served_sandboxes(served) -> list[str]:
    """The containers the (restarted) service owns now: its warm pool, by its owner label."""
    import subprocess

    from verifier_service.sandbox.docker import OWNER_LABEL, process_identity

    out = subprocess.run(["docker", "ps", "-q", "--no-trunc", "--filter",
                          f"label={OWNER_LABEL}={process_identity(served.pid)}"], capture_output=True, text=True,
                         check=False)
    return out.stdout.split()


@pytest.mark.docker
def test_a_spare_that_died_is_not_handed_out(make_service):
    import subprocess

    spared = make_service(session_spares=1, max_concurrency=1)
    sandboxes = spared.app.sessions.sandboxes
    assert sandboxes.idle == 0  # spares come with the first open
    with SessionClient(spared.address, max_wait_s=0) as client:
        client.close_session(client.open().session_id)
    assert wait_for(lambda: sandboxes.idle == 1, timeout=60)
    dead = sandboxes._idle[0].instance.id
    subprocess.run(["docker", "kill", dead], capture_output=True, check=True, timeout=60)
    with SessionClient(spared.address, max_wait_s=0) as client:
        sid = client.open().session_id
        assert value(run(client, sid, "6 * 7")) == "42"
        assert spared.app.sessions.sessions[sid].sandbox.instance.id != dead


@pytest.mark.docker
def test_tenants_own_their_sessions(svc):
    from verifier_service.errors import QuotaExceeded, SessionGone
    from verifier_service.tenancy.auth import Tenant

    manager = svc.app.sessions
    alice, bob = Tenant("alice", max_sessions=1), Tenant("bob")

    async def scenario():
        entry = await manager.open(alice, labels={"who": "alice"})
        try:
            with pytest.raises(QuotaExceeded, match="alice"):
                await manager.open(alice)
            with pytest.raises(SessionGone, match="no session"):
                await manager.execute(bob, entry.id, "1")
            assert await manager.close_labelled(bob, {"who": "alice"}) == 0  # labels close only the caller's own
            _, outcome = await manager.execute(alice, entry.id, "'mine'")
            return outcome.value
        finally:
            await manager.close(alice, entry.id)

    assert svc.call(scenario()) == "'mine'"
    assert manager.quotas.live.get("alice") == 0


@pytest.mark.docker
def test_a_session_whose_sandbox_dies_says_so(client, svc):
    import subprocess

    sid = client.open().session_id
    run(client, sid, "x = 1")
    container = svc.app.sessions.sessions[sid].sandbox.instance.id
    subprocess.run(["docker", "kill", container], capture_output=True, check=True, timeout=60)
    lost = run(client, sid, "x")
    assert lost.status == pb.CELL_INFRA_ERROR and lost.session_ended
    with pytest.raises(RemoteSessionGone, match="is over"):
        run(client, sid, "x")
    assert wait_for(lambda: container not in live_sandboxes("docker"), timeout=30)
