"""Issue 36: one completion or one tenant never slows, starves or reaches another.

Two tenants on one real service (runc, gVisor and bubblewrap): tenant A attacks (a completion that makes a
regex quadratic, hostile pure checks, slow sandbox jobs, a job that sleeps through every case), tenant B's
calls must keep their deadlines and get their right verdicts. No timing is asserted: a deadline that B's call
must keep is a functional property (DEADLINE_EXCEEDED is a failure B would see), and each deadline (40 s) is many
times what B needs even on a loaded machine and below what the attack cost it before the fix (60-100 s).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import grpc
import pytest

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client import VerifierClient
from verifier_service.credentials import Credentials
from verifier_service.spec import request_from_json
from verifier_service.testing import ServedProcess, free_port

from support.sandboxes import runsc_registered
from support.tenancy_setup import Keys, write_tenants
from support.wait import wait_for

pytestmark = pytest.mark.backends("docker", "bwrap")

TRIVIAL = {"kind": "python_assert", "tests": "assert f() == 1", "timeout_s": 10}
TRIVIAL_CODE = "def f():\n    return 1\n"
FORMAT = {"kind": "format", "pattern": r"answer \d+"}


@pytest.fixture(params=["runc", "runsc"])
def runtime(request, sandbox_backend) -> str:
    if request.param == "runsc" and (sandbox_backend != "docker" or not runsc_registered()):
        pytest.skip("gVisor runs on the Docker backend, with runsc registered")
    return request.param


@pytest.fixture
def two_tenants(make_service, tmp_path, runtime):
    """A service with tenants A and B (no quotas: the default share), on the backend and runtime under test."""
    keys = Keys("team-a", "team-b")
    path = write_tenants(tmp_path / "tenants.yaml", keys, {})

    def make(**changes):
        extra = {"sandbox_runtime": "runsc"} if runtime == "runsc" else {}
        return make_service(tenants=path, **extra, **changes), keys

    return make


def request(completion: str, spec: dict, id: str = "r") -> pb.VerifyRequest:
    return request_from_json({"id": id, "completion": completion, "spec": spec})


def call(svc, keys, tenant: str, requests: list[pb.VerifyRequest], timeout: float) -> list[pb.VerifyResult]:
    response = svc.stub.VerifyBatch(pb.VerifyBatchRequest(requests=requests), metadata=keys.metadata(tenant),
                                    timeout=timeout)
    return list(response.results)


def in_background(svc, keys, tenant, requests, timeout):
    """A's call, sent now from another thread; returns its future (cancel() ends the RPC and its work)."""
    return svc.stub.VerifyBatch.future(pb.VerifyBatchRequest(requests=requests), metadata=keys.metadata(tenant),
                                       timeout=timeout)


def b_keeps_its_deadlines(svc, keys, rounds: int = 3, deadline: float = 40.0) -> None:
    for i in range(rounds):
        results = call(svc, keys, "team-b", [request(TRIVIAL_CODE, TRIVIAL, f"b{i}"),
                                             request(f"answer {i}", FORMAT, f"f{i}")], deadline)
        assert [pb.Verdict.Name(r.verdict) for r in results] == ["PASSED", "PASSED"], results


# ---- item 2: per-completion work is linear and off the event loop ---------------------------------------------

