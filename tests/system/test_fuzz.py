"""A fuzzing pass over the API: each bad input gets the status it deserves, never INTERNAL or UNKNOWN.

Seeded random inputs in families: bytes that are no message (random, bit-flipped
valid requests, bad UTF-8 in a string field, groups nested past protobuf's
limit), huge payloads (over the message limit, the completion limit, the batch
limit), invalid JSON schemas and JSON nested 100,000 deep, unknown kinds and
malformed spec fields, unknown catalog entries and namespaces out of reach,
wrong keys, a tenant over its rate. The service must stay up and SERVING, and
answer a valid call correctly afterwards. (Keys and catalog references are
fuzzed more finely in test_tenancy.py.)
"""

from __future__ import annotations

import json
import random
import string
from collections import Counter

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.spec import request_from_json
from verifier_service.tenancy.auth import new_key

from support.tenancy_setup import EXAMPLE_CATALOG, GSM8K, JSON_OBJECT, Keys, ref_request, write_tenants

pytestmark = pytest.mark.docker

SETTINGS = {
    "alpha": {"use": ["math", "format"]},
    "beta": {"use": ["code"], "inline_specs": False},
    "slow": {"rate": 1, "burst": 2},
}
MAX_MESSAGE = 1024 * 1024
MAX_COMPLETION = 64 * 1024
MAX_BATCH = 64
CLIENT_ERRORS = {"INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED", "UNAUTHENTICATED", "RESOURCE_EXHAUSTED",
                 "FAILED_PRECONDITION"}
METADATA_CHARS = string.ascii_letters + string.digits + string.punctuation + " "  # what metadata may hold
VERIFY = "/rlvr.verifier.v1.Verifier/Verify"
VERIFY_BATCH = "/rlvr.verifier.v1.Verifier/VerifyBatch"


@pytest.fixture
def fuzz_svc(make_service, tmp_path):
    keys = Keys(*SETTINGS)
    path = write_tenants(tmp_path / "tenants.yaml", keys, SETTINGS)
    svc = make_service(tenants=path, catalog=str(EXAMPLE_CATALOG), sandbox_pool=False, max_message_bytes=MAX_MESSAGE,
                       max_completion_bytes=MAX_COMPLETION, max_batch_size=MAX_BATCH)
    return svc, keys


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def nested_groups(depth: int) -> bytes:
    """Unknown field 999 as a group, nested ``depth`` times (protobuf decoders limit recursion)."""
    start, end = (999 << 3) | 3, (999 << 3) | 4

    def varint(n: int) -> bytes:
        out = b""
        while True:
            byte, n = n & 0x7F, n >> 7
            out += bytes([byte | (0x80 if n else 0)])
            if not n:
                return out

    return varint(start) * depth + varint(end) * depth


class Fuzzer:
    def __init__(self, svc, keys: Keys, seed: int = 11):
        self.rng = random.Random(seed)
        self.svc, self.keys = svc, keys
        self.raw = {m: svc.channel.unary_unary(m, request_serializer=None, response_deserializer=None)
                    for m in (VERIFY, VERIFY_BATCH)}
        self.counts: Counter = Counter()
        self.codes: Counter = Counter()
        self.failures: list = []

    def junk(self, n: int, alphabet: str = string.printable) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randint(0, n)))

    def call(self, family: str, expect: set[str], body, method: str = VERIFY, tenant: str | None = "alpha",
             metadata=None) -> str:
        """Sends ``body`` (a message or bytes); records a failure unless the code is one of ``expect``."""
        if metadata is None:
            metadata = self.keys.metadata(tenant) if tenant else ()
        data = body if isinstance(body, bytes) else body.SerializeToString()
        try:
            self.raw[method](data, metadata=metadata, timeout=60)
            code = "OK"
        except grpc.RpcError as exc:
            code = exc.code().name
            if not exc.details():
                self.failures.append((family, code, "no message"))
        self.counts[family] += 1
        self.codes[code] += 1
        if code not in expect or code in ("INTERNAL", "UNKNOWN"):
            self.failures.append((family, code, sorted(expect), repr(data[:120])))
        return code


def inline(completion: str, spec: dict, id: str = "f") -> pb.VerifyRequest:
    return request_from_json({"id": id, "completion": completion, "spec": spec})


