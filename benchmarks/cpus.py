"""The service on cores of its own, the benchmark's clients on others (``--service-cpus`` / ``--client-cpus``).

On a shared machine the flooding client, the victim tenant's client and the service take turns on the same
cores, so part of a victim's latency under a flood is the flooding client's own CPU, which on a real fleet
runs on another host. Giving each side its own cores measures what the service does to one tenant while
another floods it. Where the machine has too few cores (the 2-core build machine), leave both unset.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator


def parse(spec: str) -> set[int]:
    """``"0-5,8"`` -> {0, 1, 2, 3, 4, 5, 8}; an empty string is no set (None for callers)."""
    cpus: set[int] = set()
    for part in filter(None, (p.strip() for p in spec.split(","))):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


@contextlib.contextmanager
def children_on(spec: str) -> Iterator[None]:
    """Processes started inside run on ``spec``'s cores (they inherit this thread's affinity when forked); this
    thread gets its own cores back after."""
    if not spec:
        yield
        return
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, parse(spec))
    try:
        yield
    finally:
        os.sched_setaffinity(0, own)


def pin_self(spec: str) -> None:
    """This process's threads from now on (and the threads it starts) run on ``spec``'s cores."""
    if spec:
        os.sched_setaffinity(0, parse(spec))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--service-cpus", default="", help="cores for the service and its sandboxes (e.g. 0-7)")
    parser.add_argument("--client-cpus", default="", help="cores for the tenants' clients (e.g. 8-15)")


def start_apart(served, service: str, client: str, **start):
    """Starts ``served`` (a ``testing.ServedProcess``) on the ``service`` cores, then moves this process (the
    clients) to the ``client`` cores; ``served``, started."""
    with children_on(service):
        served.start(**start)
    pin_self(client)
    return served


def describe(service: str, client: str) -> str:
    if not service and not client:
        return "the service and the clients share every core"
    return f"the service on cores {service or 'all'}, the clients on cores {client or 'all'}"
