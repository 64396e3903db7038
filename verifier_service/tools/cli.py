"""The ``verifier-service`` command: serve, verify, inspect, list, doctor, build-sandbox, tenants, catalog."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.config import ServiceConfig, add_config_flags, load_config
from verifier_service.credentials import add_client_flags, credentials_from_args
from verifier_service.errors import InvalidSpec, RemoteError, SandboxUnavailable, VerifierError
from verifier_service.server.rpclog import configure_logging
from verifier_service.spec import request_from_json, result_to_json
from verifier_service.tools.jsonl import read_jsonl

EXIT_USAGE = 2
EXIT_INFRA = 3
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


async def _verify_all(client, requests, batch_size: int, parallel: int, console, show_progress: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    chunks = [requests[i:i + batch_size] for i in range(0, len(requests), batch_size)]
    results: list[list[pb.VerifyResult] | None] = [None] * len(chunks)
    gate = asyncio.Semaphore(parallel)
    with Progress(TextColumn("verifying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=not show_progress, transient=False) as progress:
        task = progress.add_task("verify", total=len(requests))

        async def one(index: int, chunk):
            async with gate:
                try:
                    results[index] = await client.verify_batch(chunk)
                except RemoteError as exc:
                    first, last = index * batch_size + 1, index * batch_size + len(chunk)
                    raise VerifierError(f"the service rejected requests {first}-{last}: {exc}") from exc
            progress.advance(task, len(chunk))

        await asyncio.gather(*(one(i, c) for i, c in enumerate(chunks)))
    return [r for chunk in results for r in chunk]  # type: ignore[union-attr]


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


async def _verify_requests(args, config: ServiceConfig, requests, console) -> tuple[list[pb.VerifyResult], float]:
    """Verifies through ``--server`` or an embedded service (started here, stopped after)."""
    from verifier_service.client import VerifierClient

    app = None
    if args.server:
        client = await VerifierClient.connect(args.server, credentials=credentials_from_args(args))
    else:
        from verifier_service.credentials import Credentials
        from verifier_service.sandbox import make_sandbox
        from verifier_service.server.server import VerifierApp

        make_sandbox(config).check_blocking()  # the clear "Docker missing / image not built" message
        # Embedded: a loopback listener of this process only, no TLS and no tenants.
        app = VerifierApp(replace(config, host="127.0.0.1", port=0, tenants="", tls_cert="", tls_key="",
                                  tls_client_ca=""))
        port = await app.start()
        client = await VerifierClient.connect(f"127.0.0.1:{port}", credentials=Credentials())
    started = time.monotonic()
    try:
        show = not args.quiet and (console.is_terminal or len(requests) >= 50)
        results = await _verify_all(client, requests, args.batch_size, args.parallel, console, show)
    finally:
        await client.close()
        if app is not None:
            await app.stop(grace=1.0)
    return results, time.monotonic() - started


async def _run_verify(args, config: ServiceConfig) -> int:
    console = _console()
    requests = read_requests(args.input, args.verifier)
    results, elapsed = await _verify_requests(args, config, requests, console)
    lines = "".join(json.dumps(result_to_json(r)) + "\n" for r in results)
    if args.output:
        args.output.write_text(lines, encoding="utf-8")
    else:
        sys.stdout.write(lines)
    if not args.quiet:
        console.print(summary_table(results, elapsed))
    infra = sum(r.verdict == pb.INFRA_ERROR for r in results)
    if infra:
        console.print(f"[bold red]{infra} INFRA_ERROR result(s): the sandbox failed, not the code "
                      f"(their reward is null)[/]")
        return EXIT_INFRA
    return 0


async def _run_list(args) -> int:
    from rich.table import Table

    from verifier_service.client import VerifierClient
    from verifier_service.engine.engine import Engine

    if args.server:
        async with await VerifierClient.connect(args.server, credentials=credentials_from_args(args)) as client:
            response = await client.list_verifiers()
    else:
        response = Engine.describe()
    from rich.console import Console

    console = Console()
    for kind in response.kinds:
        table = Table(title=f"{kind.name}{' (sandboxed)' if kind.sandboxed else ''}: {kind.description}",
                      title_justify="left")
        for column in ("parameter", "type", "required", "default", "description"):
            table.add_column(column)
        for p in kind.parameters:
            desc = p.description + (f" [{' | '.join(p.choices)}]" if p.choices else "")
            table.add_row(p.name, p.type, "yes" if p.required else "", p.default, desc)
        console.print(table)
    if response.catalog:
        from verifier_service.tools.tenancy_cli import catalog_table

        console.print(catalog_table(response.catalog))
    return 0


async def _run_inspect(args, config: ServiceConfig) -> int:
    """Verifies sampled completions and writes the inspection report (terminal summary + HTML)."""
    from datetime import datetime, timezone

    from verifier_service.tools import inspection

    console = _console()
    requests = read_requests(args.input, args.verifier)
    rows = [with_verifier(row, args.verifier) for row in inspection.read_rows(args.input)]
    results, elapsed = await _verify_requests(args, config, requests, console)
    samples = inspection.build_samples(rows, [r.id for r in requests], [result_to_json(r) for r in results])
    inspection.flag_samples(samples, config.default_timeout_s)
    meta = {"source": str(args.input), "verifier": args.server or "embedded",
            "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "default_timeout_s": config.default_timeout_s}
    page = inspection.write_report(args.report, samples, meta)
    if not args.quiet:
        console.print(summary_table(results, elapsed))
        for table in inspection.summary_renderables(samples):
            console.print(table)
    read, agreed = inspection.label_counts(inspection.load_labels(args.report / inspection.LABELS_FILE))
    if read:
        console.print(f"labels already recorded: {read} read, {agreed} agree")
    console.print(f"report: {page} (read it, export the labels to {args.report / inspection.LABELS_FILE})")
    infra = sum(r.verdict == pb.INFRA_ERROR for r in results)
    if infra:
        console.print(f"[bold red]{infra} INFRA_ERROR result(s): the sandbox failed, not the code[/]")
        return EXIT_INFRA
    return 0


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
        return EXIT_USAGE
    print(format_isolation(sandbox.isolation()))
    print(f"ok: the {config.sandbox_backend} sandbox backend runs jobs (image id {sandbox.image_id})")
    return 0


def _build_sandbox(args) -> int:
    if not BUILD_SCRIPT.exists():
        raise VerifierError("sandboxes/build.sh is not here: build the image from a source checkout")
    return subprocess.call(["bash", str(BUILD_SCRIPT)])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verifier-service", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gRPC verifier service")
    add_config_flags(serve)
    verify = sub.add_parser("verify", help="verify a JSONL file of requests (embedded sandbox or --server)")
    verify.add_argument("--input", type=Path, required=True, help="JSONL: {id, completion, spec} per line")
    verify.add_argument("--output", type=Path, help="results JSONL (default: stdout)")
    verify.add_argument("--server", help="HOST:PORT of a running service (default: an embedded one)")
    verify.add_argument("--batch-size", type=int, default=32, help="completions per VerifyBatch call")
    verify.add_argument("--parallel", type=int, default=4, help="batches in flight at once")
    verify.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    verify.add_argument("--verifier", metavar="TEAM/NAME@VERSION",
                        help="catalog verifier for lines whose spec names none (their spec: the per-sample fields)")
    add_client_flags(verify)
    add_config_flags(verify)
    inspect = sub.add_parser("inspect", help="verify sampled completions and build a report to read by hand")
    inspect.add_argument("--input", type=Path, help="JSONL: {id, prompt, completion, spec} per line")
    inspect.add_argument("--report", type=Path, required=True, help="report directory (report.html, labels.jsonl)")
    inspect.add_argument("--import-labels", type=Path, metavar="FILE",
                         help="merge labels exported from the page into DIR/labels.jsonl and rebuild the page")
    inspect.add_argument("--server", help="HOST:PORT of a running service (default: an embedded one)")
    inspect.add_argument("--batch-size", type=int, default=32, help="completions per VerifyBatch call")
    inspect.add_argument("--parallel", type=int, default=4, help="batches in flight at once")
    inspect.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    inspect.add_argument("--verifier", metavar="TEAM/NAME@VERSION",
                         help="catalog verifier for lines whose spec names none (their spec: the per-sample fields)")
    add_client_flags(inspect)
    add_config_flags(inspect)
    listing = sub.add_parser("list", help="list the verifier kinds and their parameters (and, with --server, "
                                          "the catalog verifiers you may use)")
    listing.add_argument("--server", help="HOST:PORT of a running service (default: this installation)")
    add_client_flags(listing)
    from verifier_service.tools.tenancy_cli import add_parsers

    add_parsers(sub)
    doctor = sub.add_parser("doctor", help="check the sandbox backend and show which isolation layers are in force")
    add_config_flags(doctor)
    sub.add_parser("build-sandbox", help="build the sandbox image (runs sandboxes/build.sh)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "build-sandbox":
            return _build_sandbox(args)
        if args.command == "list":
            return asyncio.run(_run_list(args))
        if args.command in ("tenants", "catalog"):
            from verifier_service.tools.tenancy_cli import run

            return run(args)
        config = load_config(args)
        configure_logging(config.log_level, config.log_format)
        if args.command == "doctor":
            return _doctor(config)
        if args.command == "serve":
            from verifier_service.server.server import serve_workers

            return serve_workers(config, argv if argv is not None else sys.argv[1:])
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
    except SandboxUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except VerifierError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
