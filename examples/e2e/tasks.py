"""Python function-writing tasks with hidden tests, of graded difficulty, deterministic by seed.

    python -m examples.e2e.tasks --out /tmp/e2e/data            # train.jsonl + heldout.jsonl

Each task asks a chat model for one function in one fenced ``python`` code block. Its hidden tests are
``python_io`` cases (arguments and expected return values) computed here by a reference implementation:
the expected values never enter the sandbox, and the model sees only the task text and one worked example
call. Three levels: 1 (one expression), 2 (a loop or a condition), 3 (a small algorithm).

The held-out split uses other constants than the train split (no task text appears in both), so held-out
pass@1 measures the families learnt, not memorised tasks. Each row: ``prompt`` (chat messages),
``verification`` (the spec as JSON text, the trainer's ``spec_column``), ``task`` (family, level, name).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SYSTEM = "You are a careful Python programmer."
FORMAT_RULE = ("Reply with exactly one fenced code block that starts with ```python and contains only the function "
               "definition. Do not add explanations or example calls.")
CASES_PER_TASK = 6
# The sandbox's time limit for all cases of one completion. A completion that loops forever holds its whole GRPO
# batch (the trainer waits for every reward) this long; these functions need milliseconds. 10 s made 4 of 15
# training steps of the first GPU run wait 10 s for one hung completion (docs/e2e-run.md).
TIMEOUT_S = 2


@dataclass(frozen=True)
class Task:
    family: str
    level: int
    name: str
    params: str               # the signature's parameters, e.g. "x" or "xs"
    description: str          # what the function returns, completing "that ..."
    reference: Callable[..., Any]
    inputs: list[list[Any]]   # positional arguments per case

    def cases(self) -> list[dict[str, Any]]:
        return [{"args": args, "expected": self.reference(*args)} for args in self.inputs]

    def prompt(self) -> list[dict[str, str]]:
        example = self.inputs[0]
        shown = ", ".join(repr(a) for a in example)
        text = (f"Write a Python function `{self.name}({self.params})` that {self.description}\n"
                f"For example, `{self.name}({shown})` returns `{self.reference(*example)!r}`.\n{FORMAT_RULE}")
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]

    def spec(self) -> dict[str, Any]:
        return {"kind": "python_io", "extract": "fenced_code", "entry_point": self.name, "scoring": "fraction",
                "timeout_s": TIMEOUT_S, "cases": self.cases()}

    def row(self) -> dict[str, Any]:
        return {"prompt": self.prompt(), "verification": json.dumps(self.spec()),
                "task": {"family": self.family, "level": self.level, "name": self.name}}


NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
                10: "ten", 11: "eleven", 12: "twelve", 13: "thirteen"}
WORDS = ["apple", "river", "stone", "cloud", "tiger", "lemon", "piano", "rocket", "garden", "silver", "orbit",
         "maple", "candle", "forest", "pepper", "window"]


def _ints(rng: random.Random, n: int, lo: int = -20, hi: int = 40) -> list[list[Any]]:
    return [[rng.randint(lo, hi)] for _ in range(n)]


def _lists(rng: random.Random, n: int, lo: int = -9, hi: int = 20, size: tuple[int, int] = (1, 7)) -> list[list[Any]]:
    return [[[rng.randint(lo, hi) for _ in range(rng.randint(*size))]] for _ in range(n)]


def _strings(rng: random.Random, n: int) -> list[list[Any]]:
    return [[" ".join(rng.sample(WORDS, rng.randint(1, 4)))] for _ in range(n)]


# ---- the families: (family, level, builder(rng, k) -> Task), k a per-task constant ----------------------------

def _add_k(rng, k):
    return Task("add_k", 1, f"add_{NUMBER_WORDS[k]}", "x", f"returns the integer `x` plus {k}.",
                lambda x: x + k, _ints(rng, CASES_PER_TASK))


def _times_k(rng, k):
    return Task("times_k", 1, f"times_{NUMBER_WORDS[k]}", "x", f"returns the integer `x` multiplied by {k}.",
                lambda x: x * k, _ints(rng, CASES_PER_TASK))


def _is_multiple(rng, k):
    return Task("is_multiple", 1, f"is_multiple_of_{NUMBER_WORDS[k]}", "x",
                f"returns True if the integer `x` is divisible by {k}, otherwise False.",
                lambda x: x % k == 0, [[k * rng.randint(-5, 9)] for _ in range(3)] + _ints(rng, 3))


def _list_plus_k(rng, k):
    return Task("list_plus_k", 1, f"add_{NUMBER_WORDS[k]}_to_each", "xs",
                f"returns a new list with {k} added to every integer of the list `xs`.",
                lambda xs: [x + k for x in xs], _lists(rng, CASES_PER_TASK))


def _count_above(rng, k):
    return Task("count_above", 2, f"count_above_{NUMBER_WORDS[k]}", "xs",
                f"returns how many integers in the list `xs` are strictly greater than {k}.",
                lambda xs: sum(1 for x in xs if x > k), _lists(rng, CASES_PER_TASK, size=(0, 8)))


def _sum_multiples(rng, k):
    return Task("sum_multiples", 2, f"sum_multiples_of_{NUMBER_WORDS[k]}", "n",
                f"returns the sum of all integers from 1 to `n` (inclusive) that are divisible by {k}.",
                lambda n: sum(i for i in range(1, n + 1) if i % k == 0),
                [[rng.randint(0, 60)] for _ in range(CASES_PER_TASK)])


def _clamp(rng, k):
    lo, hi = -k, k * 2
    return Task("clamp", 2, f"clamp_{NUMBER_WORDS[k]}", "x",
                f"returns `x` limited to the range from {lo} to {hi}: {lo} if `x` is smaller than {lo}, "
                f"{hi} if `x` is larger than {hi}, otherwise `x` itself.",
                lambda x: min(max(x, lo), hi), _ints(rng, CASES_PER_TASK, -3 * k, 4 * k))


def _longest_word(rng, k):
    return Task("word_lengths", 2, f"words_longer_than_{NUMBER_WORDS[k]}", "s",
                f"returns the list of the words of the string `s` (split on spaces) that have more than {k} "
                "letters, in their original order.",
                lambda s: [w for w in s.split(" ") if len(w) > k], _strings(rng, CASES_PER_TASK))


def _digit_sum_mod(rng, k):
    return Task("digit_sum_mod", 3, f"digit_sum_mod_{NUMBER_WORDS[k]}", "n",
                f"returns the sum of the decimal digits of the non-negative integer `n`, modulo {k}.",
                lambda n: sum(int(d) for d in str(n)) % k, [[rng.randint(0, 99999)] for _ in range(CASES_PER_TASK)])


def _running_max(rng, k):
    return Task("running_max", 3, f"running_max_plus_{NUMBER_WORDS[k]}", "xs",
                f"returns a list whose i-th element is the largest of the first i+1 integers of `xs`, plus {k}.",
                lambda xs: [max(xs[: i + 1]) + k for i in range(len(xs))], _lists(rng, CASES_PER_TASK, size=(1, 7)))


def _nth_power_sum(rng, k):
    p = 2 + k % 2
    return Task("power_sum", 3, f"sum_of_powers_{NUMBER_WORDS[k]}", "xs",
                f"returns the sum of the {'squares' if p == 2 else 'cubes'} of the integers in `xs` that are "
                f"greater than {k}.",
                lambda xs: sum(x**p for x in xs if x > k), _lists(rng, CASES_PER_TASK, size=(0, 7)))


def _alternate(rng, k):
    return Task("alternate_sum", 3, f"alternating_sum_times_{NUMBER_WORDS[k]}", "xs",
                f"returns {k} times the alternating sum of `xs`: the first element minus the second plus the third "
                "minus the fourth, and so on (0 for an empty list).",
                lambda xs: k * sum(x if i % 2 == 0 else -x for i, x in enumerate(xs)),
                _lists(rng, CASES_PER_TASK, size=(0, 7)))


FAMILIES: list[Callable[[random.Random, int], Task]] = [
    _add_k, _times_k, _is_multiple, _list_plus_k,
    _count_above, _sum_multiples, _clamp, _longest_word,
    _digit_sum_mod, _running_max, _nth_power_sum, _alternate,
]
CONSTANTS = sorted(NUMBER_WORDS)
HELDOUT_CONSTANTS = {5, 9, 12}  # the held-out split's constants; the train split never uses them


def generate(seed: int, count: int, *, heldout: bool, levels: tuple[int, ...] = (1, 2, 3)) -> list[Task]:
    """``count`` tasks cycling over the families of ``levels``; deterministic for (seed, count, split)."""
    rng = random.Random(f"{seed}-{'heldout' if heldout else 'train'}")
    constants = [k for k in CONSTANTS if (k in HELDOUT_CONSTANTS) == heldout]
    families = [f for f in FAMILIES if f(random.Random(0), constants[0]).level in levels]
    tasks, seen = [], set()
    attempts = 0
    while len(tasks) < count:
        attempts += 1
        if attempts > count * 50:
            raise ValueError(f"cannot make {count} distinct tasks from {len(families)} families")
        family = families[len(tasks) % len(families)]
        task = family(rng, rng.choice(constants))
        key = (task.name, json.dumps(task.inputs))
        if key in seen or len({json.dumps(c["expected"]) for c in task.cases()}) < 2:
            continue  # a duplicate, or tests that one constant answer would pass
        seen.add(key)
        tasks.append(task)
    return tasks


def write_splits(out: Path, *, seed: int = 3407, train: int = 480, heldout: int = 120,
                 levels: tuple[int, ...] = (1, 2, 3)) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, count in (("train", train), ("heldout", heldout)):
        rows = [t.row() for t in generate(seed, count, heldout=split == "heldout", levels=levels)]
        paths[split] = out / f"{split}.jsonl"
        paths[split].write_text("".join(json.dumps(r) + "\n" for r in rows))
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=3407)
    parser.add_argument("--train", type=int, default=480)
    parser.add_argument("--heldout", type=int, default=120)
    parser.add_argument("--levels", default="1,2,3", help="difficulty levels to include, e.g. 1,2")
    args = parser.parse_args(argv)
    levels = tuple(int(x) for x in args.levels.split(","))
    for split, path in write_splits(args.out, seed=args.seed, train=args.train, heldout=args.heldout,
                                    levels=levels).items():
        print(f"{split}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
