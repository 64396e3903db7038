"""Dataset converters (trainer/convert.py): each format's hand-written fixture (tests/fixtures/datasets/) becomes
prompt + spec rows whose reference solutions the service verifies as PASSED; wrong solutions do not pass."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path

import pytest

from trainer import convert
from trainer.cli import main as trainer_main

FIXTURES = Path(__file__).parent / "fixtures" / "datasets"
CASES = [  # format, fixture, rows written, problems skipped
    ("humaneval", "humaneval.jsonl", 2, 0),
    ("mbpp", "mbpp.jsonl", 2, 0),
    ("mbpp-sanitized", "mbpp_sanitized.jsonl", 2, 0),
    ("evalplus", "humanevalplus.jsonl", 1, 0),
    ("evalplus", "mbppplus.jsonl", 1, 0),
    ("code-contests", "code_contests.jsonl", 2, 0),
    ("livecodebench", "livecodebench.jsonl", 1, 1),
    ("gsm8k", "gsm8k.jsonl", 2, 0),
    ("math", "math.jsonl", 2, 0),
]
# LiveCodeBench ships no solutions: the fixture's one stdin problem is checked with this one.
LCB_SOLUTION = {"fx_lcb_1": "```python\nn = int(input())\nprint(n * (n + 1) // 2)\n```"}


def converted(fmt: str, name: str) -> convert.Converted:
    return convert.convert(fmt, FIXTURES / name)


@pytest.mark.parametrize(("fmt", "name", "rows", "skipped"), CASES)
def test_each_format_converts(fmt, name, rows, skipped):
    out = converted(fmt, name)
    assert len(out.rows) == rows and sum(out.skipped.values()) == skipped
    for row in out.rows:
        spec = json.loads(row["verification"])
        assert row["prompt"] and row["id"] and spec["kind"]


def test_specs_carry_the_datasets_tests():
    he = converted("humaneval", "humaneval.jsonl").rows[0]
    spec = json.loads(he["verification"])
    assert spec["entry_point"] == "add_one" and "def check(candidate)" in spec["tests"]
    assert he["reference"].startswith("```python\ndef add_one") and "return x + 1" in he["reference"]
    mbpp = json.loads(converted("mbpp", "mbpp.jsonl").rows[1]["verification"])
    assert mbpp["tests"].startswith("import math\n") and mbpp["tests"].count("assert") == 3
    plus = json.loads(converted("evalplus", "humanevalplus.jsonl").rows[0]["verification"])
    assert plus["kind"] == "python_io" and plus["entry_point"] == "mean" and plus["float_tolerance"] == 1e-6
    assert plus["cases"][1] == {"args": [[0.1, 0.2]], "expected": 0.15000000000000002}
    cc = converted("code-contests", "code_contests.jsonl").rows
    assert [json.loads(r["verification"])["language"] for r in cc] == ["python", "cpp"]
    assert len(json.loads(cc[0]["verification"])["cases"]) == 3  # public + private + generated
    lcb = json.loads(converted("livecodebench", "livecodebench.jsonl").rows[0]["verification"])
    assert lcb["cases"] == [{"stdin": "3\n", "expected_stdout": "6\n"}, {"stdin": "10\n", "expected_stdout": "55\n"}]
    gsm = converted("gsm8k", "gsm8k.jsonl").rows
    assert [json.loads(r["verification"])["gold"] for r in gsm] == ["7", "2500"]
    math_rows = converted("math", "math.jsonl").rows
    assert json.loads(math_rows[0]["verification"])["gold"] == "\\frac{5}{6}"


def test_livecodebench_pickle_holding_code_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    blob = base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode()
    path = tmp_path / "lcb.jsonl"
    path.write_text(json.dumps({"question_id": "x", "question_content": "q", "public_test_cases": "[]",
                                "private_test_cases": blob}) + "\n")
    with pytest.raises(convert.ConvertError, match="refused"):
        convert.convert("livecodebench", path)


def test_wrong_format_and_bad_rows_say_what_is_wrong(tmp_path):
    with pytest.raises(convert.ConvertError, match=r"right --format"):
        convert.convert("humaneval", FIXTURES / "gsm8k.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(convert.ConvertError, match=r"bad\.jsonl:1"):
        convert.convert("gsm8k", bad)
    with pytest.raises(convert.ConvertError, match="unknown format"):
        convert.convert("nope", bad)


def test_cli_writes_the_training_jsonl(tmp_path, capsys):
    out = tmp_path / "he.jsonl"
    assert trainer_main(["data", "convert", "--format", "humaneval", "--input", str(FIXTURES / "humaneval.jsonl"),
                         "--output", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["HumanEval/fx0", "HumanEval/fx1"]
    assert "2 problem(s)" in capsys.readouterr().err
    assert trainer_main(["data", "convert", "--format", "gsm8k", "--input", str(tmp_path / "missing.jsonl"),
                         "--output", str(out)]) == 2


def _all_rows() -> list[dict]:
    rows = []
    for fmt, name, _, _ in CASES:
        for row in converted(fmt, name).rows:
            reference = row.get("reference") or LCB_SOLUTION.get(row["id"])
            assert reference is not None, f"{fmt} row {row['id']} has no reference to check"
            rows.append({**row, "reference": reference, "format": fmt})
    return rows


@pytest.mark.docker
def test_reference_solutions_pass_and_wrong_ones_fail(service):
    rows = _all_rows()
    items = [(row["reference"], json.loads(row["verification"])) for row in rows]
    results = service.verify_batch(items)
    failed = [(row["format"], row["id"], r["verdict"], r["detail"]) for row, r in zip(rows, results, strict=True)
              if r["verdict"] != "PASSED"]
    assert not failed, failed
    # the same specs refuse a wrong answer: a code answer that returns nothing useful, a wrong number
    wrong = []
    for row in rows:
        spec = json.loads(row["verification"])
        if spec["kind"] == "math":
            wrong.append(("The answer is \\boxed{123456}.", spec))
        elif spec["kind"] == "stdio":
            lang = spec.get("language", "python")
            body = 'print("0")' if lang == "python" else '#include <cstdio>\nint main(){puts("0");}'
            wrong.append((f"```{lang}\n{body}\n```", spec))
        else:
            entry = spec.get("entry_point") or row["reference"].split("def ", 1)[1].split("(", 1)[0]
            wrong.append((f"```python\ndef {entry}(*args, **kwargs):\n    return None\n```", spec))
    verdicts = [r["verdict"] for r in service.verify_batch(wrong)]
    assert "PASSED" not in verdicts, list(zip([r["id"] for r in rows], verdicts, strict=True))
