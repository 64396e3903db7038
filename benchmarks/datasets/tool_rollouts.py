"""The tool-integrated reward (``trainer.environment.PythonSandboxEnv``) on real rows: honest rollouts built from
each row's reference solution must get the reward the reference gets alone (``one_cell``, itself expected to be
1.0), and a rollout that breaks the function in a later cell must not.

    python -m benchmarks.datasets.tool_rollouts [--data /work/data] [--rows 40] [--seed 0] [--out FILE]

Rows: MBPP and HumanEval as ``trainer data convert`` writes them (``scripts/datasets/fetch.py``; the data stays
out of the repo), a seeded sample of each. Each rollout is a list of cells sent through ``run_python`` to a live
session of a served verifier service (``verify-service serve``, its own process, Docker sandboxes), then
``get_reward`` as TRL calls it. Honest styles (the ``one_cell`` reward expected):

- ``one_cell``: the reference as one cell;
- ``per_statement``: each top-level statement of the reference a cell of its own, then an exploring ``print``;
- ``raises_after``: the reference, then in the same cell an error (a model exploring: the definitions stay);
- ``stopped_after``: the reference, then in the same cell a loop past the cell's time limit;
- ``future_later``: a first cell, then ``from __future__ import annotations`` + the reference as a later cell;
- ``broken_cell``: a cell with a syntax error between the reference's statements.

Control (a reward below 1.0 expected): ``rebound``: the reference, then a later cell that rebinds the function
to one that returns None (what the session holds is what is verified, not what once passed).

Prints each row and style that does not get what it should, and the table (style, rollouts, as expected).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

FENCE = re.compile(r"```(?:python)?\n(.*?)```", re.DOTALL)


def reference_code(row: dict) -> str:
    found = FENCE.search(row["reference"])
    return (found.group(1) if found else row["reference"]).replace("\r\n", "\n")


def entry_point(row: dict, spec: dict) -> str | None:
    if spec.get("entry_point"):
        return spec["entry_point"]
    named = re.search(r"The function is called `([A-Za-z_][A-Za-z0-9_]*)`", row["prompt"])
    return named.group(1) if named else None


def rollouts(row: dict) -> dict[str, list[str]]:
    code = reference_code(row)
    spec = json.loads(row["verification"])
    statements = [ast.get_source_segment(code, node) or "" for node in ast.parse(code).body]
    name = entry_point(row, spec)
    styles = {
        "one_cell": [code],
        "per_statement": [*statements, "print('checking')"],
        "raises_after": [code + "\n\nraise ValueError('exploring')\n"],
        "stopped_after": [code + "\n\nwhile True:\n    pass\n"],
        "future_later": ["x = 1", "from __future__ import annotations\n" + code],
        "broken_cell": [statements[0], "def oops(:\n    pass", *statements[1:]],
    }
    if name:
        styles["rebound"] = [code, f"def {name}(*args, **kwargs):\n    return None\n"]
    return styles


def load(data: Path, name: str, rows: int, seed: int) -> list[dict]:
    path = data / name / "converted.jsonl"
    with path.open(encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    random.Random(seed).shuffle(lines)
    return [{**r, "source": name} for r in lines[:rows]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data"))
    parser.add_argument("--rows", type=int, default=40, help="rows of each dataset (a seeded sample)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="docker")
    parser.add_argument("--out", type=Path, default=None, help="JSON of every rollout's reward")
    args = parser.parse_args()

    import verifier_service.messages as pb
    from trainer.environment import PythonSandboxEnv
    from verifier_service.testing import ServedProcess

    rows = [*load(args.data, "mbpp", args.rows, args.seed), *load(args.data, "humaneval", args.rows, args.seed)]
    limits = pb.SessionLimits(cell_timeout_s=3)
    outcomes: list[dict] = []
    table: Counter[tuple[str, str]] = Counter()
    started = time.monotonic()
    with ServedProcess("--sandbox-backend", args.backend, "--session-spares", "4").start(timeout=600) as served:
        env = PythonSandboxEnv(served.address, limits=limits, reward_timeout_s=120)
        for n, row in enumerate(rows, 1):
            baseline = None
            for style, cells in rollouts(row).items():  # one_cell first: the reference's own reward
                env.reset(**row)
                for cell in cells:
                    env.run_python(cell)
                reward = env.get_reward()
                if style == "one_cell":
                    baseline = reward
                    good = reward == 1.0
                elif style == "rebound":
                    good = reward is not None and reward < 1.0
                else:
                    good = reward == baseline
                table[(style, "as expected" if good else "NOT as expected")] += 1
                outcomes.append({"source": row["source"], "id": row["id"], "style": style, "reward": reward,
                                 "as_expected": good})
                if not good:
                    print(f"{row['source']}/{row['id']} {style}: reward {reward}", flush=True)
            print(f"[{n}/{len(rows)}] {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
    styles = sorted({style for style, _ in table})
    print("\n| style | rollouts | as expected |\n|---|---|---|")
    for style in styles:
        good, bad = table[(style, "as expected")], table[(style, "NOT as expected")]
        print(f"| {style} | {good + bad} | {good} |")
    if args.out is not None:
        args.out.write_text(json.dumps(outcomes, indent=1))
    return 0 if all(o["as_expected"] for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
