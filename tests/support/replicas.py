"""Replicas as separate ``verifier-service serve`` processes on loopback, and a workload with known verdicts.

Shared by the load, fault and fleet tests. A ``Replica`` can be SIGKILLed and
restarted on the same port; its RSS (with its worker processes) and its
Prometheus metrics can be read. ``workload`` makes requests whose right
verdict is known in advance: every completion unique (nothing deduplicated),
json_schema and format for volume, python_assert for the sandbox.
"""

from __future__ import annotations

import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client import health_status
from verifier_service.spec import request_from_json
from verifier_service.testing import ServedProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"],
          "additionalProperties": False}
SCHEMA_SPEC = {"kind": "json_schema", "schema": SCHEMA}
FORMAT_SPEC = {"kind": "format", "pattern": r"answer: \d+", "match": "full"}
PY_SPEC = {"kind": "python_assert", "extract": "raw", "tests": "assert f() % 2 == 0", "timeout_s": 10}


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and every process below it, MiB."""
    total = 0
    for p in (pid, *descendants(pid)):
        try:
            with open(f"/proc/{p}/status") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
        except OSError:
            continue
    return total / 1024


def health(address: str, timeout: float = 2.0):
    return health_status(address, timeout)


class Replica(ServedProcess):
    """One ``verifier-service serve`` process on a fixed loopback port (kept across restarts), with its
    Prometheus port; its log in ``log_dir``."""

    def __init__(self, log_dir: Path, name: str = "replica", *args: str, env: dict[str, str] | None = None):
        self.name = name
        self.metrics_port = free_port()
        self.children: list[int] = []  # of a killed process: they must not outlive it
        super().__init__(*args, env=env, cwd=ROOT, log_path=log_dir / f"{name}.log")

    def command(self) -> list[str]:
        return [self.python, "-m", self.module, "serve", "--host", self.host, "--port", str(self.port),
                "--metrics-port", str(self.metrics_port), "--shutdown-grace-s", "2", "--health-interval-s", "0.5",
                *self.args]

    def kill(self) -> None:
        """SIGKILL: no graceful stop, its sandboxes and workers are left to fend for themselves."""
        assert self.proc is not None
        self.children = descendants(self.proc.pid)
        super().kill()

    def rss_mib(self) -> float:
        assert self.proc is not None
        return rss_mib(self.proc.pid)

    def metrics(self) -> dict[str, float]:
        """The /metrics samples, ``name{labels}`` -> value."""
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10).read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                out[key] = float(value)
        return out


def metric_sum(samples: dict[str, float], name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include ``labels``."""
    total = 0.0
    for key, value in samples.items():
        base, _, rest = key.partition("{")
        if base != name:
            continue
        if all(f'{k}="{v}"' in rest for k, v in labels.items()):
            total += value
    return total


@dataclass(frozen=True)
class Item:
    request: pb.VerifyRequest
    expected: str  # the verdict name
    spec: dict     # the spec as JSON (a dataset's verification column)


def _item(rid: str, completion: str, spec: dict, expected: str) -> Item:
    return Item(request_from_json({"id": rid, "completion": completion, "spec": spec}), expected, spec)


def cheap_item(i: int, tag: str = "") -> Item:
    """json_schema (PASSED / FAILED / MALFORMED) or format (PASSED / MALFORMED: a format miss), by i."""
    rid = f"{tag}c{i}"
    kind = i % 5
    if kind == 0:
        return _item(rid, f'{{"n": {i}}}', SCHEMA_SPEC, "PASSED")
    if kind == 1:
        return _item(rid, f'{{"n": -{i}}}', SCHEMA_SPEC, "FAILED")
    if kind == 2:
        return _item(rid, f"not json {i}", SCHEMA_SPEC, "MALFORMED")
    if kind == 3:
        return _item(rid, f"answer: {i}", FORMAT_SPEC, "PASSED")
    return _item(rid, f"answer is {i}", FORMAT_SPEC, "MALFORMED")


def sandboxed_item(i: int, tag: str = "", sleep_s: float = 0.0) -> Item:
    """python_assert: f() returns i; PASSED when i is even, FAILED when odd."""
    body = f"import time\ntime.sleep({sleep_s})\n" if sleep_s else ""
    code = f"{body}def f():\n    return {i}\n"
    return _item(f"{tag}s{i}", code, PY_SPEC, "PASSED" if i % 2 == 0 else "FAILED")


def workload(n_cheap: int, n_sandboxed: int, tag: str = "", sleep_s: float = 0.0) -> list[Item]:
    """Cheap and sandboxed items interleaved (sandboxed ones spread evenly)."""
    items = [cheap_item(i, tag) for i in range(n_cheap)]
    if n_sandboxed:
        step = max(1, len(items) // n_sandboxed)
        for j in range(n_sandboxed):
            items.insert(min(len(items), j * (step + 1)), sandboxed_item(j, tag, sleep_s))
    return items


def batches(items: list[Item], size: int) -> list[list[Item]]:
    return [items[i:i + size] for i in range(0, len(items), size)]
