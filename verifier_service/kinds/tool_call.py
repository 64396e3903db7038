"""tool_call: the completion must call the offered tools, with valid arguments.

The calls are the whole completion as JSON or, failing that, the JSON inside
every ``<tool_call>...</tool_call>`` block (each tag closed, none left open).
Accepted shapes, in the completion or in each block::

    {"name": ..., "arguments": {...} | "<JSON text>"}       ("parameters" is an alias of "arguments")
    {"type": "function", "function": {"name": ..., "arguments": ...}}
    {"tool_calls": [call, ...]}  or  [call, ...]

The strict rule: every call is checked (a known tool, arguments valid against
its schema), and any malformed call makes the completion MALFORMED. JSON is
parsed strictly (``strict_json``: no NaN / Infinity, no duplicate keys). When
the spec sets ``expected_name`` or ``expected_arguments`` it describes one
call, so the completion must make exactly one: several calls (a hedge over the
candidates) fail every test.

Tests: ``known_tool``, ``arguments_schema`` and, when the spec sets them,
``expected_name`` and ``expected_arguments`` (``exact`` or ``subset``); with
several calls (and no expectation) each call's, named ``call <n>: ...``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from referencing.exceptions import Unresolvable

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import register, strict_json
from verifier_service.kinds.base import Param, PureKind
from verifier_service.kinds.json_schema import check_schema, schema_problem, unresolvable
from verifier_service.kinds.tags import count_tags, tagged_blocks
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

ARGUMENTS_MATCH = ("exact", "subset")
_NO_PARAMETERS: dict[str, Any] = {"type": "object"}


def tool_schemas(tools: Any) -> dict[str, Any]:
    """Tool name -> parameters schema; InvalidSpec for a malformed tool list."""
    if not isinstance(tools, list) or not tools:
        raise InvalidSpec("spec.tools must be a non-empty list of tools")
    out: dict[str, Any] = {}
    for i, tool in enumerate(tools):
        where = f"spec.tools[{i}]"
        if not isinstance(tool, dict):
            raise InvalidSpec(f"{where} must be an object: {{\"name\", \"parameters\"}} or "
                              f"{{\"type\": \"function\", \"function\": {{...}}}}")
        fn = tool
        if "function" in tool:
            fn, where = tool["function"], f"{where}.function"
            if not isinstance(fn, dict):
                raise InvalidSpec(f"{where} must be an object with name and parameters")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidSpec(f"{where}.name is required (a non-empty string)")
        if name in out:
            raise InvalidSpec(f"spec.tools names {name!r} twice")
        parameters = fn.get("parameters", _NO_PARAMETERS)
        check_schema(parameters, f"{where}.parameters")
        out[name] = parameters
    return out


def _json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: 1 == 1.0, but true != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=False))
    return type(a) is type(b) and a == b


@lru_cache(maxsize=256)
def _cached_tool_schemas(key: str) -> dict[str, Any]:
    return tool_schemas(json.loads(key))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _show(value: Any) -> str:
    return truncate(json.dumps(value), 200)


def arguments_difference(actual: Any, expected: Any, subset: bool, path: str = "$") -> str | None:
    """The first place where ``actual`` differs from ``expected``, or None.

    With ``subset``, objects (at any depth, in lists too) may carry keys that
    ``expected`` does not name; lists must still have the same length.
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            if key not in actual:
                return f"{path}.{key} is missing (expected {_show(value)})"
            found = arguments_difference(actual[key], value, subset, f"{path}.{key}")
            if found:
                return found
        extra = [k for k in actual if k not in expected]
        if extra and not subset:
            return f"{path} has unexpected key(s) {truncate(', '.join(map(repr, extra)), 200)}"
        return None
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for i, (a, e) in enumerate(zip(actual, expected, strict=False)):
            found = arguments_difference(a, e, subset, f"{path}[{i}]")
            if found:
                return found
        return None
    if _json_equal(actual, expected):
        return None
    return f"{path}: expected {_show(expected)}, got {_show(actual)}"


