"""The verification spec: its JSON form, its proto form, and their conversion.

``Spec`` is the typed, in-process form every verifier kind reads. The JSON
form (JSONL files, the trainer's dataset columns) uses plain JSON values; the
proto form carries JSON-valued fields as JSON text (``*_json``) so numbers
keep their exact types. Conversion errors raise ``InvalidSpec``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.errors import InvalidSpec
from verifier_service.special_tokens import DEFAULT_TOKENS, strip_trailing
from verifier_service.wire import wire_text


class _Missing:
    """An unset JSON field (JSON ``null`` is a value). Pickles as a reference to ``MISSING``,
    so ``is MISSING`` holds in the pure-verifier worker processes too."""

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Verifier"].full_name  # rlvr.verifier.v1.Verifier: health, routing
EXTRACT_MODES = ("raw", "fenced_code", "last_fenced_code", "answer_tag")
SCORING_MODES = ("all_or_nothing", "fraction")


@dataclass(frozen=True)
class Case:
    name: str = ""
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    expected: Any = MISSING
    stdin: str = ""
    expected_stdout: str | None = None


@dataclass(frozen=True)
class Spec:
    kind: str
    extract: str = ""
    scoring: str = ""
    timeout_s: float = 0.0
    format_weight: float | None = None
    correctness_weight: float | None = None
    tests: str = ""
    entry_point: str = ""
    setup: str = ""
    cases: tuple[Case, ...] = ()
    float_tolerance: float = 0.0
    fast_fail: bool = False
    exact_types: bool = False
    language: str = ""
    compare: str = ""
    case_timeout_s: float = 0.0
    checker: str = ""
    checker_timeout_s: float = 0.0
    files: dict[str, str] = field(default_factory=dict)
    solution_path: str = ""
    schema: Any = MISSING
    tools: Any = MISSING
    expected_name: str = ""
    expected_arguments: Any = MISSING
    arguments_match: str = ""
    gold: str = ""
    answer_markers: str = ""
    answer_fallback: str = ""
    pattern: str = ""
    match: str = ""

    def is_set(self, name: str) -> bool:
        """Whether a field differs from its default (proto3 cannot tell unset from default)."""
        value = getattr(self, name)
        default = _DEFAULTS[name]
        return value is not MISSING and value != default

    def set_fields(self) -> list[str]:
        return [name for name in _NAMES if name != "kind" and self.is_set(name)]

    def with_defaults(self, **defaults: Any) -> Spec:
        """A copy with each given field filled in where it is unset."""
        return replace(self, **{k: v for k, v in defaults.items() if not self.is_set(k)})


_DEFAULTS = {f.name: (f.default_factory() if callable(f.default_factory) else f.default) for f in fields(Spec)}  # type: ignore[misc]
_NAMES = tuple(f.name for f in fields(Spec))
_JSON_FIELDS = ("schema", "tools", "expected_arguments")
_FLOAT_FIELDS = ("timeout_s", "float_tolerance", "case_timeout_s", "checker_timeout_s")
_OPTIONAL_FLOAT_FIELDS = ("format_weight", "correctness_weight")
_CASE_KEYS = {"name", "args", "kwargs", "expected", "stdin", "expected_stdout"}


def _loads(text: str, where: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidSpec(f"{where} is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise InvalidSpec(f"{where} is nested too deeply") from exc
    return _text(value, where)  # a "\\udcff" escape in the JSON text: a lone surrogate once parsed


def _text(value: Any, where: str) -> Any:
    """``value`` (a string, or a JSON value whose strings and keys are walked) if it is Unicode text;
    InvalidSpec naming ``where`` if it holds a lone UTF-16 surrogate (a JSON ``\\udcff`` escape), which
    UTF-8 and so a proto string cannot carry. A spec is the caller's, so this is their error; a completion
    is the model's and goes through ``wire_text`` instead."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidSpec(f"{where} holds a lone surrogate ({item[exc.start]!r} at offset {exc.start}, "
                                  f"a \\udXXX escape): not Unicode text") from None
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return value


# ---- proto <-> Spec -------------------------------------------------------

def spec_from_proto(msg: pb.VerificationSpec) -> Spec:
    values: dict[str, Any] = {}
    for name in _NAMES:
        if name in _JSON_FIELDS:
            text = getattr(msg, f"{name}_json")
            if text:
                values[name] = _loads(text, f"spec.{name}")
        elif name in _OPTIONAL_FLOAT_FIELDS:
            if msg.HasField(name):
                values[name] = getattr(msg, name)
        elif name == "cases":
            values[name] = tuple(_case_from_proto(i, c) for i, c in enumerate(msg.cases))
        elif name == "files":
            values[name] = dict(msg.files)
        else:
            values[name] = getattr(msg, name)
    return Spec(**values)


