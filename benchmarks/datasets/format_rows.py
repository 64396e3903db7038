"""The format reward on real rows (issue 31, class 3): ``format_score`` is 1 only when the structure the spec
asks for is there, and a malformed answer never gets the reward of a well-formed wrong one.

    python -m benchmarks.datasets.format_rows [--data /work/data] [--math 300] [--gsm8k 300] [--humaneval 164]
        [--mbpp 200] [--seed 31] [--backend docker|bwrap] [--out FILE]

Rows: GSM8K, MATH, HumanEval and MBPP as ``scripts/datasets/fetch.py`` leaves them under ``--data`` (the
converted specs, as ``trainer data convert`` writes them; GSM8K's own ``#### x`` answer from ``test.jsonl``); a
seeded sample of each (``--N 0``: all). Every completion goes through the service (``InProcessService``: the
served gRPC app, its sandbox on ``--backend``) in one ``VerifyBatch`` per dataset. Styles, each built from the
row itself (its reference, its gold, its prompt), and what each must get:

math (GSM8K, MATH):
- ``marked``: the reference, its answer boxed as the converter writes it: PASSED, format 1;
- ``answer_tag``: the reference's prose, then ``<answer>gold</answer>``: PASSED, format 1;
- ``hashes`` (GSM8K only): the dataset's own solution, ending ``#### x`` (the GSM8K spec names that marker):
  PASSED, format 1;
- ``unmarked``: the reference with every ``\\boxed{x}`` written as ``x``: MALFORMED, format 0;
- ``no_answer``: the reference's prose before the sentence of its first box (reasoning, no final answer):
  MALFORMED, format 0;
- ``marked_wrong``: that prose, then another row's gold boxed (one that differs from this row's gold with its
  spaces, an ``x =`` in front and ``\\dfrac`` for ``\\frac`` set aside): FAILED, format 1.

code (HumanEval, MBPP; ``python_assert`` with ``extract: last_fenced_code``):
- ``fenced``: the reference in its fenced block: PASSED, format 1;
- ``unfenced``: the same code with no fence: MALFORMED, format 0;
- ``fenced_wrong``: the reference, then the function under test redefined to return None, fenced: FAILED (or
  PARTIAL: a test may expect None; or RUNTIME_ERROR: a test may compute with the None), format 1;
- ``fenced_prose``: the task's prose (the prompt's text) in a fenced block: COMPILE_ERROR (MALFORMED where the
  prose is all ``#`` comments: no code), format 0;
- ``prose``: the task's prose, no fence: MALFORMED, format 0.

Per row, the rewards of the format-0 styles must be below the reward of the row's well-formed wrong style.
Prints each row and style that breaks its property, then the table (style, completions, verdicts, format
score, reward, as expected).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

from verifier_service.config import load_config
from verifier_service.spec import request_from_json, result_to_json
from verifier_service.testing import InProcessService

FENCE = re.compile(r"```(?:python)?\n(.*?)```", re.DOTALL)
ENTRY = re.compile(r"The function is called `([A-Za-z_][A-Za-z0-9_]*)`")
BOX = "\\boxed{"

# style -> (verdicts it may get, the format score it must get); the wrong style each row's format-0 styles
# are compared with
EXPECTED = {
    "marked": ({"PASSED"}, 1.0), "answer_tag": ({"PASSED"}, 1.0), "hashes": ({"PASSED"}, 1.0),
    "unmarked": ({"MALFORMED"}, 0.0), "no_answer": ({"MALFORMED"}, 0.0), "marked_wrong": ({"FAILED"}, 1.0),
    "fenced": ({"PASSED"}, 1.0), "unfenced": ({"MALFORMED"}, 0.0),
    "fenced_wrong": ({"FAILED", "PARTIAL", "RUNTIME_ERROR"}, 1.0),
    "fenced_prose": ({"COMPILE_ERROR", "MALFORMED"}, 0.0), "prose": ({"MALFORMED"}, 0.0),
}
WRONG = {"math": "marked_wrong", "code": "fenced_wrong"}


def boxes(text: str) -> list[tuple[int, int, str]]:
    """Each ``\\boxed{...}`` of ``text``: its start, its end (after the closing brace) and its content."""
    out, start = [], text.find(BOX)
    while start >= 0:
        depth, k = 1, start + len(BOX)
        while k < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
        if depth:
            break
        out.append((start, k, text[start + len(BOX):k - 1]))
        start = text.find(BOX, k)
    return out


def unboxed(text: str) -> str:
    for start, end, content in reversed(boxes(text)):
        text = text[:start] + content + text[end:]
    return text


def prose_before_answer(text: str) -> str:
    """The reference up to the end of the last sentence (or line) before its first box."""
    found = boxes(text)
    head = text[:found[0][0]] if found else text
    cut = max(head.rfind(". "), head.rfind(".\n"), head.rfind("\n"))
    return head[:cut + 1].rstrip() if cut >= 0 else ""


def _bare(gold: str) -> str:
    """A gold as compared when choosing another row's as a wrong answer: no spaces, no ``x =`` in front, one
    fraction command (``x = \\frac{3}{2}`` and ``\\dfrac{3}{2}`` are the same answer, not a wrong one)."""
    text = re.sub(r"\\[dt]frac", r"\\frac", re.sub(r"\s+", "", gold))
    return re.sub(r"^[A-Za-z]=", "", text)


def math_completions(rows: list[dict], originals: dict[str, str]) -> list[tuple[dict, str, str]]:
    golds = [json.loads(r["verification"])["gold"] for r in rows]
    out = []
    for n, row in enumerate(rows):
        spec = json.loads(row["verification"])
        gold, reference = spec["gold"], row["reference"]
        prose = prose_before_answer(reference)
        wrong = next(g for g in golds[n + 1:] + golds[:n] if _bare(g) != _bare(gold))
        styles = {"marked": reference, "answer_tag": f"{prose}\n<answer>{gold}</answer>",
                  "unmarked": unboxed(reference), "no_answer": prose,
                  "marked_wrong": f"{prose}\nThe answer is $\\boxed{{{wrong}}}$."}
        if row["id"] in originals:
            styles["hashes"] = originals[row["id"]]
        out += [(row, style, text) for style, text in styles.items()]
    return out


def task_prose(row: dict) -> str:
    """The task in words: MBPP's sentence, HumanEval's docstring (no code, no fence)."""
    prompt = row["prompt"]
    found = FENCE.search(prompt)
    if found:  # HumanEval: the docstring of the prompt's code
        code = found.group(1)
        doc = re.search(r'("""|\'\'\')(.*?)\1', code, re.DOTALL)
        return " ".join((doc.group(2) if doc else "Return the answer.").split(">>>")[0].split())
    return prompt.split(" The function is called")[0].split(" Your code should")[0]


