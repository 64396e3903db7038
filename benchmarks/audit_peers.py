"""The reward audit side by side with DeepGym's ``qa`` and NeMo Gym's verifier fixtures, on the same datasets.

    python -m benchmarks.audit_peers --peers-venv /work/peers-venv --ours humaneval=/tmp/audit/humaneval ...

The peers are installed at benchmark time only, in a venv of their own (``pip install deepgym nemo-gym``: DeepGym's
licence is non-commercial, so it is never a dependency); their site-packages are put at the *end* of ``sys.path``
for this run. What each peer checks is taken from its own source (read, not copied):

- DeepGym ``qa`` (``deepgym/qa/checks.py``, ``deepgym/adversarial.py``): the reference scores 1.0
  (``reference_passes``) the same way over 1 + 3 reruns (``deterministic``); the empty answer and the reference's
  stub (``stub_solution``: every top-level function ``return None``) earn nothing (``earns_nothing``: score above
  1e-6 fails); the heuristic attacks (``empty``, ``hardcoded``: prints the test cases' expected outputs, ``trivial``,
  ``overflow``: NaN / inf, ``pattern``: returns its first argument) stay under the exploit threshold (score >= 0.5
  is an exploit). The attack programs are DeepGym's own, made by ``AdversarialTester._generate_attack`` on a
  DeepGym ``Environment`` whose folder holds the row's reference as ``reference_solution.py``.
- NeMo Gym (``nemo_gym/verifier_fixture.py``): ``exercise_verifier_fixture`` runs a verifier's JSONL cases:
  ``full_reward`` must hit the top of the reward range, ``zero_reward`` the bottom, ``malformed`` must raise, and a
  seeded ``determinism`` case must give the same reward on a fresh server. The fixture cases are written by each
  verifier's author; here every row gets the generic ones: its reference (full_reward, determinism), the empty
  answer (zero_reward), and one malformed request per dataset (a spec without its required field).

Both peers score with this project's verifier (the rows' specs are ours); the reward they read is the correctness
score (0..1). Every candidate goes through the service in batches first; the peers' rules then run on the results
(NeMo's own ``exercise_verifier_fixture`` runs, against a server object that answers from those results, two
separate runs for the determinism case). The output says, per dataset, what each peer found and whether our
audit (``audit.jsonl`` of ``verifier-service audit``) flagged every such row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from verifier_service.tools.audit import load_dataset
from verifier_service.tools.audit.literals import prompt_text
from verifier_service.tools.audit.probes import wrap
from verifier_service.tools.audit.runner import AuditSettings, service_client, verify_json

SEP = "|"
DEEPGYM_RERUNS = 3
DEEPGYM_ATTACKS = ("empty", "hardcoded", "trivial", "overflow", "pattern")  # patch_tampering: repo-patch envs only
_FENCE = re.compile(r"```[^\n`]*\n(.*?)(?:\n)?```", re.S)

# Which of our flag classes answers each peer finding.
ANSWERED_BY = {
    "deepgym:reference_passes": ("reference_failed",),
    # a verdict that flips between runs: ours flags it flaky when it flipped in the audit's own runs, slow when the
    # reference runs within 3x of its limit (what makes it flip under load)
    "deepgym:deterministic": ("reference_flaky", "reference_slow"),
    "deepgym:empty_fails": ("trivial",),
    "deepgym:stub_fails": ("trivial", "leak", "hack"),
    "deepgym:hack_resistant": ("trivial", "leak", "hack"),
    "nemo:full_reward": ("reference_failed",),
    "nemo:zero_reward": ("trivial",),
    "nemo:determinism": ("reference_flaky", "reference_slow", "reference_failed"),  # it pins the reward too
}


def add_peers(venv: Path) -> None:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if not found:
        raise SystemExit(f"no site-packages under {venv}: make it with `python -m venv {venv} && {venv}/bin/pip "
                         "install deepgym && pip install --no-deps nemo-gym`")
    sys.path.append(str(found[0]))


def code_of(reference: str) -> str:
    blocks = _FENCE.findall(reference)
    return blocks[-1] if blocks else reference


def deepgym_candidates(row: dict[str, Any], spec: dict[str, Any], workdir: Path) -> list[tuple[str, str]]:
    """(check, completion) pairs DeepGym's qa would run on this row."""
    from deepgym.adversarial import AdversarialTester
    from deepgym.models import Environment
    from deepgym.qa.checks import stub_solution

    reference = row.get("reference")
    code = code_of(reference) if reference is not None else None
    folder = workdir / re.sub(r"\W", "_", str(row["id"]))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "verifier.py").write_text("# scored by rlvr-verifier (this row's spec)\n")
    if code is not None:
        (folder / "reference_solution.py").write_text(code)
    cases = spec.get("cases")
    test_cases = None
    if isinstance(cases, list):
        test_cases = [{"input": c.get("stdin", c.get("args")), "expected": c.get("expected_stdout", c.get("expected"))}
                      for c in cases]
    env = Environment(task=prompt_text(row.get("prompt")), verifier_path=folder / "verifier.py",
                      test_cases=test_cases)
    out: list[tuple[str, str]] = []
    if reference is not None:
        out += [(f"reference_passes{SEP}{i}", reference) for i in range(1 + DEEPGYM_RERUNS)]
        stub = stub_solution(code)
        if stub:
            out.append(("stub_fails", wrap(stub, spec)))
    out.append(("empty_fails", ""))
    tester = AdversarialTester(None)  # generation only: the attacks run through our service
    for strategy in DEEPGYM_ATTACKS:
        out.append((f"hack_resistant{SEP}{strategy}", wrap(tester._generate_attack(env, strategy), spec)))
    return out


