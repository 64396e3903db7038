"""TRL reward functions backed by the remote verifier service.

``VerifierRewards(target).reward_funcs()`` gives a format reward and a
correctness reward for ``GRPOTrainer(reward_funcs=...)``. Both are async
callables of TRL's contract (``prompts``, ``completions``, ``completion_ids``,
dataset columns, ``trainer_state``, ``log_extra``, ``log_metric``), which TRL
awaits together; they share **one** ``VerifyStream`` RPC per training batch, which
carries each sample as its own message and brings each result back as it is ready:
``timeout_s`` bounds the batch, and at its end only the samples not answered yet
score ``None`` (a completion that runs out its time in the sandbox is TIMEOUT,
with its reward, well before that: the service bounds a job's total time).

The spec of each sample comes from a dataset column (``verification`` by
default) holding the JSON spec (a string or a mapping): an inline spec
(``{"kind": ...}``) or a catalog reference (``{"verifier": "team/name@1",
"gold": "12"}``); with ``verifier=`` a row that names neither holds only its
per-sample fields. ``credentials`` add the API key (RLVR_VERIFIER_API_KEY by
default, never logged) and TLS. A tenant over its quota (RESOURCE_EXHAUSTED
with a retry hint) waits as hinted, for at most ``max_throttle_s`` per batch,
before the batch counts as lost. A sample the sandbox
could not judge (INFRA_ERROR), or a whole batch lost to an unreachable service
after retries, scores ``None``: TRL leaves it out of the group mean. It is
never scored 0.0, which would train the model on infrastructure noise.

``shadow=`` adds an in-process reward computed on the same batches after each
remote call, timed apart (``BatchStats.shadow_s``, ``total_shadow_s``) and
compared with the remote rewards (``shadow/disagreements``); its values are
never returned to the trainer. It measures what the remote path costs.

``target`` may name several replicas (``"a:50051,b:50051"``, a list, or
``dns:///verifier:50051``): batches are spread with gRPC's round_robin, and a
batch that fails with UNAVAILABLE (a replica died or restarts) is sent again,
to another replica, after a bounded backoff (VerifyBatch is idempotent).
Every call goes through ``VerifierClient`` (one per event loop): its retry
table, its typed errors; ``timeout_s`` is a batch's whole budget, retries and
waits included, never a fresh deadline per attempt.

``VerifierRewards`` and its reward functions pickle (TRL's
``trl.experimental.async_grpo.AsyncGRPOTrainer`` scores in a spawned child
process and pickles ``reward_funcs`` into it): what travels is the
configuration, never a channel, a pending batch or the statistics. The
functions of one ``VerifierRewards`` pickled together stay one object on the
other side (still one RPC per batch). Each process opens its own channel on
its own event loop (the client is keyed by process and loop, so a forked child
never reuses its parent's channel); ``history`` and the wait totals count the
batches of the process they are read in.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import verifier_service.messages as pb
from trainer.errors import RewardError
from verifier_service.client import CallStats, RemoteRefusal, VerifierClient, check_service
from verifier_service.client.balancing import RetryPolicy
from verifier_service.credentials import Credentials
from verifier_service.errors import InvalidSpec, RemoteError, ServiceUnreachable
from verifier_service.spec import request_from_json
from verifier_service.wire import wire_text

log = logging.getLogger(__name__)
COMPONENTS = ("format", "correctness")
MAX_SHARED = 16
ShadowReward = Callable[[list[str], list[Any]], list[float]]
"""An in-process reward on the same batch (completion texts, specs) -> composite rewards: timed, compared, unused."""


def completion_text(completion: Any) -> str:
    """The text to verify: a plain string, or the last assistant message of a conversation."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        messages = [m for m in completion if isinstance(m, dict)]
        assistant = [m for m in messages if m.get("role") == "assistant"] or messages
        if not assistant:
            return ""
        content = assistant[-1].get("content", "")
        if isinstance(content, list):  # content parts
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return content if isinstance(content, str) else ""
    raise RewardError(f"cannot read a completion of type {type(completion).__name__}")