def _case_from_proto(index: int, c: pb.TestCase) -> Case:
    where = f"spec.cases[{index}]"
    args = _loads(c.args_json, f"{where}.args") if c.args_json else []
    kwargs = _loads(c.kwargs_json, f"{where}.kwargs") if c.kwargs_json else {}
    if not isinstance(args, list):
        raise InvalidSpec(f"{where}.args must be a JSON array")
    if not isinstance(kwargs, dict):
        raise InvalidSpec(f"{where}.kwargs must be a JSON object")
    return Case(
        name=c.name,
        args=args,
        kwargs=kwargs,
        expected=_loads(c.expected_json, f"{where}.expected") if c.expected_json else MISSING,
        stdin=c.stdin,
        expected_stdout=c.expected_stdout if c.HasField("expected_stdout") else None,
    )


def spec_to_proto(spec: Spec) -> pb.VerificationSpec:
    msg = pb.VerificationSpec(kind=spec.kind)
    for name in spec.set_fields():
        value = getattr(spec, name)
        if name in _JSON_FIELDS:
            setattr(msg, f"{name}_json", json.dumps(value))
        elif name == "cases":
            for c in value:
                pc = msg.cases.add(name=c.name, stdin=c.stdin)
                if c.args:
                    pc.args_json = json.dumps(c.args)
                if c.kwargs:
                    pc.kwargs_json = json.dumps(c.kwargs)
                if c.expected is not MISSING:
                    pc.expected_json = json.dumps(c.expected)
                if c.expected_stdout is not None:
                    pc.expected_stdout = c.expected_stdout
        elif name == "files":
            msg.files.update(value)
        else:
            setattr(msg, name, value)
    return msg


# ---- JSON form <-> Spec ---------------------------------------------------

def spec_from_json(obj: Any) -> Spec:
    """Parses the JSON form; unknown keys and wrong types are InvalidSpec."""
    if not isinstance(obj, dict):
        raise InvalidSpec("spec must be a JSON object")
    known = {f.name for f in fields(Spec)}
    unknown = sorted(set(obj) - known)
    if unknown:
        import difflib

        hints = []
        for name in unknown:
            close = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        kind = obj.get("kind") if isinstance(obj.get("kind"), str) and obj.get("kind") else "KIND"
        raise InvalidSpec(f"unknown spec field(s) {', '.join(hints)}; `verifier-service list --kind {kind}` lists "
                          f"the kind's fields")
    if not isinstance(obj.get("kind"), str) or not obj["kind"]:
        raise InvalidSpec("spec.kind is required (a string naming a verifier kind)")
    values: dict[str, Any] = {}
    for name, value in obj.items():
        where = f"spec.{name}"
        if name in _JSON_FIELDS:
            values[name] = _text(value, where)
        elif name == "cases":
            if not isinstance(value, list):
                raise InvalidSpec(f"{where} must be a list")
            values[name] = tuple(_case_from_json(i, c) for i, c in enumerate(value))
        elif name == "files":
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise InvalidSpec(f"{where} must map file paths to file contents (strings)")
            for path, content in value.items():
                _text(path, f"{where} (a file path)")
                _text(content, f"{where}[{path!r}]")
            values[name] = dict(value)
        elif name in _FLOAT_FIELDS or name in _OPTIONAL_FLOAT_FIELDS:
            if value is None and name in _OPTIONAL_FLOAT_FIELDS:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidSpec(f"{where} must be a number")
            values[name] = float(value)
        elif name in ("fast_fail", "exact_types"):
            if not isinstance(value, bool):
                raise InvalidSpec(f"{where} must be true or false")
            values[name] = value
        else:
            if not isinstance(value, str):
                raise InvalidSpec(f"{where} must be a string")
            values[name] = _text(value, where)
    return Spec(**values)


def _case_from_json(index: int, obj: Any) -> Case:
    where = f"spec.cases[{index}]"
    if not isinstance(obj, dict):
        raise InvalidSpec(f"{where} must be an object")
    unknown = sorted(set(obj) - _CASE_KEYS)
    if unknown:
        raise InvalidSpec(f"{where} has unknown key(s) {unknown}; valid keys: {sorted(_CASE_KEYS)}")
    args = obj.get("args", [])
    kwargs = obj.get("kwargs", {})
    if not isinstance(args, list):
        raise InvalidSpec(f"{where}.args must be a list")
    if not isinstance(kwargs, dict):
        raise InvalidSpec(f"{where}.kwargs must be an object")
    for key in ("name", "stdin"):
        if not isinstance(obj.get(key, ""), str):
            raise InvalidSpec(f"{where}.{key} must be a string")
    expected_stdout = obj.get("expected_stdout")
    if expected_stdout is not None and not isinstance(expected_stdout, str):
        raise InvalidSpec(f"{where}.expected_stdout must be a string")
    for key in _CASE_KEYS:
        _text(obj.get(key), f"{where}.{key}")
    return Case(
        name=obj.get("name", ""),
        args=args,
        kwargs=kwargs,
        expected=obj.get("expected", MISSING),
        stdin=obj.get("stdin", ""),
        expected_stdout=expected_stdout,
    )


