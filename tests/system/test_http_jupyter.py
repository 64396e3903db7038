"""SandboxFusion's ``POST /run_jupyter`` on the HTTP front door, through their SDK (``sandbox_fusion.run_jupyter``,
which posts ``RunJupyterRequest.dict()``) and byte-exact bodies of their ``RunJupyterRequest`` where the SDK's
model lacks a field (``memory_limit_MB``). SandboxFusion's own cases (sandbox/tests/runners/test_jupyter.py)
are the first test."""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest
import requests

from verifier_service.testing import free_port

from support.service import TEST_CONFIG, RunningService
from support.wait import wait_for

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def http(docker_ready):
    running = RunningService(replace(TEST_CONFIG, http_port=free_port(), session_spares=1, max_sessions=4,
                                     max_concurrency=1))
    yield running
    running.close()


@pytest.fixture(scope="module")
def sf():
    try:
        import sandbox_fusion
    except ImportError as exc:
        pytest.fail(f"sandbox_fusion is not installed ({exc}): pip install sandbox-fusion (the dev extra has it)",
                    pytrace=False)
    return sandbox_fusion


def jupyter(sf, http, cells, **fields):
    return sf.run_jupyter(sf.RunJupyterRequest(cells=cells, **fields), endpoint=http.http_url, max_attempts=1)


def no_live_sessions(http) -> bool:
    return wait_for(lambda: not http.app.sessions.sessions, timeout=10)


def test_their_cases_state_kept_across_cells(sf, http):
    printed = jupyter(sf, http, ["print(123)"])
    assert printed.status == sf.RunStatus.Success and printed.cells[0].stdout == "123\n"
    multi = jupyter(sf, http, ['a = "hello"', "a", "print(a)"])
    assert multi.cells[0].stdout == "" and multi.cells[1].display[0]["text/plain"] == "'hello'"
    assert multi.cells[2].stdout == "hello\n"
    raised = jupyter(sf, http, ['a = "hello"', 'import sys\nsys.stderr.write("This is an error message\\n")',
                                "assert False", "print(a)"])
    assert raised.status == sf.RunStatus.Success and raised.driver.status == sf.CommandRunStatus.Finished
    assert raised.cells[1].stderr == "This is an error message\n"
    assert raised.cells[2].error[0]["ename"] == "AssertionError"
    assert raised.cells[2].error[0]["traceback"][-1].startswith("AssertionError")
    assert raised.cells[3].stdout == "hello\n" and raised.cells[3].error == []
    assert no_live_sessions(http)  # every request's session is closed


def test_nothing_kept_across_requests(sf, http):
    first = jupyter(sf, http, ["secret = 41", "open('note.txt', 'w').write('x')", "secret + 1"])
    assert first.cells[2].display == [{"text/plain": "42"}]
    second = jupyter(sf, http, ["'secret' in globals()", "import os; os.path.exists('note.txt')"])
    assert [c.display[0]["text/plain"] for c in second.cells] == ["False", "False"]


def test_a_cell_timeout_stops_the_run(sf, http):
    slow = jupyter(sf, http, ["x = 1", "print('started', flush=True)\nwhile True: pass", "print(x)"],
                   cell_timeout=1)
    assert slow.status == sf.RunStatus.Failed and slow.driver.status == sf.CommandRunStatus.TimeLimitExceeded
    assert len(slow.cells) == 2 and slow.cells[1].error[0]["ename"] == "TimeLimitExceeded"
    assert slow.cells[1].stdout == "started\n"
    total = jupyter(sf, http, ["import time; time.sleep(30)"], total_timeout=1)
    assert total.status == sf.RunStatus.Failed and total.driver.status == sf.CommandRunStatus.TimeLimitExceeded
    assert no_live_sessions(http)


def test_files_in_and_out(sf, http):
    data = base64.b64encode(b"3 4\n").decode()
    done = jupyter(sf, http, ["a, b = map(int, open('in/data.txt').read().split())",
                              "open('out.txt', 'w').write(str(a * b))"],
                   files={"in/data.txt": data}, fetch_files=["out.txt", "missing.txt"])
    assert done.status == sf.RunStatus.Success
    assert {k: base64.b64decode(v) for k, v in done.files.items()} == {"out.txt": b"12"}


def test_bad_requests_are_4xx_with_a_message(http):
    url = http.http_url + "/run_jupyter"
    for body, field in (({}, "cells"), ({"cells": "print(1)"}, "cells"), ({"cells": [1]}, "cells"),
                        ({"cells": ["1"], "kernel": "ruby"}, "kernel"),
                        ({"cells": ["1"], "total_timeout": -1}, "total_timeout"),
                        ({"cells": ["1"], "cell_timeout": 1e9}, "cell_timeout"),
                        ({"cells": ["1"], "memory_limit_MB": 4}, "memory_limit_MB"),
                        ({"cells": ["1"], "files": {"../x": "YQ=="}}, "files"),
                        ({"cells": ["1"], "files": {"x": "not base64!"}}, "files"),
                        ({"cells": ["1"], "fetch_files": ["/etc/passwd"]}, "fetch_files")):
        answer = requests.post(url, json=body, timeout=30)
        assert answer.status_code == 422, (body, answer.text)
        assert answer.json()["error"].startswith(field) and answer.json()["detail"][0]["loc"] == ["body", field]
    broken = requests.post(url, data=b"{oops", timeout=30)
    assert broken.status_code == 400 and "not valid JSON" in broken.json()["error"]
    # their RunJupyterRequest byte for byte, with memory_limit_MB (not in the SDK's model)
    raw = requests.post(url, timeout=60, headers={"Content-Type": "application/json"},
                        data=b'{"cells": ["print(len(\\"ab\\"))"], "cell_timeout": 0, "total_timeout": 45, '
                             b'"memory_limit_MB": 128, "kernel": "python3", "files": {}, "fetch_files": []}')
    assert raw.status_code == 200 and raw.json()["cells"][0]["stdout"] == "2\n"
    assert set(raw.json()) == {"status", "message", "driver", "cells", "executor_pod_name", "files"}
    assert no_live_sessions(http)


def test_hostile_cells_do_not_outlive_their_request(sf, http):
    died = jupyter(sf, http, ["x = 1", "import os; os._exit(1)", "print('after', 'x' in globals())"])
    assert died.status == sf.RunStatus.Success and died.cells[0].error == []
    assert died.cells[1].error and "fresh one" in died.cells[1].error[0]["evalue"]
    assert died.cells[2].stdout == "after False\n"
    # a cell that breaks print (which reading the files back uses) gets no files and a message, not a fault
    forged = jupyter(sf, http, ["open('f.txt', 'w').write('real')",
                                "import builtins; builtins.print = lambda *a, **k: None"], fetch_files=["f.txt"])
    assert forged.files == {} and "could not be read back" in forged.message
    assert no_live_sessions(http)
