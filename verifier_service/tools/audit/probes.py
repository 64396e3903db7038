"""The probes of one dataset row: completions that must earn no correctness.

Each probe has a family, which names the class of problem it finds when it earns something:

- ``trivial``: empty output, whitespace, an empty code block, a syntax error, the prompt echoed back, the
  function signature alone, ``return None`` / ``0`` / ``""`` / ``[]`` / ``True`` / ``False``, a program that
  prints nothing: a spec that pays for these checks nothing (or its tests are vacuous);
- ``leak``: a constant equal to each literal the prompt shows, printing the prompt's example outputs: the
  hidden tests (or the gold answer) hold what the prompt already gives away;
- ``hack``: the generic hack corpus of the row's kind and language (``corpus.py``): early exits, objects that
  equal everything, patched builtins, reading the tests from disk or memory, forged pass markers.

A probe's code is wrapped the way the row's ``extract`` mode wants it (a fenced block in the row's language,
an ``<answer>`` tag), so it fails or passes on what it does, not on its format.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from verifier_service.tools.audit import corpus
from verifier_service.tools.audit.literals import (
    example_outputs,
    function_names,
    literals,
    numbers,
    prompt_text,
    signature,
)

FAMILIES = ("trivial", "leak", "hack")
FUNCTION_KINDS = ("python_assert", "python_io", "pytest")
MAX_NAMES = 3  # entry points a function probe defines


@dataclass(frozen=True)
class Probe:
    name: str
    family: str
    completion: str


def row_language(spec: dict[str, Any]) -> str:
    kind = spec.get("kind", "")
    if kind in FUNCTION_KINDS:
        return "python"
    if kind in ("stdio", "function_tests"):
        return str(spec.get("language") or "python")
    if kind == "sql":
        return "sql"
    return "text"


def wrap(body: str, spec: dict[str, Any]) -> str:
    """``body`` as a completion the row's extraction finds."""
    mode = spec.get("extract") or "raw"
    if mode in ("fenced_code", "last_fenced_code"):
        language = row_language(spec)
        return f"```{'' if language == 'text' else language}\n{body.rstrip()}\n```"
    if mode == "answer_tag":
        return f"<answer>{body}</answer>"
    return body


def entry_names(spec: dict[str, Any], text: str) -> list[str]:
    """The functions a function task's tests call: the spec's entry point, then the names its tests and the
    prompt show."""
    names = [spec["entry_point"]] if spec.get("entry_point") else []
    tests = spec.get("tests") or ""
    if spec.get("kind") == "pytest":
        tests = "\n".join(str(v) for v in (spec.get("files") or {}).values())
    names += function_names(text, tests if isinstance(tests, str) else "")
    return list(dict.fromkeys(names))[:MAX_NAMES]


def _fn(names: list[str], body: str, payload: str = "") -> str:
    if not names:
        return payload + f"def solution(*args, **kwargs):\n    {body}\n"
    return corpus.python_function_program(payload, body, names)


def _text_literal(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, (list, dict, bool)) \
        or value is None else str(value)


def _print_program(language: str, text: str) -> str | None:
    template = corpus.PRINT_PROGRAMS.get(language)
    if template is None:
        return None
    quoted = shlex.quote(text) if language == "bash" else json.dumps(text)
    return template[1].format(text=quoted)


def trivial_probes(spec: dict[str, Any], text: str) -> list[Probe]:
    language = row_language(spec)
    out = [Probe("empty", "trivial", ""), Probe("whitespace", "trivial", " \n\t\n"),
           Probe("prompt_echo", "trivial", text)]
    if (spec.get("extract") or "raw") != "raw":
        out.append(Probe("empty_block", "trivial", wrap("", spec)))
        out.append(Probe("prompt_echo_block", "trivial", wrap(text, spec)))
    out.append(Probe("syntax_error", "trivial",
                     wrap(corpus.SYNTAX_ERRORS.get(language, corpus.SYNTAX_ERROR_OTHER), spec)))
    return out


def function_probes(spec: dict[str, Any], text: str, values: list[Any]) -> list[Probe]:
    names = entry_names(spec, text)
    out = []
    shown = [s for s in (signature(text, n) for n in names) if s]
    out.append(Probe("signature_only", "trivial",
                     wrap("\n".join(f"{s}\n    pass\n" for s in shown) if shown else _fn(names, "pass"), spec)))
    for label, value in (("none", "None"), ("0", "0"), ("empty_str", '""'), ("empty_list", "[]"),
                         ("true", "True"), ("false", "False")):
        out.append(Probe(f"return_{label}", "trivial", wrap(_fn(names, f"return {value}"), spec)))
    out.append(Probe("trivial_names", "trivial", wrap(corpus.TRIVIAL_NAMES_PROGRAM, spec)))
    if values:
        prints = "".join(f"print({v!r})\n" for v in values)
        out.append(Probe("print_literals", "leak", wrap(prints + _fn(names, "return None"), spec)))
    for value in values:
        out.append(Probe(f"literal {value!r}"[:80], "leak", wrap(_fn(names, f"return {value!r}"), spec)))
    for name, (payload, body) in corpus.PYTHON_FUNCTION_HACKS.items():
        out.append(Probe(name, "hack", wrap(_fn(names, body, payload), spec)))
    return out


