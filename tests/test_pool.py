"""The killable worker pool of the pure verifiers (no Docker needed)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

from verifier_service.kinds import get_kind
from verifier_service.pool import PurePool
from verifier_service.spec import spec_from_json
from verifier_service.verdict import Verdict


def format_spec(pattern: str):
    return get_kind("format").validate(spec_from_json({"kind": "format", "pattern": pattern}))


def test_a_hanging_check_times_out_and_the_pool_recovers():
    async def scenario():
        pool = PurePool(1)
        await pool.start()
        try:
            spec = format_spec("(a+)+$")  # catastrophic backtracking on a near-miss
            hung = await pool.run("format", "a" * 40 + "!", spec, 1.0)
            fine = await pool.run("format", "aaa", spec, 1.0)
            chunk = await pool.run_many([("format", "a" * 40 + "!", spec, 1.0), ("format", "aa", spec, 1.0)])
            return hung, fine, chunk, pool.replaced
        finally:
            await pool.close()

    hung, fine, chunk, replaced = asyncio.run(scenario())
    assert hung.verdict is Verdict.TIMEOUT
    assert fine.verdict is Verdict.PASSED
    # the chunk overran: retried item by item, so only the hanging item is TIMEOUT
    assert [o.verdict for o in chunk] == [Verdict.TIMEOUT, Verdict.PASSED]
    assert replaced >= 2


def test_a_script_without_a_main_guard_can_use_the_pool(tmp_path):
    # Workers are fresh interpreters (python -m), so the caller's __main__ is never re-imported.
    script = tmp_path / "embed.py"
    script.write_text(textwrap.dedent("""\
        import asyncio
        from verifier_service.kinds import get_kind
        from verifier_service.pool import PurePool
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
