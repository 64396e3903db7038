"""The engine: validates requests, runs the right verifier kind, scores the outcome.

``prepare`` does every check that can reject a request (``InvalidSpec``)
before any work starts; ``verify`` never raises for anything the completion
does: the result is always a ``VerifyResult``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.config import ServiceConfig
from verifier_service.engine.extract import extract
from verifier_service.engine.pool import PurePool
from verifier_service.engine.results import outcome_proto, set_timings
from verifier_service.errors import InvalidSpec
from verifier_service.kinds import COMMON_PARAMS, Context, PureKind, VerifierKind, all_kinds, get_kind
from verifier_service.sandbox import Sandbox
from verifier_service.spec import EXTRACT_MODES, SCORING_MODES, Spec, spec_from_proto
from verifier_service.verdict import Outcome
from verifier_service.wire import UNDECODABLE, marked_size

log = logging.getLogger(__name__)
_COMMON = {p.name for p in COMMON_PARAMS}
SPEC_CACHE = 4096  # validated specs kept (a training batch repeats each prompt's spec)
SPEC_CACHE_BYTES = 64 * 1024 * 1024  # and their serialized bytes together at most (large specs are not all kept)
OFFLOAD_CHARS = 32 * 1024  # completions' characters extracted on the event loop; more go to a thread
_DEFAULT_WEIGHTS = {p.name: p.default for p in COMMON_PARAMS if p.name.endswith("_weight")}


@dataclass(frozen=True)
class Prepared:
    id: str
    completion: str
    spec: Spec
    kind: VerifierKind
    timeout_s: float
    key: tuple = ()  # same key, same result: GRPO groups repeat completions (see ``Engine.prepare``)
    verdict: Outcome | None = None  # decided before any check: the completion itself is unusable
    spec_key: bytes = b""  # the spec's serialized bytes (its slow checks run once per spec)
    size: int = 0  # bytes the request holds while it is verified: its spec, completion and id (admission's count)



class Engine:
    def __init__(self, config: ServiceConfig, sandbox: Sandbox | None, pure_pool: PurePool | None):
        self.config = config
        self.sandbox = sandbox
        self.pure_pool = pure_pool
        self._specs: dict[bytes, tuple[bytes, Spec, VerifierKind]] = {}  # serialized spec -> (the same bytes, ...)
        self._last: tuple[bytes, Spec, VerifierKind] | None = None  # the spec prepared last (a batch repeats it)
        self._spec_bytes = 0  # len of the keys of _specs together
        self._spec_checked: set[bytes] = set()  # keys of _specs whose kind's slow checks passed
        self._results: OrderedDict[tuple, pb.VerifyResult] = OrderedDict()

    def prepare(self, request: pb.VerifyRequest) -> Prepared:
        """Validates one request; InvalidSpec says what the caller got wrong. Whatever is wrong with
        the completion (model output: untrusted) is that sample's verdict, never an error."""
        completion = request.completion
        size = marked_size(completion)  # (a door that measured an oversize completion dropped its text)
        encoded = b"" if size is not None else completion.encode("utf-8", "surrogatepass")  # (never a surrogate)
        if not request.HasField("spec") or not request.spec.kind:
            raise InvalidSpec("spec.kind is required; ListVerifiers names the kinds")
        spec_bytes = request.spec.SerializeToString(deterministic=True)
        if len(spec_bytes) > self.config.max_spec_bytes:  # before anything of it is parsed
            raise InvalidSpec(f"the spec is {len(spec_bytes)} bytes, over this service's limit of "
                              f"{self.config.max_spec_bytes} (max_spec_bytes)")
        last = self._last
        cached: tuple[bytes, Spec, VerifierKind] | None
        if last is not None and last[0] == spec_bytes:  # (a compare, not a hash of the whole spec: the common case)
            cached = last
        else:
            cached = self._specs.get(spec_bytes)
            if cached is None:
                try:
                    cached = self._specs[spec_bytes] = (spec_bytes, *self._validate_spec(request.spec))
                except RecursionError as exc:  # a schema or tool list nested past what the checks can walk
                    raise InvalidSpec("the spec is nested too deeply to check") from exc
                self._spec_bytes += len(spec_bytes)
                while len(self._specs) > SPEC_CACHE or (self._spec_bytes > SPEC_CACHE_BYTES and len(self._specs) > 1):
                    oldest = next(iter(self._specs))
                    self._spec_bytes -= len(oldest)
                    self._specs.pop(oldest)
                    self._spec_checked.discard(oldest)
            self._last = cached
        spec_key, spec, kind = cached  # (the cached bytes object: its hash is computed once, then kept)
        held = len(spec_key) + len(encoded) + len(request.id)
        verdict = completion_verdict(completion, len(encoded) if size is None else size,
                                     self.config.max_completion_bytes)
        # The key holds the spec's bytes by reference, not a copy: hashing it costs the completion's length. A
        # verdict's key (None: never a completion's bytes) holds the verdict's detail, not the completion.
        key = (spec_key, encoded) if verdict is None else (spec_key, None, verdict.detail)
        if verdict is not None:
            completion = ""
        return Prepared(request.id, completion, spec, kind, spec.timeout_s or self.config.default_timeout_s,
                        key, verdict, spec_key, held)

    async def spec_problems(self, items: list[Prepared], tenant: str = "") -> list[tuple[int, str]]:
        """(index, problem) of the items whose spec fails its kind's slow checks (``VerifierKind.spec_problem``),
        each spec checked once (then remembered), in a pure worker within ``spec_check_timeout_s``: never on
        the event loop. Without a pure pool (in-process use) the checks run in a thread, without a limit."""
        first: dict[bytes, int] = {}
        for index, item in enumerate(items):
            if item.kind.slow_checks and item.spec_key not in self._spec_checked and item.spec_key not in first:
                first[item.spec_key] = index
        if not first:
            return []

        async def one(item: Prepared) -> str | None:
            if self.pure_pool is None:
                return await asyncio.to_thread(item.kind.spec_problem, item.spec)
            return await self.pure_pool.spec_problem(item.kind.name, item.spec, self.config.spec_check_timeout_s,
                                                     tenant)

        found = await asyncio.gather(*(one(items[index]) for index in first.values()))
        problems = []
        for (key, index), problem in zip(first.items(), found, strict=True):
            if problem is None:
                if key in self._specs:
                    self._spec_checked.add(key)
            else:
                problems.append((index, problem))
        return problems

    def _validate_spec(self, message: pb.VerificationSpec) -> tuple[Spec, VerifierKind]:
        """The validated spec with its defaults, and its kind (cached by the caller: batches share specs)."""
        spec = spec_from_proto(message)
        kind = get_kind(spec.kind)
        allowed = _COMMON | {p.name for p in kind.params}
        stray = [name for name in spec.set_fields() if name not in allowed]
        if stray:
            raise InvalidSpec(f"field(s) {', '.join(stray)} do not apply to kind {kind.name!r}; its parameters: "
                              f"{', '.join(sorted(allowed))}")
        spec = spec.with_defaults(extract=kind.default_extract, scoring="all_or_nothing", **_DEFAULT_WEIGHTS)
        if spec.extract not in EXTRACT_MODES:
            raise InvalidSpec(f"spec.extract {spec.extract!r} is not valid; valid: {', '.join(EXTRACT_MODES)}")
        if spec.scoring not in SCORING_MODES:
            raise InvalidSpec(f"spec.scoring {spec.scoring!r} is not valid; valid: {', '.join(SCORING_MODES)}")
        if not 0 <= spec.timeout_s <= self.config.max_timeout_s:
            raise InvalidSpec(f"spec.timeout_s must be between 0 and {self.config.max_timeout_s:g} seconds")
        for name in ("format_weight", "correctness_weight"):
            value = getattr(spec, name)
            if not value > 0:
                raise InvalidSpec(f"spec.{name} must be positive (so that a malformed output always "
                                  f"scores below a well-formed wrong one)")
        return kind.validate(spec), kind

    async def verify_all(self, items: list[Prepared], tenant: str = "") -> list[pb.VerifyResult]:
        """Verifies a batch in request order; identical (spec, completion) pairs run once,
        and the pure kinds' checks travel to their worker processes in chunks. ``tenant``: whose batch it is
        (the pools share their slots fairly between tenants)."""
        first: dict[tuple, int] = {}
        unique: list[Prepared] = []
        for item in items:
            if item.key not in first:
                first[item.key] = len(unique)
                unique.append(item)
        results: list[pb.VerifyResult] = [self._cached(item) for item in unique]  # type: ignore[misc]
        todo = [i for i, r in enumerate(results) if r is None]
        pure = [i for i in todo if isinstance(unique[i].kind, PureKind) and unique[i].verdict is None] \
            if self.pure_pool else []
        pure_set = set(pure)
        other = [i for i in todo if i not in pure_set]
        batch, checked = await asyncio.gather(self._verify_pure([unique[i] for i in pure], tenant),
                                              asyncio.gather(*(self.verify(unique[i], tenant) for i in other)))
        for i, result in zip(pure, batch, strict=True):
            results[i] = result
        for i, result in zip(other, checked, strict=True):
            results[i] = result
        for i in todo:
            self._remember(unique[i], results[i])
        out = []
        for item in items:
            result = results[first[item.key]]
            if result.id != item.id:
                result = pb.VerifyResult.FromString(result.SerializeToString())
                result.id = item.id
            out.append(result)
        return out

    def _cache_key(self, item: Prepared) -> tuple | None:
        """(spec, completion, sandbox image digest): a result is reused only for the same image."""
        if not self.config.result_cache_size:
            return None
        if item.kind.sandboxed:
            image = self.sandbox.image_id_of(item.kind.image(item.spec)) if self.sandbox is not None else None
            return None if image is None else (*item.key, image)
        return item.key

    def _cached(self, item: Prepared) -> pb.VerifyResult | None:
        key = self._cache_key(item)
        result = self._results.get(key) if key is not None else None
        if result is None:
            return None
        self._results.move_to_end(key)
        return result

    def _remember(self, item: Prepared, result: pb.VerifyResult) -> None:
        """Keeps verdicts about the code; never INFRA_ERROR (the sandbox failed) or TIMEOUT (load may cause it)."""
        key = self._cache_key(item)
        if key is None or result.verdict in (pb.INFRA_ERROR, pb.TIMEOUT):
            return
        self._results[key] = result
        while len(self._results) > self.config.result_cache_size:
            self._results.popitem(last=False)

    async def verify(self, item: Prepared, tenant: str = "") -> pb.VerifyResult:
        if item.verdict is not None:
            return to_proto(item, item.verdict, 0.0, 0.0)
        started = time.monotonic()
        ctx = Context(self.config, self.sandbox, self.pure_pool, item.timeout_s, tenant=tenant)
        try:
            (text,) = await _extract_all([item])
            if text is None:
                outcome = Outcome.malformed(f"extraction {item.spec.extract!r} found nothing to check")
            else:
                outcome = await item.kind.verify(text, item.spec, ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("verifier %s failed on request %r", item.kind.name, item.id)
            outcome = Outcome.infra_error(f"internal verifier error: {type(exc).__name__}: {exc}")
        return to_proto(item, outcome, ctx.queue_s, time.monotonic() - started)

    async def _verify_pure(self, items: list[Prepared], tenant: str = "") -> list[pb.VerifyResult]:
        if not items:
            return []
        assert self.pure_pool is not None
        started = time.monotonic()
        texts = await _extract_all(items)
        tasks = [(item.kind.name, text, item.spec, item.timeout_s)
                 for item, text in zip(items, texts, strict=True) if text is not None]
        try:  # the workers send each result's message as bytes (see verifier_service.engine.results)
            checked = iter(await self.pure_pool.run_many(tasks, encoded=True, tenant=tenant))
        except Exception as exc:
            log.exception("pure verifier batch failed")
            checked = iter([Outcome.infra_error(f"internal verifier error: {type(exc).__name__}: {exc}")] * len(tasks))
        elapsed = time.monotonic() - started
        results = []
        for item, text in zip(items, texts, strict=True):
            outcome = (Outcome.malformed(f"extraction {item.spec.extract!r} found nothing to check")
                       if text is None else next(checked))
            if isinstance(outcome, bytes):
                result = pb.VerifyResult.FromString(outcome)
                result.id = item.id
                set_timings(result, 0.0, elapsed)
            else:
                result = to_proto(item, outcome, 0.0, elapsed)
            results.append(result)
        return results

    @staticmethod
    def describe() -> pb.ListVerifiersResponse:
        response = pb.ListVerifiersResponse(extract_modes=EXTRACT_MODES, scoring_modes=SCORING_MODES)
        for kind in all_kinds():
            k = response.kinds.add(name=kind.name, description=kind.description, sandboxed=kind.sandboxed)
            for p in (*kind.params, *COMMON_PARAMS):
                k.parameters.add(name=p.name, type=p.type, required=p.required, description=p.description,
                                 default="" if p.default is None else str(p.default), choices=p.choices)
        return response


async def _extract_all(items: list[Prepared]) -> list[str | None]:
    """The extracted texts; in a thread when there is much to read, so that the event loop (every other call,
    health) never waits on a batch's completions (extraction is linear, but 256 KiB x a batch adds up)."""
    def run() -> list[str | None]:
        return [extract(item.completion, item.spec.extract) for item in items]
    if sum(len(item.completion) for item in items) > OFFLOAD_CHARS:
        return await asyncio.to_thread(run)
    return run()


def completion_verdict(completion: str, size: int, limit: int) -> Outcome | None:
    """MALFORMED (scored below any well-formed answer) for a completion no verifier should read:
    over the size limit, not valid UTF-8 (the wire's decoder marked it), or holding NUL bytes."""
    if size > limit:
        return Outcome.malformed(f"completion is {size} bytes; the limit is {limit} (max_completion_bytes): "
                                 f"not checked")
    if completion == UNDECODABLE:
        return Outcome.malformed("completion is not valid UTF-8: not checked")
    nul = completion.find("\0")
    if nul >= 0:
        return Outcome.malformed(f"completion holds a NUL byte (at character {nul}): not checked")
    return None


def to_proto(item: Prepared, outcome: Outcome, queue_s: float, total_s: float) -> pb.VerifyResult:
    result = outcome_proto(item.kind.name, item.spec, outcome)
    result.id = item.id
    set_timings(result, queue_s, total_s)
    return result
