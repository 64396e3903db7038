"""Runtimes that size their heap by the memory they see (Node.js, the JVM) see the sandbox's limit on every backend.

Docker shows a container its own cgroups, so Node.js takes a heap of about half the sandbox's memory and the JVM
75% of it (``MaxRAMPercentage``). A bubblewrap sandbox showed no cgroup: both sized themselves by the host's memory
(a 4 GiB heap for Node.js, 8 GiB for the JVM, in a 512 MiB sandbox), collected too late, and an honest program
that makes much garbage was killed as MEMORY_LIMIT where Docker passed it (McEval's JavaScript/41: a new
4003 x 4003 table in each call). Each program below makes about 1.5 GB of garbage in 128 MB pieces; it passes only
where its runtime collects within the sandbox's 512 MiB.
"""

from __future__ import annotations

import re
import shutil

import pytest

from support.sandboxes import runsc_registered

NODE_GARBAGE = """\
function table(k) {
    let sum = 0;
    for (let round = 0; round < 12; round++) {
        const t = Array.from({ length: 4000 }, () => Array(4000).fill(k));
        sum += t[3999][3999];
    }
    return sum;
}
"""
NODE_TESTS = "\nconsole.assert(table(2) === 24, 'table failed');\nif (table(1) !== 12) process.exit(1);\n"

JAVA_GARBAGE = """\
class Garbage {
    static long table(int k) {
        long sum = 0;
        for (int round = 0; round < 12; round++) {
            long[] t = new long[16_000_000];
            java.util.Arrays.fill(t, k);
            sum += t[t.length - 1];
        }
        return sum;
    }
}
"""
JAVA_TESTS = ("public class Main { public static void main(String[] a) {\n"
              "  if (Garbage.table(2) != 24) throw new AssertionError(\"table failed\"); } }\n")

# The heap each runtime allows itself, as the exit status (MiB / 32, at most 255): the same bound on every backend.
NODE_HEAP = "\nprocess.exit(Math.min(255, Math.round(require('v8').getHeapStatistics().heap_size_limit / 33554432)));\n"
JAVA_HEAP = ("public class Main { public static void main(String[] a) {\n"
             "  System.exit((int) Math.min(255, Runtime.getRuntime().maxMemory() / 33554432)); } }\n")


def _spec(language: str, tests: str) -> dict:
    return {"kind": "function_tests", "language": language, "tests": tests, "timeout_s": 60}


def _check(svc, backend: str) -> None:
    tools = {"javascript": "node", "java": "javac"}
    languages = [lang for lang, tool in tools.items() if backend != "bwrap" or shutil.which(tool)]
    if not languages:
        pytest.skip("this host has neither node nor javac")
    items = []
    if "javascript" in languages:
        items += [(NODE_GARBAGE, _spec("javascript", NODE_TESTS)), (NODE_GARBAGE, _spec("javascript", NODE_HEAP))]
    if "java" in languages:
        items += [(JAVA_GARBAGE, _spec("java", JAVA_TESTS)), (JAVA_GARBAGE, _spec("java", JAVA_HEAP))]
    results = svc.verify_batch(items, timeout=600)
    for (_, spec), result, kind in zip(items, results, ("garbage", "heap") * 2, strict=False):
        if kind == "garbage":
            assert result["verdict"] == "PASSED", (spec["language"], result["verdict"], result["detail"][:300])
        else:  # exits with its heap's MiB / 32: under the sandbox's 512 MiB, so at most 16 (and not 0)
            assert result["verdict"] == "FAILED", (spec["language"], result["detail"][:300])
            status = int(re.search(r"exit code (\d+)", result["detail"]).group(1))
            assert 0 < status <= 16, (spec["language"], status, result["detail"][:300])


@pytest.mark.backends("docker", "bwrap")
def test_node_and_the_jvm_size_their_heap_by_the_sandbox(make_service, sandbox_backend):
    _check(make_service(compile_timeout_s=120.0, memory_mb=512), sandbox_backend)


@pytest.mark.docker
@pytest.mark.skipif(not runsc_registered(), reason="gVisor (runsc) is not registered with Docker")
def test_node_and_the_jvm_size_their_heap_by_the_sandbox_under_gvisor(make_service):
    _check(make_service(compile_timeout_s=120.0, memory_mb=512, sandbox_runtime="runsc"), "docker")
