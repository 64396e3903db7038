"""Dataset converters: public benchmark formats -> prompt + spec JSONL for ``trainer train``.

``trainer data convert --format FORMAT --input FILE --output FILE`` reads the dataset's own rows (JSONL, a
JSON list, or Parquet where ``pandas`` is installed) and writes one line per problem::

    {"id": ..., "prompt": ..., "verification": "<spec JSON text>", "reference": ...}

``verification`` is the column ``trainer train`` reads (JSON text, so that rows of different kinds share one
Arrow schema); ``reference`` is the dataset's own solution written as a completion would be (``verifier-service
verify`` can check it: ``--check`` does, through a running service). Formats:

======================  =============================================================================
``humaneval``           openai_humaneval: prompt, canonical_solution, test (``check``), entry_point
``mbpp``                mbpp (full): text, code, test_list, test_setup_code, challenge_test_list
``mbpp-sanitized``      mbpp sanitized: prompt, code, test_list, test_imports
``evalplus``            HumanEval+ / MBPP+ (evalplus): prompt, canonical_solution, entry_point, and a
                        ``test`` whose ``check`` holds the ``inputs`` and ``results`` literals: they become
                        ``python_io`` cases (the judge needs no numpy, and the expected values stay out of
                        the sandbox)
``code-contests``       deepmind/code_contests: description, public/private/generated_tests, solutions
``livecodebench``       livecodebench code_generation(_lite): question_content, public_test_cases and
                        private_test_cases (plain JSON, or their base64-zlib-pickle text, read by an
                        unpickler that builds strings and lists only); stdin problems (functional,
                        LeetCode-style problems are skipped and counted)
``multipl-e``           nuprl/MultiPL-E (C++, Java, JavaScript, TypeScript, Rust, Go, Bash, PHP, Lua, Perl,
                        R, C#, D): name, language, prompt, tests; ``function_io`` where every test is
                        ``assert f(args) == expected`` of literals (the expected values stay out of the
                        sandbox), else ``function_tests`` (MultiPL-E's Lua tests need luaunit and its
                        Perl tests Test::Deep: where the sandbox lacks them, INFRA_ERROR)
                        (``trainer/convert_multipl.py``)
``gsm8k``               gsm8k: question, answer ("... #### 72")
``math``                hendrycks MATH: problem, solution (the last ``\\boxed{}`` is the gold answer)
``spider``              Spider (Yu et al.): db_id, question, query (the gold); the databases are read from
                        ``database/<db_id>/<db_id>.sqlite`` beside the input and carried as the ``sql``
                        spec's setup (their SQL dump) (``trainer/convert_spider.py``)
======================  =============================================================================

Code prompts ask for the answer in a fenced ``python`` (or ``cpp``) block, and the specs extract the last one;
math prompts ask for a ``\\boxed{}`` answer.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import pickle
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifier_service.errors import InvalidSpec
from verifier_service.spec import spec_from_json

CODE_INSTRUCTION = "Write your solution in a single ```python code block."
STDIO_INSTRUCTION = ("Write a complete program that reads the input from standard input and writes the answer to "
                     "standard output, in a single ```{lang} code block.")
MATH_INSTRUCTION = "Reason step by step, and put your final answer within \\boxed{}."
CODE_CONTESTS_LANGUAGES = {3: "python", 2: "cpp", 1: None, 4: None}  # PYTHON3, CPP (PYTHON 2 and JAVA: not run)


class ConvertError(ValueError):
    """A row or file that cannot be converted; says which and why."""


@dataclass
class Converted:
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    flagged: dict[str, str] = field(default_factory=dict)  # row id -> why it was left out (a row to look at)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def flag(self, rid: Any, reason: str) -> None:
        """Leaves a row out that would convert to a wrong spec, by id: the user sees which and why."""
        self.flagged[str(rid)] = reason
        self.skip(reason)


def fenced(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code.rstrip()}\n```"


def _row(rid: Any, prompt: str, spec: dict[str, Any], reference: str | None) -> dict[str, Any]:
    try:
        spec_from_json(spec)  # the spec's own checks: a bad conversion fails here, not in training
    except InvalidSpec as exc:
        raise ConvertError(f"row {rid!r}: {exc}") from exc
    out = {"id": str(rid), "prompt": prompt, "verification": json.dumps(spec, ensure_ascii=False)}
    if reference is not None:
        out["reference"] = reference
    return out


def _need(row: dict[str, Any], *names: str) -> None:
    missing = [n for n in names if n not in row]
    if missing:
        raise ConvertError(f"row {row.get('task_id', row.get('name', '?'))!r} has no {', '.join(missing)} "
                           f"(columns: {', '.join(sorted(row))}): is this the right --format?")


# ---- code: function-level -----------------------------------------------------------------------

def humaneval(rows: Iterable[dict[str, Any]]) -> Converted:
    out = Converted()
    for row in rows:
        _need(row, "task_id", "prompt", "test", "entry_point")
        # The prompt is the dataset's own (trusted) code: as setup, the tests can call its helpers (HumanEval/38's
        # check calls encode_cyclic); the completion supplies only the entry point.
        spec = {"kind": "python_assert", "extract": "last_fenced_code", "tests": row["test"],
                "entry_point": row["entry_point"], "setup": row["prompt"]}
        prompt = f"Complete this Python function.\n\n{fenced(row['prompt'])}\n\n{CODE_INSTRUCTION}"
        reference = fenced(row["prompt"] + row["canonical_solution"]) if "canonical_solution" in row else None
        out.rows.append(_row(row["task_id"], prompt, spec, reference))
    return out


def _mbpp(rows: Iterable[dict[str, Any]], text_key: str, setup_key: str) -> Converted:
    out = Converted()
    for row in rows:
        _need(row, "task_id", text_key, "test_list")
        tests = list(row["test_list"]) + list(row.get("challenge_test_list") or [])  # MBPP's harder tests too
        setup = row.get(setup_key) or ""
        if isinstance(setup, list):
            setup = "\n".join(setup)
        first = re.match(r"\s*assert\s+(?:not\s+)?\(?\s*(?:set\()?\s*([A-Za-z_]\w*)\s*\(", tests[0]) if tests else None
        name = f" The function is called `{first.group(1)}`." if first else ""
        example = "\n".join(row["test_list"][:1])
        prompt = (f"{row[text_key].strip()}{name} Your code should pass this test:\n\n{example}\n\n{CODE_INSTRUCTION}")
        spec = {"kind": "python_assert", "extract": "last_fenced_code",
                "tests": "\n".join([setup, *tests]).strip() + "\n"}
        reference = fenced(row["code"]) if row.get("code") else None
        out.rows.append(_row(row["task_id"], prompt, spec, reference))
    return out


def mbpp(rows: Iterable[dict[str, Any]]) -> Converted:
    return _mbpp(rows, "text", "test_setup_code")


def mbpp_sanitized(rows: Iterable[dict[str, Any]]) -> Converted:
    return _mbpp(rows, "prompt", "test_imports")


def _check_literals(test: str) -> tuple[list, list, float]:
    """evalplus's ``check``: its ``inputs`` and ``results`` literals and the atol it passes to ``assertion``."""
    tree = ast.parse(test)
    check = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
    if check is None:
        raise ConvertError("the test defines no check(candidate)")
    values: dict[str, Any] = {}
    atol = 0.0
    for node in ast.walk(check):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in ("inputs", "results"):
            values[node.targets[0].id] = ast.literal_eval(node.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "assertion" \
                and len(node.args) == 3:
            try:
                atol = float(ast.literal_eval(node.args[2]))
            except ValueError:
                atol = 0.0
    if "inputs" not in values or "results" not in values:
        raise ConvertError("check() holds no inputs / results literals")
    return values["inputs"], values["results"], atol


def _json_value(value: Any) -> Any:
    """A literal as JSON (tuples as lists); ValueError for what JSON cannot hold (sets, non-finite floats)."""
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise ValueError("a dict with non-string keys")
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        raise ValueError("a non-finite float")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"a {type(value).__name__}")


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    return isinstance(value, (list, tuple)) and any(_has_float(v) for v in value)