def spec_to_json(spec: Spec) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": spec.kind}
    for name in spec.set_fields():
        value = getattr(spec, name)
        if name == "cases":
            value = [_case_to_json(c) for c in value]
        out[name] = value
    return out


def _case_to_json(c: Case) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if c.name:
        out["name"] = c.name
    if c.args:
        out["args"] = c.args
    if c.kwargs:
        out["kwargs"] = c.kwargs
    if c.expected is not MISSING:
        out["expected"] = c.expected
    if c.stdin:
        out["stdin"] = c.stdin
    if c.expected_stdout is not None:
        out["expected_stdout"] = c.expected_stdout
    return out


# ---- requests and results -------------------------------------------------

def is_catalog_ref(obj: Any) -> bool:
    """Whether a JSON spec names a catalog verifier: ``{"verifier": "team/name@1", <per-sample fields>}``."""
    return isinstance(obj, dict) and "verifier" in obj


def fields_from_json(obj: dict[str, Any]) -> pb.VerificationSpec:
    """The per-sample fields of a catalog reference (JSON form, ``verifier`` excluded) as a kind-less spec."""
    if "kind" in obj:
        raise InvalidSpec("a catalog verifier fixes the kind: send `verifier` or `kind`, not both")
    message = spec_to_proto(spec_from_json({**obj, "kind": "-"}))
    message.ClearField("kind")
    return message


def canonical_json(obj: Any) -> str:
    """One text per JSON value (sorted keys, no spaces, UTF-8 kept): what the catalog's content hash, the
    inspection's sample-set hash and the trainer's reward-config hash are taken over, so they agree."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def normal_spec_json(obj: Any) -> dict[str, Any]:
    """A JSON spec or catalog reference in normal form (defaults dropped), so equal ones hash equally."""
    if is_catalog_ref(obj):
        ref = obj["verifier"]
        if not isinstance(ref, str) or not ref:
            raise InvalidSpec("verifier must name a catalog entry: team/name@version")
        fields_json = spec_to_json(spec_from_json({**{k: v for k, v in obj.items() if k != "verifier"}, "kind": "-"}))
        fields_json.pop("kind")
        return {"verifier": ref, **fields_json}
    return spec_to_json(spec_from_json(obj))


PLAIN_LABEL_HELP = ("the label column must hold each row's verification spec (e.g. {\"kind\": \"math\", \"gold\": "
                    "\"12\"}; `trainer data convert` writes them), or a catalog verifier must be named so that a plain "
                    "label is its gold answer")


def _native_label_problem(label: dict) -> str | None:
    """A label in another trainer's native shape (not a spec): what it is, in words."""
    if "ground_truth" in label or "style" in label:
        return "verl's reward_model field ({ground_truth, style}), not a verification spec"
    if {"inputs", "outputs"} <= set(label):
        return "test cases ({inputs, outputs}, as verl and PRIME store them), not a verification spec"
    return None


def spec_from_label(label: Any, verifier: str = "", *, strict: bool = False, hint: str = PLAIN_LABEL_HELP) -> Any:
    """A dataset's label (its ground truth, as a trainer hands it over: OpenRLHF's ``labels``, verl's
    ``ground_truth``) as the spec JSON of one request: a spec (a JSON object or its text), or, with ``verifier``
    (a catalog reference), that verifier's per-sample fields (an object) or its ``gold`` answer (plain text).
    ``strict``: a label that names a kind or verifier of its own beside ``verifier`` is refused (where the
    verifier is named for the whole request); else it is used as it is. A plain-text label without a verifier, or
    another trainer's native label, is refused with ``hint`` (how to send a spec, in the caller's terms)."""
    if isinstance(label, (bytes, bytearray)):
        label = label.decode("utf-8")
    if isinstance(label, str):
        text = label.strip()
        if text.startswith("{"):
            try:
                label = json.loads(text)
            except ValueError as exc:
                raise InvalidSpec(f"the label is not valid JSON: {exc}") from None
        elif verifier:
            return {"verifier": verifier, "gold": label}
        else:
            shown = text if len(text) <= 40 else text[:37] + "..."
            raise InvalidSpec(f"the label is plain text ({shown!r}), not a verification spec: {hint}")
    if isinstance(label, dict) and not verifier and "kind" not in label and "verifier" not in label:
        problem = _native_label_problem(label)
        if problem:
            raise InvalidSpec(f"the label is {problem}: {hint}")
    if not isinstance(label, dict):
        what = "the per-sample fields of " + verifier if verifier else "a verification spec"
        raise InvalidSpec(f"the label must be {what} (a JSON object or its text), got {type(label).__name__}")
    if verifier and ("kind" in label or "verifier" in label):
        if strict:
            raise InvalidSpec(f"the label names a kind or verifier, but {verifier} is named for the whole request: "
                              "send the per-sample fields only")
        return label
    return {"verifier": verifier, **label} if verifier else label


