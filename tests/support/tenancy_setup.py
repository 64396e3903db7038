"""Shared by the tenancy and catalog tests: tenants files with fresh keys, a published catalog, calls with a key."""

from __future__ import annotations

import shutil
from pathlib import Path

import grpc
import pytest
import yaml

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.spec import request_from_json
from verifier_service.tenancy.auth import hash_key, new_key
from verifier_service.tenancy.catalog import publish

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CATALOG = ROOT / "examples" / "catalog"
JSON_OBJECT = "format/json-object@1"
GSM8K = "math/gsm8k-answer@1"
PY_ASSERT = "code/python-assert@1"
GOOD_JSON = '{"answer": "42", "confidence": 0.9}'


class Keys:
    """A fresh key per tenant, made at test time; the tenants file holds only their hashes."""

    def __init__(self, *names: str):
        self.key = {name: new_key() for name in names}

    def metadata(self, tenant: str) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.key[tenant]}"),)


def write_tenants(path: Path, keys: Keys, settings: dict[str, dict]) -> str:
    data = {"tenants": {name: {"keys": [hash_key(keys.key[name])], **settings.get(name, {})} for name in keys.key}}
    path.write_text(yaml.safe_dump(data))
    return str(path)


def copy_catalog(tmp_path: Path) -> Path:
    """The example catalog (with its lock) in a directory the test may change."""
    target = tmp_path / "catalog"
    shutil.copytree(EXAMPLE_CATALOG, target)
    return target


def write_entry(directory: Path, name: str, version: str, spec: dict, per_request=None, publish_it=True,
                description: str = "") -> Path:
    path = directory / f"{name.replace('/', '_')}@{version}.yaml"
    entry = {"name": name, "version": version, "spec": spec, "per_request": per_request or [],
             "description": description}
    path.write_text(yaml.safe_dump(entry))
    if publish_it:
        publish(directory)
    return path


def ref_request(verifier: str, completion: str, id: str = "r", **fields) -> pb.VerifyRequest:
    return request_from_json({"id": id, "completion": completion, "spec": {"verifier": verifier, **fields}})


def rpc_error(call, *args, **kwargs) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call(*args, **kwargs)
    return info.value


def trailing(err: grpc.RpcError) -> dict[str, str]:
    return {k: v for k, v in (err.trailing_metadata() or ())}
