"""The service's own metrics that need no service: the event loop's lag."""

import asyncio
import time

from verifier_service.service.metrics import Metrics


def _lag_counts(metrics: Metrics) -> dict[str, float]:
    samples = next(f for f in metrics.registry.collect() if f.name == "rlvr_event_loop_lag_seconds").samples
    return {s.labels.get("le", s.name): s.value for s in samples if s.name.endswith(("_bucket", "_count"))}


def test_the_loop_lag_histogram_counts_a_step_that_held_the_loop():
    metrics = Metrics()

    async def main():
        watch = asyncio.create_task(metrics.watch_loop(0.01))
        await asyncio.sleep(0.1)  # wake-ups on time
        quiet = _lag_counts(metrics)
        time.sleep(0.06)  # one step that holds the loop: the timer due within 10 ms wakes 50-60 ms late
        await asyncio.sleep(0.05)
        watch.cancel()
        return quiet, _lag_counts(metrics)

    quiet, after = asyncio.run(main())
    assert quiet["rlvr_event_loop_lag_seconds_count"] >= 1  # (its 10 ms timer fires before the 100 ms one, whatever
    # the machine's load: how many more fire is not this test's business)
    late = after["rlvr_event_loop_lag_seconds_count"] - after["0.02"]  # wake-ups more than 20 ms late
    assert late >= 1 + quiet["rlvr_event_loop_lag_seconds_count"] - quiet["0.02"]
