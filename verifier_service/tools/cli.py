"""The ``verifier-service`` command: serve, verify, inspect, list, doctor, build-sandbox, wait, tenants, catalog."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.config import SANDBOX_SETTINGS, SERVER_ONLY, ServiceConfig, add_config_flags, load_config
from verifier_service.credentials import add_client_flags, credentials_from_args
from verifier_service.doors.logs import configure_logging
from verifier_service.errors import InvalidSpec, RemoteError, SandboxUnavailable, ServiceUnreachable, VerifierError
from verifier_service.service.audit import Repeats
from verifier_service.spec import request_from_json, result_to_json
from verifier_service.tools.jsonl import read_jsonl

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INFRA = 3
EXIT_INTERRUPTED = 130
EXIT_CODES = """exit codes:
  0    done (every result written)
  1    an unexpected error (a bug: the message names it; please report it)
  2    bad usage or input (a flag, a file, a request the service refused): the message says what to fix
  3    infrastructure: the sandbox backend or the service is unavailable, or a result is INFRA_ERROR
  130  interrupted (Ctrl-C): the results finished so far are in --output; --resume finishes the run"""
BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "sandboxes" / "build.sh"


def _console():
    from rich.console import Console

    return Console(stderr=True)


def with_verifier(row, verifier: str | None):
    """A row whose spec names no kind and no verifier uses the catalog verifier ``--verifier`` names;
    its spec then holds only the per-sample fields (or is left out)."""
    if not verifier or not isinstance(row, dict):
        return row
    spec = row.get("spec", {})
    if isinstance(spec, dict) and "kind" not in spec and "verifier" not in spec:
        return {**row, "spec": {"verifier": verifier, **spec}}
    return row


def read_requests(path: Path, verifier: str | None = None) -> list[pb.VerifyRequest]:
    """Parses a JSONL file of requests; errors name the line."""
    requests = []
    for number, value in read_jsonl(path):
        try:
            request = request_from_json(with_verifier(value, verifier))
        except InvalidSpec as exc:
            raise VerifierError(f"{path}:{number}: {exc}") from exc
        if not request.id:
            request.id = str(number)
        requests.append(request)
    if not requests:
        raise VerifierError(f"{path} holds no requests")
    return requests


async def _verify_all(client, requests, batch_size: int, parallel: int, console, show_progress: bool,
                      sink=None):
    """Results in request order. ``sink(results)`` gets each batch's results as soon as that batch has
    finished, whatever the batches before it are doing (at most ``4 * parallel`` batches are started at
    once), so an interrupted run keeps every batch that finished, even behind a slow one."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    chunks = [requests[i:i + batch_size] for i in range(0, len(requests), batch_size)]
    done: dict[int, list[pb.VerifyResult]] = {}
    gate = asyncio.Semaphore(parallel)
    with Progress(TextColumn("verifying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=not show_progress, transient=False) as progress:
        task = progress.add_task("verify", total=len(requests))

        async def one(index: int, chunk) -> tuple[int, list[pb.VerifyResult]]:
            async with gate:
                try:
                    results = await client.verify_batch(chunk)
                except RemoteError as exc:
                    raise VerifierError(_rejected(exc, index * batch_size, len(chunk))) from exc
            progress.advance(task, len(chunk))
            return index, results

        window: set[asyncio.Future] = set()
        started = 0
        try:
            while started < len(chunks) or window:
                while started < len(chunks) and len(window) < 4 * parallel:
                    window.add(asyncio.ensure_future(one(started, chunks[started])))
                    started += 1
                finished, window = await asyncio.wait(window, return_when=asyncio.FIRST_COMPLETED)
                for future in sorted(finished, key=lambda f: f.cancelled() or f.exception() is not None):
                    index, results = future.result()  # a failed batch raises here, after the others are kept
                    if sink is not None:
                        sink(results)
                    done[index] = results
        finally:
            for pending in window:
                pending.cancel()
            if window:
                await asyncio.gather(*window, return_exceptions=True)
    return [r for index in range(len(chunks)) for r in done[index]]


def _rejected(exc: RemoteError, start: int, count: int) -> str:
    """The service names a request by its 0-based index in its batch; the user's numbering is the input's,
    counted from 1 (the n-th request of the file). A refusal of the whole batch (a key, a quota) names the range."""
    import re

    shifted, found = re.subn(r"^request (\d+)", lambda m: f"request {int(m.group(1)) + start + 1} (counted from "
                             f"1)", exc.details, count=1)
    if found:
        return f"the service rejected {shifted}"
    return f"the service rejected requests {start + 1}-{start + count} (counted from 1): {exc}"


class ResultWriter:
    """Writes result lines to ``--output`` as batches finish (in the order they finish), flushed each time;
    ``finish(ids)`` puts a complete file back in input order. On stdout the lines come in input order (each
    as soon as the ones before it are done). The path was checked before any work (``check_output``); the
    file is opened at the first results, so a run that fails before any result leaves an existing file as it
    was (with ``append``, it is added to)."""

    def __init__(self, path: Path | None, append: bool = False, order: list[str] | None = None):
        self.path, self.append = path, append
        self.written = 0
        self._file = None
        self._order = list(order or [])  # stdout: the ids in input order, still to print
        self._held: dict[str, list[str]] = {}

    def __call__(self, results: list[pb.VerifyResult]) -> None:
        lines = [(r.id, json.dumps(result_to_json(r)) + "\n") for r in results]
        if self.path is None and self._order:
            for rid, line in lines:
                self._held.setdefault(rid, []).append(line)
            ready = []
            while self._order and self._held.get(self._order[0]):
                ready.append(self._held[self._order[0]].pop(0))
                self._order.pop(0)
            lines = [("", line) for line in ready]
        if not lines:
            return
        if self._file is None:
            self._file = open(self.path, "a" if self.append else "w", encoding="utf-8") if self.path else sys.stdout
        self._file.write("".join(line for _, line in lines))
        self._file.flush()
        self.written += len(lines)

    def close(self) -> None:
        if self._file is not None and self._file is not sys.stdout:
            self._file.close()

    def finish(self, ids: list[str]) -> None:
        """Rewrites a complete ``--output`` in the order of ``ids`` (the input's), atomically."""
        if self.path is None or not self.path.exists():
            return
        by_id: dict[str, list[str]] = {}
        for line in self.path.read_text(encoding="utf-8").splitlines(keepends=True):
            by_id.setdefault(str(json.loads(line).get("id")), []).append(line)
        if sorted(by_id) != sorted(set(ids)) or sum(map(len, by_id.values())) != len(ids):
            return  # not exactly this input's results: leave the file as written
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(by_id[i].pop(0) for i in ids), encoding="utf-8")
        os.replace(tmp, self.path)


def check_output(path: Path | None, resume: bool) -> set[str]:
    """Refuses an ``--output`` that cannot be written before any work starts; with ``resume`` returns the
    ids already there (a line cut short by a crash is dropped from the file)."""
    if path is None:
        if resume:
            raise VerifierError("--resume needs --output FILE (the results written so far)")
        return set()
    if path.is_dir():
        raise VerifierError(f"--output {path} is a directory: give a file path, e.g. {path / 'results.jsonl'}")
    parent = path.parent
    if not parent.is_dir():
        raise VerifierError(f"--output {path}: the directory {parent} does not exist: create it "
                            f"(mkdir -p {parent}) or choose another path")
    if not os.access(path if path.exists() else parent, os.W_OK):
        raise VerifierError(f"--output {path} is not writable: choose a path you may write to")
    if not resume or not path.exists():
        return set()
    return finished_ids(path)


def finished_ids(path: Path) -> set[str]:
    """The ids of the result lines of ``path``; a last line cut short (an interrupted write) is removed."""
    data = path.read_bytes()
    done: set[str] = set()
    good = 0
    for number, line in enumerate(data.splitlines(keepends=True), 1):
        try:
            row = json.loads(line)
            if not line.endswith(b"\n") or not isinstance(row, dict) or "id" not in row:
                raise ValueError("not a result line")
        except ValueError as exc:
            if good + len(line) == len(data):  # the last line: written when the run was cut short
                with open(path, "r+b") as f:
                    f.truncate(good)
                break
            raise VerifierError(f"{path}:{number}: not a result line ({exc}): --resume needs the file that "
                                f"`verify --output` wrote; fix or remove that line") from exc
        done.add(str(row["id"]))
        good += len(line)
    return done


def summary_table(results: list[pb.VerifyResult], seconds: float):
    from rich.table import Table

    verdicts = Counter(pb.Verdict.Name(r.verdict) for r in results)
    rewards = [r.reward for r in results if r.HasField("reward")]
    table = Table(title=f"{len(results)} completions verified in {seconds:.1f}s")
    table.add_column("verdict")
    table.add_column("count", justify="right")
    table.add_column("share", justify="right")
    for name, count in verdicts.most_common():
        style = {"PASSED": "green", "INFRA_ERROR": "bold red", "MALFORMED": "yellow"}.get(name)
        table.add_row(name, str(count), f"{count / len(results):.0%}", style=style)
    table.add_section()
    if rewards:
        table.add_row("mean reward", f"{sum(rewards) / len(rewards):.3f}", "")
    table.add_row("mean format", f"{sum(r.format_score for r in results) / len(results):.3f}", "")
    table.add_row("mean correctness", f"{sum(r.correctness_score for r in results) / len(results):.3f}", "")
    return table


async def _verify_requests(args, config: ServiceConfig, requests, console, sink=None
                           ) -> tuple[list[pb.VerifyResult], float]:
    """Verifies through ``--server`` or an embedded service (started here, stopped after)."""
    from verifier_service.tools.audit.runner import service_client

    async with service_client(args.server, config, credentials_from_args(args) if args.server else None) as client:
        started = time.monotonic()
        show = not args.quiet and (console.is_terminal or len(requests) >= 50)
        results = await _verify_all(client, requests, args.batch_size, args.parallel, console, show, sink)
    return results, time.monotonic() - started


async def _run_verify(args, config: ServiceConfig) -> int:
    console = _console()
    done = check_output(args.output, args.resume)
    requests = read_requests(args.input, args.verifier)
    all_ids = [r.id for r in requests]
    if done:
        requests = [r for r in requests if r.id not in done]
        print(f"resuming: {len(done)} result(s) already in {args.output}, {len(requests)} to verify", file=sys.stderr)
        if not requests:
            return 0
    writer = args.writer = ResultWriter(args.output, append=bool(done), order=[r.id for r in requests])
    try:
        results, elapsed = await _verify_requests(args, config, requests, console, writer)
    finally:
        writer.close()
    writer.finish(all_ids)
    if not args.quiet:
        console.print(summary_table(results, elapsed))
    infra = sum(r.verdict == pb.INFRA_ERROR for r in results)
    if infra:
        console.print(f"[bold red]{infra} INFRA_ERROR result(s): the sandbox failed, not the code "
                      f"(their reward is null)[/]")
        return EXIT_INFRA
    return 0


async def _run_list(args) -> int:
    from verifier_service.client import VerifierClient
    from verifier_service.engine.engine import Engine

    if args.server:
        async with await VerifierClient.connect(args.server, credentials=credentials_from_args(args)) as client:
            response = await client.list_verifiers()
    else:
        response = Engine.describe()
    kinds = list(response.kinds)
    if args.kind:
        kinds = [k for k in kinds if k.name == args.kind]
        if not kinds:
            raise VerifierError(f"no verifier kind {args.kind!r}; the kinds: "
                                f"{', '.join(k.name for k in response.kinds)}")
    if args.json:
        from google.protobuf.json_format import MessageToDict

        out = {"kinds": [MessageToDict(k, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
                         for k in kinds]}
        if not args.kind:
            out.update(extract_modes=list(response.extract_modes), scoring_modes=list(response.scoring_modes),
                       catalog=[MessageToDict(e, preserving_proto_field_name=True) for e in response.catalog])
        print(json.dumps(out, indent=2))
        return 0
    print(kinds_text(kinds))
    if response.catalog and not args.kind:
        from verifier_service.tools.tenancy_cli import catalog_table, table_console

        table_console().print(catalog_table(response.catalog))
    elif not args.kind:
        print("verifier-service list --kind KIND: one kind; docs/specs.md: an example of each")
    return 0


def kinds_text(kinds, width: int | None = None) -> str:
    """The kinds and their parameters as plain text that reads well at 80 columns."""
    import shutil
    import textwrap

    width = width or max(60, min(shutil.get_terminal_size((80, 24)).columns, 100))
    lines: list[str] = []
    for kind in kinds:
        lines.append(f"{kind.name}{'  (sandboxed: runs the completion as code)' if kind.sandboxed else ''}")
        lines += textwrap.wrap(kind.description, width, initial_indent="  ", subsequent_indent="  ")
        for p in kind.parameters:
            facts = [p.type, *(["required"] if p.required else []), *([f"default {p.default}"] if p.default else [])]
            lines.append(f"    {p.name} ({', '.join(facts)})")
            text = p.description + (f"; one of: {', '.join(p.choices)}" if p.choices else "")
            lines += textwrap.wrap(text, width, initial_indent="        ", subsequent_indent="        ")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


async def _run_inspect(args, config: ServiceConfig) -> int:
    """Verifies sampled completions and writes the inspection report (terminal summary + HTML)."""
    from datetime import datetime, timezone

    from verifier_service.tools import inspection

    console = _console()
    if args.report.exists() and not args.report.is_dir():
        raise VerifierError(f"--report {args.report} is a file: give a directory (it will hold report.html)")
    try:
        args.report.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VerifierError(f"cannot create the report directory {args.report}: {exc.strerror}") from exc
    partial = args.report / inspection.RESULTS_FILE
    done = check_output(partial, args.resume)
    requests = read_requests(args.input, args.verifier)
    rows = [with_verifier(row, args.verifier) for row in inspection.read_rows(args.input)]
    _same_sample_set(args.report, rows, [r.id for r in requests])
    kept = {}
    if done:
        kept = {str(row["id"]): row for row in map(json.loads, partial.read_text(encoding="utf-8").splitlines())}
        print(f"resuming: {len(done)} result(s) already in {partial}", file=sys.stderr)
    todo = [r for r in requests if r.id not in done]
    writer = args.writer = ResultWriter(partial, append=bool(done))
    try:
        results, elapsed = await _verify_requests(args, config, todo, console, writer) if todo else ([], 0.0)
    finally:
        writer.close()
    fresh = {r.id: result_to_json(r) for r in results}
    results_json = [fresh[r.id] if r.id in fresh else kept[r.id] for r in requests]
    samples = inspection.build_samples(rows, [r.id for r in requests], results_json)
    inspection.flag_samples(samples, config.default_timeout_s)
    meta = {"source": str(args.input), "verifier": args.server or "embedded",
            "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "default_timeout_s": config.default_timeout_s}
    page = inspection.write_report(args.report, samples, meta)
    if not args.quiet:
        if results:
            console.print(summary_table(results, elapsed))
        for table in inspection.summary_renderables(samples):
            console.print(table)
    labels = inspection.load_labels(args.report / inspection.LABELS_FILE)
    read, agreed = inspection.label_counts({i: label for i, label in labels.items() if i in {s.id for s in samples}})
    if read:
        console.print(f"labels already recorded: {read} of {len(samples)} samples read, {agreed} agree")
    console.print(f"report: {page} (read it, export the labels to {args.report / inspection.LABELS_FILE})")
    infra = sum(r["verdict"] == "INFRA_ERROR" for r in results_json)
    if infra:
        console.print(f"[bold red]{infra} INFRA_ERROR result(s): the sandbox failed, not the code[/]")
        return EXIT_INFRA
    return 0


def _same_sample_set(report: Path, rows: list[dict], ids: list[str]) -> None:
    """A report directory holds one sample set: its labels are about those samples. Another input is refused
    (its results would sit beside the old labels); the same input again is rebuilt, its labels kept."""
    from verifier_service.tools import inspection

    old_file = report / inspection.SAMPLES_FILE
    if not old_file.exists():
        return
    old_rows = inspection.read_rows(old_file)
    old = inspection.build_samples(old_rows, [str(r.get("id", "")) for r in old_rows], [{}] * len(old_rows))
    new = inspection.build_samples(rows, ids, [{}] * len(rows))
    if inspection.sample_set_hash(old) == inspection.sample_set_hash(new):
        return
    try:
        source = inspection.read_meta(report).get("source") or "?"
    except VerifierError:
        source = "?"
    labels = inspection.load_labels(report / inspection.LABELS_FILE)
    raise VerifierError(f"--report {report} already holds the report of another sample set ({len(old)} samples "
                        f"from {source}, {len(labels)} label(s)): give a new directory for this input, or remove "
                        f"that one first")


def _import_labels(args) -> int:
    """Merges an exported labels file into the report directory and rebuilds the page with it."""
    from verifier_service.tools import inspection

    labels = inspection.import_labels(args.import_labels, args.report)
    samples = inspection.load_report(args.report)
    meta = inspection.read_meta(args.report)
    inspection.flag_samples(samples, meta.get("default_timeout_s") or 10.0)
    inspection.rebuild_html(args.report, samples, {**meta, "sample_set_hash": inspection.sample_set_hash(samples)})
    read, agreed = inspection.label_counts(labels)
    print(f"{args.report / inspection.LABELS_FILE}: {read} of {len(samples)} samples read, {agreed} agree "
          f"({agreed / read:.1%})" if read else f"{args.report / inspection.LABELS_FILE}: no sample read yet",
          file=sys.stderr)
    return 0


def _doctor(config: ServiceConfig) -> int:
    """Checks the configured sandbox backend and prints which isolation layers are in force."""
    from verifier_service.sandbox import format_isolation, make_sandbox

    sandbox = make_sandbox(config)
    try:
        sandbox.check_blocking()
    except SandboxUnavailable as exc:
        print(format_isolation(sandbox.isolation()))
        print(f"error: the {config.sandbox_backend} sandbox backend cannot run jobs: {exc}", file=sys.stderr)
        return EXIT_INFRA
    print(format_isolation(sandbox.isolation()))
    print(f"ok: the {config.sandbox_backend} sandbox backend runs jobs (image id {sandbox.image_id})")
    images = config.sandbox_backend == "docker"
    print("toolchains (asked in a sandbox of each image):" if images else
          f"toolchains of this host (the {config.sandbox_backend} backend runs the host's; the Docker images' are "
          "listed by `verifier-service doctor --sandbox-backend docker`):")
    seen = set()
    rows = asyncio.run(_toolchains(config))
    libs = ("libraries the datasets' harnesses provide (Debian's, pinned by each image's suite):" if images else
            "libraries the datasets' harnesses provide (this host's; a spec including one it lacks: INFRA_ERROR):")
    for label, libraries in (("", False), (libs, True)):
        if label:
            print(label)
        for family, name, version in rows:
            if name.startswith("lib:") != libraries or (not images and name in seen):
                continue  # the host has one of each, whichever image family asks
            seen.add(name)
            print(f"  {name.removeprefix('lib:'):<11} {version}" +
                  (f"  [{family} image]" if images and family else "  [host]" if not images else ""))
    return 0


async def _toolchains(config: ServiceConfig) -> list[tuple[str, str, str]]:
    """(image family, language, version) of every language of the table, each asked in a fresh sandbox of its
    image (a missing image or tool says so in place of a version), then (family, ``lib:`` + library, version) of
    every library of ``languages.LIBRARIES``."""
    from dataclasses import replace

    from verifier_service.kinds.languages import families, library_steps, toolchain_steps, version_line
    from verifier_service.sandbox import Job, Step, make_sandbox

    sandbox = make_sandbox(replace(config, sandbox_pool=False))
    rows = []
    try:
        prepare = getattr(sandbox, "prepare", None)  # bwrap: Go's packages and Rust's crates built for the host
        for what in ("go", "rust-crates") if prepare is not None else ():
            try:
                reason = await prepare(what)
            except SandboxUnavailable:
                break
            if reason is not None:
                rows.append(("", f"lib:{what} build", reason))
        for family in families():
            steps = toolchain_steps(family) + [(f"lib:{name}", argv) for name, argv in library_steps(family)]
            try:
                run = await sandbox.run(Job(steps=[Step(name, argv, 60.0) for name, argv in steps], image=family))
            except SandboxUnavailable as exc:
                rows += [(family, name, f"unavailable: {exc}") for name, _ in steps]
                continue
            found = {step.name: step for step in run.steps}
            for name, _ in steps:
                step = found.get(name)
                if name.startswith("lib:"):  # (a library's command prints nothing, or fails, where it is missing)
                    line = version_line(step.stdout, "") if step is not None and step.ok else ""
                    rows.append((family, name, line or "not installed"))
                    continue
                rows.append((family, name, "not installed" if step is None or step.spawn_error
                             else version_line(step.stdout, step.stderr)))
    finally:
        await sandbox.close()
    return rows


def _wait(args) -> int:
    """Waits until the service at ``--server`` is SERVING (a service just started in the background)."""
    from verifier_service.client.client import check_service

    deadline = time.monotonic() + args.timeout
    while True:
        try:
            check_service(args.server, credentials_from_args(args), timeout_s=2.0)
        except ServiceUnreachable:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.5)
            continue
        print(f"the verifier service at {args.server} is serving", file=sys.stderr)
        return 0


def _build_sandbox(args) -> int:
    if not BUILD_SCRIPT.exists():
        raise VerifierError("sandboxes/build.sh is not here: build the image from a source checkout")
    return subprocess.call(["bash", str(BUILD_SCRIPT)])


def _add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags ``verify`` and ``inspect`` share: where the completions are verified and how."""
    parser.add_argument("--server", help="HOST:PORT of a running service (default: an embedded one)")
    parser.add_argument("--batch-size", type=int, default=32, help="completions per VerifyBatch call")
    parser.add_argument("--parallel", type=int, default=4, help="batches in flight at once")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    parser.add_argument("--verifier", metavar="TEAM/NAME@VERSION",
                        help="catalog verifier for lines whose spec names none (their spec: the per-sample fields)")
    add_client_flags(parser)
    add_config_flags(parser, title="embedded service settings (ignored with --server)", leave_out=SERVER_ONLY)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verifier-service", description=__doc__, epilog=EXIT_CODES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gRPC verifier service")
    add_config_flags(serve, title="service settings (also RLVR_VERIFIER_<NAME> variables or --config YAML)")
    verify = sub.add_parser("verify", help="verify a JSONL file of requests (embedded sandbox or --server)",
                            usage="%(prog)s --input FILE [--output FILE [--resume]] [--server HOST:PORT]\n"
                                  "       [options] [embedded service settings]")
    verify.add_argument("--input", type=Path, required=True,
                        help="JSONL: {id, completion, spec} per line (- reads stdin)")
    verify.add_argument("--output", type=Path, help="results JSONL, written as batches finish (default: stdout)")
    verify.add_argument("--resume", action="store_true",
                        help="skip the ids already in --output and add the rest to it (after an interruption)")
    _add_run_flags(verify)
    inspect = sub.add_parser("inspect", help="verify sampled completions and build a report to read by hand",
                             usage="%(prog)s --input FILE --report DIR [--resume] [--server HOST:PORT]\n"
                                   "       [options] [embedded service settings]\n"
                                   "       %(prog)s --import-labels FILE --report DIR")
    inspect.add_argument("--input", type=Path, help="JSONL: {id, prompt, completion, spec} per line (- reads stdin)")
    inspect.add_argument("--resume", action="store_true",
                         help="skip the samples whose results are already in the report directory")
    inspect.add_argument("--report", type=Path, required=True, help="report directory (report.html, labels.jsonl)")
    inspect.add_argument("--import-labels", type=Path, metavar="FILE",
                         help="merge labels exported from the page into DIR/labels.jsonl and rebuild the page")
    _add_run_flags(inspect)
    listing = sub.add_parser("list", help="list the verifier kinds and their parameters (and, with --server, "
                                          "the catalog verifiers you may use)")
    listing.add_argument("--server", help="HOST:PORT of a running service (default: this installation)")
    listing.add_argument("--kind", metavar="KIND", help="show only this kind")
    listing.add_argument("--json", action="store_true", help="print JSON (kinds, parameters, catalog) instead")
    add_client_flags(listing)
    from verifier_service.tools.tenancy_cli import add_parsers

    add_parsers(sub)
    doctor = sub.add_parser("doctor", help="check the sandbox backend and show which isolation layers are in force")
    add_config_flags(doctor, only=SANDBOX_SETTINGS, title="sandbox settings")
    sub.add_parser("build-sandbox", help="build the sandbox image (runs sandboxes/build.sh)")
    wait = sub.add_parser("wait", help="wait until the service at --server is serving (after `serve ... &`); exit 3 "
                          "when it is not within --timeout")
    wait.add_argument("--server", required=True, help="HOST:PORT of the service")
    wait.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (default 60)")
    add_client_flags(wait)
    from verifier_service.tools.audit.cli import EXIT_CODES as AUDIT_EXIT_CODES
    from verifier_service.tools.audit.cli import add_audit_flags

    audit = sub.add_parser("audit", help="self-test every task of a dataset: its reference must pass, steadily, and "
                           "probes (empty, stubs, the prompt's literals, a hack corpus) must earn nothing",
                           epilog=AUDIT_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_audit_flags(audit)
    audit.add_argument("--server", help="HOST:PORT of a running service (default: an embedded one)")
    add_client_flags(audit)
    add_config_flags(audit, title="embedded service settings (ignored with --server)", leave_out=SERVER_ONLY)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "build-sandbox":
            return _build_sandbox(args)
        if args.command == "wait":
            return _wait(args)
        if args.command == "list":
            return asyncio.run(_run_list(args))
        if args.command in ("tenants", "catalog"):
            from verifier_service.tools.tenancy_cli import run

            return run(args)
        config = load_config(args)
        configure_logging(config.log_level, config.log_format,
                          Repeats(config.log_repeat_burst, config.log_repeat_interval_s))
        if args.command == "doctor":
            return _doctor(config)
        if args.command == "serve":
            from verifier_service.serve import serve_workers

            return serve_workers(config, argv if argv is not None else sys.argv[1:])
        if args.command == "audit":
            from verifier_service.tools.audit.cli import run_and_report

            logging.getLogger().setLevel(max(logging.WARNING, logging.getLogger().level))
            return run_and_report(args, server=args.server, config=config,
                                  credentials=credentials_from_args(args) if args.server else None)[0]
        if args.command == "inspect" and args.import_labels:
            return _import_labels(args)
        if args.command == "inspect" and not args.input:
            raise VerifierError("inspect needs --input samples.jsonl (or --import-labels FILE)")
        if args.batch_size <= 0 or args.parallel <= 0:
            raise VerifierError("--batch-size and --parallel must be positive")
        if args.command == "verify":
            logging.getLogger().setLevel(max(logging.WARNING, logging.getLogger().level))
        if args.command == "inspect":
            logging.getLogger().setLevel(max(logging.WARNING, logging.getLogger().level))
            return asyncio.run(_run_inspect(args, config))
        return asyncio.run(_run_verify(args, config))
    except (SandboxUnavailable, ServiceUnreachable) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return EXIT_INFRA
    except VerifierError as exc:
        print(f"error: {one_line(exc)}{_kept(args)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"interrupted{_kept(args)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:
        print(f"error: {exc.filename or ''}{': ' if exc.filename else ''}{exc.strerror or exc}{_kept(args)}",
              file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback; a bug to report
        print(f"error: unexpected {type(exc).__name__}: {one_line(exc)}{_kept(args)} (a bug: please report it "
              f"with the command you ran)", file=sys.stderr)
        return EXIT_ERROR


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _kept(args) -> str:
    """What an interrupted or failed verify kept, and how to finish it."""
    writer = getattr(args, "writer", None)
    if writer is None or not writer.written:
        return ""
    where = f" in {writer.path}" if writer.path else ""
    resume = "; run the same command with --resume to finish" if writer.path else ""
    return f" ({writer.written} result(s) written{where}{resume})"


if __name__ == "__main__":
    raise SystemExit(main())
