"""pytest plugin of the sandbox (``-p rlvr_pytest``): stamps the JUnit report with the job's nonce.
It also records how many checks ran (``rlvr_asserts``): all tests passing with none run is no pass.

The nonce arrives on stdin and is read when pytest imports this plugin, before
output capture starts and before any test module is imported (the completion
runs in a process of its own, forked before: see ``run_pytest.py``). A report
the completion writes itself lacks it and is rejected by the host.

Once collection is done, the test modules pytest imported are removed from the
work dir: the completion's code (which runs only when a test first calls it)
cannot read the tests' expected values from disk. The spec's other files (data the
tests read) are read by the judge from copies taken before the completion ran, and
restored on disk before each test.
"""

import linecache
import os
import sys

import pytest


def _read_nonce():
    data = b""
    while not data.endswith(b"\n") and len(data) < 256:
        chunk = os.read(0, 256)
        if not chunk:
            break
        data += chunk
    return data.decode("ascii", "replace").strip()


def _make_hook(nonce):
    def pytest_sessionstart(session):
        from _pytest.junitxml import xml_key

        xml = session.config.stash.get(xml_key, None)
        if xml is not None:
            xml.add_global_property("rlvr_nonce", nonce)

    return pytest_sessionstart


pytest_sessionstart = _make_hook(_read_nonce())
del _read_nonce, _make_hook


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """Before the JUnit report is written (this hook runs first: ``tryfirst``): the completion's process and every
    process it started are killed, so none can rewrite the report file once it holds the nonce."""
    import candidate_process
    from remote_module import SolutionModule

    for module in list(sys.modules.values()):
        if isinstance(module, SolutionModule):
            module.__dict__["_rlvr"]["candidate"].close()
    candidate_process.end_other_processes()
    _record_asserts(session)


def _snapshot():
    """The work dir's Python sources as they are now (the completion has not run: its module is a lazy
    ``SolutionModule``), the completion's own file left out."""
    import sealed_workdir
    from remote_module import SolutionModule

    solution = [m.__file__ for m in list(sys.modules.values()) if isinstance(m, SolutionModule)]
    return sealed_workdir.snapshot_workdir(skip=solution)


_SOURCES = _snapshot()


def _serve_data_files():
    """The spec's data files (fixtures' JSON, CSV, text the tests read) as they are now, before the completion
    runs: the judge's ``open`` reads these copies from here on, and each test starts with them restored on
    disk, so a completion cannot rewrite what the tests read."""
    import sealed_workdir
    from remote_module import SolutionModule

    solution = [m.__file__ for m in list(sys.modules.values()) if isinstance(m, SolutionModule)]
    files = sealed_workdir.snapshot_files(skip=solution)
    sealed_workdir.serve_files(files)
    return files


_DATA_FILES = _serve_data_files()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    import sealed_workdir

    sealed_workdir.restore_files(_DATA_FILES)


def pytest_collection_finish(session):
    _remote_isinstance(session)
    workdir = os.path.realpath(os.getcwd()) + os.sep
    modules = {str(item.path) for item in session.items}
    modules.update(str(getattr(m, "__file__", "") or "") for m in session.config.pluginmanager.get_plugins()
                   if getattr(m, "__name__", "").endswith("conftest"))
    for path in modules:
        real = os.path.realpath(path)
        if real.startswith(workdir) and real.endswith(".py"):
            lines = linecache.getlines(real)  # tracebacks keep their source lines (no mtime: never re-checked)
            linecache.cache[real] = (sum(map(len, lines)), None, lines, real)
            try:
                os.unlink(real)
            except OSError:
                pass
    # From here on the completion runs (when a test first uses one of its names): the judge imports nothing
    # from the work dir or the scratch dirs (pytest put the test dirs first on sys.path); the spec's own helper
    # modules a test imports late come from the sources read before the completion could change them.
    import sealed_workdir

    sealed_workdir.seal_imports(_SOURCES)


def _remote_isinstance(session):
    """The test modules (and conftests) get ``isinstance`` that answers for the completion's classes: its objects
    live in the candidate process, so the built-in would say an honest ``Stack()`` is no ``Stack``. The candidate
    answers with a bool only (what it could give as a plain value); other classes are the built-in's. A module
    that defines its own ``isinstance`` keeps it."""
    from remote_objects import remote_isinstance

    modules = {id(m): m for m in (getattr(item, "module", None) for item in session.items) if m is not None}
    modules.update((id(m), m) for m in session.config.pluginmanager.get_plugins()
                   if getattr(m, "__name__", "").endswith("conftest"))
    for module in modules.values():
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict):
            namespace.setdefault("isinstance", remote_isinstance)


_asserts = [0]  # checks that ran: asserts that held (pytest rewrites the test modules), pytest.raises, unittest
# assert methods (a failed one fails its test anyway). The completion runs in another process: it cannot count.


def pytest_assertion_pass(item, lineno, orig, expl):
    _asserts[0] += 1


def _count_other_checks():
    import functools
    import unittest

    import pytest

    def counted(function):
        @functools.wraps(function)
        def check(*args, **kwargs):
            _asserts[0] += 1
            return function(*args, **kwargs)

        return check

    pytest.raises = counted(pytest.raises)
    for name in dir(unittest.TestCase):
        if name.startswith("assert") and callable(getattr(unittest.TestCase, name)):
            setattr(unittest.TestCase, name, counted(getattr(unittest.TestCase, name)))


_count_other_checks()  # before any test module is imported (``from pytest import raises`` gets the counted one)
del _count_other_checks


def _record_asserts(session):
    """The count goes into the report (before junitxml writes it): a run whose tests all passed without
    running an assert checked nothing, and the host does not count it as passed."""
    from _pytest.junitxml import xml_key

    xml = session.config.stash.get(xml_key, None)
    if xml is not None:
        xml.add_global_property("rlvr_asserts", str(_asserts[0]))
