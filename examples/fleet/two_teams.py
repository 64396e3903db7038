"""Two teams, one fleet: each team's key, the catalog verifiers they share and their own, every replica.

    python examples/fleet/two_teams.py --target dns:///verifier:50051      # in compose (profile "teams")
    python examples/fleet/two_teams.py --target 127.0.0.1:50051,127.0.0.1:50052

Keys come from RLVR_TEAM_MATH_KEY and RLVR_TEAM_CODE_KEY (compose passes the
example tenants' public keys). team-math verifies JSON answers with the shared
``format/json-object@1`` and GSM8K answers with its ``math/gsm8k-answer@2``;
team-code verifies Python with ``code/python-assert@1`` in the sandbox and is
refused team-math's ``math/`` namespace. Prints one line per team; exits 1 on any wrong
verdict or status.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client import VerifierClient
from verifier_service.credentials import Credentials
from verifier_service.errors import RemoteError
from verifier_service.spec import request_from_json


def ref(verifier: str, completion: str, id: str, **fields) -> pb.VerifyRequest:
    return request_from_json({"id": id, "completion": completion, "spec": {"verifier": verifier, **fields}})


def math_batch(n: int) -> tuple[list[pb.VerifyRequest], list[str]]:
    return ([ref("format/json-object@1", json.dumps({"answer": str(n), "confidence": 0.9}), f"m{n}-json"),
             ref("math/gsm8k-answer@2", f"so the answer is \\boxed{{{n * 3}}}", f"m{n}-right", gold=str(n * 3)),
             ref("math/gsm8k-answer@2", "the answer is \\boxed{-1}", f"m{n}-wrong", gold=str(n * 3))],
            ["PASSED", "PASSED", "FAILED"])


def code_batch(n: int) -> tuple[list[pb.VerifyRequest], list[str]]:
    code = "```python\ndef triple(x):\n    return x * 3\n```"
    return ([ref("format/json-object@1", '{"answer": 1}', f"c{n}-json"),
             ref("code/python-assert@1", code, f"c{n}-code", tests=f"assert triple({n}) == {n * 3}")],
            ["FAILED", "PASSED"])


async def team(name: str, key: str, target: str, make, batches: int, forbidden: pb.VerifyRequest | None) -> list[str]:
    problems = []
    client = await VerifierClient.connect(target, credentials=Credentials(api_key=key))
    try:
        made = [make(n) for n in range(batches)]
        answers = await asyncio.gather(*(client.verify_batch(requests, timeout_s=120) for requests, _ in made))
        versions = set()
        for (requests, want), results in zip(made, answers, strict=True):
            got = [pb.Verdict.Name(r.verdict) for r in results]
            versions |= {r.verifier_version for r in results}
            if got != want:
                problems.append(f"{name}: {[r.id for r in requests]} got {got}, want {want}")
        if forbidden is not None:
            try:
                await client.verify_batch([forbidden], timeout_s=30)
                problems.append(f"{name}: another team's namespace was not refused")
            except RemoteError as exc:
                if exc.code != "PERMISSION_DENIED":
                    problems.append(f"{name}: another team's namespace gave {exc.code}, want PERMISSION_DENIED")
        print(f"{name}: {sum(len(r) for r in answers)} verifications in {batches} batches, verifiers "
              f"{sorted(versions)}{', the other namespace refused' if forbidden is not None else ''}", flush=True)
    finally:
        await client.close()
    return problems


async def main_async(args) -> int:
    math_key, code_key = os.environ.get("RLVR_TEAM_MATH_KEY", ""), os.environ.get("RLVR_TEAM_CODE_KEY", "")
    if not math_key or not code_key:
        print("set RLVR_TEAM_MATH_KEY and RLVR_TEAM_CODE_KEY", file=sys.stderr)
        return 2
    per_team = await asyncio.gather(
        team("team-math", math_key, args.target, math_batch, args.batches, None),  # may use code/ too
        team("team-code", code_key, args.target, code_batch, args.batches,
             ref("math/gsm8k-answer@2", "1", "x", gold="1")))
    problems = [p for found in per_team for p in found]
    for problem in problems:
        print("WRONG:", problem, file=sys.stderr)
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="host:port[,host:port...] or dns:///name:port")
    parser.add_argument("--batches", type=int, default=8)
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
