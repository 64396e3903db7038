"""The HTTP front door (server/http) against the peers' own client code, and against gRPC on the same inputs.

Real clients, installed from PyPI (scripts/setup.sh): SandboxFusion's SDK (``sandbox_fusion.run_code``), verl's
``sandbox_fusion`` reward utilities (``check_correctness`` / ``compute_score``: loaded from the installed verl's
files, since ``import verl`` needs ray) and OpenRLHF's remote reward client
(``SingleTurnAgentExecutor._fetch_rewards_via_http``). open-instruct is not on PyPI: its ``CodeVerifier``
request (a ``requests`` session posting ``{program, tests, max_execution_time}``) and its reading of the
answer are reproduced as its source has them.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import requests

from verifier_service.testing import free_port

from support.service import TEST_CONFIG, RunningService
from support.tenancy_setup import EXAMPLE_CATALOG, GSM8K, Keys, write_tenants
from support.wait import wait_for

pytestmark = pytest.mark.docker

ADD = "def add(a, b):\n    return a + b\n"
SUM_STDIN = "a, b = map(int, input().split())\nprint(a + b)\n"
CPP_SUM = "#include <cstdio>\nint main(){long long a,b;scanf(\"%lld %lld\",&a,&b);printf(\"%lld\\n\",a+b);}\n"


def _peer(module: str, hint: str):
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(f"{module} is not installed ({exc}): {hint}", pytrace=False)


def verl_sandbox_fusion():
    """verl's sandbox_fusion reward package, from the installed verl's own files (``import verl`` needs ray)."""
    if "verl_sandbox_fusion" in sys.modules:
        return sys.modules["verl_sandbox_fusion"]
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("verl is not installed: pip install --no-deps verl==0.9.1 (scripts/setup.sh does)", pytrace=False)
    package = Path(next(iter(spec.submodule_search_locations))) / "utils" / "reward_score" / "sandbox_fusion"
    loaded = importlib.util.spec_from_file_location("verl_sandbox_fusion", package / "__init__.py",
                                                    submodule_search_locations=[str(package)])
    module = importlib.util.module_from_spec(loaded)
    sys.modules["verl_sandbox_fusion"] = module
    loaded.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def http(docker_ready):
    running = RunningService(replace(TEST_CONFIG, http_port=free_port(), http_max_body_bytes=1 << 20))
    yield running
    running.close()


def post(service, path: str, body, **kwargs) -> requests.Response:
    return requests.post(service.http_url + path, json=body, timeout=120, **kwargs)


# ---- SandboxFusion: their SDK and verl's utilities ----------------------------------------------------

def test_sandbox_fusion_sdk_runs_code(http):
    sf = _peer("sandbox_fusion", "pip install sandbox-fusion (the dev extra has it)")
    ok = sf.run_code(sf.RunCodeRequest(code="print(input()[::-1])", language="python", stdin="abc\n"),
                     endpoint=http.http_url, max_attempts=1)
    assert ok.status == sf.RunStatus.Success and ok.run_result.stdout == "cba\n" and ok.compile_result is None
    mapping = sf.SummaryMapping()
    assert sf.summary_run_code_result(ok, mapping) == mapping.Success
    cpp = sf.run_code(sf.RunCodeRequest(code=CPP_SUM, language="cpp", stdin="40 2"), endpoint=http.http_url,
                      max_attempts=1)
    assert cpp.run_result.stdout == "42\n" and cpp.compile_result.return_code == 0
    broken = sf.run_code(sf.RunCodeRequest(code="int main(){", language="cpp"), endpoint=http.http_url,
                         max_attempts=1)
    assert broken.status == sf.RunStatus.Failed and broken.run_result is None
    assert sf.summary_run_code_result(broken, sf.SummaryMapping(CompileFailed="CE")) == "CE"
    slow = sf.run_code(sf.RunCodeRequest(code="while True: pass", language="python", run_timeout=1),
                       endpoint=http.http_url, max_attempts=1)
    assert slow.run_result.status == sf.CommandRunStatus.TimeLimitExceeded
    assert sf.summary_run_code_result(slow, sf.SummaryMapping(RunTimeout="TLE")) == "TLE"
    crash = sf.run_code(sf.RunCodeRequest(code="raise SystemExit(3)", language="python"), endpoint=http.http_url,
                        max_attempts=1)
    assert crash.status == sf.RunStatus.Failed and crash.run_result.return_code == 3
    with pytest.raises(Exception, match="not supported by this service"):  # their client raises on SandboxError
        sf.run_code(sf.RunCodeRequest(code="print 1", language="swift"), endpoint=http.http_url, max_attempts=1)


def test_verl_check_correctness_scores_through_run_code(http):
    verl = verl_sandbox_fusion()
    url = http.http_url + "/run_code"
    cases = {"inputs": ["1 2\n", "10 -3\n", "5 5\n"], "outputs": ["3\n", "7\n", "10\n"]}
    results, metadata = verl.utils.check_correctness(url, cases, SUM_STDIN, timeout=5)
    assert results == [True, True, True], metadata
    wrong, _ = verl.utils.check_correctness(url, cases, "print(0)", timeout=5)
    assert wrong == [False, False, False]
    crash, meta = verl.utils.check_correctness(url, cases, "raise ValueError", timeout=5)
    assert crash == [-2, -2, -2] and meta[0]["status"] == "runtime_error"
    slow, _ = verl.utils.check_correctness(url, {"inputs": [""], "outputs": [""]}, "while True: pass", timeout=1)
    assert slow == [-3]
    cpp, _ = verl.utils.check_correctness(url, cases, CPP_SUM, timeout=10, language="cpp")
    assert cpp == [True, True, True]
    ce, _ = verl.utils.check_correctness(url, cases, "int main(){", timeout=10, language="cpp")
    assert ce == [-4, -4, -4]
    # verl's compute_score: its fence extraction, its assert_case form, its pass rate
    score, _ = verl.compute_score(url, None, 1024, f"```python\n{SUM_STDIN}```", json.dumps(cases))
    assert score == 1.0
    asserts = {"assert_case": ["assert add(1, 2) == 3", "assert add(2, 2) == 5"]}
    score, _ = verl.compute_score(url, None, 1024, f"```python\n{ADD}```", asserts)
    assert score == 0.5


def test_run_code_returns_the_whole_stdout(http):
    """verl compares the whole output: nothing may be cut to a tail."""
    body = post(http, "/run_code", {"code": "print('x' * 50000)\nprint('end')", "language": "python"}).json()
    assert body["status"] == "Success" and body["run_result"]["stdout"] == "x" * 50000 + "\nend\n"


def test_run_code_answers_bad_requests_with_their_422(http):
    unknown = post(http, "/run_code", {"code": "x", "language": "cobol"})
    assert unknown.status_code == 422 and unknown.json()["detail"][0]["loc"] == ["body", "language"]
    assert post(http, "/run_code", {"language": "python"}).status_code == 422
    assert "seconds" in post(http, "/run_code", {"code": "1", "language": "python", "run_timeout": -1}).json()["error"]
    unsupported = post(http, "/run_code", {"code": "x", "language": "scala"})
    assert unsupported.status_code == 200 and unsupported.json()["status"] == "SandboxError"
    assert "python" in unsupported.json()["message"]


def test_run_code_files_and_fetch_files(http):
    import base64

    body = post(http, "/run_code", {
        "code": "print(open('data.txt').read().upper())\nopen('out.txt', 'w').write('done')", "language": "python",
        "files": {"data.txt": base64.b64encode(b"hello").decode()}, "fetch_files": ["out.txt"]}).json()
    assert body["run_result"]["stdout"] == "HELLO\n"
    assert base64.b64decode(body["files"]["out.txt"]) == b"done"
    escape = post(http, "/run_code", {"code": "1", "language": "python", "files": {"../x": "eA=="}})
    assert escape.status_code == 422 and ".." in escape.json()["error"]
    fetch_out = post(http, "/run_code", {"code": "1", "language": "python", "fetch_files": ["../../etc/passwd"]})
    assert fetch_out.status_code == 422 and "fetch_files" in fetch_out.json()["error"]


# ---- OpenRLHF: their remote reward client -------------------------------------------------------------

def test_openrlhf_remote_client_gets_rewards(http):
    agent = _peer("openrlhf.utils.agent", "pip install --no-deps openrlhf==0.11.2 pylatexenc (scripts/setup.sh does)")
    executor = agent.SingleTurnAgentExecutor(http.http_url + "/get_reward")
    prompt = "What is 6 * 7? Put the answer in \\boxed{}."
    label = json.dumps({"kind": "math", "gold": "42"})
    good, bad = asyncio.run(executor._fetch_rewards_via_http(
        [prompt + " It is \\boxed{42}"], [prompt], [label])), asyncio.run(executor._fetch_rewards_via_http(
            [prompt + " It is \\boxed{41}"], [prompt], [label]))
    assert good[0]["rewards"] == [1.0] and good[0]["scores"] == [1.0]
    assert bad[0]["scores"] == [0.0] and bad[0]["rewards"][0] < good[0]["rewards"][0]
    assert set(good[0]["extra_logs"]) == {"format_score", "correctness_score", "passed"}


def test_get_reward_batches_mixed_specs_and_refuses_bad_labels(http):
    code = {"kind": "python_assert", "extract": "last_fenced_code", "tests": "assert add(1, 2) == 3"}
    body = {"query": ["P1 ```python\n" + ADD + "```", "P2 \\boxed{3}", "P3 no answer"],
            "prompts": ["P1", "P2", "P3"],
            "labels": [json.dumps(code), {"kind": "math", "gold": "3"}, json.dumps({"kind": "math", "gold": "3"})]}
    answer = post(http, "/get_reward", body).json()
    assert answer["scores"] == [1.0, 1.0, 0.0] and len(answer["rewards"]) == 3
    missing = post(http, "/get_reward", {"query": ["x"]})
    assert missing.status_code == 422 and "labels" in missing.json()["error"]
    bad = post(http, "/get_reward", {"query": ["x"], "labels": [{"kind": "nope"}]})
    assert bad.status_code == 400 and "unknown verifier kind 'nope'" in bad.json()["error"]
    short = post(http, "/get_reward", {"query": ["x", "y"], "labels": [{"kind": "math", "gold": "1"}]})
    assert short.status_code == 422 and "as long as query" in short.json()["error"]


def test_get_reward_of_a_large_body_scores_each_query_as_grpc_does(http):
    """A body over 64 KiB is made into requests in a pure worker, which sends back an oversize completion as its
    size: that query is MALFORMED, named by its size, as through gRPC, and the rest of the batch is scored."""
    spec = {"kind": "math", "gold": "3"}
    huge = "\\boxed{3} " + "é" * (140 << 10)  # 280 KiB of UTF-8 in 140 Ki characters: the size is in bytes
    queries = ["P \\boxed{3}", "P " + huge, "P \\boxed{4}", "P \U0010fffe oversize completion 00 5 \\boxed{4}"]
    answer = post(http, "/get_reward", {"query": queries, "prompts": ["P"] * 4, "labels": [spec] * 4})
    assert answer.status_code == 200, answer.text
    via_grpc = http.verify_batch([(q[2:], spec) for q in queries])
    assert [r["verdict"] for r in via_grpc] == ["PASSED", "MALFORMED", "FAILED", "FAILED"]
    assert f"completion is {len(huge.encode())} bytes" in via_grpc[1]["detail"]
    assert answer.json()["rewards"] == [r["reward"] for r in via_grpc]
    refused = post(http, "/get_reward", {"query": queries, "labels": [spec] * 3})  # (refused in the worker)
    assert refused.status_code == 422 and "as long as query" in refused.json()["error"]


# ---- open-instruct: their CodeVerifier's request and reading ----------------------------------------

def open_instruct_code_verifier(url: str, program: str, label, max_execution_time: float = 1.0,
                                threshold: float = 0.0) -> float:
    """open-instruct's ``CodeVerifier.async_call`` as its source has it (ground_truth_utils.py): the same
    session setup, request and reading of the answer."""
    session = requests.Session()
    adapter = requests.adapters.HTTPAdapter(pool_connections=100, pool_maxsize=100, max_retries=requests.adapters.Retry(
        total=3, backoff_factor=0.3, status_forcelist=[500, 502, 503, 504]))
    session.mount("http://", adapter)
    payload = {"program": program, "tests": label, "max_execution_time": max_execution_time}
    http_timeout = max(30, min(300, max_execution_time * 10))
    response = session.post(url, json=payload, headers={"Content-Type": "application/json"}, timeout=http_timeout)
    response.raise_for_status()
    result = response.json()
    passes = result["results"]
    pass_rate = sum(passes) / len(passes) if passes else 0.0
    return 0.0 if pass_rate < threshold else pass_rate


def test_open_instruct_test_program(http):
    url = http.http_url + "/test_program"
    tests = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(0, 0) == 1"]
    answer = post(http, "/test_program", {"program": ADD, "tests": tests, "max_execution_time": 1.0}).json()
    assert answer["results"] == [1, 1, 0] and answer["runtimes"][2] == -1.0 and answer["runtimes"][0] >= 0
    assert open_instruct_code_verifier(url, ADD, tests) == pytest.approx(2 / 3)
    assert open_instruct_code_verifier(url, ADD, json.dumps(tests), threshold=0.99) == 0.0  # JSON-text label
    mixed = ["add(1, 1)", "x = add(2, 2)\nassert x == 4", "assert (", "add(1)", "assert add(1, 1) == 2"]
    assert post(http, "/test_program", {"program": ADD, "tests": mixed}).json()["results"] == [1, 1, 0, 0, 1]
    pickled = post(http, "/test_program", {"program": ADD, "tests": "eJxrYJ4ux"})
    assert pickled.status_code == 400 and "pickle" in pickled.json()["error"]


def test_open_instruct_test_program_stdio(http):
    url = http.http_url + "/test_program_stdio"
    tests = [{"input": "5 3", "output": "8"}, {"input": "10 -2", "output": "8"}, {"input": "0 0", "output": "1"}]
    answer = post(http, "/test_program_stdio", {"program": SUM_STDIN, "tests": tests}).json()
    assert answer["results"] == [1, 1, 0]
    assert open_instruct_code_verifier(url, SUM_STDIN, tests) == pytest.approx(2 / 3)
    assert post(http, "/test_program_stdio", {"program": "print(", "tests": tests}).json()["results"] == [0, 0, 0]
    health = requests.get(http.http_url + "/health", timeout=10).json()
    assert health == {"status": "healthy"}


# ---- one set of verdicts through every door --------------------------------------------------------------

def test_same_verdicts_through_every_front_door(http):
    """Each input scored through gRPC and through the HTTP door that takes it: the same verdict per test."""
    assert_tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 0) == 1"]
    programs = [ADD, "def add(a, b):\n    return a * b\n", "def add(a, b):\n    raise ValueError\n",
                "def add(a, b)\n    return a + b\n", "import time\ndef add(a, b):\n    time.sleep(30)\n"]
    spec = {"kind": "python_assert", "tests": "\n".join(assert_tests), "scoring": "fraction", "timeout_s": 4}
    grpc_results = http.verify_batch([(p, spec) for p in programs])
    for program, via_grpc in zip(programs, grpc_results, strict=True):
        per_test = [1 if t["verdict"] == "PASSED" else 0 for t in via_grpc["tests"]] or [0, 0, 0]
        via_http = post(http, "/test_program", {"program": program, "tests": assert_tests,
                                                "max_execution_time": 1.0}).json()["results"]
        assert via_http == per_test, (program, via_grpc["verdict"])
        reward = post(http, "/get_reward", {"query": [program], "labels": [spec]}).json()["rewards"][0]
        assert reward == via_grpc["reward"]

    cases = [("1 2\n", "3\n"), ("7 8\n", "15\n"), ("-1 1\n", "0\n")]
    stdio = {"kind": "stdio", "cases": [{"stdin": i, "expected_stdout": o} for i, o in cases], "scoring": "fraction"}
    stdio_programs = [SUM_STDIN, "print(3)", "raise SystemExit(1)", "while True: pass"]
    verl = verl_sandbox_fusion()
    in_outs = {"inputs": [i for i, _ in cases], "outputs": [o for _, o in cases]}
    # 2 s per case on every door (a loaded machine can take a second to start an interpreter)
    for program, via_grpc in zip(stdio_programs, http.verify_batch([(p, {**stdio, "case_timeout_s": 2})
                                                                    for p in stdio_programs]), strict=True):
        per_case = [t["verdict"] == "PASSED" for t in via_grpc["tests"]]
        oi = post(http, "/test_program_stdio", {"program": program, "max_execution_time": 2,
                                                "tests": [{"input": i, "output": o} for i, o in cases]}).json()
        assert oi["results"] == [int(p) for p in per_case], (program, oi, via_grpc["tests"])
        verl_results, _ = verl.utils.check_correctness(http.http_url + "/run_code", in_outs, program, timeout=2)
        assert [r is True for r in verl_results] == per_case, program


# ---- the door itself: errors, limits, health, metrics, tenancy ----------------------------------------

def test_bad_requests_are_4xx_with_a_message(http):
    not_json = requests.post(http.http_url + "/get_reward", data=b"{oops", timeout=30)
    assert not_json.status_code == 400 and "not valid JSON" in not_json.json()["error"]
    deep = requests.post(http.http_url + "/test_program", data=b"[" * 100000 + b"]" * 100000, timeout=30)
    assert deep.status_code == 400 and "error" in deep.json()
    assert post(http, "/test_program", ["not", "an", "object"]).status_code == 422
    surrogate = requests.post(http.http_url + "/get_reward", timeout=30,
                              data=b'{"query": ["x"], "labels": [{"kind": "\\udcff"}]}')
    assert surrogate.status_code == 400 and "lone surrogate" in surrogate.json()["error"]
    odd_program = requests.post(http.http_url + "/test_program", timeout=60,  # model output: scored, not refused
                                data=b'{"program": "x = \\"\\udcff\\"", "tests": ["assert x"]}')
    assert odd_program.status_code == 200 and odd_program.json()["results"] in ([0], [1])
    assert post(http, "/test_program", {"program": ADD, "tests": [1, 2]}).status_code == 422
    assert requests.get(http.http_url + "/run_code", timeout=30).status_code == 405
    nowhere = post(http, "/nowhere", {})
    assert nowhere.status_code == 404 and "/run_code" in nowhere.json()["error"]
    jupyter = post(http, "/run_jupyter", {"cells": "1"})  # tests/system/test_http_jupyter.py runs it
    assert jupyter.status_code == 422 and jupyter.json()["error"].startswith("cells")
    too_big = requests.post(http.http_url + "/get_reward", data=b" " * (2 << 20), timeout=30,
                            headers={"Content-Type": "application/json"})
    assert too_big.status_code == 413 and "http_max_body_bytes" in too_big.json()["error"]
    # bodies over PARSE_ON_LOOP_BYTES are parsed in a pure worker: the same answers, refusals included, and a body
    # of more values than http_max_body_values comes back as a refusal, not as the values
    many = requests.post(http.http_url + "/get_reward", data=b'{"query": [' + b"1," * 140_000 + b'1]}', timeout=60)
    assert many.status_code == 413 and "131072 JSON values (http_max_body_values)" in many.json()["error"], many.text
    deep_big = requests.post(http.http_url + "/test_program", data=b"[" * 300000 + b"]" * 300000, timeout=30)
    assert deep_big.status_code == 400 and "nested too deeply" in deep_big.json()["error"], deep_big.text[:300]
    big_bad = requests.post(http.http_url + "/get_reward", data=b'{"query": ["' + b"x" * 400000 + b'"', timeout=30)
    assert big_bad.status_code == 400 and "not valid JSON" in big_bad.json()["error"]
    big = post(http, "/get_reward", {"query": [" " * 10000 + f"\\boxed{{{i}}}" for i in range(40)],
                                     "labels": [{"kind": "math", "gold": str(i % 39)} for i in range(40)]})
    assert big.status_code == 200, big.text[:300]
    assert big.json()["rewards"][:39] == [1.0] * 39 and big.json()["rewards"][39] < 1.0
    for response in (not_json, deep, nowhere, too_big, deep_big, big_bad, many):
        assert "Traceback" not in response.text


def test_metrics_and_request_ids(http):
    response = post(http, "/get_reward", {"query": ["\\boxed{1}"], "labels": [{"kind": "math", "gold": "1"}]},
                    headers={"X-Request-Id": "trace-http-1"})
    assert response.headers["X-Request-Id"] == "trace-http-1"
    text = requests.get(http.http_url + "/metrics", timeout=30).text
    assert 'rlvr_rpcs_total{code="200",method="POST /get_reward"}' in text
    assert 'rlvr_verdicts_total{kind="math",verdict="PASSED"}' in text
    assert requests.get(http.http_url + "/v1/ping", timeout=10).json() == "pong"


def test_api_keys_and_catalog_verifiers(tmp_path, make_service):
    keys = Keys("team-math")
    tenants = write_tenants(tmp_path / "tenants.yaml", keys, {"team-math": {"use": ["math"]}})
    service = make_service(http_port=free_port(), tenants=tenants, catalog=str(EXAMPLE_CATALOG), max_concurrency=1)
    body = {"query": ["Q \\boxed{72}", "Q \\boxed{71}"], "prompts": ["Q", "Q"], "labels": ["72", '{"gold": "72"}']}
    anonymous = post(service, f"/get_reward/{GSM8K}", body)
    assert anonymous.status_code == 401 and "API key" in anonymous.json()["error"]
    wrong = post(service, f"/get_reward/{GSM8K}", body, headers={"Authorization": "Bearer rlvr_wrong"})
    assert wrong.status_code == 401 and "not recognised" in wrong.json()["error"]
    headers = {"Authorization": f"Bearer {keys.key['team-math']}"}
    answer = post(service, f"/get_reward/{GSM8K}", body, headers=headers).json()
    assert answer["scores"] == [1.0, 0.0]
    by_header = post(service, "/get_reward", body, headers={"X-Api-Key": keys.key["team-math"],
                                                            "X-RLVR-Verifier": GSM8K})
    assert by_header.json()["scores"] == [1.0, 0.0]
    forbidden = post(service, "/get_reward/code/python-assert@1", {"query": ["x"], "labels": ["{}"]},
                     headers=headers)
    assert forbidden.status_code == 403
    assert requests.get(service.http_url + "/health", timeout=10).status_code == 200  # health stays open
    # /metrics names tenants: with tenants it takes a key, and a tenant's key reads only its own series
    assert requests.get(service.http_url + "/metrics", timeout=10).status_code == 401
    keyed = requests.get(service.http_url + "/metrics", headers=headers, timeout=10)
    assert keyed.status_code == 200 and 'rlvr_tenant_verifications_total{tenant="team-math"}' in keyed.text
    assert "rlvr_rpcs_total" not in keyed.text
    # (only pure verifiers ran: let the warm pool finish starting its sandbox before the service stops)
    wait_for(lambda: service.app.sandbox._idle.qsize() >= 1, timeout=60)


def test_serve_flag_opens_the_http_port(docker_ready):
    """`verifier-service serve --http-port N`: the command's own wiring (the other tests start the app in process)."""
    from verifier_service.testing import ServedProcess

    port = free_port()
    with ServedProcess("--http-port", str(port), "--max-concurrency", "1", "--log-level", "WARNING",
                       env={"RLVR_VERIFIER_SANDBOX_IMAGE": TEST_CONFIG.sandbox_image}) as served:
        url = f"http://127.0.0.1:{port}"  # open before the gRPC port reports SERVING
        answer = requests.post(url + "/run_code", json={"code": "print(6 * 7)", "language": "python"}, timeout=60)
        assert answer.json()["run_result"]["stdout"] == "42\n", served.log_tail()
    import socket

    with socket.socket() as holder:  # a listener of another program (no SO_REUSEPORT) holds the port
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        held = holder.getsockname()[1]
        taken = ServedProcess("--http-port", str(held), "--max-concurrency", "1")
        with pytest.raises(RuntimeError, match=f"cannot serve HTTP on 127.0.0.1:{held}"):
            taken.start(timeout=60)
        taken.stop()


