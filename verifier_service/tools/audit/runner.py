"""Runs an audit: every row's probes and reference runs through the service, in batches, then the flags.

Passes: pass 1 verifies every probe of every row and the references' first run; passes 2..k run the
references again (the engine runs an identical (spec, completion) pair once per batch, so each run of a
reference goes in a pass of its own; a cached verdict would hide a flaky one, so each run's completion also
differs by trailing newlines, which no extraction mode reads). The last ``hog_runs`` passes run beside a
CPU hog (``hog.py``). Results come back as data; nothing here prints but the progress bar.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from verifier_service.errors import InvalidSpec, RemoteError, VerifierError
from verifier_service.spec import canonical_json, normal_spec_json, request_from_json, result_to_json
from verifier_service.tools.audit.hog import cpu_hog
from verifier_service.tools.audit.literals import prompt_text
from verifier_service.tools.audit.probes import Probe, probes_for

SLOW_MARGIN = 3.0   # a reference must run at least this many times faster than its limit
SEP = "|"         # request ids: row index, probe or run


class AuditInputError(VerifierError):
    """A dataset row the audit cannot read (no spec, a spec the service refuses): bad input, exit 2."""


@dataclass
class AuditSettings:
    runs: int = 3                    # reference runs
    hog_runs: int = 1                # of them, how many beside a CPU hog
    hog_cores: int | None = None     # busy processes of the hog (default: one per CPU)
    max_correctness: float = 0.0     # a probe earning more than this is flagged
    slow_margin: float = SLOW_MARGIN
    default_timeout_s: float = 10.0  # the service's limit for specs that set none
    batch_size: int = 64
    parallel: int = 4
    families: tuple[str, ...] = ("trivial", "leak", "hack")
    spec_column: str = "verification"
    prompt_column: str = "prompt"
    reference_column: str = "reference"


@dataclass
class Row:
    index: int
    id: str
    prompt: Any
    spec: dict[str, Any]
    reference: str | None
    probes: list[Probe] = field(default_factory=list)


@dataclass
class RowAudit:
    id: str
    kind: str
    flags: list[str]
    probes: list[dict[str, Any]]
    reference: dict[str, Any] | None
    prompt: Any = None
    spec: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "flags": self.flags, "reference": self.reference,
                "probes": self.probes}


def _spec_of(raw: Any, where: str) -> dict[str, Any]:
    try:
        spec = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as exc:
        raise AuditInputError(f"{where}: the spec is not JSON: {exc}") from exc
    if not isinstance(spec, dict):
        raise AuditInputError(f"{where}: the spec must be a JSON object")
    return spec


def known_kinds() -> set[str]:
    from verifier_service.kinds import all_kinds

    return {kind.name for kind in all_kinds()}


def sandboxed_kinds() -> set[str]:
    """The kinds whose run time is the completion's own (a pure kind's is its worker chunk's, under load)."""
    from verifier_service.kinds import all_kinds

    return {kind.name for kind in all_kinds() if kind.sandboxed}


def read_dataset_rows(rows: list[dict[str, Any]], settings: AuditSettings) -> list[Row]:
    """Dataset rows (``{id, prompt, verification, reference}``, as ``trainer data convert`` writes them; ``spec``
    works too) as audit rows; every spec checked now, so a bad one is bad input before any work."""
    out, seen = [], set()
    for index, raw in enumerate(rows):
        where = f"row {index + 1}"
        if not isinstance(raw, dict):
            raise AuditInputError(f"{where}: each row must be a JSON object")
        column = settings.spec_column if settings.spec_column in raw else "spec" if "spec" in raw else None
        if column is None:
            raise AuditInputError(f"{where}: no {settings.spec_column!r} (or 'spec') column: "
                                  f"columns {sorted(raw)[:8]}")
        spec = _spec_of(raw[column], where)
        rid = str(raw.get("id", index))
        if rid in seen:
            raise AuditInputError(f"{where}: id {rid!r} is repeated; the audit names rows by id")
        seen.add(rid)
        reference = raw.get(settings.reference_column)
        if reference is not None and not isinstance(reference, str):
            raise AuditInputError(f"{where} ({rid}): the reference must be a completion (text)")
        try:
            request_from_json({"id": rid, "completion": "", "spec": spec})
        except InvalidSpec as exc:
            raise AuditInputError(f"{where} ({rid}): {exc}") from exc
        if "verifier" not in spec and spec.get("kind") not in known_kinds():
            raise AuditInputError(f"{where} ({rid}): unknown verifier kind {spec.get('kind')!r}; the kinds: "
                                  f"{', '.join(sorted(known_kinds()))}")
        row = Row(index, rid, raw.get(settings.prompt_column), spec, reference)
        row.probes = [p for p in probes_for(spec, row.prompt) if p.family in settings.families]
        out.append(row)
    if not out:
        raise AuditInputError("the dataset holds no rows")
    return out


