"""Polling a condition instead of sleeping a fixed time."""

from __future__ import annotations

import time


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.1):
    """Polls ``predicate`` until it returns a true value or ``timeout`` seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()) and time.monotonic() < deadline:
        time.sleep(interval)
    return value