def response_text(query: str, prompt: str | None, strip: tuple[str, ...] = DEFAULT_TOKENS) -> str:
    """What the model wrote, from OpenRLHF's query (prompt and response as one text): the query after its prompt
    (the whole query when the prompt is not in it), less the special tokens ``strip`` at its end."""
    if prompt:
        if query.startswith(prompt):
            return strip_trailing(query[len(prompt):], strip)
        at = query.find(prompt)
        if at >= 0:
            return strip_trailing(query[at + len(prompt):], strip)
    return strip_trailing(query, strip)


def request_from_json(obj: Any) -> pb.VerifyRequest:
    """One JSONL line of `verifier-service verify` as a VerifyRequest. Its spec is an inline spec
    (``{"kind": ...}``) or a catalog reference (``{"verifier": "team/name@1", "gold": "12"}``)."""
    if not isinstance(obj, dict):
        raise InvalidSpec("each request must be a JSON object with id, completion and spec")
    unknown = sorted(set(obj) - {"id", "completion", "spec", "verification", "prompt", "reference"})
    if unknown:
        raise InvalidSpec(f"unknown request field(s) {unknown}; valid: id, completion, spec (or verification, the "
                          "column `trainer data convert` writes); prompt and reference are ignored")
    rid = obj.get("id", "")
    if isinstance(rid, (int, float)) and not isinstance(rid, bool):
        rid = str(rid)
    if not isinstance(rid, str):
        raise InvalidSpec("id must be a string or a number")
    _text(rid, "id")
    completion = obj.get("completion")
    if not isinstance(completion, str):
        raise InvalidSpec(f"request {rid!r}: completion must be a string")
    completion = wire_text(completion)  # model output: lone surrogates (a JSON \udcff escape) are no error
    if "spec" in obj and "verification" in obj:
        raise InvalidSpec(f"request {rid!r}: give spec or verification, not both")
    spec = obj["verification"] if "verification" in obj else obj.get("spec")
    if isinstance(spec, str):  # the converter's column: the spec's JSON text (rows of many kinds share a schema)
        spec = _loads(spec, f"request {rid!r}: spec")
    if is_catalog_ref(spec):
        ref = spec["verifier"]
        if not isinstance(ref, str) or not ref:
            raise InvalidSpec(f"request {rid!r}: verifier must name a catalog entry: team/name@version")
        _text(ref, f"request {rid!r}: verifier")
        try:
            fields = fields_from_json({k: v for k, v in spec.items() if k != "verifier"})
        except InvalidSpec as exc:
            raise InvalidSpec(f"request {rid!r}: {exc}" if rid else str(exc)) from exc
        return pb.VerifyRequest(id=rid, completion=completion, verifier=ref, fields=fields)
    try:
        message = spec_to_proto(spec_from_json(spec))
    except InvalidSpec as exc:
        raise InvalidSpec(f"request {rid!r}: {exc}" if rid else str(exc)) from exc
    return pb.VerifyRequest(id=rid, completion=completion, spec=message)


def result_to_json(result: pb.VerifyResult) -> dict[str, Any]:
    """A VerifyResult as the JSON object `verifier-service verify` writes."""
    out: dict[str, Any] = {
        "id": result.id,
        "kind": result.kind,
        "verdict": pb.Verdict.Name(result.verdict),
        "reward": result.reward if result.HasField("reward") else None,
        "format_score": result.format_score,
        "correctness_score": result.correctness_score,
        "tests_passed": result.tests_passed,
        "tests_total": result.tests_total,
        "detail": result.detail,
        "tests": [
            {"name": t.name, "verdict": pb.Verdict.Name(t.verdict), "detail": t.detail,
             "duration_s": round(t.duration_s, 6)}
            for t in result.tests
        ],
        **({"verifier_version": result.verifier_version} if result.verifier_version else {}),
        **({"sandbox_image": result.sandbox_image} if result.sandbox_image else {}),
        "extracted": result.extracted,
        "stdout_tail": result.stdout_tail,
        "stderr_tail": result.stderr_tail,
        "timings": {
            "queue_s": round(result.timings.queue_s, 6),
            "run_s": round(result.timings.run_s, 6),
            "total_s": round(result.timings.total_s, 6),
        },
    }
    if out["reward"] is not None and not math.isfinite(out["reward"]):
        out["reward"] = None
    return out