def evalplus(rows: Iterable[dict[str, Any]]) -> Converted:
    out = Converted()
    for row in rows:
        _need(row, "task_id", "prompt", "entry_point", "test")
        try:
            inputs, results, atol = _check_literals(row["test"])
            cases = [{"args": _json_value(list(args)), "expected": _json_value(expected)}
                     for args, expected in zip(inputs, results, strict=True)]
        except (ConvertError, ValueError, SyntaxError) as exc:
            out.skip(f"tests not given as JSON literals ({str(exc)[:60]})")
            continue
        if not cases:
            out.skip("no test inputs")
            continue
        tolerance = atol or (1e-6 if any(_has_float(c["expected"]) for c in cases) else 0.0)
        spec = {"kind": "python_io", "extract": "last_fenced_code", "entry_point": row["entry_point"],
                "cases": cases, "scoring": "all_or_nothing"}
        if tolerance:
            spec["float_tolerance"] = tolerance
        prompt = f"Complete this Python function.\n\n{fenced(row['prompt'])}\n\n{CODE_INSTRUCTION}"
        solution = row.get("canonical_solution")
        reference = None
        if solution is not None:  # HumanEval+: the body after the prompt; MBPP+: the whole function
            reference = fenced(solution if f"def {row['entry_point']}" in solution else row["prompt"] + solution)
        out.rows.append(_row(row["task_id"], prompt, spec, reference))
    return out