def _find_calls(text: str) -> tuple[list[Any], str | None]:
    """The parsed JSON values that hold the calls (the whole completion, else every ``<tool_call>`` block), or
    an error saying why there are none."""
    body = text.strip()
    value, error = strict_json.parse(body)
    if error is None:
        return [value], None
    blocks = tagged_blocks(text, "<tool_call>", "</tool_call>")
    opened = count_tags(text, "<tool_call>")
    if not blocks and not opened:
        return [], f"no tool call: the completion is not JSON ({error}) and has no <tool_call> block"
    if opened != len(blocks) or count_tags(text, "</tool_call>") != len(blocks):
        return [], "a <tool_call> tag is not closed (or closed twice): every block must be <tool_call>...</tool_call>"
    values = []
    for i, block in enumerate(blocks):
        value, block_error = strict_json.parse(block.strip())
        if block_error is not None:
            return [], f"<tool_call> block {i + 1} is not valid JSON: {block_error}"
        values.append(value)
    return values, None


def _calls_of(values: list[Any]) -> tuple[list[Any], str | None]:
    """Every call the values hold, in order: a call, a list of calls or ``{"tool_calls": [...]}`` each."""
    calls: list[Any] = []
    for value in values:
        if isinstance(value, dict) and "tool_calls" in value:
            if set(value) - {"tool_calls", "content", "role"}:
                return [], "an object with \"tool_calls\" must hold nothing else but \"role\" and \"content\""
            value = value["tool_calls"]
            if not isinstance(value, list):
                return [], "\"tool_calls\" must be a list of calls"
        if isinstance(value, list):
            if not value:
                return [], "the list of tool calls is empty"
            calls.extend(value)
        else:
            calls.append(value)
    return calls, None


def _parse_call(call: Any) -> tuple[str, dict[str, Any], str | None]:
    """(name, arguments, error) of one call. Strict: an OpenAI call ``{"type": "function", "function": {...}}``
    names the tool only inside ``function``; a call gives its arguments once (``arguments`` or its alias
    ``parameters``), as an object or as JSON text of one."""
    if not isinstance(call, dict):
        return "", {}, f"a tool call must be a JSON object, not {_json_type(call)}"
    fn = call
    if "function" in call:
        fn = call["function"]
        if not isinstance(fn, dict):
            return "", {}, "\"function\" of a tool call must be an object with name and arguments"
        if set(call) & {"name", "arguments", "parameters"}:
            return "", {}, "a tool call names its tool and arguments either in \"function\" or beside it, not both"
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        return "", {}, "the tool call has no \"name\" (a non-empty string)"
    if "arguments" in fn and "parameters" in fn:
        return name, {}, f"the call of {name!r} gives both \"arguments\" and \"parameters\""
    arguments = fn.get("arguments", fn.get("parameters", {}))
    if isinstance(arguments, str):  # OpenAI encodes the arguments as JSON text
        if not arguments.strip():
            arguments = {}
        else:
            arguments, error = strict_json.parse(arguments)
            if error is not None:
                return name, {}, f"the arguments of {name!r} are not valid JSON: {error}"
    if not isinstance(arguments, dict):
        return name, {}, f"the arguments of {name!r} must be a JSON object, not {_json_type(arguments)}"
    return name, arguments, None