def dataset_hash(rows: list[Row]) -> str:
    """sha256 over (id, prompt, normalised spec, reference) of every row, in order."""
    digest = hashlib.sha256()
    for row in rows:
        try:
            spec = normal_spec_json(row.spec)
        except InvalidSpec:
            spec = row.spec
        digest.update(canonical_json([row.id, prompt_text(row.prompt), spec, row.reference]).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _requests(rows: list[Row], run: int, with_probes: bool) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        if with_probes:
            out += [{"id": f"{row.index}{SEP}p{SEP}{i}", "completion": p.completion, "spec": row.spec}
                    for i, p in enumerate(row.probes)]
        if row.reference is not None:
            out.append({"id": f"{row.index}{SEP}r{SEP}{run}", "completion": row.reference + "\n" * run,
                        "spec": row.spec})
    return out


async def run_passes(rows: list[Row], verify, settings: AuditSettings,
                     progress: Callable[[int], None] | None = None) -> dict[str, dict[str, Any]]:
    """``verify(requests, on_batch) -> results`` (awaitable) for each pass; results by request id."""
    by_id: dict[str, dict[str, Any]] = {}
    advance = progress or (lambda n: None)
    for run in range(max(1, settings.runs)):
        requests = _requests(rows, run, with_probes=run == 0)
        if not requests:
            continue
        if run >= settings.runs - settings.hog_runs and run > 0:
            with cpu_hog(settings.hog_cores):
                results = await verify(requests, advance)
        else:
            results = await verify(requests, advance)
        by_id.update({r["id"]: r for r in results})
    return by_id


def total_requests(rows: list[Row], settings: AuditSettings) -> int:
    refs = sum(row.reference is not None for row in rows)
    return sum(len(row.probes) for row in rows) + refs * max(1, settings.runs)


# ---- judging ------------------------------------------------------------------------------------------------

def _brief(result: dict[str, Any]) -> dict[str, Any]:
    return {"verdict": result.get("verdict"), "reward": result.get("reward"),
            "format": result.get("format_score"), "correctness": result.get("correctness_score"),
            "tests": f"{result.get('tests_passed', 0)}/{result.get('tests_total', 0)}",
            "run_s": (result.get("timings") or {}).get("run_s"), "detail": (result.get("detail") or "")[:300]}


def _limit(spec: dict[str, Any], settings: AuditSettings) -> float:
    timeout = spec.get("timeout_s")
    return float(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else settings.default_timeout_s


def judge_row(row: Row, by_id: dict[str, dict[str, Any]], settings: AuditSettings) -> RowAudit:
    flags: list[str] = []
    probes = []
    for i, probe in enumerate(row.probes):
        result = by_id.get(f"{row.index}{SEP}p{SEP}{i}")
        if result is None:
            raise VerifierError(f"row {row.id}: no result for probe {probe.name!r} (a lost result: a bug)")
        brief = {"name": probe.name, "family": probe.family, **_brief(result)}
        probes.append(brief)
        if result.get("verdict") == "INFRA_ERROR":
            flags.append(f"infra_error:{probe.name}")
        elif (result.get("correctness_score") or 0.0) > settings.max_correctness:
            flags.append(f"{probe.family}:{probe.name}")
    reference = None
    if row.reference is not None:
        runs = [by_id.get(f"{row.index}{SEP}r{SEP}{run}") for run in range(max(1, settings.runs))]
        runs = [r for r in runs if r is not None]
        hogged = {run for run in range(len(runs)) if run >= settings.runs - settings.hog_runs and run > 0}
        briefs = [{**_brief(r), "beside_cpu_hog": i in hogged} for i, r in enumerate(runs)]
        limit = _limit(row.spec, settings)
        times = [b["run_s"] or 0.0 for b in briefs if b["verdict"] != "INFRA_ERROR"]
        slowest = max(times, default=0.0)
        case_limit = row.spec.get("case_timeout_s")
        slowest_case = max((t.get("duration_s", 0.0) for r in runs for t in r.get("tests") or []), default=0.0)
        judged = [b for b in briefs if b["verdict"] != "INFRA_ERROR"]
        reference = {"runs": briefs, "limit_s": limit, "slowest_run_s": slowest,
                     "margin": (limit / slowest) if slowest > 0 else None}
        if len(judged) < len(briefs):
            flags.append("infra_error:reference")
        if judged and (judged[0]["verdict"] != "PASSED" or (judged[0]["correctness"] or 0.0) < 1.0):
            flags.append("reference_failed")
        if len({(b["verdict"], b["correctness"]) for b in judged}) > 1:
            flags.append("reference_flaky")
        if (row.spec.get("kind") in sandboxed_kinds() and slowest * settings.slow_margin > limit) or (
                isinstance(case_limit, (int, float)) and case_limit > 0
                and slowest_case * settings.slow_margin > case_limit):
            flags.append("reference_slow")
    return RowAudit(row.id, str(row.spec.get("kind", "")), flags, probes, reference, row.prompt, row.spec)


def flag_class(flag: str) -> str:
    """``leak:literal 7`` -> ``leak``; ``reference_failed`` -> itself."""
    return flag.split(":", 1)[0]


def summarize(audits: list[RowAudit], seconds: float, requests: int) -> dict[str, Any]:
    classes = Counter(c for a in audits for c in {flag_class(f) for f in a.flags})
    probes = Counter(f.split(":", 1)[1] for a in audits for f in a.flags if ":" in f)
    return {
        "rows": len(audits), "flagged_rows": sum(bool(a.flags) for a in audits),
        "rows_with_reference": sum(a.reference is not None for a in audits),
        "rows_by_flag_class": dict(classes.most_common()), "rows_by_probe": dict(probes.most_common(40)),
        "kinds": dict(Counter(a.kind for a in audits).most_common()),
        "verifications": requests, "seconds": round(seconds, 1),
        "verifications_per_s": round(requests / seconds, 1) if seconds > 0 else None,
        "infra_errors": sum(any(f.startswith("infra_error") for f in a.flags) for a in audits),
    }


# ---- through the service ----------------------------------------------------------------------------------

@asynccontextmanager
async def service_client(server: str | None = None, config=None, credentials=None):
    """A client of the service at ``server``, or of an embedded one (loopback, no tenants) for the block."""
    from verifier_service.client import VerifierClient

    app = None
    if server:
        client = await VerifierClient.connect(server, credentials=credentials)
    else:
        from verifier_service.config import ServiceConfig
        from verifier_service.credentials import Credentials
        from verifier_service.sandbox import make_sandbox
        from verifier_service.serve import VerifierApp

        config = config or ServiceConfig()
        make_sandbox(config).check_blocking()  # the clear "Docker missing / image not built" message
        # Embedded: a loopback listener of this process only, no TLS and no tenants.
        app = VerifierApp(replace(config, host="127.0.0.1", port=0, tenants="", tls_cert="", tls_key="",
                                  tls_client_ca=""))
        port = await app.start()
        client = await VerifierClient.connect(f"127.0.0.1:{port}", credentials=Credentials())
    try:
        yield client
    finally:
        await client.close()
        if app is not None:
            await app.stop(grace=1.0)


async def verify_json(client, requests: list[dict[str, Any]], settings: AuditSettings,
                      on_batch: Callable[[int], None]) -> list[dict[str, Any]]:
    """JSON requests -> JSON results through ``client``, in batches; a refused spec is bad input."""
    messages = [request_from_json(r) for r in requests]
    try:
        results = await client.verify_many(messages, settings.batch_size, settings.parallel, on_batch=on_batch)
    except RemoteError as exc:
        if exc.code == "INVALID_ARGUMENT":
            raise AuditInputError(f"the service refused a row's spec: {exc}") from exc
        raise
    return [result_to_json(r) for r in results]


async def audit_rows(rows: list[Row], settings: AuditSettings, *, server: str | None = None, config=None,
                     credentials=None, show_progress: bool = True) -> tuple[list[RowAudit], dict[str, Any]]:
    """Audits ``rows`` through the service at ``server`` (or an embedded one, configured by ``config``)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    total = total_requests(rows, settings)
    console = Console(stderr=True)
    started = time.monotonic()
    async with service_client(server, config, credentials) as client:
        with Progress(TextColumn("auditing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, disable=not show_progress) as progress:
            task = progress.add_task("audit", total=total)
            done = [0, 0]  # verified, the last tenth reported (a log, not a terminal, gets a line per tenth)

            def advance(n: int) -> None:
                progress.advance(task, n)
                done[0] += n
                if show_progress and not console.is_terminal and done[0] * 10 // total > done[1]:
                    done[1] = done[0] * 10 // total
                    print(f"auditing: {done[0]}/{total} verifications, {time.monotonic() - started:.0f}s",
                          file=sys.stderr, flush=True)

            async def verify(requests: list[dict[str, Any]], on_batch) -> list[dict[str, Any]]:
                return await verify_json(client, requests, settings, lambda n: (advance(n), on_batch(n)))

            by_id = await run_passes(rows, verify, settings)
    seconds = time.monotonic() - started
    audits = [judge_row(row, by_id, settings) for row in rows]
    return audits, summarize(audits, seconds, total)
