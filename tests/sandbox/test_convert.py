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

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"
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


# ---- issue 31, class 5: converters on real files (each case is the shape of a real row) ------------------------

def _write(tmp_path, rows, name="rows.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_humaneval_prompt_is_setup_so_tests_can_call_its_helpers(tmp_path):
    # HumanEval/38's shape: check() calls encode_cyclic, a helper of the prompt, not of the completion
    prompt = ("def encode(s: str):\n    return s[::-1]\n\n\ndef decode(s: str):\n    \"\"\"undo encode\"\"\"\n")
    row = {"task_id": "HE/38", "prompt": prompt, "canonical_solution": "    return s[::-1]\n",
           "test": "def check(candidate):\n    assert candidate(encode('abc')) == 'abc'\n", "entry_point": "decode"}
    spec = json.loads(convert.convert("humaneval", _write(tmp_path, [row])).rows[0]["verification"])
    assert spec["setup"] == prompt


def test_python_assert_refuses_tests_that_call_an_undefined_name():
    from verifier_service.errors import InvalidSpec
    from verifier_service.kinds import get_kind
    from verifier_service.spec import spec_from_json

    kind = get_kind("python_assert")
    tests = "def check(candidate):\n    assert candidate(encode_cyclic('abc')) == 'abc'\n"
    with pytest.raises(InvalidSpec, match="encode_cyclic"):
        kind.validate(spec_from_json({"kind": "python_assert", "tests": tests, "entry_point": "decode_cyclic"}))
    kind.validate(spec_from_json({"kind": "python_assert", "tests": tests, "entry_point": "decode_cyclic",
                                  "setup": "def encode_cyclic(s):\n    return s\n"}))
    # names the tests bind anywhere (locals, loop variables, imports) are defined
    local = ("import random\ndef check(candidate):\n    rng = random.Random(1)\n    for x in range(3):\n"
             "        assert candidate(x, rng) is not None\n")
    kind.validate(spec_from_json({"kind": "python_assert", "tests": local, "entry_point": "f"}))
    # without an entry point the completion defines the names the tests call (MBPP): nothing to refuse
    kind.validate(spec_from_json({"kind": "python_assert", "tests": "assert min_cost([1]) == 1"}))


def test_mbpp_keeps_challenge_tests(tmp_path):
    row = {"task_id": 1, "text": "Add one.", "code": "def f(x):\n    return x + 1", "test_setup_code": "",
           "test_list": ["assert f(1) == 2"], "challenge_test_list": ["assert f(10**20) == 10**20 + 1"]}
    out = convert.convert("mbpp", _write(tmp_path, [row])).rows[0]
    spec = json.loads(out["verification"])
    assert "assert f(10**20) == 10**20 + 1" in spec["tests"] and spec["tests"].count("assert") == 2
    assert "10**20" not in out["prompt"]  # the prompt shows the first plain test only


def test_math_solution_boxing_several_values_is_flagged(tmp_path):
    rows = [{"problem": "p", "solution": "First \\boxed{3}, then the answer \\boxed{5}.", "unique_id": "a"},
            {"problem": "p", "solution": "It is \\boxed{\\frac32}, i.e. \\boxed{\\frac{3}{2}}.", "unique_id": "b"},
            {"problem": "p", "solution": "So \\boxed{7}.", "unique_id": "c"}]
    out = convert.convert("math", _write(tmp_path, rows))
    assert [r["id"] for r in out.rows] == ["b", "c"]
    assert "several different values" in out.flagged["a"]


@pytest.mark.parametrize("statement", [
    "Print the permutation. If there are multiple answers, print any of them.",
    "You can output each letter in any case (upper or lower).",
])
def test_stdio_problems_that_need_a_checker_are_flagged(tmp_path, statement):
    row = {"name": "cc1", "description": statement, "public_tests": {"input": ["1\n"], "output": ["YES\n"]},
           "solutions": {"language": [3], "solution": ["print('YES')"]}}
    out = convert.convert("code-contests", _write(tmp_path, [row]))
    assert not out.rows and "cc1" in out.flagged
    lcb = {"question_id": "q1", "question_content": statement,
           "public_test_cases": json.dumps([{"input": "1\n", "output": "YES\n", "testtype": "stdin"}])}
    out = convert.convert("livecodebench", _write(tmp_path, [lcb]))
    assert not out.rows and "q1" in out.flagged
    plain = {**row, "description": "Print the sum. Answer with an absolute or relative error of 1e-6."}
    assert len(convert.convert("code-contests", _write(tmp_path, [plain])).rows) == 1


@pytest.mark.parametrize("fmt, row", [
    ("mbpp", {"task_id": 1, "text": "t", "code": "c", "test_list": 5}),
    ("humaneval", {"task_id": 1, "prompt": 3, "test": "t", "entry_point": "f"}),
    ("gsm8k", {"question": "q", "answer": 72}),
    ("math", {"problem": "p", "solution": ["\\boxed{1}"]}),
    ("code-contests", {"name": "n", "description": "d", "public_tests": "oops"}),
])
def test_off_format_rows_are_one_line_errors(tmp_path, fmt, row):
    with pytest.raises(convert.ConvertError) as info:
        convert.convert(fmt, _write(tmp_path, [row]))
    assert "\n" not in str(info.value) and "row" in str(info.value)


def test_verify_accepts_the_converters_verification_column():
    from verifier_service.spec import request_from_json

    row = convert.convert("gsm8k", FIXTURES / "gsm8k.jsonl").rows[0]
    as_text = request_from_json({**row, "completion": "\\boxed{7}"})  # the row as written: JSON text
    as_object = request_from_json({"id": row["id"], "completion": "\\boxed{7}",
                                   "verification": json.loads(row["verification"])})
    as_spec_text = request_from_json({"id": row["id"], "completion": "\\boxed{7}", "spec": row["verification"]})
    assert as_text.spec == as_object.spec == as_spec_text.spec and as_text.spec.gold == "7"


def test_gsm8k_specs_take_the_datasets_own_answer_line():
    from verifier_service.kinds import get_kind
    from verifier_service.spec import spec_from_json

    spec = json.loads(convert.convert("gsm8k", FIXTURES / "gsm8k.jsonl").rows[0]["verification"])
    kind = get_kind("math")
    checked = kind.validate(spec_from_json(spec))
    assert kind.check("3 + 4 = 7\n#### 7", checked).verdict.value == "PASSED"
    assert kind.check("3 + 4 = 7\nThe answer is 7", checked).verdict.value == "MALFORMED"  # unmarked