@register
class ToolCall(PureKind):
    name = "tool_call"
    description = ("the completion must call one of the given tools (JSON or a <tool_call> block) with arguments "
                   "valid against the tool's parameters schema, optionally the expected tool and arguments")
    params = (
        Param("tools", "json", "the offered tools: OpenAI {type: function, function: {name, parameters}} "
              "or {name, parameters}", required=True),
        Param("expected_name", "string", "the tool that must be called"),
        Param("expected_arguments", "json", "the arguments the call must carry (a JSON object)"),
        Param("arguments_match", "string", "exact: arguments equal expected_arguments; subset: every expected key "
              "present with an equal value", default="exact", choices=ARGUMENTS_MATCH),
    )
    default_extract = "raw"

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "tools")
        schemas = tool_schemas(spec.tools)
        if spec.is_set("expected_name") and spec.expected_name not in schemas:
            raise InvalidSpec(f"spec.expected_name {spec.expected_name!r} is not one of the tools: "
                              f"{', '.join(schemas)}")
        spec = spec.with_defaults(arguments_match="exact")
        if spec.arguments_match not in ARGUMENTS_MATCH:
            raise InvalidSpec(f"spec.arguments_match {spec.arguments_match!r} is not valid; valid: "
                              f"{', '.join(ARGUMENTS_MATCH)}")
        if spec.is_set("expected_arguments"):
            if not isinstance(spec.expected_arguments, dict):
                raise InvalidSpec("spec.expected_arguments must be a JSON object")
            if spec.is_set("expected_name") and spec.arguments_match == "exact":
                try:
                    problem = schema_problem(schemas[spec.expected_name], spec.expected_arguments)
                except Unresolvable as exc:
                    raise InvalidSpec(f"the parameters schema of {spec.expected_name!r} has an unresolvable "
                                      f"$ref: {truncate(str(exc), 300)}") from None
                if problem is not None:
                    raise InvalidSpec(f"spec.expected_arguments do not satisfy the parameters of "
                                      f"{spec.expected_name!r}: {problem}")
        return spec

    def check(self, text: str, spec: Spec) -> Outcome:
        extracted = truncate(text.strip())
        values, error = _find_calls(text)
        if error is None:
            values, error = _calls_of(values)
        if error is not None:
            return Outcome.malformed(error, extracted)
        calls = []
        for i, call in enumerate(values):
            name, arguments, error = _parse_call(call)
            if error is not None:
                where = f"call {i + 1} of {len(values)}: " if len(values) > 1 else ""
                return Outcome.malformed(where + error, extracted)
            calls.append((name, arguments))
        shown = [{"name": name, "arguments": arguments} for name, arguments in calls]
        extracted = _dumps_or(shown[0] if len(shown) == 1 else shown, extracted)
        schemas = _cached_tool_schemas(json.dumps(spec.tools, sort_keys=True))
        expects = spec.is_set("expected_name") or spec.is_set("expected_arguments")
        if expects and len(calls) != 1:  # a hedge: several calls where one is expected
            why = f"the spec expects exactly one call; the completion made {len(calls)}"
            names = ["known_tool", "arguments_schema"] + [n for n in ("expected_name", "expected_arguments")
                                                          if spec.is_set(n)]
            return Outcome.from_tests([TestOutcome(n, Verdict.FAILED, why) for n in names], detail=why,
                                      extracted=extracted)
        tests: list[TestOutcome] = []
        for i, (name, arguments) in enumerate(calls):
            prefix = f"call {i + 1}: " if len(calls) > 1 else ""
            tests += [TestOutcome(prefix + t.name, t.verdict, t.detail)
                      for t in self._call_tests(name, arguments, schemas, spec)]
        failing = next((t for t in tests if not t.passed), None)
        detail = (f"{failing.name}: {failing.detail}" if failing else
                  f"valid call of {calls[0][0]!r}" if len(calls) == 1 else f"{len(calls)} valid calls")
        return Outcome.from_tests(tests, detail=detail, extracted=extracted)

    @staticmethod
    def _call_tests(name: str, arguments: dict[str, Any], schemas: dict[str, Any], spec: Spec
                    ) -> list[TestOutcome]:
        known = name in schemas
        tests = [TestOutcome("known_tool", Verdict.PASSED) if known else
                 TestOutcome("known_tool", Verdict.FAILED, f"unknown tool {truncate(name, 100)!r}; "
                             f"tools: {truncate(', '.join(schemas), 300)}")]
        if known:
            try:
                problem = schema_problem(schemas[name], arguments)
            except Unresolvable as exc:  # (the answer chose to reach it: a verdict, never INFRA_ERROR)
                problem = unresolvable(exc)
            tests.append(TestOutcome("arguments_schema", Verdict.PASSED) if problem is None else
                         TestOutcome("arguments_schema", Verdict.FAILED, problem))
        else:
            tests.append(TestOutcome("arguments_schema", Verdict.FAILED, "not checked: unknown tool"))
        if spec.is_set("expected_name"):
            tests.append(TestOutcome("expected_name", Verdict.PASSED) if name == spec.expected_name else
                         TestOutcome("expected_name", Verdict.FAILED,
                                     f"expected {spec.expected_name!r}, got {truncate(name, 100)!r}"))
        if spec.is_set("expected_arguments"):
            difference = arguments_difference(arguments, spec.expected_arguments,
                                              subset=spec.arguments_match == "subset")
            tests.append(TestOutcome("expected_arguments", Verdict.PASSED) if difference is None else
                         TestOutcome("expected_arguments", Verdict.FAILED, difference))
        return tests


def _dumps_or(value: Any, default: str) -> str:
    try:
        return truncate(json.dumps(value))
    except (ValueError, TypeError, RecursionError):
        return default
