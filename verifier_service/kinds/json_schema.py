"""json_schema: the completion must be a JSON document that a JSON Schema accepts.

The schema's dialect follows its ``$schema`` (draft 2020-12 when absent);
``format`` keywords are checked (asserted, in every draft) by jsonschema's format checker with its optional format
libraries (the ``format-nongpl`` extra): ``CHECKED_FORMATS``. A schema naming a format that cannot be checked
is refused (INVALID_ARGUMENT), never passed as if any string met it. Validators are compiled once per schema and
cached. The helpers here are shared with the tool_call kind.
"""

from __future__ import annotations

import json
import logging
import warnings
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import SchemaError, best_match
from jsonschema.validators import validator_for
from referencing.exceptions import Unresolvable

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import register, strict_json
from verifier_service.kinds.base import Param, PureKind
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

_ERROR_LIMIT = 500
log = logging.getLogger(__name__)


def _validator_class(schema: Any) -> Any:
    with warnings.catch_warnings():  # an unknown $schema URI falls back to the latest draft
        warnings.simplefilter("ignore", DeprecationWarning)
        return validator_for(schema, default=Draft202012Validator)


def check_schema(schema: Any, where: str) -> None:
    """Raises InvalidSpec unless ``schema`` is a valid JSON Schema of its dialect."""
    if not isinstance(schema, (dict, bool)):
        raise InvalidSpec(f"{where} must be a JSON Schema (a JSON object or a boolean), "
                          f"not {type(schema).__name__}")
    try:
        _validator_class(schema).check_schema(schema)
    except SchemaError as exc:
        raise InvalidSpec(f"{where} is not a valid JSON Schema: {truncate(exc.message, _ERROR_LIMIT)} "
                          f"at {exc.json_path}") from None
    _check_refs(schema, where)
    _check_formats(schema, where)


def _format_checker() -> FormatChecker:
    """Every format jsonschema can check (those whose library is installed), each by its latest definition:
    draft 2020-12's checkers (``time`` is RFC 3339's full-time, not draft 3's ``%H:%M:%S``), plus the older
    drafts' formats it lacks (``color``)."""
    checker = FormatChecker()
    checker.checkers = {**FormatChecker().checkers, **Draft202012Validator.FORMAT_CHECKER.checkers}
    return checker


FORMAT_CHECKER = _format_checker()
CHECKED_FORMATS = frozenset(FORMAT_CHECKER.checkers)  # the format values this service checks