def code_completions(rows: list[dict]) -> list[tuple[dict, str, str]]:
    out = []
    for row in rows:
        spec = json.loads(row["verification"])
        code = FENCE.search(row["reference"]).group(1).replace("\r\n", "\n")
        entry = spec.get("entry_point") or ENTRY.search(row["prompt"]).group(1)
        prose = task_prose(row)
        wrong = f"{code.rstrip()}\n\n\ndef {entry}(*args, **kwargs):\n    return None\n"
        styles = {"fenced": row["reference"], "unfenced": code, "fenced_wrong": f"```python\n{wrong}```",
                  "fenced_prose": f"```python\n{prose}\n```", "prose": prose}
        out += [(row, style, text) for style, text in styles.items()]
    return out


def load(data: Path, name: str, file: str, rows: int, seed: int) -> list[dict]:
    with (data / name / file).open(encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    random.Random(seed).shuffle(lines)
    return lines[:rows] if rows else lines


def gsm8k_originals(data: Path) -> dict[str, str]:
    """GSM8K's own solutions (``#### x`` last), by the converter's row id (``gsm8k-<line>`` of test.jsonl)."""
    with (data / "gsm8k" / "test.jsonl").open(encoding="utf-8") as f:
        return {f"gsm8k-{n}": json.loads(line)["answer"] for n, line in enumerate(f) if line.strip()}


def verify_all(service: InProcessService, items: list[tuple[dict, str, str]]) -> list[dict]:
    import grpc

    from verifier_service._generated import verifier_pb2 as pb
    from verifier_service._generated import verifier_pb2_grpc as pb_grpc

    requests = [request_from_json({"id": f"{row['id']}/{style}", "completion": text,
                                   "spec": json.loads(row["verification"])}) for row, style, text in items]
    results = []
    with grpc.insecure_channel(service.address) as channel:
        stub = pb_grpc.VerifierStub(channel)
        for k in range(0, len(requests), 100):  # batches of 100: progress, and no message near its limit
            response = stub.VerifyBatch(pb.VerifyBatchRequest(requests=requests[k:k + 100]), timeout=3600)
            results += [result_to_json(r) for r in response.results]
            print(f"  {len(results)}/{len(requests)}", file=sys.stderr, flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data"))
    for name, default in (("math", 300), ("gsm8k", 300), ("humaneval", 164), ("mbpp", 200)):
        parser.add_argument(f"--{name}", type=int, default=default, help=f"rows of {name} (0: all)")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--backend", default="docker", choices=("docker", "bwrap"))
    parser.add_argument("--out", type=Path, help="every completion's verdict, format score and reward (JSON lines)")
    args = parser.parse_args()

    datasets = {
        "gsm8k": ("math", math_completions(load(args.data, "gsm8k", "converted.jsonl", args.gsm8k, args.seed),
                                           gsm8k_originals(args.data))),
        "math": ("math", math_completions(load(args.data, "math", "converted.jsonl", args.math, args.seed), {})),
        "humaneval": ("code", code_completions(load(args.data, "humaneval", "converted.jsonl", args.humaneval,
                                                    args.seed))),
        "mbpp": ("code", code_completions(load(args.data, "mbpp", "converted.jsonl", args.mbpp, args.seed))),
    }
    # The environment's settings (RLVR_VERIFIER_SANDBOX_IMAGE) count; a loaded machine gets room on its limits.
    config = replace(load_config(), port=0, sandbox_backend=args.backend, max_concurrency=2)
    table: dict[tuple[str, str], list[dict]] = defaultdict(list)
    lines, broken = [], 0
    started = time.perf_counter()
    with InProcessService(config) as service:
        for name, (family, items) in datasets.items():
            print(f"{name}: {len(items)} completions", file=sys.stderr, flush=True)
            results = verify_all(service, items)
            by_row: dict[str, dict[str, dict]] = defaultdict(dict)
            for (row, style, _), result in zip(items, results, strict=True):
                by_row[row["id"]][style] = result
            for (row, style, _text), result in zip(items, results, strict=True):
                verdicts, fmt = EXPECTED[style]
                problems = []
                if result["verdict"] not in verdicts:
                    problems.append(f"verdict {result['verdict']}")
                if result["format_score"] != fmt:
                    problems.append(f"format {result['format_score']}")
                wrong = by_row[row["id"]][WRONG[family]]
                if fmt == 0.0 and not (result.get("reward", 0.0) < wrong.get("reward", 0.0)):
                    problems.append(f"reward {result.get('reward')} not below the wrong answer's "
                                    f"{wrong.get('reward')}")
                if problems:
                    broken += 1
                    detail = " | ".join(result["detail"].splitlines()[:2])[:200]
                    print(f"{name}\t{row['id']}\t{style}\t{'; '.join(problems)}\t{detail}", flush=True)
                table[(name, style)].append({**result, "as_expected": not problems})
                lines.append({"dataset": name, "id": row["id"], "style": style, "verdict": result["verdict"],
                              "format_score": result["format_score"], "reward": result.get("reward"),
                              "as_expected": not problems, "detail": result["detail"][:300]})
    if args.out:
        args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"\n{time.perf_counter() - started:.0f} s\n")
    print("| dataset | style | completions | verdicts | format score | reward | as expected |")
    print("|---|---|---|---|---|---|---|")
    for (name, style), results in table.items():
        verdicts = ", ".join(f"{v} {c}" for v, c in Counter(r["verdict"] for r in results).most_common())
        formats = ", ".join(f"{f:g}: {c}" for f, c in sorted(Counter(r["format_score"] for r in results).items()))
        rewards = ", ".join(f"{w}: {c}" for w, c in sorted(Counter(r.get("reward") for r in results).items(),
                                                            key=lambda x: (x[0] is None, x[0] or 0)))
        good = sum(r["as_expected"] for r in results)
        print(f"| {name} | `{style}` | {len(results)} | {verdicts} | {formats} | {rewards} | {good} |")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
