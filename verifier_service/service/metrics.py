"""Prometheus metrics of one service process, served on ``--metrics-port``.

Counted as they happen (by the servicer and the RPC interceptor):

- ``rlvr_verify_seconds{kind}``: a verification's latency (queue + run), a histogram;
- ``rlvr_verdicts_total{kind,verdict}``: results returned; the INFRA_ERROR rate is
  ``rate(rlvr_verdicts_total{verdict="INFRA_ERROR"}[5m]) / rate(rlvr_verdicts_total[5m])``;
- ``rlvr_rpcs_total{method,code}`` and ``rlvr_rpc_seconds{method}``: every Verifier RPC and its status;
- ``rlvr_tenant_verifications_total{tenant}``, ``rlvr_tenant_refusals_total{tenant,code}``:
  per-tenant usage (the tenant the auth layer set);
- ``rlvr_event_loop_lag_seconds``: how late the event loop woke a timer set ``LOOP_LAG_INTERVAL_S`` ahead (a
  histogram): every call's steps run on that loop, so its p99 is what any step of any call may wait behind
  the others' (``watch_loop``).

Read at scrape time from the live objects: ``rlvr_rpcs_in_flight``, ``rlvr_pending_completions``
(admitted, running + queued), ``rlvr_sandbox_running`` / ``rlvr_sandbox_pool_size`` /
``rlvr_sandbox_pool_idle`` / ``rlvr_sandbox_pool_utilisation``, ``rlvr_sandbox_recycled_total``
(warm sandboxes replaced) and ``rlvr_sandbox_backend_up`` (0 while health says NOT_SERVING).

Sandbox sessions: ``rlvr_sessions_live``, ``rlvr_sessions_opening``, ``rlvr_session_spares_idle``,
``rlvr_sessions_opened_total`` (read at scrape time), ``rlvr_session_cell_seconds`` (a cell's latency, a
histogram) and ``rlvr_session_cells_total{status}`` (counted by the session manager, ``sessions.py``).

Each ``Metrics`` has its own registry, so several services in one process (tests) do not mix.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

log = logging.getLogger(__name__)
LOOP_LAG_INTERVAL_S = 0.01
LOOP_LAG_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class _LiveCollector:
    """Gauges read from the service when Prometheus scrapes."""

    def __init__(self, read: Callable[[], dict[str, float]]):
        self.read = read

    def collect(self):
        try:
            values = self.read()
        except Exception:
            log.exception("reading the live metrics failed")
            return
        for name, value in values.items():
            family = CounterMetricFamily if name.endswith("_total") else GaugeMetricFamily
            yield family(name.removesuffix("_total") if family is CounterMetricFamily else name,
                         LIVE_HELP.get(name, name), value=value)


LIVE_HELP = {
    "rlvr_rpcs_in_flight": "Verifier RPCs being handled",
    "rlvr_pending_completions": "completions admitted and not yet answered (running + queued)",
    "rlvr_sandbox_running": "sandbox jobs running now",
    "rlvr_sandbox_pool_size": "sandboxes the warm pool keeps (max_concurrency)",
    "rlvr_sandbox_pool_idle": "warm sandboxes waiting for a job",
    "rlvr_sandbox_pool_utilisation": "sandbox jobs running / pool size",
    "rlvr_sandbox_recycled_total": "warm sandboxes replaced (job count, age, anomaly, cancellation)",
    "rlvr_sandbox_backend_up": "1 while the sandbox backend is healthy (health SERVING), else 0",
    "rlvr_sandbox_jobs_total": "sandbox jobs the runner finished",
    "rlvr_sessions_live": "sandbox sessions open now",
    "rlvr_sessions_opening": "sandbox sessions being opened now",
    "rlvr_session_spares_idle": "warm sandboxes waiting for a session to open",
    "rlvr_sessions_opened_total": "sandbox sessions opened",
    **{f"rlvr_sandbox_{part}_cpu_seconds_total": f"CPU seconds of finished sandbox jobs spent in {what}"
       for part, what in (("runner", "the runner"), ("zygote", "the zygote (the forks)"),
                          ("steps", "the steps' processes (the harness, the judge, the completion)"))},
    **{f"rlvr_sandbox_{part}_page_faults_total": f"minor page faults of finished sandbox jobs in {what}"
       for part, what in (("runner", "the runner"), ("zygote", "the zygote"), ("steps", "the steps' processes"))},
}


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.latency = Histogram("rlvr_verify_seconds", "latency of one verification (queue + run), by kind",
                                 ["kind"], buckets=LATENCY_BUCKETS, registry=r)
        self.verdicts = Counter("rlvr_verdicts", "verification results returned, by kind and verdict",
                                ["kind", "verdict"], registry=r)
        self.rpcs = Counter("rlvr_rpcs", "Verifier RPCs answered, by method and status code", ["method", "code"],
                            registry=r)
        self.rpc_latency = Histogram("rlvr_rpc_seconds", "Verifier RPC duration, by method", ["method"],
                                     buckets=LATENCY_BUCKETS, registry=r)
        self.tenant_verifications = Counter("rlvr_tenant_verifications", "completions verified, by tenant",
                                            ["tenant"], registry=r)
        self.tenant_refusals = Counter("rlvr_tenant_refusals", "batches refused, by tenant and status code",
                                       ["tenant", "code"], registry=r)
        self.loop_lag = Histogram("rlvr_event_loop_lag_seconds", "how late the event loop woke a timer due now",
                                  buckets=LOOP_LAG_BUCKETS, registry=r)
        self.in_flight = 0
        self._server: Any = None
        self._thread: Any = None

    def watch(self, read: Callable[[], dict[str, float]]) -> None:
        """Adds the gauges ``read`` returns at each scrape (name -> value)."""
        self.registry.register(_LiveCollector(read))

    async def watch_loop(self, interval_s: float = LOOP_LAG_INTERVAL_S) -> None:
        """Runs until cancelled: sleeps ``interval_s`` at a time and counts how late each wake-up came."""
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + interval_s
            await asyncio.sleep(interval_s)
            self.loop_lag.observe(max(0.0, loop.time() - due))

    def observe(self, tenant: str, results) -> None:
        """One answered batch: its results' kinds, verdicts and latencies, and the tenant's usage."""
        from verifier_service._generated import verifier_pb2 as pb

        verdicts: collections.Counter[tuple[str, int]] = collections.Counter()
        latency: dict = {}  # kind -> its histogram child: one label lookup per kind and batch, not per result
        for result in results:
            kind = result.kind or "unknown"
            verdicts[kind, result.verdict] += 1
            histogram = latency.get(kind)
            if histogram is None:
                histogram = latency[kind] = self.latency.labels(kind)
            histogram.observe(result.timings.total_s)
        for (kind, verdict), n in verdicts.items():
            self.verdicts.labels(kind, pb.Verdict.Name(verdict)).inc(n)
        self.tenant_verifications.labels(tenant).inc(len(results))

    def refused(self, tenant: str, code: str) -> None:
        self.tenant_refusals.labels(tenant, code).inc()

    def serve(self, host: str, port: int) -> int:
        """Serves /metrics over HTTP on a thread of its own; returns the bound port."""
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        return self._server.server_port

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
