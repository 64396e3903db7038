"""The reward functions called the way TRL's GRPOTrainer calls them, and a recorder of what they log."""

from __future__ import annotations

import asyncio
import threading


class Recorder:
    def __init__(self):
        self.metrics: dict[str, list[float]] = {}
        self.extra: dict[str, list] = {}

    def log_metric(self, name, value):
        self.metrics.setdefault(name, []).append(value)

    def log_extra(self, column, values):
        self.extra[column] = values


def call_like_trl(funcs, prompts, completions, columns, recorder):
    """What GRPOTrainer._calculate_rewards does with async reward functions: gather them on its own loop."""
    kwargs = dict(columns, trainer_state=None, log_extra=recorder.log_extra, log_metric=recorder.log_metric)

    async def gather():
        return await asyncio.gather(*(f(prompts=prompts, completions=completions, completion_ids=None, **kwargs)
                                      for f in funcs))

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        return asyncio.run_coroutine_threadsafe(gather(), loop).result(120)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
