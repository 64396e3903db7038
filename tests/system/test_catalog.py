"""The verifier catalog: loading, publishing and immutability, references and per-request fields, results that
say exactly which verifier and sandbox image made them, and two tenants sharing one verifier."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import grpc
import pytest
import yaml

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.errors import CatalogError, InvalidSpec
from verifier_service.kinds import all_kinds
from verifier_service.spec import request_from_json, result_to_json
from verifier_service.tenancy.catalog import LOCK_FILE, Catalog, Reference, parse_entry, publish, read_lock

from support.tenancy_setup import (
    EXAMPLE_CATALOG,
    GOOD_JSON,
    GSM8K,
    JSON_OBJECT,
    PY_ASSERT,
    ROOT,
    Keys,
    copy_catalog,
    ref_request,
    rpc_error,
    write_entry,
    write_tenants,
)

MATH_ENTRY = {"name": "math/x", "version": "1", "spec": {"kind": "math"}, "per_request": ["gold"]}


# ---- entries and hashes (no service) -----------------------------------------------------------

def test_the_hash_covers_what_decides_a_reward_and_nothing_else():
    base = parse_entry(MATH_ENTRY)
    same = parse_entry({**MATH_ENTRY, "description": "docs only", "per_request": {"gold": "required"},
                        "spec": {"kind": "math", "format_weight": 0.2, "scoring": "all_or_nothing"}})
    assert same.sha256 != base.sha256  # explicit defaults are part of the template ...
    assert parse_entry({**MATH_ENTRY, "description": "docs only", "per_request": {"gold": "required"}}).sha256 \
        == base.sha256  # ... a description and the per_request spelling are not
    assert parse_entry({**MATH_ENTRY, "version": 1}).sha256 == base.sha256  # YAML's version: 1 reads as "1"
    for changed in ({**MATH_ENTRY, "version": "2"}, {**MATH_ENTRY, "name": "math/y"},
                    {**MATH_ENTRY, "spec": {"kind": "math", "extract": "answer_tag"}},
                    {**MATH_ENTRY, "per_request": {"gold": "required", "timeout_s": "optional"}}):
        assert parse_entry(changed).sha256 != base.sha256, changed
    assert base.id == f"math/x@1+{base.sha256[:12]}"


@pytest.mark.parametrize("entry, message", [
    ({**MATH_ENTRY, "owner": "me"}, "unknown key"),
    ({**MATH_ENTRY, "name": "x"}, "team/name"),
    ({**MATH_ENTRY, "version": "1+abc"}, "version"),
    ({**MATH_ENTRY, "spec": {"kind": "haskell"}}, "unknown verifier kind 'haskell'"),
    ({**MATH_ENTRY, "spec": {"kind": "math", "gold": "1"}}, "both fixed by the spec and per_request"),
    ({**MATH_ENTRY, "per_request": ["gold", "tests"]}, "'tests' does not apply to kind 'math'"),
    ({**MATH_ENTRY, "per_request": ["gold", "nope"]}, "'nope' is not a spec field"),
    ({**MATH_ENTRY, "per_request": []}, "needs ['gold']"),
    ({**MATH_ENTRY, "per_request": {"gold": "sometimes"}}, "'required' or 'optional'"),
])
def test_a_wrong_entry_is_refused_with_the_reason(entry, message):
    with pytest.raises(CatalogError) as info:
        parse_entry(entry)
    assert message in str(info.value)


def test_a_fixed_template_is_fully_validated_at_load():
    from verifier_service.config import ServiceConfig
    from verifier_service.engine.engine import Engine

    check = Engine(ServiceConfig(), None, None).prepare
    bad = {"name": "fmt/x", "version": "1", "spec": {"kind": "json_schema", "schema": {"type": 12}}}
    with pytest.raises(CatalogError, match="schema"):
        parse_entry(bad, check=check)


def test_references():
    assert Reference.parse("math/gsm8k-answer@1") == Reference("math/gsm8k-answer", "1")
    assert Reference.parse("math/gsm8k-answer@1.2+0123456789ab").hash == "0123456789ab"
    for bad in ("math/gsm8k-answer", "gsm8k@1", "math/x@1+abc", "Math/x@1", "math/x@"):
        with pytest.raises(InvalidSpec, match="team/name@version"):
            Reference.parse(bad)


# ---- publishing and immutability ---------------------------------------------------------------

def test_publish_writes_the_lock_and_load_refuses_what_is_not_published(tmp_path):
    directory = tmp_path / "catalog"
    directory.mkdir()
    path = write_entry(directory, "math/x", "1", {"kind": "math"}, ["gold"], publish_it=False)
    with pytest.raises(CatalogError, match=r"math/x@1 is not published.*catalog publish"):
        Catalog.load(directory)
    (entry, state), = publish(directory)
    assert state == "published" and read_lock(directory)["math/x@1"]["sha256"] == entry.sha256
    assert Catalog.load(directory).entries["math/x@1"].id == entry.id
    assert publish(directory) == [(entry, "unchanged")]
    assert path.exists()


def test_a_published_version_is_immutable(tmp_path):
    directory = tmp_path / "catalog"
    directory.mkdir()
    path = write_entry(directory, "math/x", "1", {"kind": "math"}, ["gold"])
    lock_before = (directory / LOCK_FILE).read_text()
    changed = yaml.safe_load(path.read_text())
    changed["spec"]["extract"] = "answer_tag"
    path.write_text(yaml.safe_dump(changed))
    with pytest.raises(CatalogError, match=r"math/x@1 changed after it was published.*new version"):
        Catalog.load(directory)
    with pytest.raises(CatalogError, match="nothing published"):
        publish(directory)
    assert (directory / LOCK_FILE).read_text() == lock_before
    # the change as a new version is fine; the old version stays recorded in the lock
    changed["version"] = "2"
    path.write_text(yaml.safe_dump(changed))
    publish(directory)
    assert set(read_lock(directory)) == {"math/x@1", "math/x@2"}
    assert set(Catalog.load(directory).entries) == {"math/x@2"}


def test_two_files_with_one_version_are_refused(tmp_path):
    directory = tmp_path / "catalog"
    directory.mkdir()
    write_entry(directory, "math/x", "1", {"kind": "math"}, ["gold"])
    (directory / "copy.json").write_text(json.dumps(MATH_ENTRY | {"name": "math/x"}))
    with pytest.raises(CatalogError, match="also defined in"):
        Catalog.load(directory)


def test_the_example_catalog_is_published():
    catalog = Catalog.load(EXAMPLE_CATALOG)
    assert set(catalog.entries) == {GSM8K, "math/gsm8k-answer@2", PY_ASSERT, JSON_OBJECT}


# ---- through the service ---------------------------------------------------------------------------

@pytest.fixture
def catalog_service(make_service, tmp_path):
    """A service with a copy of the example catalog, no tenants (authentication off), no warm pool."""
    directory = copy_catalog(tmp_path)
    return make_service(catalog=str(directory), sandbox_pool=False), directory


@pytest.mark.docker
def test_requests_send_only_the_per_sample_fields(catalog_service):
    svc, _ = catalog_service
    entries = svc.app.verifier.catalog.entries
    math_id, json_id = entries[GSM8K].id, entries[JSON_OBJECT].id
    response = svc.stub.VerifyBatch(pb.VerifyBatchRequest(requests=[
        ref_request(GSM8K, "so the answer is \\boxed{12}", id="m1", gold="12"),
        ref_request(GSM8K, "so the answer is 13", id="m2", gold="12"),
        ref_request(json_id, GOOD_JSON, id="j1"),  # the full id, hash included
        ref_request(JSON_OBJECT, '{"answer": 42}', id="j2"),
    ]), timeout=60)
    results = [result_to_json(r) for r in response.results]
    assert [(r["id"], r["verdict"]) for r in results] == [("m1", "PASSED"), ("m2", "MALFORMED"), ("j1", "PASSED"),
                                                          ("j2", "FAILED")]
    assert [r["verifier_version"] for r in results] == [math_id, math_id, json_id, json_id]
    assert all("sandbox_image" not in r for r in results)  # these kinds run no sandbox
    inline = svc.verify(GOOD_JSON, {"kind": "json_schema", "schema": {"type": "object"}})
    assert "verifier_version" not in inline


@pytest.mark.docker
@pytest.mark.parametrize("request_, code, words", [
    (ref_request("math/nope@1", "x", gold="1"), "NOT_FOUND", ["math/nope@1", "no entry named math/nope"]),
    (ref_request("math/gsm8k-answer@7", "x", gold="1"), "NOT_FOUND", ["math/gsm8k-answer@7", "versions of "
                                                                       "math/gsm8k-answer: 1"]),
    (ref_request("math/gsm8k-answer@1+000000000000", "x", gold="1"), "FAILED_PRECONDITION",
     ["math/gsm8k-answer@1+000000000000", "content hash differs"]),
    (ref_request("gsm8k", "x"), "INVALID_ARGUMENT", ["'gsm8k'", "team/name@version"]),
    (ref_request(GSM8K, "x"), "INVALID_ARGUMENT", ["needs the per-request field(s) gold"]),
    (ref_request(JSON_OBJECT, "x", schema={"type": "object"}), "INVALID_ARGUMENT",
     ["'schema' is fixed by catalog verifier format/json-object@1+"]),
    (ref_request(GSM8K, "x", gold="1", pattern="a"), "INVALID_ARGUMENT",
     ["'pattern' is not a per-request field", "per-request fields: gold"]),
    (pb.VerifyRequest(id="r", completion="x", verifier=GSM8K, fields=pb.VerificationSpec(kind="math", gold="1")),
     "INVALID_ARGUMENT", ["fields.kind", "fixes the kind (math)"]),
    (pb.VerifyRequest(id="r", completion="x", verifier=GSM8K, spec=pb.VerificationSpec(kind="math", gold="1")),
     "INVALID_ARGUMENT", ["either spec or verifier"]),
    (pb.VerifyRequest(id="r", completion="x", spec=pb.VerificationSpec(kind="math", gold="1"),
                      fields=pb.VerificationSpec(gold="2")), "INVALID_ARGUMENT", ["fields go with a catalog"]),
])
def test_bad_catalog_requests_get_the_right_status(catalog_service, request_, code, words):
    svc, _ = catalog_service
    err = rpc_error(svc.stub.Verify, request_, timeout=30)
    assert err.code().name == code, (err.code(), err.details())
    for word in words:
        assert word in err.details(), (word, err.details())
    assert "request 0 (id 'r')" in err.details()


@pytest.mark.docker
def test_list_verifiers_lists_the_catalog(catalog_service):
    svc, _ = catalog_service
    response = svc.stub.ListVerifiers(pb.ListVerifiersRequest(), timeout=30)
    assert len(response.kinds) == len(all_kinds())  # the kinds are still there
    entries = {e.name: e for e in response.catalog}
    assert set(entries) == {"math/gsm8k-answer", "code/python-assert", "format/json-object"}
    code = entries["code/python-assert"]
    assert code.id.startswith("code/python-assert@1+") and len(code.sha256) == 64
    assert code.kind == "python_assert"
    assert list(code.required_fields) == ["tests"] and list(code.optional_fields) == ["entry_point", "setup"]
    assert json.loads(code.template_json) == {"kind": "python_assert", "extract": "fenced_code",
                                              "scoring": "fraction", "timeout_s": 10.0}


@pytest.mark.docker
def test_reload_refuses_a_version_changed_in_place(catalog_service):
    svc, directory = catalog_service
    before = svc.app.verifier.catalog.entries[GSM8K].id
    path, lock_path = directory / "math" / "gsm8k-answer@1.yaml", directory / LOCK_FILE
    original, original_lock = path.read_text(), lock_path.read_text()
    entry = yaml.safe_load(original)
    entry["spec"]["extract"] = "answer_tag"
    path.write_text(yaml.safe_dump(entry))
    # even with the lock rewritten to match, the service remembers what it served under math/gsm8k-answer@1
    lock = json.loads(original_lock)
    lock["verifiers"][GSM8K]["sha256"] = parse_entry(entry).sha256
    lock_path.write_text(json.dumps(lock))
    svc.app.reload()
    assert svc.app.verifier.catalog.entries[GSM8K].id == before
    result = svc.stub.Verify(ref_request(GSM8K, "\\boxed{3}", gold="3"), timeout=30)
    assert result.verifier_version == before and result.verdict == pb.PASSED
    # put back, a new entry published: the next reload takes it
    path.write_text(original)
    lock_path.write_text(original_lock)
    write_entry(directory, "math/x", "1", {"kind": "math", "extract": "answer_tag"}, ["gold"])
    svc.app.reload()
    assert set(svc.app.verifier.catalog.entries) == {GSM8K, "math/gsm8k-answer@2", PY_ASSERT, JSON_OBJECT, "math/x@1"}
    assert svc.app.verifier.catalog.entries[GSM8K].id == before


@pytest.mark.docker
def test_results_carry_the_verifier_version_and_the_sandbox_image_digest(catalog_service):
    svc, _ = catalog_service
    code = "```python\ndef add(a, b):\n    return a + b\n```"
    result = svc.stub.Verify(ref_request(PY_ASSERT, code, tests="assert add(1, 2) == 3\nassert add(0, 0) == 1"),
                             timeout=120)
    assert (pb.Verdict.Name(result.verdict), result.tests_passed, result.tests_total) == ("PARTIAL", 1, 2)
    assert result.reward == pytest.approx(0.2 + 0.8 * 0.5)
    assert result.verifier_version == svc.app.verifier.catalog.entries[PY_ASSERT].id
    image = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", svc.app.config.sandbox_image],
                           capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert result.sandbox_image == image and image.startswith("sha256:")


@pytest.mark.docker
def test_two_teams_share_a_catalog_verifier_across_replicas(make_service, tmp_path):
    """Two tenants with their own keys, two replicas loading the same catalog and tenants file: the same
    input gets the same verdicts, rewards and verifier version whoever asks and whichever replica answers."""
    keys = Keys("team-a", "team-b")
    tenants = write_tenants(tmp_path / "tenants.yaml", keys, {"team-a": {"use": ["format", "math"]},
                                                               "team-b": {"use": ["format"]}})
    directory = copy_catalog(tmp_path)
    replicas = [make_service(catalog=str(directory), tenants=tenants, sandbox_pool=False) for _ in range(2)]
    completions = [GOOD_JSON, '{"answer": "x", "confidence": 2}', "not json", '{"answer": "y", "confidence": 0}']
    batch = pb.VerifyBatchRequest(requests=[ref_request(JSON_OBJECT, c, id=str(i)) for i, c in enumerate(completions)])
    seen = []
    for replica in replicas:
        for tenant in ("team-a", "team-b"):
            response = replica.stub.VerifyBatch(batch, metadata=keys.metadata(tenant), timeout=60)
            seen.append([(r.id, r.verdict, r.reward, r.format_score, r.correctness_score, r.verifier_version)
                         for r in response.results])
    assert all(s == seen[0] for s in seen)
    assert [pb.Verdict.Name(v) for _, v, *_ in seen[0]] == ["PASSED", "FAILED", "MALFORMED", "PASSED"]
    assert seen[0][0][5] == replicas[0].app.verifier.catalog.entries[JSON_OBJECT].id
    # team-b may not use team-a's math verifier; team-a may
    err = rpc_error(replicas[1].stub.Verify, ref_request(GSM8K, "\\boxed{1}", gold="1"),
                    metadata=keys.metadata("team-b"), timeout=30)
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    ok = replicas[1].stub.Verify(ref_request(GSM8K, "\\boxed{1}", gold="1"), metadata=keys.metadata("team-a"),
                                 timeout=30)
    assert ok.verdict == pb.PASSED


# ---- the command line ----------------------------------------------------------------------------------

def cli(*args: str, env: dict | None = None, timeout: float = 120, stdin: str | None = None):
    return subprocess.run([sys.executable, "-m", "verifier_service.tools.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})}, input=stdin)


def test_catalog_publish_and_list_commands(tmp_path):
    directory = tmp_path / "catalog"
    directory.mkdir()
    write_entry(directory, "math/x", "1", {"kind": "math"}, ["gold"], publish_it=False)
    proc = cli("catalog", "list", str(directory))
    assert proc.returncode == 0 and "not published" in proc.stdout, proc.stderr
    proc = cli("catalog", "publish", str(directory))
    assert proc.returncode == 0 and proc.stdout.startswith("published math/x@1+"), proc.stderr
    assert "published" in cli("catalog", "list", str(directory)).stdout
    path = directory / "math_x@1.yaml"
    path.write_text(path.read_text().replace("kind: math", "kind: math\n  extract: answer_tag"))
    proc = cli("catalog", "publish", str(directory))
    assert proc.returncode == 2 and "changed after it was published" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_publishing_into_another_teams_namespace_is_skipped(tmp_path):
    keys = Keys("team-a", "team-b")
    tenants = write_tenants(tmp_path / "tenants.yaml", keys, {"team-a": {"publish": ["math"]},
                                                               "team-b": {"publish": ["fmt"]}})
    directory = tmp_path / "catalog"
    directory.mkdir()
    write_entry(directory, "math/x", "1", {"kind": "math"}, ["gold"], publish_it=False)
    write_entry(directory, "fmt/y", "1", {"kind": "format", "pattern": "a+"}, publish_it=False)
    proc = cli("catalog", "publish", str(directory), "--tenants", tenants,
               env={"RLVR_VERIFIER_API_KEY": keys.key["team-b"]})
    assert proc.returncode == 0, proc.stderr
    assert "published fmt/y@1+" in proc.stdout
    assert "skipped math/x@1+" in proc.stdout and "may not publish into 'math'" in proc.stdout
    assert read_lock(directory)["fmt/y@1"]["published_by"] == "team-b"
    assert "math/x@1" not in read_lock(directory)
    proc = cli("catalog", "publish", str(directory), "--tenants", tenants, env={"RLVR_VERIFIER_API_KEY": "wrong"})
    assert proc.returncode == 2 and "belongs to no tenant" in proc.stderr


@pytest.mark.docker
def test_verify_command_with_a_catalog_verifier_and_a_key(make_service, tmp_path):
    keys = Keys("team-a")
    tenants = write_tenants(tmp_path / "tenants.yaml", keys, {})
    svc = make_service(catalog=str(EXAMPLE_CATALOG), tenants=tenants, sandbox_pool=False)
    rows = [{"id": "a", "completion": GOOD_JSON}, {"id": "b", "completion": "{}"},
            {"id": "c", "completion": "\\boxed{4}", "spec": {"verifier": GSM8K, "gold": "4"}},
            {"id": "d", "completion": "\\boxed{4}", "spec": {"kind": "math", "gold": "4"}}]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    key_file = tmp_path / "key"
    key_file.write_text(keys.key["team-a"] + "\n")
    proc = cli("verify", "--input", str(path), "--server", svc.address, "--verifier", JSON_OBJECT,
               "--api-key-file", str(key_file), "--quiet")
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["verdict"] for r in results] == ["PASSED", "FAILED", "PASSED", "PASSED"]
    entries = svc.app.verifier.catalog.entries
    assert [r.get("verifier_version") for r in results] == [entries[JSON_OBJECT].id, entries[JSON_OBJECT].id,
                                                           entries[GSM8K].id, None]
    assert keys.key["team-a"] not in proc.stdout + proc.stderr
    proc = cli("verify", "--input", str(path), "--server", svc.address, "--verifier", JSON_OBJECT, "--quiet",
               env={"RLVR_VERIFIER_API_KEY": ""})
    assert proc.returncode == 2 and "UNAUTHENTICATED" in proc.stderr and "Bearer" in proc.stderr
    proc = cli("list", "--server", svc.address, env={"RLVR_VERIFIER_API_KEY": keys.key["team-a"]})
    assert proc.returncode == 0 and "format/json-object@1+" in proc.stdout, proc.stderr


def test_request_json_form_of_a_catalog_reference():
    request = request_from_json({"id": "x", "completion": "c", "spec": {"verifier": GSM8K, "gold": "3"}})
    assert (request.verifier, request.fields.gold, request.HasField("spec")) == (GSM8K, "3", False)
    with pytest.raises(InvalidSpec, match="not both"):
        request_from_json({"id": "x", "completion": "c", "spec": {"verifier": GSM8K, "kind": "math"}})
    with pytest.raises(InvalidSpec, match="unknown spec field"):
        request_from_json({"id": "x", "completion": "c", "spec": {"verifier": GSM8K, "gol": "3"}})


def test_a_run_config_verifier_fills_in_rows_that_name_none(tmp_path):
    """``verifier_ref``: rows hold only their per-sample fields; every consumer (rewards, gates, samples) then
    sees a full catalog reference, and the gates' reward-config hash covers it."""
    from trainer.config import RunConfig
    from trainer.gates import dataset_specs
    from trainer.train import load_prompts

    path = tmp_path / "prompts.jsonl"
    rows = [{"prompt": "p1", "verification": json.dumps({"gold": "3"})},
            {"prompt": "p2", "verification": json.dumps({"kind": "math", "gold": "4"})},
            {"prompt": "p3", "verification": json.dumps({"verifier": "math/other@2", "gold": "5"})}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    dataset = load_prompts(RunConfig(dataset=str(path), verifier_ref=GSM8K))
    assert [json.loads(s) for s in dataset["verification"]] == [
        {"verifier": GSM8K, "gold": "3"}, {"kind": "math", "gold": "4"}, {"verifier": "math/other@2", "gold": "5"}]
    assert dataset_specs(dataset, "verification") == sorted([
        '{"gold":"3","verifier":"math/gsm8k-answer@1"}', '{"gold":"4","kind":"math"}',
        '{"gold":"5","verifier":"math/other@2"}'])
    no_column = tmp_path / "bare.jsonl"
    no_column.write_text(json.dumps({"prompt": "p"}) + "\n")
    bare = load_prompts(RunConfig(dataset=str(no_column), verifier_ref=JSON_OBJECT))
    assert json.loads(bare["verification"][0]) == {"verifier": JSON_OBJECT}
