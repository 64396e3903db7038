"""The tenants' shares of the event loop (``service.loop_share``): who is held, and that a task driven by it
behaves as it would without it (results, exceptions, cancellation, timeouts)."""

from __future__ import annotations

import asyncio
import math
import time

import pytest

from verifier_service.service.loop_share import LoopShare
from verifier_service.tenancy.auth import Tenant, current_tenant


def test_a_tenant_alone_is_never_held():
    share = LoopShare(busy_share=0.25, window_s=0.1)
    share.charge("a", 1.0, now=10.0)  # far past its share, but nobody else uses the loop
    assert share.wait_s("a", 10.0) == 0.0


def test_the_heaviest_tenant_past_its_share_waits_and_the_lighter_does_not():
    share = LoopShare(busy_share=0.25, window_s=0.1, max_wait_s=1.0)
    share.charge("a", 0.08, now=10.0)   # 80 % of a window: over a 25 % share
    share.charge("b", 0.001, now=10.0)
    wait = share.wait_s("a", 10.0)
    assert wait > 0
    assert share.wait_s("b", 10.0) == 0.0
    # a waits (b's usage decays meanwhile, so the bar falls a little: a few more, shorter waits) until it is back
    # under the share above b's; never longer than its own usage takes to fall to the share
    now = 10.0
    for _ in range(50):
        wait = share.wait_s("a", now)
        if not wait:
            break
        now += wait
    assert share.wait_s("a", now) == 0.0
    assert now - 10.0 <= 0.1 * math.log(0.08 / (0.25 * 0.1)) + 1e-3


def test_tenants_that_use_the_loop_alike_are_not_held():
    share = LoopShare(busy_share=0.25, window_s=0.1, max_wait_s=1.0)
    share.charge("a", 0.05, now=10.0)  # two floods, each half of the loop
    share.charge("b", 0.045, now=10.0)
    assert share.wait_s("a", 10.0) == 0.0 and share.wait_s("b", 10.0) == 0.0


def test_a_held_tenant_waits_no_longer_than_its_own_usage_takes_to_fall_to_the_share():
    share = LoopShare(busy_share=0.25, window_s=0.1, max_wait_s=10.0)
    share.charge("a", 0.1, now=10.0)  # the whole loop for a
    share.charge("b", 0.0001, now=10.0)
    wait = share.wait_s("a", 10.0)
    assert 0 < wait <= 0.1 * math.log(0.1 / (0.25 * 0.1)) + 1e-3


def test_a_tenant_that_stopped_using_the_loop_is_forgotten():
    share = LoopShare(busy_share=0.25, window_s=0.1)
    share.charge("a", 0.08, now=10.0)
    share.charge("b", 0.001, now=10.0)
    assert share.wait_s("a", 10.0) > 0
    share.charge("a", 0.08, now=13.0)  # b has not run for 30 windows
    assert share.wait_s("a", 13.0) == 0.0


def _run(share: LoopShare | None, main):
    loop = asyncio.new_event_loop()
    try:
        if share is not None:
            share.install(loop)
        return loop.run_until_complete(main())
    finally:
        loop.close()


@pytest.mark.parametrize("installed", [False, True])
def test_a_driven_task_returns_raises_and_is_cancelled_as_without_it(installed):
    async def value():
        await asyncio.sleep(0)
        return 42

    async def error():
        await asyncio.sleep(0)
        raise KeyError("x")

    async def cancelled(log):
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            log.append("cancelled inside")
            raise

    async def caught_timeout():
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(10)
        except TimeoutError:
            return "timed out"

    async def main():
        assert await asyncio.create_task(value()) == 42
        with pytest.raises(KeyError):
            await asyncio.create_task(error())
        log: list[str] = []
        task = asyncio.create_task(cancelled(log))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert log == ["cancelled inside"] and task.cancelled()
        assert await asyncio.create_task(caught_timeout()) == "timed out"
        inner = asyncio.create_task(asyncio.sleep(0, result="same task"))
        assert await inner == "same task"
        return "done"

    assert _run(LoopShare() if installed else None, main) == "done"


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_tenant_flooding_the_loop_is_held_while_another_uses_it_and_not_alone():
    """Four tasks of tenant a run 1 ms steps back to back; tenant b's task runs a short step now and then. With
    b there, a is held; with a alone, never. The other tenant's steps are never held."""
    async def flood(stop: asyncio.Event):
        current_tenant.set(Tenant("a"))
        while not stop.is_set():
            _busy(0.001)
            await asyncio.sleep(0)

    async def other(steps: int):
        current_tenant.set(Tenant("b"))
        for _ in range(steps):
            _busy(0.0001)
            await asyncio.sleep(0.002)

    def held(with_other: bool) -> tuple[float, float]:
        share = LoopShare(busy_share=0.25, window_s=0.05)

        async def main():
            stop = asyncio.Event()
            floods = [asyncio.create_task(flood(stop)) for _ in range(4)]
            if with_other:
                await asyncio.create_task(other(50))
            else:
                await asyncio.sleep(0.2)
            stop.set()
            await asyncio.gather(*floods)

        _run(share, main)
        return share.held_s, share.usage("b", time.monotonic())

    assert held(with_other=False)[0] == 0.0
    assert held(with_other=True)[0] > 0.0


