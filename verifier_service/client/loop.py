"""The one bridge from synchronous code to asyncio: an event loop on a thread of its own.

``LoopThread`` keeps a loop running in a daemon thread; ``call`` runs a coroutine on it and waits (from any other
thread), ``submit`` returns its ``concurrent.futures.Future``. The trainer's synchronous reward adapters keep one
for their client (a gRPC aio channel belongs to one loop), ``testing.InProcessService`` serves the app from one,
and ``run_sync`` is ``asyncio.run`` that also works where a loop already runs (a Jupyter cell).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An event loop running in a daemon thread, until ``close``."""

    def __init__(self, name: str = "rlvr-loop"):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Starts ``coro`` on the loop; ``asyncio.wrap_future`` awaits its future from another loop."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Runs ``coro`` on the loop and returns its result (TimeoutError after ``timeout`` seconds)."""
        return self.submit(coro).result(timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Finishes the loop's async generators, stops the loop and joins its thread. The loop is left open: a
        caller may still run it to its end (``shutdown_default_executor``, to wait for its worker threads)."""
        if not self.loop.is_running():
            return
        try:
            self.call(self.loop.shutdown_asyncgens(), timeout)
        except Exception:  # noqa: BLE001 - stopping goes on: what is left dies with the daemon thread
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)

    def __enter__(self) -> LoopThread:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``; where this thread already runs an event loop (Jupyter), on a ``LoopThread``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with LoopThread("rlvr-sync") as bridge:
        return bridge.call(coro)