def deepgym_findings(results: dict[str, dict[str, Any]]) -> list[str]:
    """DeepGym's rules (checks.py: solved, earns_nothing, _same_scores; adversarial: score >= 0.5 exploits)."""
    tolerance, threshold = 1e-6, 0.5
    found = []
    scores = [results[k]["correctness_score"] for k in sorted(results) if k.startswith("reference_passes")]
    if scores:
        if scores[0] < 1 - tolerance:
            found.append("deepgym:reference_passes")
        if len(set(scores)) > 1:
            found.append("deepgym:deterministic")
    for check in ("empty_fails", "stub_fails"):
        if check in results and results[check]["correctness_score"] > tolerance:
            found.append(f"deepgym:{check}")
    exploits = [k.split(SEP)[1] for k, r in results.items() if k.startswith("hack_resistant")
                and r["correctness_score"] >= threshold]
    if exploits:
        found.append("deepgym:hack_resistant")
    return found


def nemo_findings(row_id: str, results: dict[str, dict[str, Any]], has_reference: bool, workdir: Path) -> list[str]:
    """NeMo Gym's own fixture runner on this row's generic cases; each case that fails is a finding."""
    from nemo_gym.verifier_fixture import VerifierFixture, VerifierFixtureError, exercise_verifier_fixture
    from pydantic import BaseModel

    class Request(BaseModel):
        completion: str
        case: str

    workdir.mkdir(parents=True, exist_ok=True)
    calls: Counter = Counter()

    class Server:
        def verify(self, request: Request) -> dict[str, float]:
            calls[request.case] += 1
            key = request.case if request.case != "determinism" else f"determinism{SEP}{calls['determinism'] - 1}"
            return {"reward": results[key]["correctness_score"]}

    found = []
    cases = [("zero_reward", "zero_reward", 0.0)]
    if has_reference:
        cases += [("full_reward", "full_reward", 1.0), ("determinism", "determinism", 1.0)]
    for name, kind, expected in cases:  # one fixture file per case: the runner stops at the first mismatch
        path = workdir / f"{re.sub(r'[^A-Za-z0-9]', '_', row_id)}-{name}.jsonl"
        lines = [{"name": name, "kind": kind, "request": {"completion": "", "case": name}, "expected_reward": expected},
                 {"name": "malformed", "kind": "malformed", "request": {"completion": 1},
                  "expected_error": "validation error"}]
        if name != "full_reward":
            lines.append({"name": "full", "kind": "full_reward", "request": {"completion": "", "case": "pin_full"},
                          "expected_reward": 1.0})
        if name != "zero_reward":
            lines.append({"name": "zero", "kind": "zero_reward", "request": {"completion": "", "case": "pin_zero"},
                          "expected_reward": 0.0})
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        fixture = VerifierFixture(server_factory=Server, request_model=Request, cases_path=path,
                                  reseed=lambda server, request: None)
        try:
            asyncio.run(exercise_verifier_fixture(fixture, reward_range=[0.0, 1.0],
                                                  determinism="seeded" if name == "determinism" else "unknown"))
        except VerifierFixtureError:
            found.append(f"nemo:{name}")
    return found