# ---- code: stdin / stdout -----------------------------------------------------------------------

# A statement that accepts more than one output: an exact (token) comparison would fail right answers. Those
# problems need a checker (a stdio spec can carry one, ``checker``, but the datasets ship none): they are flagged.
_SEVERAL_OUTPUTS = re.compile(
    r"(?:if|when) there (?:are|is|exist) (?:several|multiple|many|more than one)[^.]{0,60}?(?:answers?|solutions?|"
    r"outputs?|ways?|possible)[^.]{0,80}?(?:any|either)|(?:print|output) any (?:of them|one of them|valid|correct|"
    r"such)|any (?:valid|correct) (?:answer|solution|output) (?:will be|is) accepted|absolute or relative error",
    re.IGNORECASE)
_ANY_CASE = re.compile(r"in any case|any letter case|(?:upper|lower)(?:case)? or (?:upper|lower)(?:case)?|"
                       r"case[- ]insensitive|each letter in any case", re.IGNORECASE)


def _checker_needed(statement: str) -> str | None:
    """Why a stdin/stdout problem's outputs cannot be compared as tokens, or None."""
    if _SEVERAL_OUTPUTS.search(statement):
        if re.search(r"absolute or relative error", statement, re.IGNORECASE) and not re.search(
                r"several|multiple|any of them|any valid|any correct", statement, re.IGNORECASE):
            return None  # a real-valued answer: compare=float handles it
        return "several correct outputs: needs a checker (flagged)"
    if _ANY_CASE.search(statement):
        return "answers judged case-insensitively: needs a case-insensitive checker (flagged)"
    return None


def _stdio_spec(cases: list[dict[str, str]], language: str) -> dict[str, Any]:
    return {"kind": "stdio", "extract": "last_fenced_code", "language": language, "cases": cases,
            "compare": "float", "float_tolerance": 1e-6}


def code_contests(rows: Iterable[dict[str, Any]]) -> Converted:
    out = Converted()
    for row in rows:
        _need(row, "name", "description")
        cases = []
        for key in ("public_tests", "private_tests", "generated_tests"):
            tests = row.get(key) or {}
            for stdin, stdout in zip(tests.get("input", []), tests.get("output", []), strict=True):
                cases.append({"stdin": stdin, "expected_stdout": stdout})
        if not cases:
            out.skip("no tests")
            continue
        why = _checker_needed(row["description"])
        if why:
            out.flag(row["name"], why)
            continue
        solutions = row.get("solutions") or {}
        pairs = list(zip(solutions.get("language", []), solutions.get("solution", []), strict=True))
        language, reference = "python", None
        for wanted in ("python", "cpp"):
            found = next((code for lang, code in pairs if CODE_CONTESTS_LANGUAGES.get(lang) == wanted), None)
            if found is not None:
                language, reference = wanted, fenced(found, wanted)
                break
        prompt = f"{row['description'].strip()}\n\n{STDIO_INSTRUCTION.format(lang=language)}"
        out.rows.append(_row(row["name"], prompt, _stdio_spec(cases, language), reference))
    return out