def test_long_steps_count_more_than_their_length():
    share = LoopShare(busy_share=0.25, window_s=0.1, long_step_s=0.001)
    assert share.weight(0.0005) == 0.0005 and share.weight(0.001) == 0.001
    assert share.weight(0.004) == pytest.approx(0.016)  # 4 times its length
    assert share.weight(0.5) == pytest.approx(5.0)  # at most LONG_STEP_MAX_FACTOR times
    assert LoopShare(long_step_s=0).weight(0.004) == 0.004


def test_a_tenant_of_long_steps_is_held_where_one_of_short_steps_with_the_same_total_is_not():
    """The same 20 ms of loop time in a window against a light tenant's 5 ms: in 40 steps of 0.5 ms it is under
    the bar (25 % of the window above the other's), in 5 steps of 4 ms it is over: each of those made the other
    tenant's next step wait up to 4 ms."""
    def held(step_s: float, steps: int) -> bool:
        share = LoopShare(busy_share=0.25, window_s=0.1, long_step_s=0.001)
        share.charge("light", 0.005, now=10.0)
        for _ in range(steps):
            share.charge("heavy", step_s, now=10.0, counted=share.weight(step_s))
        return share.wait_s("heavy", 10.0) > 0

    assert not held(0.0005, 40)
    assert held(0.004, 5)


def test_a_long_step_is_charged_by_its_weight():
    share = LoopShare(busy_share=0.25, window_s=10.0, long_step_s=0.001)

    async def main():
        token = current_tenant.set(Tenant("t"))
        try:
            spin = time.thread_time() + 0.005
            while time.thread_time() < spin:  # one step that holds the loop (and the CPU) 5 ms
                pass
            await asyncio.sleep(0)
        finally:
            current_tenant.reset(token)

    _run(share, main)
    now = time.monotonic()
    assert share.usage("t", now, counted=True) >= 0.005 * 5 * 0.9  # (at least 5 times its 5 ms, less what decays)
    assert share.usage("t", now) < share.usage("t", now, counted=True) / 4  # its loop time as it was


def test_a_step_the_machine_took_the_core_from_is_not_a_long_step():
    share = LoopShare(long_step_s=0.001)
    assert share.weight(0.004, cpu_s=0.0002) == 0.004  # 4 ms long, of it 0.2 ms on the CPU: its length only
    assert share.weight(0.004, cpu_s=0.004) == pytest.approx(0.016)


def test_the_bar_is_the_others_loop_time_as_it_was_not_as_counted():
    """A light tenant whose few steps were long (a garbage collection that the flood's allocations set off landed in
    them) does not raise the bar of the tenant it waits behind, and is itself not held behind that tenant."""
    share = LoopShare(busy_share=0.25, window_s=0.1, long_step_s=0.001)
    share.charge("light", 0.006, now=10.0, counted=share.weight(0.006))  # one 6 ms step: counted 60 ms
    share.charge("heavy", 0.04, now=10.0)  # 40 % of the window in short steps
    assert share.wait_s("heavy", 10.0) > 0  # over 25 % above the light one's 6 ms, not above its 60 ms
    assert share.wait_s("light", 10.0) == 0.0  # 60 ms counted is not 25 % above the heavy one's 40 ms