def compare(name: str, rows: list[dict[str, Any]], ours_dir: Path, server: str | None, workdir: Path,
            settings: AuditSettings) -> dict[str, Any]:
    ours = {a["id"]: a for a in map(json.loads, (ours_dir / "audit.jsonl").read_text().splitlines())}
    requests, plan = [], []
    for index, row in enumerate(rows):
        spec = json.loads(row["verification"]) if isinstance(row["verification"], str) else row["verification"]
        for check, completion in deepgym_candidates(row, spec, workdir / "deepgym" / name):
            requests.append({"id": f"{index}{SEP}d{SEP}{check}", "completion": completion, "spec": spec})
        requests.append({"id": f"{index}{SEP}n{SEP}zero_reward", "completion": "", "spec": spec})
        if row.get("reference") is not None:
            requests.append({"id": f"{index}{SEP}n{SEP}full_reward", "completion": row["reference"], "spec": spec})
        plan.append((index, row, spec))
    started = time.monotonic()

    async def run() -> dict[str, dict[str, Any]]:
        async with service_client(server) as client:
            first = await verify_json(client, requests, settings, lambda n: None)
            # the determinism case: the reference again, twice, each in a run of its own
            again = []
            for run_index in range(2):
                batch = [{"id": f"{i}{SEP}n{SEP}determinism{SEP}{run_index}", "completion": row["reference"] + "\n"
                          * (run_index + 1), "spec": spec} for i, row, spec in plan if row.get("reference") is not None]
                again += await verify_json(client, batch, settings, lambda n: None) if batch else []
        return {r["id"]: r for r in first + again}

    results = asyncio.run(run())
    seconds = time.monotonic() - started
    pinned = {"correctness_score": 1.0}
    per_peer: Counter = Counter()
    missed: list[dict[str, Any]] = []
    answered: list[dict[str, Any]] = []
    ours_only = 0
    peer_rows: set[str] = set()
    for index, row, _ in plan:
        mine = {k.split(SEP, 2)[2]: v for k, v in results.items() if k.startswith(f"{index}{SEP}d{SEP}")}
        nemo = {k.split(SEP, 2)[2]: v for k, v in results.items() if k.startswith(f"{index}{SEP}n{SEP}")}
        nemo.update({"pin_full": pinned, "pin_zero": {"correctness_score": 0.0}})
        found = deepgym_findings(mine) + nemo_findings(str(row["id"]), nemo, row.get("reference") is not None,
                                                       workdir / "nemo" / name)
        per_peer.update(found)
        our_classes = {f.split(":", 1)[0] for f in ours.get(str(row["id"]), {}).get("flags", [])}
        for finding in found:
            evidence = {k: (v.get("verdict"), v["correctness_score"]) for k, v in {**mine, **nemo}.items()
                        if "verdict" in v and (k.startswith(("reference", "full", "determinism", "empty", "stub"))
                                               or v["correctness_score"] > 0)}
            matched = sorted(our_classes & set(ANSWERED_BY[finding]))
            (answered if matched else missed).append({"id": row["id"], "peer": finding, "ours": sorted(our_classes),
                                                      "evidence": evidence})
        if our_classes and not found:
            ours_only += 1
        if found:
            peer_rows.add(row["id"])
    flagged_ours = sum(bool(a["flags"]) for a in ours.values())
    rows_deepgym = sum(any(f.startswith("deepgym") for f in _findings_of(results, i, r)) for i, r, _ in plan)
    return {"dataset": name, "rows": len(rows), "peer_verifications": len(results), "peer_seconds": round(seconds, 1),
            "findings": dict(per_peer), "rows_flagged_by_ours": flagged_ours,
            "rows_found_by_deepgym": rows_deepgym, "rows_found_by_peers": len(peer_rows),
            "rows_only_ours": ours_only,
            "peer_findings_ours_missed": missed, "peer_findings": answered + missed}


def _findings_of(results: dict[str, dict[str, Any]], index: int, row: dict[str, Any]) -> list[str]:
    mine = {k.split(SEP, 2)[2]: v for k, v in results.items() if k.startswith(f"{index}{SEP}d{SEP}")}
    return deepgym_findings(mine)


def nemo_malformed_check(server: str | None) -> dict[str, Any]:
    """NeMo's malformed case at the verifier level: a request the verifier must refuse, not score."""
    from verifier_service.errors import VerifierError
    from verifier_service.tools.sync import verify

    out = {}
    for label, spec in (("python_assert without tests", {"kind": "python_assert"}),
                        ("math without gold", {"kind": "math"}),
                        ("an unknown kind", {"kind": "nope"})):
        try:
            verify([{"id": "m", "completion": "x", "spec": spec}], server=server)
            out[label] = "scored (a NeMo fixture failure)"
        except VerifierError as exc:
            out[label] = f"refused: {type(exc).__name__}: {str(exc)[:120]}"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers-venv", type=Path, required=True)
    parser.add_argument("--dataset", action="append", required=True, metavar="NAME=CONVERTED.jsonl")
    parser.add_argument("--ours", action="append", required=True, metavar="NAME=AUDIT_DIR")
    parser.add_argument("--server", help="HOST:PORT (default: an embedded service)")
    parser.add_argument("--output", type=Path, required=True, help="JSON results")
    args = parser.parse_args(argv)
    add_peers(args.peers_venv)
    datasets = dict(item.split("=", 1) for item in args.dataset)
    ours = dict(item.split("=", 1) for item in args.ours)
    settings = AuditSettings()
    out = {"malformed": nemo_malformed_check(args.server), "datasets": []}
    with tempfile.TemporaryDirectory(prefix="audit-peers-") as work:
        for name, path in datasets.items():
            rows = [{**r, "id": str(r.get("id", i))} for i, r in enumerate(load_dataset(Path(path)))]
            result = compare(name, rows, Path(ours[name]), args.server, Path(work), settings)
            print(json.dumps({k: v for k, v in result.items() if k != "peer_findings_ours_missed"}),
                  f"missed: {len(result['peer_findings_ours_missed'])}", file=sys.stderr)
            out["datasets"].append(result)
    args.output.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