class _PlainUnpickler(pickle.Unpickler):
    """Builds strings, numbers, lists and dicts only: a pickle naming any class or function is refused."""

    def find_class(self, module: str, name: str):
        raise ConvertError(f"the test cases' pickle names {module}.{name}: refused (only plain data is read)")


def _lcb_tests(raw: Any) -> list[dict[str, Any]]:
    """LiveCodeBench's test cases: a list, its JSON text, or that text pickled, zlib-compressed, base64-coded."""
    if isinstance(raw, list):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        return []
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        data = zlib.decompress(base64.b64decode(raw.encode("ascii"), validate=True))
        value = _PlainUnpickler(io.BytesIO(data)).load()
    except ConvertError:
        raise
    except Exception as exc:
        raise ConvertError(f"cannot read the test cases ({type(exc).__name__})") from exc
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def livecodebench(rows: Iterable[dict[str, Any]]) -> Converted:
    out = Converted()
    for row in rows:
        _need(row, "question_id", "question_content")
        tests = _lcb_tests(row.get("public_test_cases")) + _lcb_tests(row.get("private_test_cases"))
        if any(t.get("testtype") == "functional" for t in tests):
            out.skip("functional (LeetCode-style) problem")
            continue
        cases = [{"stdin": t["input"], "expected_stdout": t["output"]} for t in tests]
        if not cases:
            out.skip("no tests")
            continue
        why = _checker_needed(row["question_content"])
        if why:
            out.flag(row["question_id"], why)
            continue
        prompt = f"{row['question_content'].strip()}\n\n{STDIO_INSTRUCTION.format(lang='python')}"
        out.rows.append(_row(row["question_id"], prompt, _stdio_spec(cases, "python"), None))
    return out


# ---- math ---------------------------------------------------------------------------------------

