"""function_tests' launchers in Lua, Perl and R run a program where no new process can start, and R's is R's own
binary at Debian's path: a backend where that does not run is INFRA_ERROR (``probe.launcher_problem``), never an
exit status scored as the completion's."""

from __future__ import annotations

import asyncio

import pytest

from verifier_service.config import ServiceConfig
from verifier_service.kinds import dynamic_tests, probe
from verifier_service.kinds.base import Context
from verifier_service.kinds.languages import LANGUAGES
from verifier_service.sandbox.base import SandboxRun, StepResult


class FakeSandbox:
    """Runs a probe's job: the run step prints ok where its program (argv[0], or what `env` runs) is installed."""

    def __init__(self, installed: set[str]):
        self.installed, self.jobs = installed, []

    async def run(self, job):
        self.jobs.append(job)
        compiled = StepResult("compile", 0, None, False, False, 0.1, "", "")
        argv = job.steps[-1].argv
        program = next((a for a in argv[1:] if a.startswith("/")), argv[0]) if argv[0] == "env" else argv[0]
        if program not in self.installed:
            return SandboxRun([compiled, StepResult("run", 127, None, False, False, 0.1, "",
                                                    f"env: '{program}': No such file or directory\n")], True)
        return SandboxRun([compiled, StepResult("run", 0, None, False, False, 0.1, "ok\n", "")], True)


def context(sandbox) -> Context:
    return Context(config=ServiceConfig(), sandbox=sandbox, pure_pool=None, timeout_s=10.0)


@pytest.mark.parametrize("installed", [True, False])
def test_r_launcher_is_probed_where_the_tests_step_runs(installed):
    sandbox = FakeSandbox({"/usr/lib/R/bin/exec/R"} if installed else {"Rscript"})
    reason = asyncio.run(probe.launcher_problem(context(sandbox), LANGUAGES["r"]))
    if installed:
        assert reason is None
    else:
        assert "function_tests' r launcher" in reason and "sandbox backend" in reason and "exec/R" in reason
    (job,) = sandbox.jobs
    run = job.steps[-1]
    assert run.no_fork and tuple(run.argv) == dynamic_tests.R_ARGV  # as the tests step runs it
    assert list(job.files.values()) == [dynamic_tests.HELLO["r"]]  # the launcher's markers: it runs the end
    # kept, once per backend, and not listed as a language
    assert asyncio.run(probe.launcher_problem(context(sandbox), LANGUAGES["r"])) == reason and len(sandbox.jobs) == 1
    assert "launcher:r" not in probe.known(sandbox)


def test_languages_without_a_launcher_are_not_probed_again():
    sandbox = FakeSandbox(set())
    for name in ("python", "c", "java", "ruby"):
        assert asyncio.run(probe.launcher_problem(context(sandbox), LANGUAGES[name])) is None
    assert sandbox.jobs == []


def test_the_r_launcher_argument_is_what_r_reads_from_its_shell_script():
    """R's binary takes -e with its spaces written ~+~ (its shell script's encoding); the launcher holds no ~,
    no newline and no tab, which the binary would decode too."""
    expression = dynamic_tests.R_ARGV[-1]
    assert dynamic_tests.R_ARGV[-2] == "-e" and " " not in expression
    assert expression.replace("~+~", " ") == dynamic_tests.R_LAUNCHER
    assert not any(c in dynamic_tests.R_LAUNCHER for c in "~\n\t") and len(expression) < 10000  # (R's -e buffer)
