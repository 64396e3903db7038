"""Sandbox sessions without a sandbox: per-tenant admission, the limits a session is granted, and the text the
TRL environment gives the model."""

from __future__ import annotations

import pytest

from trainer.environment import PythonSandboxEnv, _describe
from verifier_service._generated import verifier_pb2 as pb
from verifier_service.config import ServiceConfig
from verifier_service.errors import InvalidSpec, QuotaExceeded
from verifier_service.sandbox.sessions import SessionLimits
from verifier_service.service.sessions import SessionManager
from verifier_service.tenancy.auth import Tenant
from verifier_service.tenancy.session_quota import SessionQuotas


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_session_quotas_cap_live_sessions_and_opens_per_tenant():
    clock = Clock()
    quotas = SessionQuotas(max_sessions=2, open_rate=1.0, clock=clock)
    a, b = Tenant("a"), Tenant("b", max_sessions=5, session_rate=10.0)
    quotas.admit(a)
    quotas.admit(a)
    with pytest.raises(QuotaExceeded, match="2 live sessions") as full:
        quotas.admit(a)
    assert full.value.retry_after_s > 0
    quotas.release("a")
    with pytest.raises(QuotaExceeded, match="open rate"):  # the burst (2) is spent, no time went by
        quotas.admit(a)
    clock.now += 1.0
    quotas.admit(a)
    for _ in range(5):  # its own limits win over the service's
        quotas.admit(b)
    assert quotas.live == {"a": 2, "b": 5}


def test_where_no_limit_is_set_the_replicas_sessions_are_shared_by_the_tenants_asking():
    """A alone fills the replica (4 sessions). Once B asks (refused: the replica is full), A opens no more past
    its half, so what A closes goes to B, up to B's half; weights set the halves; a tenant with a limit of its
    own keeps it; B gone quiet for RECENT_S gives A the whole replica again."""
    clock = Clock()
    quotas = SessionQuotas(clock=clock, replica_sessions=4)
    a, b = Tenant("a"), Tenant("b")
    for _ in range(4):
        quotas.admit(a)  # alone: the whole replica
    quotas.admit(b)  # the replica's own cap refuses it (the manager gives the place back): B now asks
    quotas.release("b")
    quotas.release("a")
    with pytest.raises(QuotaExceeded, match="fair share of this replica's 4 while 2 tenants") as refused:
        quotas.admit(a)  # 3 live, its share 2
    assert refused.value.retry_after_s > 0
    quotas.admit(b)
    quotas.release("a")
    quotas.admit(b)
    with pytest.raises(QuotaExceeded, match="fair share"):
        quotas.admit(b)
    assert quotas.live == {"a": 2, "b": 2}
    heavy = Tenant("c", weight=3)
    quotas.release("a")
    quotas.release("a")
    quotas.release("b")
    quotas.release("b")
    clock.now += 31  # a and b quiet, none live: c alone
    for _ in range(4):
        quotas.admit(heavy)
    quotas.admit(b)  # b asks: c's share is 3 of 4, b's 1
    assert quotas.share(heavy) == (3, 2) and quotas.share(b) == (1, 2)
    quotas.release("b")
    clock.now += 31
    assert quotas.share(heavy) == (4, 1)  # b quiet and holding none: c alone again
    own = Tenant("d", max_sessions=10)
    for _ in range(5):
        quotas.admit(own)  # its own limit, not a share
    assert quotas.live["d"] == 5


def test_granted_limits_take_defaults_and_refuse_what_is_past_the_maxima():
    config = ServiceConfig(memory_mb=512, max_timeout_s=60, session_cell_timeout_s=7)
    manager = SessionManager(config, sandbox=None)
    granted = manager.grant(SessionLimits(0, 0, 0, 0, 0, 0))
    assert (granted.cell_timeout_s, granted.memory_mb, granted.output_limit_bytes) == (7, 512, 64 * 1024)
    assert manager.grant(SessionLimits(cell_timeout_s=30, memory_mb=100, budget_s=5, idle_ttl_s=1,
                                       output_limit_bytes=10, max_lifetime_s=99999)).max_lifetime_s == 3600
    for bad in (SessionLimits(cell_timeout_s=61), SessionLimits(memory_mb=513), SessionLimits(memory_mb=8),
                SessionLimits(output_limit_bytes=2 << 20)):
        with pytest.raises(InvalidSpec):
            manager.grant(bad)


