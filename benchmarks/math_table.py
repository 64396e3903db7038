"""Math scoring per answer style (right / wrong / hedge / unfinished): this service's ``math`` kind against
math-verify used as its README shows, and against a procedural generator's own scorer (reasoning-gym).

    python -m benchmarks.math_table [--data /work/data] [--math N] [--gsm8k N] [--generated N]

Real rows: MATH test and GSM8K test as ``scripts/datasets/fetch.py`` leaves them under ``--data``. For each row
the completions are built from the row itself (its reference solution, its gold) and a *wrong* value: another
row's gold that math-verify itself judges different, and *near misses* of the gold (issue 31, class 1: the
first number of an expression, its digits in another base, a decimal changed at the 11th significant digit;
each kept only where math-verify, or for generated rows the generator's own scorer, judges it wrong).
Generated rows: reasoning-gym tasks whose answers are numbers or expressions, each scored by that dataset's own
``score_answer`` on the ``<answer>`` it extracts.
math-verify and reasoning-gym are installed at benchmark time only (``pip install math-verify reasoning-gym``;
math-verify is the kind's own dependency, reasoning-gym is never one of the package's).

Writes benchmarks/math_table.json and benchmarks/MATH_TABLE.md. A *pass* is counted for right answers
(higher is better) and for the others (each one a false positive: lower is better, 0 the goal).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from verifier_service.kinds import get_kind
from verifier_service.spec import spec_from_json
from verifier_service.verdict import Verdict

HERE = Path(__file__).resolve().parent
STYLES = ("right", "wrong", "hedge", "unfinished")
RG_TASKS = ("basic_arithmetic", "decimal_arithmetic", "fraction_simplification", "gcd", "lcm",
            "simple_equations", "power_function", "products",
            # answers in Python/sympy syntax (``10*x**7 + 4*x**3/5 + C``): issue 31's golds that parsed to one number
            # (not intermediate_integration: its own scorer simplifies trigonometric integrals for minutes a row)
            "simple_integration", "polynomial_multiplication")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_BASE = re.compile(r"^\s*(\w+)_\{?(\d+)\}?\s*$")
_DECIMAL = re.compile(r"^\s*-?\d+(?:\.\d+)?\s*$")


def _mv() -> Any:
    import math_verify

    return math_verify


def mv_pass(gold: str, completion: str) -> bool:
    """math-verify as its README uses it: parse the gold, parse the whole completion, verify."""
    mv = _mv()
    try:
        parsed_gold = mv.parse(f"${gold}$", parsing_timeout=None) or mv.parse(gold, parsing_timeout=None)
        return bool(mv.verify(parsed_gold, mv.parse(completion, parsing_timeout=None), timeout_seconds=None))
    except Exception:  # noqa: BLE001 - a crash is a fail for that scorer
        return False


def _kind_pass(gold: str, completion: str, **fields: Any) -> bool | None:
    kind = get_kind("math")
    try:
        spec = kind.validate(spec_from_json({"kind": "math", "gold": gold, **fields}))
    except Exception:  # noqa: BLE001 - a refused gold: the row is reported, not scored
        return None
    return kind.verdict(completion, spec).verdict is Verdict.PASSED


def ours(gold: str, completion: str) -> bool | None:
    return _kind_pass(gold, completion)


def ours_fallback(gold: str, completion: str) -> bool | None:
    return _kind_pass(gold, completion, answer_fallback="last_value")


def _last_box_start(text: str) -> int:
    starts = [m.start() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    return starts[-1] if starts else -1


def _replace_last_box(text: str, value: str) -> str:
    from trainer.convert import last_boxed

    start = _last_box_start(text)
    inner = last_boxed(text)
    if start < 0 or inner is None:
        return text + f" \\boxed{{{value}}}"
    open_at = text.index("{", start) + 1
    return text[:open_at] + value + text[open_at + len(inner):]


def near_misses(gold: str) -> dict[str, str]:
    """Wrong answers one slip away from the gold (issue 31, class 1): its first number alone (a gold whose
    parse fell back to one number passed it), the same digits in another base (``52_9`` for ``52_8``), a
    decimal that differs only at its 11th significant digit. Only the ones that apply to this gold."""
    out = {}
    base = _BASE.match(gold)
    # an expression: two numbers, a variable or a command once units, degrees, percent and dollars are set aside
    # (the number alone is right for ``5\text{ cm}``, ``90^\circ``, ``60\%``, and for ``52_8`` in base 10)
    bare = re.sub(r"\\(?:text|mbox|mathrm)\{[^{}]*\}|\^\s*\\circ|°|\\%|%|\\\$|\$|\\[,;! ]|\{,\}", "", gold)
    expression = len(_NUMBER.findall(bare)) >= 2 or re.search(r"[a-zA-Z]", bare)  # a variable, or a command (``\pi``)
    first = _NUMBER.search(bare)
    if first and expression and not base and "=" not in gold:  # ``x = 5``: the value alone is right
        out["first number of an expression"] = first.group()
    if base:
        out["another base"] = f"{base.group(1)}_{{{int(base.group(2)) + 1}}}"
    if _DECIMAL.match(gold):
        digits = gold.strip().lstrip("-").replace(".", "").lstrip("0")
        value = gold.strip() if "." in gold else gold.strip() + "."
        out["11th significant digit changed"] = value + "0" * max(0, 10 - len(digits)) + "1"
    return out


def completions(reference: str, gold: str, wrong: str) -> dict[str, dict[str, str]]:
    """Completions of each style for one problem."""
    first = re.search(r"\\(?:boxed|fbox)\s*\{", reference)  # before any box: a solution may box twice
    before = reference[:first.start()] if first else reference
    return {
        "right": {"reference": reference, "boxed": f"So the answer is \\boxed{{{gold}}}.",
                  "answer_tag": f"<answer>{gold}</answer>"},
        "wrong": {"boxed": f"So the answer is \\boxed{{{wrong}}}.",
                  "reference, final box changed": _replace_last_box(reference, wrong),
                  "answer_tag": f"<answer>{wrong}</answer>"},
        "hedge": {"two boxes": f"\\boxed{{{wrong}}} or \\boxed{{{gold}}}",
                  "or in a box": f"\\boxed{{{wrong} \\text{{ or }} {gold}}}",
                  "prose": f"It is either {wrong} or {gold}.",
                  "prose, math": f"It is either ${wrong}$ or ${gold}$."},
        "unfinished": {"cut before the first box": before,
                       "empty final box": before + "\\boxed{}",
                       "cut inside the final box": before + "\\boxed{" + gold[: max(1, len(gold) // 2)]},
    }


def _math_rows(data: Path, n: int, rng: random.Random) -> list[dict[str, str]]:
    """A sample of MATH test rows as ``trainer data convert`` converts them (rows it flags, whose solution
    boxes several different values, are left out as it leaves them out)."""
    from trainer import convert

    path = data / "math" / "test.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng.shuffle(rows)
    converted = convert.math(rows[:n])
    return [{"id": r["id"], "gold": json.loads(r["verification"])["gold"], "reference": r["reference"]}
            for r in converted.rows]


def _gsm8k_rows(data: Path, n: int, rng: random.Random) -> list[dict[str, str]]:
    path = data / "gsm8k" / "test.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng.shuffle(rows)
    out = []
    for index, row in enumerate(rows[:n]):
        work, _, final = row["answer"].rpartition("####")
        gold = final.strip().replace(",", "")
        work = re.sub(r"<<[^>]*>>", "", work).strip()
        out.append({"id": f"gsm8k-{index}", "gold": gold, "reference": f"{work}\nThe answer is \\boxed{{{gold}}}."})
    return out


def _mv_same(gold: str, other: str) -> bool:
    mv = _mv()
    parsed = mv.parse(f"${gold}$", parsing_timeout=None)
    return bool(parsed) and bool(mv.verify(parsed, mv.parse(f"${other}$", parsing_timeout=None),
                                           timeout_seconds=None))


def _wrong_for(gold: str, pool: list[str], rng: random.Random) -> str | None:
    mv = _mv()
    parsed = mv.parse(f"${gold}$", parsing_timeout=None)
    for _ in range(20):
        other = rng.choice(pool)
        if other.strip() == gold.strip():
            continue
        if parsed and mv.verify(parsed, mv.parse(f"${other}$", parsing_timeout=None), timeout_seconds=None):
            continue
        return other
    return None


def score_rows(rows: list[dict[str, str]], scorers: dict[str, Callable[[str, str], bool | None]],
               rng: random.Random, label: str) -> dict[str, Any]:
    counts: dict[str, dict[str, dict[str, list[int]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(
        lambda: [0, 0])))
    refused: list[str] = []
    examples: dict[str, list[str]] = defaultdict(list)
    golds = [r["gold"] for r in rows]
    for i, row in enumerate(rows):
        if i % 50 == 0:
            print(f"{label}: {i}/{len(rows)}", file=sys.stderr, flush=True)
        wrong = _wrong_for(row["gold"], golds, rng)
        if wrong is None:
            continue
        styles = completions(row["reference"], row["gold"], wrong)
        for variant, value in near_misses(row["gold"]).items():
            if not _mv_same(row["gold"], value):  # math-verify judges it a different value
                styles["wrong"][f"near miss: {variant}"] = f"So the answer is \\boxed{{{value}}}."
        for style, variants in styles.items():
            for variant, text in variants.items():
                for name, scorer in scorers.items():
                    verdict = scorer(row["gold"], text)
                    if verdict is None:
                        if name == "ours" and style == "right" and variant == "reference":
                            refused.append(row["id"])
                        continue
                    cell = counts[style][name][variant]
                    cell[0] += int(verdict)
                    cell[1] += 1
                    bad = (style == "right") != verdict
                    if bad and name == "ours" and len(examples[f"{style}/{variant}"]) < 5:
                        examples[f"{style}/{variant}"].append(f"{row['id']}: gold {row['gold']!r}, "
                                                              f"completion {text[-160:]!r}")
    return {"rows": len(rows), "refused_golds": refused,
            "counts": {s: {n: dict(v) for n, v in by.items()} for s, by in counts.items()},
            "ours_mistakes": dict(examples)}


def generated(n_per_task: int, seed: int) -> dict[str, Any]:
    """reasoning-gym tasks: each completion scored by ours and by the dataset's own scorer."""
    import reasoning_gym
    from reasoning_gym.utils import extract_answer

    counts: dict[str, dict[str, dict[str, list[int]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(
        lambda: [0, 0])))
    refused: dict[str, int] = defaultdict(int)
    examples: dict[str, list[str]] = defaultdict(list)
    for task in RG_TASKS:
        try:
            data = reasoning_gym.create_dataset(task, size=n_per_task, seed=seed)
        except Exception as exc:  # noqa: BLE001 - a task this reasoning-gym version lacks
            print(f"reasoning-gym {task}: {exc}", file=sys.stderr)
            continue
        entries = list(data)
        print(f"reasoning-gym {task}: {len(entries)} rows", file=sys.stderr, flush=True)
        answers = [str(e["answer"]) for e in entries]
        rng = random.Random(seed)
        for entry in entries:
            gold = str(entry["answer"])
            wrong = next((a for a in rng.sample(answers, len(answers))
                          if data.score_answer(answer=a, entry=entry) < 1.0), None)
            if wrong is None:
                continue
            texts = {
                "right": {"answer_tag": f"<answer>{gold}</answer>", "boxed": f"\\boxed{{{gold}}}"},
                "wrong": {"answer_tag": f"<answer>{wrong}</answer>"} | {
                    f"near miss: {variant}": f"<answer>{value}</answer>" for variant, value in near_misses(gold).items()
                    if data.score_answer(answer=value, entry=entry) < 1.0},  # the generator's scorer: wrong
                "hedge": {"two tags": f"<answer>{wrong}</answer> <answer>{gold}</answer>",
                          "or in a tag": f"<answer>{wrong} or {gold}</answer>"},
                "unfinished": {"empty tag": "Let me compute. <answer></answer>",
                               "no tag": f"Working: {wrong}, then {gold}"},
            }
            for style, variants in texts.items():
                for variant, text in variants.items():
                    extracted = extract_answer(text)
                    scores = {"reasoning-gym": data.score_answer(answer=extracted, entry=entry) >= 1.0,
                              "math-verify": mv_pass(gold, text)}
                    mine = ours(gold, text)
                    if mine is None:
                        refused[task] += 1
                    else:
                        scores["ours"] = mine
                    for name, verdict in scores.items():
                        cell = counts[style][name][f"{task}: {variant}"]
                        cell[0] += int(verdict)
                        cell[1] += 1
                        if name == "ours" and (style == "right") != verdict and len(examples[task]) < 5:
                            examples[task].append(f"{style}/{variant}: gold {gold!r}, completion {text!r}")
    return {"counts": {s: {n: dict(v) for n, v in by.items()} for s, by in counts.items()},
            "refused_golds_per_task": dict(refused), "ours_mistakes": dict(examples)}


def _total(cells: dict[str, list[int]]) -> tuple[int, int]:
    return sum(c[0] for c in cells.values()), sum(c[1] for c in cells.values())


def report(results: dict[str, Any]) -> str:
    lines = ["# Math scoring per answer style", "",
             "Generated by `python -m benchmarks.math_table` (" + results["args"] + "); "
             f"math-verify {results['versions']['math-verify']}, reasoning-gym "
             f"{results['versions'].get('reasoning-gym', 'not installed')}.", "",
             "Cells: completions that PASSED / completions scored. *right* should pass; every pass of *wrong*, "
             "*hedge* and *unfinished* is a false positive. `ours` is the `math` kind with its defaults "
             "(a marked answer required); `ours, last_value` opts into the unmarked fallback; `math-verify` "
             "is math-verify's parse + verify of the whole completion. Right answers that a scorer misses are "
             "its reading: math-verify's default extraction does not read `<answer>` tags, reasoning-gym's "
             "`extract_answer` reads only them (so its `boxed` variants fail). *unfinished*: the reference cut "
             "before its first box, the final box empty, or cut inside it. *wrong, near miss*: a value one slip "
             "from the gold (its first number alone, as a gold that parsed to one number took; its digits in "
             "another base; the 11th significant digit changed), kept where math-verify (for generated rows: the "
             "generator's scorer) judges it wrong.", ""]
    for source in ("MATH", "GSM8K"):
        block = results.get(source)
        if not block:
            continue
        lines += [f"## {source} test ({block['rows']} rows sampled)", "",
                  "| style | variant | ours | ours, last_value | math-verify |", "|---|---|---|---|---|"]
        for style in STYLES:
            by = block["counts"].get(style, {})
            for variant in by.get("ours", {}):
                cells = [by.get(n, {}).get(variant, [0, 0]) for n in ("ours", "ours_fallback", "math-verify")]
                lines.append(f"| {style} | {variant} | " + " | ".join(f"{p}/{t}" for p, t in cells) + " |")
            totals = [_total(by.get(n, {})) for n in ("ours", "ours_fallback", "math-verify")]
            lines.append(f"| **{style}** | all | " + " | ".join(f"**{p}/{t}**" for p, t in totals) + " |")
        lines += ["", f"Golds the kind refused at validation: {len(block['refused_golds'])} "
                  f"{block['refused_golds'][:10]}", ""]
        if block["ours_mistakes"]:
            lines += ["Where `ours` differs from the style's expectation (first few):", ""]
            for key, items in block["ours_mistakes"].items():
                lines += [f"- {key}:"] + [f"  - `{item}`" for item in items]
            lines.append("")
    gen = results.get("generated")
    if gen:
        lines += ["## reasoning-gym tasks (each scored by its dataset's own `score_answer`)", "",
                  "| style | ours | reasoning-gym | math-verify |", "|---|---|---|---|"]
        for style in STYLES:
            by = gen["counts"].get(style, {})
            totals = [_total(by.get(n, {})) for n in ("ours", "reasoning-gym", "math-verify")]
            lines.append(f"| {style} | " + " | ".join(f"{p}/{t}" for p, t in totals) + " |")
        lines += ["", "Per task and variant (ours / reasoning-gym / math-verify):", "",
                  "| style | task: variant | ours | reasoning-gym | math-verify |", "|---|---|---|---|---|"]
        for style in STYLES:
            by = gen["counts"].get(style, {})
            for variant in by.get("reasoning-gym", {}):
                cells = [by.get(n, {}).get(variant, [0, 0]) for n in ("ours", "reasoning-gym", "math-verify")]
                lines.append(f"| {style} | {variant} | " + " | ".join(f"{p}/{t}" for p, t in cells) + " |")
        lines += ["", f"Golds the kind refused: {gen['refused_golds_per_task']}", ""]
        if gen["ours_mistakes"]:
            lines += ["Where `ours` differs from the style's expectation (first few):", ""]
            for key, items in gen["ours_mistakes"].items():
                lines += [f"- {key}:"] + [f"  - `{item}`" for item in items]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("RLVR_DATA_DIR", "/work/data")))
    parser.add_argument("--math", type=int, default=400, help="MATH test rows sampled")
    parser.add_argument("--gsm8k", type=int, default=200, help="GSM8K test rows sampled")
    parser.add_argument("--generated", type=int, default=30, help="rows per reasoning-gym task (0: skip)")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    import importlib.metadata as md

    versions = {"math-verify": md.version("math-verify")}
    try:
        versions["reasoning-gym"] = md.version("reasoning-gym")
    except md.PackageNotFoundError:
        pass
    get_kind("math").warm_up()
    scorers = {"ours": ours, "ours_fallback": ours_fallback, "math-verify": mv_pass}
    started = time.time()
    results: dict[str, Any] = {"args": f"--math {args.math} --gsm8k {args.gsm8k} --generated {args.generated} "
                                       f"--seed {args.seed}", "versions": versions}
    if args.math:
        rng = random.Random(args.seed)
        results["MATH"] = score_rows(_math_rows(args.data, args.math, rng), scorers, rng, "MATH")
    if args.gsm8k:
        rng = random.Random(args.seed)
        results["GSM8K"] = score_rows(_gsm8k_rows(args.data, args.gsm8k, rng), scorers, rng, "GSM8K")
    if args.generated and "reasoning-gym" in versions:
        results["generated"] = generated(args.generated, args.seed)
    results["seconds"] = round(time.time() - started, 1)
    (args.out / "math_table.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (args.out / "MATH_TABLE.md").write_text(report(results), encoding="utf-8")
    print(f"wrote {args.out / 'MATH_TABLE.md'} in {results['seconds']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