def _check_formats(schema: Any, where: str) -> None:
    """Raises InvalidSpec for a ``format`` keyword this service cannot check: jsonschema passes any string for
    a format it has no checker for, which would reward output that breaks the spec."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            value = node.get("format")
            if isinstance(value, str) and value not in CHECKED_FORMATS:
                raise InvalidSpec(f"{where} names format {truncate(value, 100)!r}, which this service cannot "
                                  f"check (a string of any shape would pass); checked formats: "
                                  f"{', '.join(sorted(CHECKED_FORMATS))}. Use a pattern instead")
            stack.extend(v for k, v in node.items() if k not in _DATA_KEYWORDS)
        elif isinstance(node, list):
            stack.extend(node)


_DATA_KEYWORDS = ("enum", "const", "default", "examples")  # their values are data, not schemas


def _check_refs(schema: Any, where: str) -> None:
    """Raises InvalidSpec for a ``$ref`` the schema cannot resolve: found at validation, it is the caller's
    mistake; found while checking an answer, the answer could have steered into or around it. Skipped for
    schemas with a nested ``$id`` (a ref there resolves against that base)."""
    refs: list[str] = []
    stack = [(schema, True)]
    while stack:
        node, root = stack.pop()
        if isinstance(node, dict):
            if not root and isinstance(node.get("$id"), str):
                return
            if isinstance(node.get("$ref"), str):
                refs.append(node["$ref"])
            stack.extend((v, False) for k, v in node.items() if k not in _DATA_KEYWORDS)
        elif isinstance(node, list):
            stack.extend((v, False) for v in node)
    if not refs:
        return
    try:
        resolver = _validator_class(schema)(schema)._resolver
    except AttributeError:  # a jsonschema without the referencing resolver: checked at use
        return
    for ref in dict.fromkeys(refs):
        try:
            resolver.lookup(ref)
        except Unresolvable as exc:
            raise InvalidSpec(f"{where} has a $ref that cannot be resolved: {truncate(ref, 200)!r} "
                              f"({truncate(str(exc), 200)})") from None


@lru_cache(maxsize=512)
def _compile(key: str) -> Any:
    schema = json.loads(key)
    return _validator_class(schema)(schema, format_checker=FORMAT_CHECKER)


_BY_OBJECT: dict[int, tuple[Any, Any]] = {}  # id(schema) -> (schema, validator): skips the JSON key per check
_BY_OBJECT_MAX = 256


def compiled_validator(schema: Any) -> Any:
    """A (cached) validator of ``schema`` that also checks ``format``.

    The checks of one batch share one spec object (the engine caches specs, and a
    chunk sent to a worker is pickled with its shared objects once), so the same
    schema object is looked up by identity first; the entry holds the schema, so
    its id is not reused while it is cached. Specs are never mutated."""
    hit = _BY_OBJECT.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    validator = _compile(json.dumps(schema, sort_keys=True))
    if len(_BY_OBJECT) >= _BY_OBJECT_MAX:
        _BY_OBJECT.clear()
    _BY_OBJECT[id(schema)] = (schema, validator)
    return validator


def schema_problem(schema: Any, instance: Any) -> str | None:
    """The most relevant validation error as "<message> at <json path>", or None if ``instance`` is valid.

    Errors that come from the schema itself (an unresolvable ``$ref``) raise.
    Model output nested too deeply to validate counts as invalid.
    """
    try:
        error = best_match(compiled_validator(schema).iter_errors(instance))
    except RecursionError:
        return "the value is nested too deeply to validate"
    if error is None:
        return None
    return f"{truncate(error.message, _ERROR_LIMIT)} at {error.json_path}"


def unresolvable(exc: Unresolvable) -> str:
    """The failure of an answer whose validation reached a ``$ref`` the schema cannot resolve (logged: the
    spec needs fixing)."""
    log.error("a JSON Schema has an unresolvable $ref: %s", exc)
    return f"the schema has an unresolvable $ref here, so this answer cannot be valid: {truncate(str(exc), 300)}"


def met_by_every_answer(schema: Any, exc: Unresolvable) -> bool:
    """Whether the unresolvable ``$ref`` is the schema's own root ``$ref``, which validation of any instance
    meets first (the only case no answer can steer into or around)."""
    return isinstance(schema, dict) and schema.get("$ref") == getattr(exc, "ref", None)


@register
class JsonSchema(PureKind):
    name = "json_schema"
    description = "the completion must be a JSON document valid against a JSON Schema (draft 2020-12 or per $schema)"
    params = (
        Param("schema", "json", "the JSON Schema; its $schema picks the draft (default 2020-12)", required=True),
    )
    default_extract = "raw"

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "schema")
        check_schema(spec.schema, "spec.schema")
        return spec

    def check(self, text: str, spec: Spec) -> Outcome:
        body = text.strip()
        extracted = truncate(body)
        value, error = strict_json.parse(body)
        if error is not None:
            return Outcome.malformed(f"not valid JSON: {error}", extracted)
        try:
            problem = schema_problem(spec.schema, value)
        except Unresolvable as exc:
            if met_by_every_answer(spec.schema, exc):  # no answer caused it: no reward either way
                return Outcome.infra_error(f"spec.schema has an unresolvable $ref: {truncate(str(exc), 300)}")
            # The schema's fault, but the answer chose to reach that part of it (another answer may not): a
            # verdict, never INFRA_ERROR, which would let a completion steer out of its penalty.
            problem = unresolvable(exc)
        if problem is None:
            return Outcome.from_tests([TestOutcome("schema", Verdict.PASSED)],
                                      detail="valid against the schema", extracted=extracted)
        return Outcome.from_tests([TestOutcome("schema", Verdict.FAILED, problem)],
                                  detail=f"schema violation: {problem}", extracted=extracted)
