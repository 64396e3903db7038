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