def test_what_the_model_reads_from_a_cell():
    ok = pb.CellResult(status=pb.CELL_OK, stdout="hi\n", value="42")
    assert _describe(ok) == "hi\n42"
    assert _describe(pb.CellResult(status=pb.CELL_OK)) == "[no output]"
    slow = pb.CellResult(status=pb.CELL_TIMEOUT, error="KeyboardInterrupt", traceback="Traceback ...\n",
                         restarted=True)
    text = _describe(slow)
    assert "Traceback ..." in text and "time limit" in text and "restarted" in text
    env = PythonSandboxEnv.__new__(PythonSandboxEnv)
    env._max_output_chars = 30
    cut = env._fit("a" * 100)
    assert cut.startswith("a" * 20) and "characters cut" in cut and cut.endswith("a" * 10)


def test_only_the_tool_and_trl_hooks_are_public():
    """TRL offers every public method of the environment to the model as a tool."""
    import inspect

    public = sorted(name for name, _ in inspect.getmembers(PythonSandboxEnv, predicate=inspect.isfunction)
                    if not name.startswith("_"))
    assert public == ["get_reward", "reset", "run_python"]
    from transformers.utils import get_json_schema

    schema = get_json_schema(PythonSandboxEnv.run_python)
    assert schema["function"]["name"] == "run_python"
    assert schema["function"]["parameters"]["properties"]["code"]["type"] == "string"


# issue 31, class 8: the reward verifies what the session holds
def _state_after(records: list[tuple[str, str]]) -> dict:
    """Runs session_program(records) in a fresh interpreter and returns the names it left (their reprs)."""
    import subprocess
    import sys

    from trainer.environment import session_program

    program = session_program(records) + ("\nimport json\nprint(json.dumps({k: repr(v) for k, v in dict(globals())"
                                          ".items() if not k.startswith('__') and k != 'json'}))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=30, check=True)
    import json

    return json.loads(done.stdout.splitlines()[-1])


def _cell(code: str, status: int = pb.CELL_OK, traceback: str = "", restarted: bool = False):
    from trainer.environment import _cell_record

    return _cell_record(code, pb.CellResult(status=status, traceback=traceback, restarted=restarted))


def test_a_cell_that_defines_then_raises_keeps_its_definitions():
    cells = [_cell("def f(x):\n    return 2 * x\nraise ValueError('oops')", pb.CELL_ERROR),
             _cell("y = f(3)")]
    state = _state_after([c for c in cells if c])
    assert state["y"] == "6" and "f" in state


def test_a_later_future_import_compiles_as_in_the_session():
    cells = [_cell("import math"), _cell("from __future__ import annotations\ndef g(x: int) -> int:\n    return x")]
    assert "g" in _state_after(cells)


def test_a_cell_stopped_by_a_limit_keeps_what_ran_before_the_stop():
    tb = 'Traceback (most recent call last):\n  File "<cell>", line 3, in <module>\nKeyboardInterrupt\n'
    record = _cell("def f():\n    return 1\nwhile True:\n    pass\ndef late():\n    return 2", pb.CELL_TIMEOUT, tb)
    state = _state_after([record])
    assert "f" in state and "late" not in state  # the loop never ended in the session: late was never defined
    assert _cell("x = (", pb.CELL_ERROR) is None  # a cell that never compiled left nothing


def test_a_lost_interpreter_drops_what_came_before(monkeypatch):
    from trainer import environment

    env = environment.PythonSandboxEnv.__new__(environment.PythonSandboxEnv)
    env._cells = [("x = 1", "run")]
    env._max_output_chars = 2000
    env._session = None

    class Sessions:
        def execute(self, session_id, code):
            return pb.CellResult(status=pb.CELL_TIMEOUT, restarted=True)

    env._sessions = Sessions()
    monkeypatch.setattr(env, "_session_id", lambda: "s")
    env.run_python("while True: pass")
    assert env._cells == []