@dataclass
class BatchStats:
    """What one training batch's verification produced (also logged through ``log_metric``)."""

    size: int = 0
    verdicts: Counter = field(default_factory=Counter)
    infra_errors: int = 0
    lost: bool = False
    unfinished: int = 0  # samples not answered within the budget (each scored None; the others were not)
    attempts: int = 0
    wait_s: float = 0.0
    throttled_s: float = 0.0
    pass_rate: float | None = None
    shadow_s: float = 0.0
    shadow_disagreements: int | None = None
    # the service's own timings of the batch's slowest sample (VerifyResult.timings): waiting for a sandbox slot,
    # verifying, both; what a reward wait above its budget is made of
    service_max_queue_s: float = 0.0
    service_max_run_s: float = 0.0
    service_max_total_s: float = 0.0


@dataclass
class _Shared:
    completions: Any
    task: asyncio.Task
    waiting: set[str]


class VerifierRewards:
    """Format + correctness rewards sharing one VerifyBatch call per batch."""

    def __init__(self, target: str | Sequence[str], *, spec_column: str = "verification", verifier: str = "",
                 credentials: Credentials | None = None, timeout_s: float = 300.0, retries: int = 3,
                 backoff_s: float = 1.0, max_throttle_s: float = 300.0, connect_timeout_s: float = 10.0,
                 max_message_bytes: int = 64 * 1024 * 1024, retry: RetryPolicy | None = None,
                 shadow: ShadowReward | None = None, shadow_every: int = 1):
        self.target = target if isinstance(target, str) else ",".join(target)
        self.shadow = shadow
        self.shadow_every = max(1, shadow_every)  # the shadow runs on every n-th batch (it costs training time)
        self.shadow_runs = 0
        self.spec_column = spec_column
        self.verifier = verifier
        self.credentials = credentials if credentials is not None else Credentials.from_env()
        self.max_throttle_s = max_throttle_s
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        # UNAVAILABLE / DEADLINE_EXCEEDED: `retries` more attempts, waits doubling from backoff_s, capped
        self.retry = retry if retry is not None else RetryPolicy(
            attempts=retries + 1, initial_backoff_s=backoff_s, max_backoff_s=max(backoff_s, 8.0))
        self.max_message_bytes = max_message_bytes
        self._clients: dict[tuple[int, int], VerifierClient] = {}
        self._shared: dict[int, _Shared] = {}
        self._components: list[str] = []
        self.history: list[BatchStats] = []
        self.total_wait_s = 0.0
        self.total_shadow_s = 0.0
        self._check_health(connect_timeout_s)

    # ---- pickling (a spawned scoring process, e.g. TRL's AsyncGRPOTrainer) ----

    _PROCESS_LOCAL = ("_clients", "_shared", "history", "total_wait_s", "total_shadow_s", "shadow_runs")

    def __getstate__(self) -> dict[str, Any]:
        """The configuration only: channels, pending batches and statistics belong to the process that made them."""
        return {k: v for k, v in self.__dict__.items() if k not in self._PROCESS_LOCAL}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._clients, self._shared, self.history = {}, {}, []
        self.total_wait_s = self.total_shadow_s = 0.0
        self.shadow_runs = 0

    # ---- construction ------------------------------------------------------

    def _check_health(self, timeout_s: float) -> None:
        try:
            check_service(self.target, self.credentials, timeout_s, self.max_message_bytes)
        except ServiceUnreachable as exc:
            raise RewardError(str(exc)) from exc

    def reward_funcs(self, components: Sequence[str] = COMPONENTS,
                     weights: Sequence[float] | None = None) -> list[Callable]:
        """The reward functions for ``GRPOTrainer(reward_funcs=...)``, in the order given. ``weights``: each
        function scales its scores (for a trainer without ``reward_weights``, such as AsyncGRPOTrainer, which sums
        its reward functions); leave it out where the trainer weights them (GRPOTrainer's ``reward_weights``)."""
        unknown = [c for c in components if c not in COMPONENTS]
        if unknown:
            raise RewardError(f"unknown reward component(s) {unknown}; valid: {', '.join(COMPONENTS)}")
        if weights is not None and len(weights) != len(components):
            raise RewardError(f"{len(weights)} weight(s) for {len(components)} reward component(s)")
        self._components = list(components)
        return [_RewardFunction(self, c, 1.0 if weights is None else float(w))
                for c, w in zip(components, weights or [None] * len(components), strict=True)]

    # ---- one RPC per batch ---------------------------------------------------

    def _client(self) -> VerifierClient:
        """This process's client on this event loop (a gRPC aio channel belongs to the loop, and the process,
        that made it)."""
        key = (os.getpid(), id(asyncio.get_running_loop()))
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = VerifierClient.open(
                self.target, self.max_message_bytes, self.credentials, self.max_throttle_s, self.retry)
        return client

    async def results(self, component: str, completions: list, kwargs: dict[str, Any]) -> list[pb.VerifyResult | None]:
        """The batch's results; the first component to ask starts the RPC, the others join it."""
        key = id(completions)
        shared = self._shared.get(key)
        if shared is None or shared.completions is not completions or component not in shared.waiting:
            task = asyncio.ensure_future(self._verify(completions, kwargs))
            shared = _Shared(completions, task, set(self._components or [component]))
            self._shared[key] = shared
            while len(self._shared) > MAX_SHARED:  # a component that was never called leaves its entry
                self._shared.pop(next(iter(self._shared)))
        shared.waiting.discard(component)
        if not shared.waiting:
            self._shared.pop(key, None)
        return await asyncio.shield(shared.task)

    def _requests(self, completions: list, kwargs: dict[str, Any]) -> list[pb.VerifyRequest]:
        specs = kwargs.get(self.spec_column)
        if specs is None and self.verifier:
            specs = [None] * len(completions)  # a catalog verifier that needs no per-sample field
        if specs is None:
            raise RewardError(f"the dataset has no {self.spec_column!r} column: each prompt needs its verification "
                              f"spec there (a JSON object such as {{\"kind\": \"python_io\", ...}}, or a catalog "
                              f"reference {{\"verifier\": \"team/name@1\", ...}})")
        if len(specs) != len(completions):
            raise RewardError(f"{len(specs)} specs for {len(completions)} completions")
        requests, cache = [], {}
        for i, (completion, raw) in enumerate(zip(completions, specs, strict=False)):
            cache_key = raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True)
            template = cache.get(cache_key)
            if template is None:
                try:
                    obj = json.loads(raw) if isinstance(raw, str) else raw
                    if self.verifier and (obj is None or (isinstance(obj, dict) and "kind" not in obj
                                                          and "verifier" not in obj)):
                        obj = {"verifier": self.verifier, **(obj or {})}
                    template = cache[cache_key] = request_from_json({"completion": "", "spec": obj})
                except (ValueError, InvalidSpec) as exc:
                    raise RewardError(f"sample {i}: column {self.spec_column!r} does not hold a valid spec: {exc}") \
                        from exc
            request = pb.VerifyRequest()
            request.CopyFrom(template)
            request.id, request.completion = str(i), wire_text(completion_text(completion))
            requests.append(request)
        return requests

    async def _verify(self, completions: list, kwargs: dict[str, Any]) -> list[pb.VerifyResult | None]:
        requests = self._requests(completions, kwargs)
        stats = BatchStats(size=len(requests))
        started = time.perf_counter()
        results: list[pb.VerifyResult | None] = [None] * len(requests)
        call = CallStats()
        try:
            results = await self._client().verify_each(requests, timeout_s=self.timeout_s, stats=call)
            missing = sum(r is None for r in results)
            if missing:  # past the budget: only these samples score None; the others keep their rewards
                stats.unfinished = missing
                log.error("%d of %d sample(s) not verified within %gs: scored None, left out of the group means",
                          missing, len(requests), self.timeout_s)
        except RemoteRefusal as exc:  # the request or the caller is wrong: retrying cannot help, None would hide it
            raise RewardError(f"the verifier rejected the batch ({exc.code}): {exc.details}") from exc
        except RemoteError as exc:
            stats.lost = True
            log.error("verifier batch of %d lost after %d attempt(s) (%s: %s): scored None, left out of the group "
                      "means", len(requests), call.attempts, exc.code, exc.details)
        finally:
            stats.attempts, stats.throttled_s = call.attempts, call.throttled_s
        stats.wait_s = time.perf_counter() - started
        self.total_wait_s += stats.wait_s
        passed = total = 0
        for r in results:
            if r is None:
                continue
            stats.verdicts[pb.Verdict.Name(r.verdict)] += 1
            stats.service_max_queue_s = max(stats.service_max_queue_s, r.timings.queue_s)
            stats.service_max_run_s = max(stats.service_max_run_s, r.timings.run_s)
            stats.service_max_total_s = max(stats.service_max_total_s, r.timings.total_s)
            passed += r.tests_passed
            total += r.tests_total
        stats.infra_errors = stats.verdicts.get("INFRA_ERROR", 0) + (len(requests) if stats.lost else stats.unfinished)
        stats.pass_rate = passed / total if total else None
        if self.shadow is not None and len(self.history) % self.shadow_every == 0:
            self._run_shadow(stats, results, completions, kwargs)
        self.history.append(stats)
        self._log(stats, results, kwargs)
        return results

    def _run_shadow(self, stats: BatchStats, results: list[pb.VerifyResult | None], completions: list,
                    kwargs: dict[str, Any]) -> None:
        """The in-process shadow reward on the same batch, after the remote call: timed apart, never returned."""
        started = time.perf_counter()
        try:
            shadow = self.shadow([completion_text(c) for c in completions], list(kwargs.get(self.spec_column) or []))
        except Exception as exc:  # noqa: BLE001 - the shadow only measures; it must never stop training
            log.warning("shadow reward failed on a batch of %d: %s", len(completions), exc)
            shadow = None
        stats.shadow_s = time.perf_counter() - started
        self.total_shadow_s += stats.shadow_s
        self.shadow_runs += 1
        if shadow is not None and len(shadow) == len(results):
            stats.shadow_disagreements = sum(
                1 for r, s in zip(results, shadow, strict=True)
                if r is not None and r.verdict != pb.INFRA_ERROR and s is not None and abs(r.reward - s) > 1e-6)

    @staticmethod
    def _log(stats: BatchStats, results: list[pb.VerifyResult | None], kwargs: dict[str, Any]) -> None:
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            log_metric("verifier/infra_errors", float(stats.infra_errors))
            log_metric("verifier/batch_lost", float(stats.lost))
            log_metric("verifier/unfinished", float(stats.unfinished))
            log_metric("verifier/wait_s", stats.wait_s)
            log_metric("verifier/throttled_s", stats.throttled_s)
            if stats.shadow_disagreements is not None:
                log_metric("shadow/reward_s", stats.shadow_s)
                log_metric("shadow/disagreements", float(stats.shadow_disagreements))
            for name in pb.Verdict.keys()[1:]:
                log_metric(f"verifier/verdict/{name}", stats.verdicts.get(name, 0) / max(stats.size, 1))
            if stats.pass_rate is not None:
                log_metric("verifier/test_pass_rate", stats.pass_rate)
        log_extra = kwargs.get("log_extra")
        if log_extra is not None:
            log_extra("verdict", [pb.Verdict.Name(r.verdict) if r is not None else "LOST" for r in results])

    async def aclose(self) -> None:
        """Closes this process's channels (a forked parent's are the parent's to close)."""
        mine = [key for key in self._clients if key[0] == os.getpid()]
        for key in mine:
            await self._clients.pop(key).close()


class _RewardFunction:
    """One reward component as an async callable of TRL's reward contract."""

    def __init__(self, owner: VerifierRewards, component: str, weight: float = 1.0):
        self.owner = owner
        self.component = component
        self.weight = weight
        self.__name__ = f"verifier_{component}"

    async def __call__(self, prompts: list, completions: list, completion_ids: list | None = None,
                       **kwargs: Any) -> list[float | None]:
        results = await self.owner.results(self.component, completions, kwargs)
        scores: list[float | None] = []
        for r in results:
            if r is None or r.verdict == pb.INFRA_ERROR:
                scores.append(None)
            elif self.component == "format":
                scores.append(self.weight * float(r.format_score))
            else:
                scores.append(self.weight * float(r.correctness_score))
        return scores
