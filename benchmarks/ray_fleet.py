"""The verifier fleet on Ray against one plain service, on a local multi-node Ray cluster.

    python -m benchmarks.ray_fleet --nodes 3 --replicas 3 [--seconds 30] [--concurrency 2] [--kill-node]

Side by side in one run, the same client driver (bursts of VerifyBatch calls, every completion unique, every
verdict checked) against:

1. one plain service (``verifier-service serve``, bubblewrap, ``--concurrency`` sandboxes), over gRPC;
2. the fleet: a ``LocalRayCluster`` of ``--nodes`` worker nodes (Ray's cluster_utils: a raylet each,
   ``--cpus-per-node`` logical CPUs each (2), on loopback), ``--replicas`` Serve replicas of ``--concurrency``
   sandboxes each, reached through the deployment handle (target ``ray:``, as a reward worker inside the cluster
   would). ``--kill-node`` removes the node of one replica a third of the way through: its batches go again to
   the others; ``lost`` counts samples without a verdict (a batch that failed for good, or INFRA_ERROR),
   ``wrong`` verdicts other than expected.

The workload is ``python_200ms`` (python_assert checks that wait 0.2 s: bound by the sandboxes, not by cores,
so replicas can add throughput on a small host) unless ``--workload`` says otherwise. Rows:
benchmarks/ray_fleet.json. The last line: ``ray fleet: nodes N, replicas R, checks/s X, lost L, wrong W``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

from benchmarks.fleet import WORKLOADS, _items
from benchmarks.run import HERE, machine_facts


async def drive(client, workload: str, seconds: float, parallel: int, batch: int, kill=None) -> dict:
    """Bursts of ``parallel`` batches for ``seconds``; ``kill`` (a blocking callable) runs a third of the way."""
    from verifier_service._generated import verifier_pb2 as pb

    counter = {"next": 0, "done": 0, "wrong": 0, "lost": 0, "batches": 0, "failed_batches": 0}
    latencies: list[float] = []

    async def worker():
        while time.perf_counter() < stop:
            start = counter["next"]
            counter["next"] += batch
            items = _items(workload, start, batch)
            t0 = time.perf_counter()
            try:
                results = await client.verify_batch([r for r, _ in items], timeout_s=300)
            except Exception as exc:  # noqa: BLE001 - a batch lost for good: counted, never scored
                counter["failed_batches"] += 1
                counter["lost"] += len(items)
                print(f"batch lost: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
                continue
            latencies.append(time.perf_counter() - t0)
            counter["batches"] += 1
            for r, (_, want) in zip(results, items, strict=True):
                if r.verdict == pb.INFRA_ERROR:
                    counter["lost"] += 1
                else:
                    counter["done"] += 1
                    counter["wrong"] += pb.Verdict.Name(r.verdict) != want

    async def killer():
        await asyncio.sleep(seconds / 3)
        await asyncio.to_thread(kill)

    warm = _items(workload, 10**9, batch)
    await client.verify_batch([r for r, _ in warm], timeout_s=300)
    began = time.perf_counter()
    stop = began + seconds
    jobs = [worker() for _ in range(parallel)] + ([killer()] if kill is not None else [])
    await asyncio.gather(*jobs)
    elapsed = time.perf_counter() - began
    latencies.sort()
    return {"workload": workload, "verifications": counter["done"], "wrong": counter["wrong"],
            "lost": counter["lost"], "failed_batches": counter["failed_batches"], "seconds": round(elapsed, 2),
            "per_s": round(counter["done"] / elapsed, 2), "batch": batch, "parallel_batches": parallel,
            "batch_p50_s": round(latencies[len(latencies) // 2], 3) if latencies else None,
            "batch_p95_s": round(latencies[int(len(latencies) * 0.95)], 3) if latencies else None,
            "retried": getattr(client, "retried", 0)}


def plain_service(args) -> dict:
    from verifier_service.client import VerifierClient
    from verifier_service.testing import ServedProcess

    service = ServedProcess("--sandbox-backend", "bwrap", "--max-concurrency", str(args.concurrency),
                            "--log-level", "WARNING", "--max-pending", "100000").start(timeout=180)
    try:
        async def run():
            async with await VerifierClient.connect(service.address) as client:
                return await drive(client, args.workload, args.seconds, args.parallel, args.batch)

        return {"target": "plain service", "sandboxes": args.concurrency, **asyncio.run(run())}
    finally:
        service.stop(60)


def ray_fleet(args) -> dict:
    from verifier_service.fleet_ray.local import LocalRayCluster, loopback_only

    loopback_only()
    from verifier_service.client import VerifierClient
    from verifier_service.fleet_ray import deployment

    started = time.perf_counter()
    with LocalRayCluster(nodes=args.nodes, cpus_per_node=args.cpus_per_node) as cluster:
        up_s = time.perf_counter() - started
        fleet = deployment.FleetConfig(
            service={"sandbox_backend": "bwrap", "max_concurrency": args.concurrency, "pure_workers": 1,
                     "session_spares": 0, "max_pending": 100000},
            replicas=args.replicas, max_replicas_per_node=1 if args.replicas <= args.nodes else None)
        handle = deployment.deploy(fleet)
        deployed_s = time.perf_counter() - started - up_s
        nodes: dict[int, str] = {}
        for _ in range(20 * args.replicas):
            where = handle.options(method_name="where").remote().result(timeout_s=60)
            nodes[where["pid"]] = where["node_id"]
            if len(nodes) == args.replicas:
                break
        kill = None
        if args.kill_node:
            victim = next(iter(nodes.values()))
            kill = lambda: cluster.kill_node(victim)  # noqa: E731
        try:
            client = VerifierClient.open("ray:")
            row = asyncio.run(drive(client, args.workload, args.seconds, args.parallel, args.batch, kill))
        finally:
            deployment.shutdown(fleet)
        return {"target": "ray fleet", "nodes": args.nodes, "replicas": args.replicas,
                "sandboxes": args.concurrency * args.replicas, "replica_nodes": len(set(nodes.values())),
                "node_killed": bool(args.kill_node), "cluster_up_s": round(up_s, 1),
                "deploy_s": round(deployed_s, 1), **row}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=2, help="sandboxes per replica (and of the plain one)")
    parser.add_argument("--cpus-per-node", type=float, default=2.0, help="logical CPUs of each worker node")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workload", default="python_200ms", choices=list(WORKLOADS))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--parallel", type=int, default=0, help="batches in flight (default: 2 per replica + 2)")
    parser.add_argument("--kill-node", action="store_true", help="kill the node of one replica mid-run")
    parser.add_argument("--no-plain", action="store_true", help="skip the plain-service row")
    parser.add_argument("--output", default=str(Path(HERE, "ray_fleet.json")))
    args = parser.parse_args(argv)
    args.parallel = args.parallel or 2 * args.replicas + 2
    rows = []
    if not args.no_plain:
        rows.append(plain_service(args))
        print(json.dumps(rows[-1]), flush=True)
    rows.append(ray_fleet(args))
    print(json.dumps(rows[-1]), flush=True)
    out = Path(args.output)
    previous = json.loads(out.read_text()) if out.exists() else {"runs": []}
    previous["runs"].append({"machine": {**machine_facts(), "cpus": os.cpu_count()}, "args": vars(args),
                             "rows": rows})
    out.write_text(json.dumps(previous, indent=1) + "\n")
    fleet = rows[-1]
    if rows[0]["target"] == "plain service" and rows[0]["per_s"]:
        print(f"fleet / plain service: {fleet['per_s'] / rows[0]['per_s']:.2f}x "
              f"({fleet['sandboxes']} vs {rows[0]['sandboxes']} sandboxes)")
    print(f"ray fleet: nodes {args.nodes}, replicas {args.replicas}, checks/s {fleet['per_s']}, "
          f"lost {fleet['lost']}, wrong {fleet['wrong']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