def gsm8k(rows: Iterable[dict[str, Any]]) -> Converted:
    out = Converted()
    for index, row in enumerate(rows):
        _need(row, "question", "answer")
        work, sep, final = row["answer"].rpartition("####")
        if not sep:
            out.skip("answer without '####'")
            continue
        gold = final.strip().replace(",", "")
        spec = {"kind": "math", "gold": gold, "answer_markers": "boxed,answer_tag,hashes"}  # '#### x': GSM8K's own
        reference = f"{work.strip()}\nThe answer is \\boxed{{{gold}}}."
        out.rows.append(_row(row.get("id", f"gsm8k-{index}"), f"{row['question'].strip()}\n\n{MATH_INSTRUCTION}",
                             spec, reference))
    return out


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), braces balanced."""
    starts = [m.end() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    if not starts:
        return None
    depth, start = 1, starts[-1]
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return None


def all_boxed(text: str) -> list[str]:
    """The contents of every ``\\boxed{...}`` / ``\\fbox{...}`` (braces balanced; an unclosed one left out)."""
    found = []
    for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text):
        depth = 1
        for i in range(m.end(), len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                found.append(text[m.end():i].strip())
                break
    return found


def _same_value(a: str, b: str) -> bool:
    """Whether two boxed answers are one value (math-verify, the math kind's own comparer)."""
    import math_verify

    try:
        return bool(math_verify.verify(math_verify.parse(f"${a}$", parsing_timeout=None),
                                       math_verify.parse(f"${b}$", parsing_timeout=None), timeout_seconds=None))
    except Exception:  # noqa: BLE001 - unparsable: not shown to be the same
        return False


def math(rows: Iterable[dict[str, Any]]) -> Converted:
    out = Converted()
    for index, row in enumerate(rows):
        _need(row, "problem", "solution")
        rid = row.get("unique_id") or row.get("id") or f"math-{index}"
        if not isinstance(row["solution"], str):
            raise ConvertError(f"row {rid!r}: solution is a {type(row['solution']).__name__}, not text")
        gold = last_boxed(row["solution"])
        if not gold:
            out.skip("solution without \\boxed{}")
            continue
        boxes = list(dict.fromkeys(all_boxed(row["solution"])))
        if len(boxes) > 1 and not all(_same_value(box, gold) for box in boxes):
            # an intermediate value boxed, or several answers boxed apart: the last box is not the answer
            out.flag(rid, "solution boxes several different values (intermediate values or several answers)")
            continue
        spec = {"kind": "math", "gold": gold}
        out.rows.append(_row(rid, f"{row['problem'].strip()}\n\n{MATH_INSTRUCTION}", spec, row["solution"]))
    return out


FORMATS: dict[str, Callable[[Iterable[dict[str, Any]]], Converted]] = {
    "humaneval": humaneval, "mbpp": mbpp, "mbpp-sanitized": mbpp_sanitized, "evalplus": evalplus,
    "code-contests": code_contests, "livecodebench": livecodebench, "gsm8k": gsm8k, "math": math,
    "multipl-e": lambda rows: __import__("trainer.convert_multipl", fromlist=["multipl_e"]).multipl_e(rows),
    # Spider's databases sit beside its JSON (database/<db_id>/<db_id>.sqlite): convert() passes that folder;
    # called with rows alone, the folder is ./database.
    "spider": lambda rows, folder=Path("database"): __import__(
        "trainer.convert_spider", fromlist=["spider"]).spider(rows, folder),
}
INPUT_FOLDER_FORMATS = {"spider": "database"}  # formats that read more files: the folder beside the input


def read_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a JSONL file, a JSON list, or a Parquet file."""
    if path.suffix == ".parquet":
        try:
            import pandas
        except ImportError as exc:
            raise ConvertError("reading Parquet needs pandas (pip install pandas pyarrow)") from exc
        yield from (dict(r) for r in pandas.read_parquet(path).to_dict("records"))
        return
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConvertError(f"cannot read {path}: {exc.strerror}") from exc
    if text.lstrip().startswith("["):
        try:
            yield from json.loads(text)
        except ValueError as exc:
            raise ConvertError(f"{path}: not a JSON list: {exc}") from exc
        return
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ConvertError(f"{path}:{number}: not JSON: {exc}") from exc
        if not isinstance(row, dict):
            raise ConvertError(f"{path}:{number}: a row must be a JSON object")
        yield row


def format_name(fmt: str) -> str:
    """A format as ``--format`` takes it: the datasets' own names too (``code_contests``, ``mbpp_sanitized``,
    ``deepmind/code_contests``, ``openai_humaneval``: case, ``_`` for ``-``, an owner prefix)."""
    name = fmt.strip().lower().rsplit("/", 1)[-1].replace("_", "-")
    return {"openai-humaneval": "humaneval", "codecontests": "code-contests", "humanevalplus": "evalplus",
            "mbppplus": "evalplus", "code-generation-lite": "livecodebench", "competition-math": "math",
            "math-lighteval": "math"}.get(name, name)


def convert(fmt: str, path: Path) -> Converted:
    """``path``'s rows in format ``fmt``; a row not in that form is one ConvertError naming it, never a
    traceback."""
    fmt = format_name(fmt)
    if fmt not in FORMATS:
        raise ConvertError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    seen: list[int] = [0]

    def counted() -> Iterator[dict[str, Any]]:
        for row in read_rows(path):
            seen[0] += 1
            if not isinstance(row, dict):
                raise ConvertError(f"{path}: row {seen[0]} is a {type(row).__name__}, not an object")
            yield row

    try:
        if fmt in INPUT_FOLDER_FORMATS:
            return FORMATS[fmt](counted(), path.parent / INPUT_FOLDER_FORMATS[fmt])
        return FORMATS[fmt](counted())
    except ConvertError:
        raise
    except (TypeError, AttributeError, KeyError, ValueError, IndexError) as exc:
        raise ConvertError(f"{path}: row {seen[0]} is not a {fmt} row ({type(exc).__name__}: "
                           f"{str(exc)[:200]})") from None


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    try:
        with open(path, "w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise ConvertError(f"cannot write {path}: {exc.strerror}") from exc


def reference_requests(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``verifier-service verify`` requests that check each row's reference solution."""
    return [{"id": row["id"], "completion": row["reference"], "spec": json.loads(row["verification"])}
            for row in rows if row.get("reference") is not None]