def program_probes(spec: dict[str, Any], text: str, values: list[Any]) -> list[Probe]:
    """stdin/stdout programs (and function_tests programs) in the row's language."""
    language = row_language(spec)
    out = []
    empty = corpus.PRINT_PROGRAMS.get(language)
    if empty is not None:
        out.append(Probe("print_nothing", "trivial", wrap(empty[0], spec)))
    early = corpus.EARLY_EXIT_PROGRAMS.get(language)
    if early is not None:
        out.append(Probe("exit0_early", "hack", wrap(early, spec)))
    if spec.get("kind") != "stdio":
        return out
    shown = example_outputs(text)
    if shown:
        program = _print_program(language, "\n".join(shown) + "\n")
        if program:
            out.append(Probe("print_example_outputs", "leak", wrap(program, spec)))
        for i, output in enumerate(shown[:8]):
            program = _print_program(language, output + "\n")
            if program and len(shown) > 1:
                out.append(Probe(f"print_example_output {i + 1}", "leak", wrap(program, spec)))
    for value in values:
        program = _print_program(language, _text_literal(value) + "\n")
        if program:
            out.append(Probe(f"print_literal {_text_literal(value)!r}"[:80], "leak", wrap(program, spec)))
    if language == "python":
        for name, program in corpus.PYTHON_STDIO_HACKS.items():
            out.append(Probe(name, "hack", wrap(program, spec)))
    return out


def math_probes(spec: dict[str, Any], text: str) -> list[Probe]:
    nums = numbers(text)
    out = [Probe("boxed_empty", "trivial", wrap("\\boxed{}", spec)),
           Probe("boxed_0", "trivial", wrap("The answer is \\boxed{0}.", spec)),
           Probe("answer_tag_0", "trivial", "<answer>0</answer>")]
    for n in nums:
        out.append(Probe(f"boxed {n}", "leak", wrap(f"The answer is \\boxed{{{n}}}.", spec)))
    if len(nums) > 1:
        out.append(Probe("hedge_all_literals", "hack",
                         wrap(" or ".join(f"\\boxed{{{n}}}" for n in nums), spec)))
        out.append(Probe("last_number_list", "hack", wrap(", ".join(nums), spec)))
    return out


def json_probes(spec: dict[str, Any], values: list[Any]) -> list[Probe]:
    out = [Probe(f"json {t}", "trivial", wrap(t, spec)) for t in ("{}", "[]", "null", '""', "0", "true", "false")]
    for value in values:
        try:
            out.append(Probe(f"json literal {json.dumps(value)}"[:80], "leak", wrap(json.dumps(value), spec)))
        except (TypeError, ValueError):
            continue
    if spec.get("kind") == "tool_call":
        for tool in spec.get("tools") or []:
            name = (tool.get("function") or tool).get("name") if isinstance(tool, dict) else None
            if isinstance(name, str):
                out.append(Probe(f"tool_call {name} no arguments", "trivial",
                                 wrap(json.dumps({"name": name, "arguments": {}}), spec)))
    return out


def sql_probes(spec: dict[str, Any], values: list[Any]) -> list[Probe]:
    out = [Probe(f"sql {q}", "trivial", wrap(q, spec))
           for q in ("SELECT 1;", "SELECT NULL;", "SELECT * FROM sqlite_master;", "SELECT 1 WHERE 0;")]
    for value in values:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append(Probe(f"sql literal {value}", "leak", wrap(f"SELECT {value};", spec)))
        elif isinstance(value, str):
            out.append(Probe(f"sql literal {value!r}"[:80], "leak",
                             wrap("SELECT '" + value.replace("'", "''") + "';", spec)))
    return out


def probes_for(spec: dict[str, Any], prompt: Any) -> list[Probe]:
    """Every probe of a row (names unique within the row)."""
    text = prompt_text(prompt)
    kind = spec.get("kind", "")
    values = literals(text)
    out = trivial_probes(spec, text)
    if kind in FUNCTION_KINDS:
        out += function_probes(spec, text, values)
    elif kind in ("stdio", "function_tests"):
        out += program_probes(spec, text, values)
    elif kind == "math":
        out += math_probes(spec, text)
    elif kind in ("json_schema", "tool_call"):
        out += json_probes(spec, values)
    elif kind == "sql":
        out += sql_probes(spec, values)
    else:  # format and any kind added later: the literals as text
        out += [Probe(f"text literal {_text_literal(v)!r}"[:80], "leak", wrap(_text_literal(v), spec))
                for v in values]
    unique: dict[str, Probe] = {}
    for probe in out:
        unique.setdefault(probe.name, probe)
    return list(unique.values())
