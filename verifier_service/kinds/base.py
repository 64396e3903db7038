"""What a verifier kind is: its parameters, its validation, its check.

A kind validates a spec (``InvalidSpec`` for the caller's mistakes) and turns
an extracted completion into an ``Outcome``. Sandboxed kinds build a sandbox
``Job`` and read its step results; pure kinds implement ``check`` and run in
a killable worker process, so no input can hang the service.
"""

from __future__ import annotations

import abc
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from verifier_service.errors import InvalidSpec
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

if TYPE_CHECKING:
    from verifier_service.config import ServiceConfig
    from verifier_service.sandbox import Sandbox

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # string | number | bool | json | cases | files
    description: str
    required: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()


COMMON_PARAMS = (
    Param("extract", "string", "which part of the completion is checked", default="raw",
          choices=("raw", "fenced_code", "last_fenced_code", "answer_tag")),
    Param("scoring", "string", "correctness as all-or-nothing or as the fraction of tests passed",
          default="all_or_nothing", choices=("all_or_nothing", "fraction")),
    Param("timeout_s", "number",
          "time limit of the check in seconds (stdio: of each case): the program's own time, see below"),
    Param("format_weight", "number", "weight of format_score in the composite reward", default=0.2),
    Param("correctness_weight", "number", "weight of correctness_score in the composite reward", default=0.8),
)


class PureRunner(Protocol):
    """Runs a pure kind's ``check`` somewhere it can be stopped (the engine's worker pool implements it):
    the kinds know this much of the pool, nothing more."""

    async def run(self, kind_name: str, text: str, spec: Spec, timeout_s: float, tenant: str = "") -> Outcome: ...


@dataclass
class Context:
    """What a kind may use while verifying one completion. ``queue_s`` adds up the seconds its sandbox
    jobs waited for a slot (``SandboxRun.queue_s``): the engine reads it when it stamps the result. ``tenant``
    names whose work it is: the sandbox and worker pools share their slots fairly between tenants."""

    config: ServiceConfig
    sandbox: Sandbox | None
    pure_pool: PureRunner | None
    timeout_s: float
    queue_s: float = 0.0
    tenant: str = ""


class VerifierKind(abc.ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    sandboxed: ClassVar[bool] = False
    params: ClassVar[tuple[Param, ...]] = ()
    default_extract: ClassVar[str] = "raw"
    slow_checks: ClassVar[bool] = False  # has ``spec_problem`` (run off the event loop, with a time limit)
    notes: ClassVar[tuple[str, ...]] = ()  # rules the reference (docs/specs.md) states under the kind's fields

    def validate(self, spec: Spec) -> Spec:
        """Kind-specific checks beyond the generic ones; may fill defaults. Runs on the service's event loop:
        only checks whose cost the spec's size bounds belong here; the others go in ``spec_problem``."""
        return spec

    def spec_problem(self, spec: Spec) -> str | None:
        """What is wrong with a validated spec that takes real work to find (math: whether its gold parses to
        an answer that can be trusted), or None. Runs once per spec in a pure worker with a time limit
        (``spec_check_timeout_s``), never on the event loop: a spec a tenant crafted to be slow to check
        stalls nobody else."""
        return None

    @abc.abstractmethod
    async def verify(self, text: str, spec: Spec, ctx: Context) -> Outcome:
        """Checks the extracted completion ``text``."""

    def image(self, spec: Spec) -> str:
        """The sandbox image family a validated spec's jobs run in ("" the default image; see Job.image)."""
        return ""

    def require(self, spec: Spec, *names: str) -> None:
        missing = [n for n in names if not spec.is_set(n)]
        if missing:
            raise InvalidSpec(f"kind {self.name!r} requires {', '.join(missing)}")


class PureKind(VerifierKind):
    """A kind that runs no untrusted code: ``check`` runs in a worker process."""

    @abc.abstractmethod
    def check(self, text: str, spec: Spec) -> Outcome:
        """Pure and synchronous; runs in a worker process with a time limit."""

    def verdict(self, text: str, spec: Spec) -> Outcome:
        """``check``, total: it depends only on a validated spec and the completion, so an exception it raises
        was caused by the completion, and is a FAILED verdict (with a reward), never INFRA_ERROR (no reward: a
        way out of a penalty that a policy would learn). Logged: it is a checker bug to fix."""
        try:
            return self.check(text, spec)
        except RecursionError:  # the spec was walked at validation: the depth is the completion's
            return Outcome.malformed("the completion is nested too deeply to check", truncate(text, 200))
        except Exception as exc:  # noqa: BLE001 - see above
            log.error("%s check raised on a completion: %s: %s", self.name, type(exc).__name__, exc)
            detail = f"the answer could not be checked ({type(exc).__name__}); it counts as wrong"
            return Outcome(Verdict.FAILED, tests=[TestOutcome("check", Verdict.FAILED, detail)], detail=detail,
                           extracted=truncate(text.strip()))

    async def verify(self, text: str, spec: Spec, ctx: Context) -> Outcome:
        if ctx.pure_pool is None:
            return self.verdict(text, spec)
        return await ctx.pure_pool.run(self.name, text, spec, ctx.timeout_s, tenant=ctx.tenant)
