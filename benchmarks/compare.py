"""Before / after: the service of another git revision next to this checkout's, side by side in one run.

    python -m benchmarks.compare [--base main] [--rounds 5] [--parallel 4] [--base-image TAG --image TAG]

Both services run at once as ``verifier-service serve`` processes (the base
revision exported with ``git archive`` into a temp dir), with the same
settings; this process sends the same kind of work to each, alternating
which goes first every round, so load on a shared machine hits both alike.
Every verdict is checked. Prints the median rate of each and the ratio
(this checkout / base); ``--out`` also writes them as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks import workloads
from verifier_service.testing import CLI_MODULE, ServedProcess, wait_all_serving

ROOT = Path(__file__).resolve().parent.parent


def start(tree: Path, parallel: int, image: str | None = None) -> ServedProcess:
    """The service of the checkout at ``tree`` (its own entry point: a base from before the package was
    grouped by audience has it at verifier_service/cli.py), started, not yet waited for."""
    env = {"PYTHONPATH": str(tree)}
    if image:  # a change of the sandbox runner is measured with each revision's own build of the image
        env["RLVR_VERIFIER_SANDBOX_IMAGE"] = image
    module = CLI_MODULE if (tree / "verifier_service" / "tools" / "cli.py").exists() else "verifier_service.cli"
    return ServedProcess("--max-concurrency", str(parallel), "--max-pending", "100000", "--max-batch-size", "10000",
                         "--result-cache-size", "0", "--log-level", "WARNING", cwd=tree, env=env,
                         module=module).start(wait=False)


WORK = {  # name: (workload, items per round, completions per VerifyBatch)
    "json_schema": ("json_schema", 4000, 1000),
    "format": ("format", 4000, 1000),
    "python_assert": ("python_assert", 96, 96),
    "python_assert, one batch of 1024": ("python_assert", 1024, 1024),
    "python_check (HumanEval's check(candidate))": ("python_check", 96, 96),
    "HumanEval (164 real problems)": ("humaneval", 164, 164),
    "stdio Python, 2 cases": ("stdio_python", 48, 48),
    "stdio Python, 10 cases (contest)": ("contest10", 24, 24),
    "stdio Python, 50 cases (contest)": ("contest50", 8, 8),
    "group of 8 (python_assert)": ("python_assert", 8, 8),
}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its live children (the service and its pure workers; not
    the sandboxes, which Docker runs)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            pids += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


async def one_round(client, name: str, salt: str, pid: int) -> tuple[float, float]:
    """(completions per second, server CPU milliseconds per completion)."""
    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service.spec import request_from_json

    kind, n, chunk = WORK[name]
    items = workloads.tasks(kind, n)
    reqs = [request_from_json(workloads.request_json(t, i, salt)) for i, t in enumerate(items)]
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    results = []
    for s in range(0, n, chunk):
        results += await client.verify_batch(reqs[s:s + chunk])
    seconds, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
    got = [pb.Verdict.Name(r.verdict) for r in results]
    wrong = [(t.get("task_id", i), v, t["expected"]) for i, (v, t) in enumerate(zip(got, items, strict=True))
             if v != t["expected"] and v not in t.get("accept", ())]
    assert not wrong, f"{name}: verdicts differ from the expected ones: {wrong[:5]}"
    return n / seconds, 1000 * cpu / n


async def compare(ports: dict[str, int], pids: dict[str, int], rounds: int, groups: int, only: list[str]) -> dict:
    from verifier_service.client import VerifierClient

    clients = {label: await VerifierClient.connect(f"127.0.0.1:{port}", timeout_s=180) for label, port in
               ports.items()}
    names = [name for name in WORK if not only or name in only]
    rates: dict[str, dict[str, list[float]]] = {name: {label: [] for label in ports} for name in names}
    cpu: dict[str, dict[str, float]] = {name: {label: 0.0 for label in ports} for name in names}
    try:
        for label in ports:  # warm: pools full, workers imported
            await one_round(clients[label], "python_assert", f"warm-{label}", pids[label])
            await one_round(clients[label], "json_schema", f"warm-{label}", pids[label])
        for r in range(rounds):
            order = list(ports) if r % 2 == 0 else list(reversed(ports))
            for name in names:
                repeat = groups if name.startswith("group") else 1
                for label in order:
                    for g in range(repeat):
                        rate, ms = await one_round(clients[label], name, f"r{r}-{g}-{label}", pids[label])
                        rates[name][label].append(rate)
                        cpu[name][label] += ms / (rounds * repeat)
    finally:
        for client in clients.values():
            await client.close()
    out = {}
    for name, by_label in rates.items():
        med = {label: statistics.median(v) for label, v in by_label.items()}
        # paired: the two services' samples of one round ran back to back, under about the same load
        paired = [b / a for a, b in zip(by_label["base"], by_label["this checkout"], strict=True)]
        out[name] = {"median_per_s": med, "ratio": statistics.median(paired), "samples": by_label,
                     "server_cpu_ms_per_item": cpu[name],
                     "cpu_ratio": cpu[name]["base"] / max(cpu[name]["this checkout"], 1e-9)}
        if name.startswith("group"):
            out[name]["p50_ms"] = {label: 8000 / m for label, m in med.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="git revision to compare against (default: main; "
                        "`git merge-base HEAD main` measures only this branch's changes)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--groups", type=int, default=10, help="groups of 8 per round and service")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--only", action="append", default=[], choices=list(WORK), help="this work only "
                        "(repeatable)")
    parser.add_argument("--base-image", help="sandbox image of the base's service (default: the configured one)")
    parser.add_argument("--image", help="sandbox image of this checkout's service (default: the configured one)")
    parser.add_argument("--out", type=Path, help="the samples as JSON")
    parser.add_argument("--md", type=Path, help="the table as Markdown")
    args = parser.parse_args(argv)
    rev = subprocess.run(["git", "rev-parse", "--short", args.base], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="rlvr-base-") as tmp:
        base = Path(tmp)
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        served = {"base": start(base, args.parallel, args.base_image),
                  "this checkout": start(ROOT, args.parallel, args.image)}
        try:
            wait_all_serving(list(served.values()), timeout=300)
            ports = {label: s.port for label, s in served.items()}
            pids = {label: s.pid for label, s in served.items()}
            result = asyncio.run(compare(ports, pids, args.rounds, args.groups, args.only))
        finally:
            for s in served.values():
                s.stop(60)
    load_end = os.getloadavg()
    lines = [f"Base {rev} vs this checkout {head} (uncommitted changes included), both served at once, "
             f"{args.rounds} rounds alternating which goes first; rates are medians, the ratio is the median of the "
             "ratios of the samples taken back to back (paired); load average "
             f"{load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end. Every verdict checked. "
             + (f"Sandbox images: base `{args.base_image or 'configured'}`, this checkout "
                f"`{args.image or 'configured'}`. " if args.base_image or args.image else "")
             + "Regenerate: `python -m benchmarks.compare --base REV`.", "",
             "Server CPU is the user + system time of each service process and its pure-verifier workers "
             "(not the sandboxes, which Docker runs) per completion, averaged over the rounds: it depends far "
             "less on other load than the rates do.", "",
             "| work | base /s | this checkout /s | rate ratio (paired) | server CPU base (ms/item) | "
             "this checkout | CPU saved (base / this) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, row in result.items():
        m, c = row["median_per_s"], row["server_cpu_ms_per_item"]
        lines.append(f"| {name} | {m['base']:.1f} | {m['this checkout']:.1f} | {row['ratio']:.2f}x | "
                     f"{c['base']:.3f} | {c['this checkout']:.3f} | {row['cpu_ratio']:.2f}x |")
    stdio = [(name, row) for name, row in result.items() if "cases" in name]
    if stdio:
        lines += ["", "stdio Python, milliseconds per case (one case = one run of the program on one stdin; all-or-"
                  "nothing scoring, so a wrong program's later cases may not run):", "",
                  "| work | base ms/case | this checkout ms/case |", "|---|---:|---:|"]
        for name, row in stdio:
            cases = len(workloads.tasks(WORK[name][0], 1)[0]["cases"])
            m = row["median_per_s"]
            lines.append(f"| {name} | {1000 / (m['base'] * cases):.2f} | {1000 / (m['this checkout'] * cases):.2f} |")
    print("\n".join(lines))
    if args.md:
        args.md.write_text("# Before / after\n\n" + "\n".join(lines) + "\n")
    if args.out:
        args.out.write_text(json.dumps({"base": rev, "head": head, "load": [load_start, load_end], **result},
                                       indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