def test_fuzzing_the_api_gives_the_right_status_codes(fuzz_svc, record_property):
    svc, keys = fuzz_svc
    f = Fuzzer(svc, keys)
    rng = f.rng
    valid = [inline("12", {"kind": "format", "pattern": r"\d+"}),
             inline('{"a": 1}', {"kind": "json_schema", "schema": {"type": "object"}}),
             ref_request(GSM8K, "The answer is \\boxed{4}", gold="4"),
             ref_request(JSON_OBJECT, '{"answer": "x", "confidence": 0.5}')]

    # -- bytes that are not a message of the method ------------------------------------------------------
    for _ in range(60):
        body = bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
        f.call("random bytes", CLIENT_ERRORS | {"OK"}, body, rng.choice([VERIFY, VERIFY_BATCH]))
    for _ in range(150):  # valid requests with a few bytes flipped: anything but a fault of the service
        data = bytearray(rng.choice(valid).SerializeToString())
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        f.call("bit flips", CLIENT_ERRORS | {"OK"}, bytes(data))
    for _ in range(20):
        marker = "Z" * 8
        data = inline(marker, {"kind": "format", "pattern": "x"}).SerializeToString()
        bad = bytes(rng.choice([0xFF, 0xFE, 0xC0, 0x80, 0xED]) for _ in range(8))
        f.call("bad UTF-8", {"OK"}, data.replace(marker.encode(), bad))  # in the completion: its verdict
        in_id = inline("x", {"kind": "format", "pattern": "x"}, id=marker).SerializeToString()
        f.call("bad UTF-8", {"INVALID_ARGUMENT"}, in_id.replace(marker.encode(), bad))  # in the id: the caller's
    for depth in (50, 101, 1000, 20000):
        f.call("nested groups", {"INVALID_ARGUMENT", "OK"} if depth < 100 else {"INVALID_ARGUMENT"},
               valid[0].SerializeToString() + nested_groups(depth))

    # -- huge payloads ---------------------------------------------------------------------------------------
    f.call("huge payload", {"RESOURCE_EXHAUSTED"}, inline("x" * (MAX_MESSAGE + 10), {"kind": "format", "pattern": "x"}))
    f.call("huge payload", {"OK"}, inline("1" * (MAX_COMPLETION + 1), {"kind": "format",  # its verdict: MALFORMED
                                                                       "pattern": "1+"}))
    batch = pb.VerifyBatchRequest(requests=[valid[0]] * (MAX_BATCH + 1))
    f.call("huge payload", {"INVALID_ARGUMENT"}, batch, VERIFY_BATCH)
    f.call("huge payload", {"INVALID_ARGUMENT", "OK"},
           inline("1", {"kind": "format", "pattern": "a" * (MAX_MESSAGE // 2)}))

    # -- invalid schemas and deep nesting ---------------------------------------------------------------------
    bad_schemas = [{"type": 12}, {"type": "no-such-type"}, {"minimum": "x"}, {"required": "a"},
                   {"properties": []}, {"$ref": 5}, {"pattern": "("}, {"items": 3}]
    for schema in bad_schemas:
        f.call("invalid schema", {"INVALID_ARGUMENT"}, inline("{}", {"kind": "json_schema", "schema": schema}))
    for depth in (300, 900, 5000):  # schemas nested past what validating them can walk: refused, or fine
        request = inline("[]", {"kind": "json_schema", "schema": {"type": "object"}})
        request.spec.schema_json = '{"items":' * depth + "{}" + "}" * depth
        f.call("deep nesting", {"INVALID_ARGUMENT", "OK"}, request)
    for text in ("{", "not json", deep_json(100_000), "[" * 5000):
        request = inline("{}", {"kind": "json_schema", "schema": {"type": "object"}})
        request.spec.schema_json = text
        f.call("invalid schema", {"INVALID_ARGUMENT"}, request)
    for depth in (1000, 30_000):  # deeply nested completions are the model's problem: a verdict, not a fault
        f.call("deep nesting", {"OK"}, inline(deep_json(depth), {"kind": "json_schema", "schema": {}}))
        result = svc.stub.Verify(inline(deep_json(depth), {"kind": "json_schema", "schema": {"type": "array"}}),
                                 metadata=keys.metadata("alpha"), timeout=60)
        assert result.verdict != pb.INFRA_ERROR, result.detail
    request = inline('{"name": "f", "arguments": {}}', {"kind": "tool_call", "tools": [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]})
    request.spec.tools_json = deep_json(50_000)
    f.call("deep nesting", {"INVALID_ARGUMENT"}, request)

    # -- unknown kinds and malformed spec fields --------------------------------------------------------------
    for _ in range(40):
        f.call("unknown kind", {"INVALID_ARGUMENT"}, inline("1", {"kind": f.junk(20) or "?"}))
    malformed = [{"kind": "format"}, {"kind": "format", "pattern": "("}, {"kind": "format", "pattern": "x",
                 "match": "sometimes"}, {"kind": "format", "pattern": "x", "extract": "telepathy"},
                 {"kind": "format", "pattern": "x", "scoring": "vibes"}, {"kind": "format", "pattern": "x",
                 "timeout_s": -1}, {"kind": "format", "pattern": "x", "timeout_s": 1e9},
                 {"kind": "format", "pattern": "x", "format_weight": 0}, {"kind": "format", "pattern": "x",
                 "correctness_weight": -2}, {"kind": "format", "pattern": "x", "tests": "assert 1"},
                 {"kind": "math"}, {"kind": "python_io", "entry_point": "f"},
                 {"kind": "stdio", "cases": [{"stdin": "", "expected_stdout": ""}], "language": "cobol"},
                 {"kind": "tool_call", "tools": "not a list"}, {"kind": "python_assert"}]
    for spec in malformed:
        f.call("malformed field", {"INVALID_ARGUMENT"}, inline("1", spec))
    request = inline("1", {"kind": "format", "pattern": "1"})
    request.spec.timeout_s = float("nan")
    f.call("malformed field", {"INVALID_ARGUMENT"}, request)

    # -- catalog, keys, quotas ------------------------------------------------------------------------------
    for _ in range(30):
        name = f"{rng.choice(['math', 'format'])}/{f.junk(10, string.ascii_lowercase) or 'x'}@{rng.randint(1, 9)}"
        f.call("unknown catalog entry", {"NOT_FOUND"}, ref_request(name, "1", gold="1"))
    for _ in range(10):
        f.call("namespace out of reach", {"PERMISSION_DENIED"}, ref_request(GSM8K, "4", gold="4"), tenant="beta")
        f.call("inline spec refused", {"PERMISSION_DENIED"}, valid[0], tenant="beta")
    for _ in range(30):
        key = rng.choice([new_key(), keys.key["alpha"][:-1], f.junk(40, METADATA_CHARS), "Bearer"])
        f.call("wrong key", {"UNAUTHENTICATED"}, valid[0],
               metadata=((rng.choice(["authorization", "x-api-key"]), f"Bearer {key}"),))
    f.call("wrong key", {"UNAUTHENTICATED"}, valid[0], tenant=None)
    quota = [f.call("over quota", {"OK", "RESOURCE_EXHAUSTED"}, pb.VerifyBatchRequest(requests=[valid[0]] * 2),
                    VERIFY_BATCH, tenant="slow") for _ in range(3)]
    assert "RESOURCE_EXHAUSTED" in quota

    # -- still up, still right -----------------------------------------------------------------------------------
    status = health_pb2_grpc.HealthStub(svc.channel).Check(
        health_pb2.HealthCheckRequest(service="rlvr.verifier.v1.Verifier"), timeout=10).status
    assert status == health_pb2.HealthCheckResponse.SERVING
    assert svc.stub.Verify(valid[0], metadata=keys.metadata("alpha"), timeout=30).verdict == pb.PASSED
    report = {"inputs": sum(f.counts.values()), "families": dict(f.counts), "codes": dict(f.codes)}
    record_property("fuzz", report)
    print("fuzz:", json.dumps(report))
    assert not f.failures, f"{len(f.failures)} wrong answers: {f.failures[:12]}"
    assert {"INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED", "UNAUTHENTICATED",
            "RESOURCE_EXHAUSTED"} <= set(f.codes)
