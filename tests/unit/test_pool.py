"""The killable worker pool of the pure verifiers (no Docker needed)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

from verifier_service.engine.pool import PurePool
from verifier_service.kinds import get_kind
from verifier_service.spec import spec_from_json
from verifier_service.verdict import Verdict


def format_spec(pattern: str):
    return get_kind("format").validate(spec_from_json({"kind": "format", "pattern": pattern}))


def on_pool(size: int, scenario):
    """``scenario(pool)`` run on a started PurePool of ``size`` workers, closed after it."""
    async def run():
        pool = PurePool(size)
        await pool.start()
        try:
            return await scenario(pool)
        finally:
            await pool.close()

    return asyncio.run(run())


def test_a_hanging_check_times_out_and_the_pool_recovers():
    async def scenario(pool):
        spec = format_spec("(a+)+$")  # catastrophic backtracking on a near-miss
        hung = await pool.run("format", "a" * 40 + "!", spec, 1.0)
        fine = await pool.run("format", "aaa", spec, 1.0)
        chunk = await pool.run_many([("format", "a" * 40 + "!", spec, 1.0), ("format", "aa", spec, 1.0)])
        return hung, fine, chunk, pool.replaced

    hung, fine, chunk, replaced = on_pool(1, scenario)
    assert hung.verdict is Verdict.TIMEOUT
    assert fine.verdict is Verdict.PASSED
    # each check of a chunk has its own limit: only the hanging item is TIMEOUT, the rest goes on on a fresh worker
    assert [o.verdict for o in chunk] == [Verdict.TIMEOUT, Verdict.PASSED]
    assert replaced == 2  # one worker per hanging check: a timed-out check is never run again


def test_a_check_that_timed_out_is_not_run_again():
    """A timeout is a verdict: running the check again would double what a hostile answer costs the pool."""
    async def scenario(pool):
        spec = format_spec("(a+)+$")
        tasks = [("format", "a" * 40 + "!", spec, 1.0)] * 4 + [("format", "aa", spec, 1.0)]
        return await pool.run_many(tasks), pool.replaced

    outcomes, replaced = on_pool(2, scenario)
    assert [o.verdict for o in outcomes] == [Verdict.TIMEOUT] * 4 + [Verdict.PASSED]
    assert replaced == 4


def test_a_check_that_kills_its_worker_twice_is_a_verdict_not_infra_error(monkeypatch):
    """A worker that dies during a check is replaced and the check tried once more; an answer whose check kills
    the fresh worker too is FAILED (a reward), never INFRA_ERROR (no penalty: a way out a policy would learn)."""
    stream = PurePool._stream
    deaths = []

    def crashing(worker, tasks, encoded):
        text = tasks[0][1]  # the check the worker runs first
        if text == "crash" or (text == "once" and not deaths):
            deaths.append(worker.process.pid)
            worker.process.kill()
            worker.process.wait()
        return stream(worker, tasks, encoded)

    monkeypatch.setattr(PurePool, "_stream", staticmethod(crashing))

    async def scenario(pool):
        spec = format_spec("[a-z]+")
        crash = await pool.run("format", "crash", spec, 5.0)
        once = await pool.run("format", "once", spec, 5.0)  # a worker lost once: the retry decides
        chunk = await pool.run_many([("format", "crash", spec, 5.0), ("format", "fine", spec, 5.0)])
        return crash, once, chunk

    crash, once, chunk = on_pool(1, scenario)
    assert crash.verdict is Verdict.FAILED and "twice" in crash.detail
    assert once.verdict is Verdict.PASSED
    assert [o.verdict for o in chunk] == [Verdict.FAILED, Verdict.PASSED]
    assert len(set(deaths)) == len(deaths) >= 4  # every death was a fresh worker's


def test_a_script_without_a_main_guard_can_use_the_pool(tmp_path):
    # Workers are fresh interpreters (python -m), so the caller's __main__ is never re-imported.
    script = tmp_path / "embed.py"
    script.write_text(textwrap.dedent("""\
        import asyncio
        from verifier_service.kinds import get_kind
        from verifier_service.engine.pool import PurePool
        from verifier_service.spec import spec_from_json

        async def main():
            pool = PurePool(2)
            await pool.start()
            spec = get_kind("math").validate(spec_from_json({"kind": "math", "gold": "1/2"}))
            outcome = await pool.run("math", "so \\\\boxed{0.5}", spec, 10.0)
            await pool.close()
            print(outcome.verdict.value)

        asyncio.run(main())
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "PASSED"


def test_encoded_checks_give_the_same_result_messages_as_outcomes():
    """run_many(encoded=True) sends each result's message as bytes; they must equal the messages
    built from the Outcomes of the plain path, and a check that overruns is an Outcome (TIMEOUT) among them."""
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.config import ServiceConfig
    from verifier_service.engine.engine import Engine
    from verifier_service.engine.results import outcome_proto
    from verifier_service.spec import request_from_json

    def spec(**fields):  # validated with the engine's defaults, as the engine sends them
        return Engine(ServiceConfig(), None, None).prepare(request_from_json({"completion": "", "spec": fields})).spec

    schema = spec(kind="json_schema", scoring="fraction",
                  schema={"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}})
    fmt = spec(kind="format", pattern=r"<a>\d+</a>")
    math = spec(kind="math", gold="1/2")
    tasks = [("json_schema", '{"a": 1}', schema, 5.0), ("json_schema", '{"a": "x"}', schema, 5.0),
             ("json_schema", '{"a": ', schema, 5.0), ("format", "<a>12</a>", fmt, 5.0), ("format", "nope", fmt, 5.0),
             ("math", "so \\boxed{0.5}", math, 10.0), ("math", "so \\boxed{2}", math, 10.0)]

    async def scenario(pool):
        plain = await pool.run_many(tasks)
        encoded = await pool.run_many(tasks, encoded=True)
        slow = spec(kind="format", pattern="(a+)+$")
        hung = await pool.run_many([("format", "a" * 40 + "!", slow, 1.0), ("format", "aa", slow, 1.0)],
                                   encoded=True)
        return plain, encoded, hung

    plain, encoded, hung = on_pool(2, scenario)
    assert all(isinstance(b, bytes) for b in encoded)
    want = [outcome_proto(kind, s, o) for (kind, _, s, _), o in zip(tasks, plain, strict=True)]
    assert [pb.VerifyResult.FromString(b) for b in encoded] == want
    assert [pb.Verdict.Name(w.verdict) for w in want] == ["PASSED", "FAILED", "MALFORMED", "PASSED", "MALFORMED",
                                                          "PASSED", "FAILED"]
    assert hung[0].verdict is Verdict.TIMEOUT  # an overrun comes back as an Outcome, the rest as bytes
    assert pb.VerifyResult.FromString(hung[1]).verdict == pb.PASSED