def test_run_code_follows_the_language_table(monkeypatch):
    """/run_code reads the stdio kind's table when called: a language added there (a row shaped as
    kinds/languages.py's, with its own file naming and image family) is served under SandboxFusion's name."""
    from dataclasses import dataclass

    from verifier_service.config import ServiceConfig
    from verifier_service.doors.http import languages, sandboxfusion

    @dataclass(frozen=True)
    class Row:
        name: str
        file: str
        compile: tuple
        run: tuple
        image: str = ""
        artifacts: tuple = ()
        address_space_limit: bool = False

        def files(self, source):
            cls = "Solver" if "class Solver" in source else "Main"
            return f"{cls}.java", (*self.compile[:-1], f"{cls}.java"), ("java", cls)

    table = {"java": Row("java", "Main.java", ("javac", "Main.java"), ("java", "Main"), "langs", ("*.class",)),
             "javascript": Row("javascript", "solution.js", ("node", "--check", "solution.js"),
                               ("node", "solution.js"), "langs")}
    monkeypatch.setattr(languages, "table", lambda: table)
    assert languages.supported() == ["nodejs", "java"]
    config = ServiceConfig()
    request = sandboxfusion.parse({"code": "public class Solver {}", "language": "java"}, config)
    job = sandboxfusion.build_job(request, languages.resolve("java"), config)
    assert [s.argv for s in job.steps] == [["javac", "Solver.java"], ["java", "Solver"]]
    assert set(job.files) == {"Solver.java"} and getattr(job, "image", "langs") == "langs"
    node = sandboxfusion.build_job({**request, "language": "nodejs"}, languages.resolve("nodejs"), config)
    assert [s.name for s in node.steps] == ["run"]  # a syntax check is no compile step (SandboxFusion has none)
    assert sandboxfusion.unsupported("ruby")["message"].endswith("runs: nodejs, java")
