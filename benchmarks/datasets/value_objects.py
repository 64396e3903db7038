"""Honest value objects on real rows (issue 31, class 6): tests that construct, compare and ask ``isinstance`` of
the completion's own classes must pass the reference solutions, without handing the candidate control over
``==``: a hostile variant of every reference, whose functions and methods answer with an object that claims
to equal anything (``__eq__`` always True, ``__class__`` lying, every class's ``__eq__`` always True), must not
pass.

    # the data stays out of the repo:
    mkdir -p /work/data/exercism-python && git --git-dir=<mirror of exercism/python> archive HEAD \\
        exercises/practice | tar -x -C /work/data/exercism-python
    mkdir -p /work/data/classeval && git --git-dir=<mirror of FudanSELab/ClassEval> show \\
        HEAD:data/ClassEval_data.json > /work/data/classeval/ClassEval_data.json
    python -m benchmarks.datasets.value_objects [--data /work/data] [--sources mbpp,exercism,classeval]
        [--backend docker|bwrap] [--out FILE]

Rows, each run the way its dataset's harness runs it:
- MBPP (``trainer data convert`` rows, ``python_assert``): the rows whose reference defines a class that the
  tests construct (342, 367, 601 ``Pair``, 927 ``Node``);
- Exercism's Python track (``exercises/practice``): every exercise whose example solution defines a class
  (``bin/test_exercises.py``: the example written as the solution file, the test files beside it with their
  ``@unittest.skip`` lines dropped, pytest in that folder), as ``pytest`` specs (the test files as ``files``,
  ``solution_path`` the solution file);
- ClassEval (one class per task; its harness runs ``import_statement`` + the solution + the unittest code as one
  module): ``pytest`` specs whose test file is ``from solution import *``, the import statements, the tests.

Prints each row that does not get what it should (the reference PASSED; the hostile variant neither PASSED nor
INFRA_ERROR), then the table and the shapes the rows' tests have.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from benchmarks.datasets import humaneval_x
from verifier_service.config import load_config
from verifier_service.testing import InProcessService

FENCE = re.compile(r"```(?:python)?\n(.*?)```", re.DOTALL)
MBPP_ROWS = ("342", "367", "601", "927")

# Appended to a reference: every public function, and every method of every class the module defines, answers
# with a _Liar, which equals anything, is true, contains anything and says its class is the module's first class;
# construction runs as the reference's (its errors stay), then every instance attribute becomes a _Liar; every
# class's == is always True. A wrong answer that tries to own ==.
HOSTILE = '''

import types as _types


class _Liar:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return 0

    def __bool__(self):
        return True

    def __contains__(self, item):
        return True

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self

    @property
    def __class__(self):
        return _TARGET


def _lie(*args, **kwargs):
    return _Liar()


def _lying_init(init):
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            for key in list(vars(self)):
                object.__setattr__(self, key, _Liar())
        except TypeError:
            pass
    return __init__


_TARGET = object
_KEEP = {"__init__", "__new__", "__init_subclass__", "__class_getitem__", "__getattribute__", "__setattr__",
         "__delattr__", "__eq__", "__ne__", "__hash__", "__post_init__"}
for _name, _value in list(globals().items()):
    if _name.startswith("_") or getattr(_value, "__module__", None) != __name__:
        continue
    if isinstance(_value, type):
        _TARGET = _value if _TARGET is object else _TARGET
        if isinstance(vars(_value).get("__init__"), _types.FunctionType):
            try:
                _value.__init__ = _lying_init(vars(_value)["__init__"])
            except (AttributeError, TypeError):
                pass
        for _attr, _member in list(vars(_value).items()):
            if _attr not in _KEEP and isinstance(_member, (_types.FunctionType, staticmethod, classmethod, property)):
                try:
                    setattr(_value, _attr, property(_lie) if isinstance(_member, property) else _lie)
                except (AttributeError, TypeError):
                    pass
        for _attr, _fake in (("__eq__", lambda self, other: True), ("__ne__", lambda self, other: False),
                             ("__hash__", lambda self: 0)):
            try:
                setattr(_value, _attr, _fake)
            except (AttributeError, TypeError):
                pass
    elif isinstance(_value, _types.FunctionType):
        globals()[_name] = _lie
'''

CLASS = re.compile(r"^class \w+", re.MULTILINE)


def shapes(solution: str, tests: str) -> list[str]:
    """What a row's tests do with the completion's objects (for the table)."""
    out = []
    names = re.findall(r"^class (\w+)", solution, re.MULTILINE)
    if any(re.search(rf"\b{name}\(", tests) for name in names):
        out.append("tests construct its classes")
    if re.search(r"@dataclass|dataclasses", solution):
        out.append("dataclass")
    if re.search(r"namedtuple|NamedTuple", solution):
        out.append("namedtuple")
    if re.search(r"\(\s*(?:enum\.)?(?:Enum|IntEnum|Flag)\s*\)", solution):
        out.append("enum")
    if re.search(r"def __eq__", solution):
        out.append("own __eq__")
    if re.search(r"assertIsInstance|isinstance\(", tests):
        out.append("isinstance in tests")
    if re.search(r"assert(?:Equal|NotEqual)\(\s*\w+\(.*\),\s*\w+\(", tests) or re.search(
            r"assert \w+\(.*\) (?:==|!=) \w+\(", tests):
        out.append("objects compared in tests")
    return out


# Why a reference did not pass, read from the first failing test's detail (most specific first).
CAUSES = (
    ("a judge value the completion's code may not receive (datetime, function, mock, ...)",
     r"cannot be passed to the completion's code"),
    ("an exception class of the completion's (assertRaises with it, or raised)",
     r"assertRaises\(\) arg 1 must be an exception type|CandidateError"),
    ("a built-in error's message: the judge's error had the formatted text ('ValueError: msg') as its argument",
     r"AssertionError: '(\w+Error): (.*)' != '\2"),
    ("operators and protocols on the completion's objects (+, abs, del obj[k])",
     r"unsupported operand type|bad operand type|__delitem__"),
    ("two objects of the completion's equal by its own __eq__, not by their data",
     r"<(\w+) object of the completion's> != <\1 object of the completion's>"),
    ("a library or built-in object the completion returns (date, deque, numpy int64, a type) stays the "
     "completion's", r"object of the completion's>"),
    ("the dataset's own (NumPy 2 removed np.mat; a float's last digits; its author's hostname)",
     r"np\.mat|0\.98198050606196|LAPTOP-"),
    ("a module the test file imports is not in the sandbox image", r"collection failure"),
    ("the tests mutate a value they read from, or pass to, the completion's object (a copy crosses)",
     r"KeyError|Lists differ: \[\] != |Lists differ: \[1, 2, 3\]|True is not false"),
)


def cause(detail: str) -> str:
    return next((label for label, pattern in CAUSES if re.search(pattern, detail)), "other: " + detail[:120])


def mbpp_rows(data: Path) -> list[dict]:
    out = []
    with (data / "mbpp" / "converted.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["id"] in MBPP_ROWS:
                spec = json.loads(row["verification"])
                code = FENCE.search(row["reference"]).group(1).replace("\r\n", "\n")
                out.append({"source": "mbpp", "id": row["id"], "spec": spec, "reference": row["reference"],
                            "hostile": f"```python\n{code}{HOSTILE}```", "shapes": shapes(code, spec["tests"])})
    return out


def exercism_rows(data: Path) -> list[dict]:
    out = []
    for meta in sorted((data / "exercism-python" / "exercises" / "practice").glob("*/.meta/config.json")):
        folder = meta.parent.parent
        files = json.loads(meta.read_text(encoding="utf-8"))["files"]
        example = (folder / files["example"][0]).read_text(encoding="utf-8")
        if not CLASS.search(example):
            continue
        tests = {name: "".join(line for line in (folder / name).read_text(encoding="utf-8").splitlines(True)
                               if not line.strip().startswith("@unittest.skip"))
                 for name in [*files["test"], *files.get("editor", [])]}
        spec = {"kind": "pytest", "files": tests, "solution_path": files["solution"][0], "timeout_s": 60}
        out.append({"source": "exercism", "id": folder.name, "spec": spec, "reference": example,
                    "hostile": example + HOSTILE, "shapes": shapes(example, "\n".join(tests.values()))})
    return out


def classeval_rows(data: Path) -> list[dict]:
    out = []
    for task in json.loads((data / "classeval" / "ClassEval_data.json").read_text(encoding="utf-8")):
        imports = "\n".join(task["import_statement"])
        solution = f"{imports}\n{task['solution_code']}\n"
        test = f"from solution import *\n{imports}\n{task['test']}\n"  # the module's own imports stay its
        spec = {"kind": "pytest", "files": {f"test_{task['class_name']}.py": test}, "timeout_s": 60}
        out.append({"source": "classeval", "id": task["task_id"], "spec": spec, "reference": solution,
                    "hostile": solution + HOSTILE, "shapes": shapes(solution, task["test"])})
    return out


def verify_all(service: InProcessService, requests: list[dict]) -> list[dict]:
    """``humaneval_x.verify_all`` (refused requests marked REFUSED, the rest sent again) 50 requests at a time."""
    results: list[dict] = []
    for k in range(0, len(requests), 50):
        results += humaneval_x.verify_all(service, requests[k:k + 50])
        print(f"  {len(results)}/{len(requests)}", file=sys.stderr, flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data"))
    parser.add_argument("--sources", default="mbpp,exercism,classeval")
    parser.add_argument("--backend", default="docker", choices=("docker", "bwrap"))
    parser.add_argument("--out", type=Path, help="every check's verdict (JSON lines)")
    args = parser.parse_args()
    loaders = {"mbpp": mbpp_rows, "exercism": exercism_rows, "classeval": classeval_rows}
    rows = [row for source in args.sources.split(",") for row in loaders[source](args.data)]
    requests = [{"id": f"{row['source']}/{row['id']}/{variant}", "completion": row[variant], "spec": row["spec"]}
                for row in rows for variant in ("reference", "hostile")]
    config = replace(load_config(), port=0, sandbox_backend=args.backend, max_concurrency=2)
    started = time.perf_counter()
    with InProcessService(config) as service:
        results = verify_all(service, requests)
    table: dict[str, Counter] = {}
    shaped: Counter = Counter()
    lines = []
    for row, (reference, hostile) in zip(rows, zip(results[::2], results[1::2], strict=True), strict=True):
        good = reference["verdict"] == "PASSED" and hostile["verdict"] not in ("PASSED", "INFRA_ERROR")
        count = table.setdefault(row["source"], Counter())
        count["rows"] += 1
        count["reference PASSED"] += reference["verdict"] == "PASSED"
        count[f"hostile {hostile['verdict']}"] += 1
        count["as expected"] += good
        for shape in row["shapes"]:
            shaped[(row["source"], shape, "rows")] += 1
            shaped[(row["source"], shape, "as expected")] += good
        for variant, result in (("reference", reference), ("hostile", hostile)):
            lines.append({"source": row["source"], "id": row["id"], "variant": variant, "verdict": result["verdict"],
                          "tests_passed": result.get("tests_passed"), "tests_total": result.get("tests_total"),
                          "detail": result["detail"][:400], "shapes": row["shapes"]})
        if not good:
            print(f"{row['source']}\t{row['id']}\treference {reference['verdict']} "
                  f"({reference.get('tests_passed')}/{reference.get('tests_total')}: {reference['detail'][:200]!r})\t"
                  f"hostile {hostile['verdict']} ({hostile.get('tests_passed')}/{hostile.get('tests_total')}: "
                  f"{hostile['detail'][:200]!r})", flush=True)
    if args.out:
        args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"\n{time.perf_counter() - started:.0f} s\n")
    print("| source | rows | reference PASSED | hostile verdicts | as expected |\n|---|---|---|---|---|")
    for source, count in table.items():
        hostile = ", ".join(f"{k.split(' ', 1)[1]} {v}" for k, v in sorted(count.items()) if k.startswith("hostile"))
        print(f"| {source} | {count['rows']} | {count['reference PASSED']} | {hostile} | {count['as expected']} |")
    causes = Counter((line["source"], cause(line["detail"])) for line in lines
                     if line["variant"] == "reference" and line["verdict"] != "PASSED")
    print("\n| source | why a reference did not pass | rows |\n|---|---|---|")
    for (source, why), n in sorted(causes.items()):
        print(f"| {source} | {why} | {n} |")
    print("\n| source | shape | rows | as expected |\n|---|---|---|---|")
    for source, shape in sorted({(s, sh) for s, sh, _ in shaped}):
        print(f"| {source} | {shape} | {shaped[(source, shape, 'rows')]} | {shaped[(source, shape, 'as expected')]} |")
    return 0 if all(c["as expected"] == c["rows"] for c in table.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