def test_an_unclosed_answer_tag_repeated_to_the_size_limit_stalls_no_one(two_tenants):
    """``<answer>`` repeated up to max_completion_bytes made the extraction regex quadratic (a minute of a
    blocked event loop: health and every tenant's calls stalled). Now A's answer is MALFORMED at once and B's
    calls and the health check keep their deadlines."""
    svc, keys = two_tenants()
    b_keeps_its_deadlines(svc, keys, rounds=1, deadline=180)  # warm (a fresh pool on a loaded machine)
    hostile = "<answer>" * (svc.app.config.max_completion_bytes // len("<answer>"))
    a = in_background(svc, keys, "team-a", [
        request(hostile, {"kind": "math", "gold": "1", "extract": "answer_tag"}, "math"),
        request(hostile, {**TRIVIAL, "extract": "answer_tag"}, "code"),
        request("```\n" * 65_000, {**TRIVIAL, "extract": "last_fenced_code"}, "fences"),
        request("<tool_call>" * 23_000, {"kind": "tool_call", "tools": [{"name": "f", "parameters": {}}]}, "tools"),
    ], timeout=30)
    b_keeps_its_deadlines(svc, keys)
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    status = health_pb2_grpc.HealthStub(svc.channel).Check(health_pb2.HealthCheckRequest(), timeout=5).status
    assert status == health_pb2.HealthCheckResponse.SERVING
    verdicts = {r.id: pb.Verdict.Name(r.verdict) for r in a.result().results}
    assert verdicts["math"] == "MALFORMED" and verdicts["code"] == "MALFORMED", verdicts
    assert verdicts["fences"] in ("MALFORMED", "RUNTIME_ERROR", "FAILED"), verdicts  # an empty block, checked
    assert verdicts["tools"] in ("MALFORMED", "FAILED"), verdicts


# ---- item 3: fair shares of the pools ---------------------------------------------------------------------------

def test_hostile_pure_checks_of_one_tenant_leave_another_its_share_of_the_workers(two_tenants):
    """A's checks each run to their limit (a catastrophic regex, 60 s each): first come first served, they took
    every pure worker (and a chunk that overran was run again, item by item). Now A holds its share of the
    workers and B's checks, sent after A's, come back within their deadline."""
    svc, keys = two_tenants()
    b_keeps_its_deadlines(svc, keys, rounds=1, deadline=180)  # warm (a fresh pool on a loaded machine)
    hostile = {"kind": "format", "pattern": "(a+)+$", "timeout_s": 60}
    a = in_background(svc, keys, "team-a", [request("a" * 60 + "!", hostile, f"a{i}") for i in range(8)], 120)
    try:
        pool = svc.app.pure_pool
        assert wait_for(lambda: pool._share.held.get("team-a", 0) > 0, 30, 0.05), "A's checks never started"
        b_keeps_its_deadlines(svc, keys)
        assert pool._share.held.get("team-a", 0) <= pool.size // 2, "A took more than its share"
        assert not a.done(), "A's checks ended before B's calls: the test showed nothing"
    finally:
        a.cancel()


def test_slow_jobs_of_one_tenant_leave_another_its_share_of_the_sandboxes(two_tenants):
    """A fills the sandboxes with jobs that sleep 100 s: first come first served, B's trivial check waited for
    one of them to end. Now A holds its share of the sandboxes and B's checks keep their deadlines."""
    svc, keys = two_tenants()
    b_keeps_its_deadlines(svc, keys, rounds=1, deadline=180)  # warm (a fresh pool on a loaded machine)
    slow = {"kind": "python_assert", "tests": "import time\ntime.sleep(100)\nassert f() == 1", "timeout_s": 110}
    n = svc.app.config.max_concurrency * 2
    a = in_background(svc, keys, "team-a", [request(TRIVIAL_CODE + f"# {i}\n", slow, f"a{i}") for i in range(n)],
                      150)
    try:
        share = svc.app.sandbox._share
        assert wait_for(lambda: share.held.get("team-a", 0) >= share.slots // 2, 60, 0.05), "A's jobs never ran"
        b_keeps_its_deadlines(svc, keys)
        assert share.held.get("team-a", 0) <= share.slots // 2, "A took more than its share"
        assert not a.done(), "A's jobs ended before B's calls: the test showed nothing"
    finally:
        a.cancel()


LIMIT_HITS = [
    # its time: a detached child that ignores every signal it can, then a loop past the limit
    ("import signal, subprocess\nsubprocess.Popen(['sh', '-c', 'trap \"\" TERM HUP INT; sleep 1000'], "
     "start_new_session=True)\ndef f():\n    while True:\n        pass\n", "TIMEOUT"),
    # its output cap
    ("import sys\ndef f():\n    while True:\n        sys.stdout.write('y' * 65536)\n", None),
]

NOTHING_LEFT = """\
import os
def others():
    found = []
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                found.append(open(f'/proc/{pid}/cmdline', 'rb').read())
            except OSError:
                pass
    return found
assert not any(b'sleep' in c for c in others())
assert f() == 1
"""


def test_a_job_that_hits_a_limit_keeps_its_sandbox_and_leaves_nothing_for_the_next(two_tenants):
    """A step that ran out its time or its output cap was treated as an anomaly: its sandbox was replaced, so a
    completion that loops or floods its output cost a sandbox start (the host's costliest work) every time, for
    every tenant (an output flood made another tenant's trivial check 21x slower at p50 on runc). The runner
    kills a limit-hitting step and everything it started, and scrubs after it, as after any step: the sandbox
    stays, and the next job in it finds nothing of the last one."""
    svc, keys = two_tenants(max_concurrency=1)
    sandbox = svc.app.sandbox
    call(svc, keys, "team-a", [request(TRIVIAL_CODE, TRIVIAL, "warm")], 180)
    recycled = sandbox.recycled
    for i, (completion, verdict) in enumerate(LIMIT_HITS):
        [result] = call(svc, keys, "team-a", [request(completion, {**TRIVIAL, "timeout_s": 3}, f"hit{i}")], 120)
        name = pb.Verdict.Name(result.verdict)
        assert name == verdict if verdict else name not in ("PASSED", "INFRA_ERROR"), result
        [after] = call(svc, keys, "team-a", [request(TRIVIAL_CODE, {**TRIVIAL, "tests": NOTHING_LEFT}, f"p{i}")],
                       120)
        assert pb.Verdict.Name(after.verdict) == "PASSED", after
    assert sandbox.recycled == recycled, "a limit hit cost a sandbox"


ZYGOTE_KILLER = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef f():\n    return 1\n"


def test_a_tenant_whose_jobs_cost_sandboxes_waits_for_their_replacement_within_its_share(two_tenants):
    """A job that leaves its sandbox unusable (here: it kills the zygote) makes the pool start another. The slot
    went back to its tenant at once, so A's next job took B's warm sandbox while A's replacement started, and
    B waited for starts that A caused (under gVisor a start costs about a second of CPU). A's slot is now held
    until its replacement is up; its answer does not wait for it. Sandbox starts are held back here, so the
    order is certain: B's check runs while A's replacement has not started and A's next job waits."""
    import threading

    svc, keys = two_tenants(max_concurrency=2)
    sandbox, share = svc.app.sandbox, svc.app.sandbox._share
    b_keeps_its_deadlines(svc, keys, rounds=1, deadline=180)  # B is active (its share is kept) and the pool warm
    assert wait_for(lambda: sandbox._idle is not None and sandbox._idle.qsize() == 2, 60, 0.05)
    gate = threading.Event()
    start = sandbox._start_instance

    def held_back(*args, **kwargs):
        gate.wait(120)
        return start(*args, **kwargs)

    sandbox._start_instance = held_back
    slow = {"kind": "python_assert", "tests": "import time\ntime.sleep(100)\nassert f() == 1", "timeout_s": 110}
    later = None
    try:
        [killed] = call(svc, keys, "team-a", [request(ZYGOTE_KILLER, TRIVIAL, "k")], 120)
        assert pb.Verdict.Name(killed.verdict) not in ("PASSED", "INFRA_ERROR"), killed
        assert sandbox.recycled >= 1 and share.held.get("team-a") == 1, share.held  # held for the replacement
        later = in_background(svc, keys, "team-a", [request(TRIVIAL_CODE, slow, "slow")], 170)
        b_keeps_its_deadlines(svc, keys, rounds=2)
        assert not later.done(), "A's next job ran before its replacement was up"
        assert share.held.get("team-a") == 1, share.held
    finally:
        gate.set()
        sandbox._start_instance = start
        if later is not None:
            later.cancel()
    assert wait_for(lambda: not any(share.held.values()), 60, 0.05), share.held


def test_the_sandboxes_are_shared_by_the_tenants_weights(make_service, tmp_path, runtime):
    """Tenant A has weight 3 and B weight 1 in the tenants file. A alone takes every sandbox; once B floods too,
    each freed sandbox goes by the weights: A holds 3 of the 4 and B 1, and neither more while both wait."""
    keys = Keys("team-a", "team-b")
    path = write_tenants(tmp_path / "tenants.yaml", keys, {"team-a": {"weight": 3}, "team-b": {"weight": 1}})
    svc = make_service(tenants=path, max_concurrency=4, **({"sandbox_runtime": "runsc"} if runtime == "runsc" else {}))
    share = svc.app.sandbox._share
    assert (svc.app.tenant_weight("team-a"), svc.app.tenant_weight("team-b"), svc.app.tenant_weight("x")) == (3, 1, 1)
    call(svc, keys, "team-a", [request(TRIVIAL_CODE, TRIVIAL, "warm")], 180)  # A's only: B is not active yet
    slow = {"kind": "python_assert", "tests": "import time\ntime.sleep(3)\nassert f() == 1", "timeout_s": 30}

    def flood(tenant: str, n: int):
        return in_background(svc, keys, tenant, [request(TRIVIAL_CODE + f"# {tenant} {i}\n", slow, f"{tenant}{i}")
                                                 for i in range(n)], 170)

    floods = [flood("team-a", 16)]
    try:
        assert wait_for(lambda: share.held.get("team-a", 0) == 4, 60, 0.02), f"A alone: held {share.held}"
        floods.append(flood("team-b", 8))
        assert wait_for(lambda: share.held.get("team-b", 0) == 1, 60, 0.02), f"B never got a sandbox: {share.held}"
        seen = set()

        def look() -> bool:
            seen.add((share.held.get("team-a", 0), share.held.get("team-b", 0)))
            return False

        wait_for(look, 4, 0.01)  # more than one job's length: sandboxes were freed and handed out meanwhile
        assert floods[0].running() and floods[1].running(), "a flood ended: the test showed nothing"
        assert max(a for a, _ in seen) <= 3 and max(b for _, b in seen) <= 1, seen
        assert (3, 1) in seen, seen
    finally:
        for f in floods:
            f.cancel()
        wait_for(lambda: not any(share.held.values()), 60, 0.05)  # the cancelled jobs' sandboxes are gone


def test_the_replicas_sessions_are_shared_by_the_tenants_that_ask(two_tenants):
    """Sessions (one sandbox each) were first come, first served up to the replica's max_sessions: a tenant
    without a session limit that opened them all kept every other tenant out for as long as it kept opening.
    Once B asks, A opens no more past its half, so the session A closes goes to B."""
    svc, keys = two_tenants(max_sessions=2, session_spares=0)

    def open_session(tenant: str) -> str:
        return svc.stub.OpenSession(pb.OpenSessionRequest(), metadata=keys.metadata(tenant), timeout=120).session_id

    def refused(tenant: str, match: str) -> None:
        with pytest.raises(grpc.RpcError) as err:
            open_session(tenant)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and match in err.value.details(), err.value

    a1, a2 = open_session("team-a"), open_session("team-a")  # alone: the whole replica
    refused("team-b", "max_sessions=2")  # full: B now asks
    svc.stub.CloseSession(pb.SessionRef(session_id=a1), metadata=keys.metadata("team-a"), timeout=60)
    refused("team-a", "its fair share of this replica's 2")
    b1 = open_session("team-b")
    cell = svc.stub.ExecuteCell(pb.ExecuteCellRequest(session_id=b1, code="6 * 7"), metadata=keys.metadata("team-b"),
                            timeout=120)
    assert cell.value == "42", cell
    for tenant, sid in (("team-a", a2), ("team-b", b1)):
        svc.stub.CloseSession(pb.SessionRef(session_id=sid), metadata=keys.metadata(tenant), timeout=60)


# ---- item 4: a job's total time is bounded; results come back per sample ---------------------------------------

SLEEPER = "import time\ntime.sleep({s})\nprint(input())\n"


def stdio(n: int, case_s: float) -> dict:
    return {"kind": "stdio", "case_timeout_s": case_s, "scoring": "fraction",
            "cases": [{"stdin": f"{i}\n", "expected_stdout": f"{i}\n"} for i in range(n)]}


def test_a_job_that_sleeps_through_every_case_stops_at_max_job_s_with_its_verdict(two_tenants):
    """30 cases, each sleeping just under its 2 s limit: 60 s and more in the sandbox. The job stops at
    max_job_s: TIMEOUT, with a reward (its penalty, not None); the honest samples of the
    same batch, streamed back one by one, are not held up by it."""
    svc, keys = two_tenants(max_job_s=8.0)
    spec = stdio(30, 2.0)
    requests = [request(SLEEPER.format(s=1.8), spec, "slow"), request(SLEEPER.format(s=0), spec, "honest"),
                request(SLEEPER.format(s=0), spec, "honest-again")]

    async def each():
        client = VerifierClient.open(svc.address, credentials=Credentials(api_key=keys.key["team-b"]))
        try:
            return await client.verify_each(requests, timeout_s=100)
        finally:
            await client.close()

    slow, honest, again = asyncio.run(each())
    assert pb.Verdict.Name(slow.verdict) == "TIMEOUT", slow
    assert slow.format_score > 0 and slow.reward > 0 and slow.correctness_score == 0, slow  # its penalty, a reward
    assert pb.Verdict.Name(honest.verdict) == "PASSED" and honest.id == "honest", honest
    assert pb.Verdict.Name(again.verdict) == "PASSED" and again.id == "honest-again"


def test_only_the_samples_that_did_not_finish_within_the_budget_are_none(two_tenants):
    """The reward functions' budget ends while one sample still runs: that sample alone scores None (it was
    one VerifyBatch: every sample of the batch was None), the honest ones keep their rewards."""
    from trainer.rewards import VerifierRewards

    svc, keys = two_tenants()
    spec = {"kind": "python_assert", "tests": "assert f() == 1", "timeout_s": 60}
    rewards = VerifierRewards(svc.address, credentials=Credentials(api_key=keys.key["team-b"]), timeout_s=12)
    completions = [TRIVIAL_CODE, "import time\ntime.sleep(50)\n" + TRIVIAL_CODE, "def f():\n    return 2\n"]
    fmt, correct = rewards.reward_funcs()

    async def score():
        try:
            kwargs = {"verification": [spec] * 3}
            return await asyncio.gather(fmt(["p"] * 3, completions, **kwargs), correct(["p"] * 3, completions,
                                                                                        **kwargs))
        finally:
            await rewards.aclose()

    formats, corrects = asyncio.run(score())
    assert corrects == [1.0, None, 0.0], corrects
    assert formats[1] is None and formats[0] == 1.0
    assert rewards.history[-1].unfinished == 1 and not rewards.history[-1].lost


# ---- item 1: a port in use stops the service --------------------------------------------------------------------

@pytest.mark.parametrize("door", ["grpc", "http", "workers"])
def test_a_second_service_on_a_port_in_use_stops_with_the_reason(door, sandbox_backend, runtime, tmp_path):
    """gRPC's port reuse was on: a second ``serve`` on the same port started and took half the connections
    (one with tenants and one without: authentication bypassed). Now it exits, naming the port; the first
    keeps every connection."""
    if runtime == "runsc":
        pytest.skip("the ports do not depend on the runtime")
    keys = Keys("team-a")
    tenants = write_tenants(tmp_path / "tenants.yaml", keys, {})
    http = free_port()
    common = ("--sandbox-backend", sandbox_backend, "--max-concurrency", "1", "--session-spares", "0")
    first = ServedProcess(*common, "--tenants", tenants, "--http-port", str(http))
    with first:
        port = {"grpc": first.port, "http": free_port(), "workers": first.port}[door]
        args = ["--http-port", str(http)] if door == "http" else []
        args += ["--workers", "2"] if door == "workers" else []
        second = ServedProcess(*common, *args, port=port)
        second.start(wait=False)
        try:
            second.proc.wait(120)
        except subprocess.TimeoutExpired:
            second.stop()
            pytest.fail(f"a second service started on a port in use:\n{second.log_tail()}")
        assert second.proc.returncode != 0
        what = "HTTP" if door == "http" else "gRPC"
        assert f"cannot serve {what} on 127.0.0.1:{http if door == 'http' else port}" in second.log_tail(), \
            second.log_tail()
        # every call still reaches the first service, which wants a key
        channel = grpc.insecure_channel(first.address)
        try:
            from verifier_service._generated import verifier_pb2_grpc as pb_grpc
            stub = pb_grpc.VerifierStub(channel)
            for _ in range(6):
                with pytest.raises(grpc.RpcError) as info:
                    stub.Verify(request("answer 12", FORMAT), timeout=30)
                assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        finally:
            channel.close()


# ---- item 9: what a completion writes is its verdict, on every backend ------------------------------------------

def test_nested_json_written_to_the_runners_stdout_is_a_verdict_not_infra_error(two_tenants):
    """Under gVisor a candidate can write to the runner's stdout (/proc/1/fd/1): JSON nested past the parser's
    recursion limit raised RecursionError on the host, and a wrong answer got INFRA_ERROR (no reward, no
    penalty). It is FAILED, on every backend, and the sandbox serves the next job."""
    from pathlib import Path

    svc, keys = two_tenants()
    program = (Path(__file__).resolve().parents[1] / "adversarial" / "hack_nested_json_runner_stdout.py").read_text()
    spec = {"kind": "python_assert", "tests": "assert f(2) == 4\n", "timeout_s": 10}
    results = call(svc, keys, "team-a", [request(program + f"# {i}\n", spec, f"n{i}") for i in range(3)], 120)
    # gVisor lets the write reach the runner's own stream: the garbled job ends as the completion's TIMEOUT (as
    # tests/adversarial/hack_nested_json_runner_stdout.py's expect-gvisor says), never INFRA_ERROR, never a pass
    allowed = {"FAILED", "TIMEOUT"} if svc.app.config.sandbox_runtime == "runsc" else {"FAILED"}
    assert {pb.Verdict.Name(r.verdict) for r in results} <= allowed, results
    assert all(r.correctness_score == 0 for r in results), results
    b_keeps_its_deadlines(svc, keys, rounds=1, deadline=120)


# ---- item 6: the runner never follows the program's symlinks ---------------------------------------------------

LEAKER = """\
import os
open("ok.txt", "w").write("mine")
os.symlink("/proc/1/environ", "environ")
os.symlink("/etc", "etc")
os.mkfifo("fifo")
os.makedirs("sub")
os.symlink("../ok.txt", "sub/up")
try:
    os.link("/etc/hostname", "hard")
except OSError:
    pass
print("planted")
"""


def test_fetch_files_never_follow_what_the_program_planted(two_tenants):
    """/run_code's fetch_files (and the pytest kind's report, read the same way) were opened by the runner (PID
    1, more privileged than the program) through whatever the program left at those paths: a symlink to the
    runner's own /proc files or to any file, a FIFO that blocks the runner. Only the program's own regular
    files come back; the rest is left out, and the sandbox serves the next job."""
    import base64

    import requests

    svc, keys = two_tenants(http_port=free_port())
    wanted = ["ok.txt", "environ", "etc/passwd", "etc/hostname", "fifo", "sub/up", "hard"]
    response = requests.post(svc.http_url + "/run_code", json={"code": LEAKER, "language": "python",
                                                               "fetch_files": wanted},
                             headers={"Authorization": f"Bearer {keys.key['team-a']}"}, timeout=120)
    body = response.json()
    assert body["run_result"]["stdout"] == "planted\n", body
    files = {name: base64.b64decode(data) for name, data in body.get("files", {}).items()}
    assert files == {"ok.txt": b"mine"}, files
    b_keeps_its_deadlines(svc, keys, rounds=1, deadline=120)


# ---- item 8: a verdict never depends on how loaded the machine is ----------------------------------------------

HOG = """\
import multiprocessing, os, sys, time
def burn(parent):
    while os.getppid() == parent:  # never outlives the hog (a SIGKILLed parent runs no atexit for its daemons)
        sum(range(100000))
if __name__ == "__main__":
    procs = [multiprocessing.Process(target=burn, args=(os.getpid(),), daemon=True) for _ in range(int(sys.argv[1]))]
    for p in procs:
        p.start()
    print("burning", flush=True)
    sys.stdin.read()
"""


def test_the_same_batch_gets_the_same_verdicts_idle_and_beside_a_cpu_hog(two_tenants, tmp_path):
    """A contest-style stdio check came back RUNTIME_ERROR under load (load average ~16) and PASSED alone: the
    runner gave its program host 5 s to answer and voided the case when the answer came later. The same batch
    (contest stdio Python, small stdio Python, assert checks) runs idle, then beside processes that burn every
    core several times over: every verdict is the same, and the expected one."""
    import os
    import signal
    import subprocess as sp
    import sys as _sys

    from benchmarks.workloads import request_json, tasks

    svc, keys = two_tenants()
    items = tasks("contest10", 9) + tasks("stdio_python", 6) + tasks("python_assert", 6)

    def run(salt: str) -> list[str]:
        requests = [request_from_json(request_json(t, i, salt)) for i, t in enumerate(items)]
        return [pb.Verdict.Name(r.verdict) for r in call(svc, keys, "team-b", requests, 600)]

    def right(verdicts: list[str]) -> list[str]:  # PARTIAL where a wrong contest program passed its first cases
        return [v if v != "PARTIAL" or "PARTIAL" not in t.get("accept", []) else "FAILED"
                for v, t in zip(verdicts, items, strict=True)]

    idle = right(run("idle"))
    assert idle == [t["expected"] for t in items], idle
    hog = sp.Popen([_sys.executable, "-c", HOG, str(4 * (os.cpu_count() or 2))], stdin=sp.PIPE, stdout=sp.PIPE,
                   text=True, start_new_session=True)
    try:
        assert hog.stdout.readline().strip() == "burning"
        loaded = [right(run(f"loaded-{i}")) for i in range(2)]
    finally:
        os.killpg(hog.pid, signal.SIGKILL)  # the hog and its burners (killing the hog alone left them burning)
        hog.wait(30)
    assert loaded == [idle, idle], loaded


def test_the_runner_waits_for_its_own_slow_process_but_not_for_a_stopped_one():
    """The runner's patience with its zygote and program host (``procs.await_answer``): a process that is alive
    and running is waited for past the first wait (a loaded machine); a stopped one (a step can SIGSTOP its
    host: same uid) is given up at once."""
    import os
    import signal
    import subprocess as sp
    import sys as _sys
    from pathlib import Path

    runner_dir = str(Path(__file__).resolve().parents[2] / "verifier_service" / "runner")
    _sys.path.insert(0, runner_dir)
    try:
        import procs
    finally:
        _sys.path.remove(runner_dir)
    read, write = os.pipe()
    slow = sp.Popen([_sys.executable, "-c", f"import os, time\ntime.sleep(1.5)\nos.write({write}, b'x')"],
                    pass_fds=(write,))
    try:
        assert procs.await_answer(read, slow.pid, 0.2)  # answered after 1.5 s: waited for
        assert os.read(read, 1) == b"x"
    finally:
        slow.wait(10)
    stopped = sp.Popen([_sys.executable, "-c", "import time\ntime.sleep(60)"])
    try:
        os.kill(stopped.pid, signal.SIGSTOP)
        assert wait_for(lambda: not procs.runnable(stopped.pid), 10, 0.01)
        assert not procs.await_answer(read, stopped.pid, 0.2)
    finally:
        stopped.kill()
        stopped.wait(10)
        os.close(read)
        os.close(write)


# ---- item 5: bwrap sandboxes never run as host root unless allowed ----------------------------------------------

@pytest.mark.bwrap
def test_bwrap_refuses_host_root_unless_allowed_and_an_unprivileged_interpreter_avoids_it():
    """A root service whose interpreter an unprivileged uid cannot read ran its sandboxes as host root, said only
    in a line of doctor. The backend now refuses, saying why and how to fix it; allowed explicitly it runs (as
    before); an interpreter the sandbox uid can read (the system's) runs them as an unprivileged uid."""
    import os
    from dataclasses import replace
    from pathlib import Path

    from verifier_service.errors import SandboxUnavailable
    from verifier_service.sandbox import make_sandbox
    from verifier_service.sandbox.bwrap import _reachable_by_others

    from support.service import TEST_CONFIG

    config = replace(TEST_CONFIG, sandbox_backend="bwrap", bwrap_python="", bwrap_allow_host_root=False)
    own = str(Path(os.path.realpath(sys.executable)).parent.parent)
    if os.geteuid() != 0 or _reachable_by_others(own):
        pytest.skip("needs a root service whose interpreter an unprivileged uid cannot reach (a root pyenv)")
    with pytest.raises(SandboxUnavailable, match=r"HOST ROOT.*--bwrap-allow-host-root"):
        make_sandbox(config).check_blocking()
    allowed = make_sandbox(replace(config, bwrap_allow_host_root=True))
    allowed.check_blocking()
    assert allowed.host_uid is None
    if _reachable_by_others("/usr/bin/python3"):
        system = make_sandbox(replace(config, bwrap_python="/usr/bin/python3"))
        system.check_blocking()
        assert system.host_uid == config.bwrap_host_uid
