"""function_tests in Ruby (``kinds/function_tests.py`` calls ``program`` and ``LAUNCHER``): McEval's form (top-level
``raise 'Test failed' unless ...``, a ``check(method(:f))``) and MultiPL-E's (``require 'test/unit'``, a
``Test::Unit::TestCase`` whose test method calls ``candidate = method(:f)`` with ``assert_equal``).

The program is setup + completion, a marker line, and the tests; the end is not in it. The launcher
(``ruby_launcher.rb``, run as ``ruby -e``: no file of the program's holds it) does, in this order:

* reads the end's secret (64 hex digits) from its stdin into eight integers, locals of its own method (no heap
  object holds the secret: ``ObjectSpace`` finds none of it; the stdin is at its end when the program runs), then
  reads solution.rb and removes it (``__FILE__``, ``/proc/self/fd`` and the work dir hold no copy);
* loads test-unit (and Minitest) when the tests require them, so that their methods are among those it keeps;
* removes ``TracePoint.new``/``trace``, ``set_trace_func`` and ``Thread#add_trace_func`` (a trace hook's binding
  would reach its locals), keeps every method of every module there is (and of their singleton classes, ``main``'s
  too), each module's ancestors and every named module's constant, and freezes ``UnboundMethod``: every step after
  this one calls only methods it kept (``bind_call`` of a saved ``UnboundMethod``), never one a completion could
  have redefined (``Array#each``, ``Integer#==``, ``Proc#call``);
* evaluates the setup and completion (``TOPLEVEL_BINDING``, as ``solution.rb``); an ``exit`` there ends the run with
  no nonce; kills the threads the completion left and puts back Ruby's own signal handlers, then puts back every
  method it redefined or removed and removes every method it added that overrides one there was (``Integer#==``,
  ``Kernel#raise``, ``Kernel#exit``, ``Test::Unit::Assertions#assert_equal``, ``main``'s singleton ``raise``; a
  top-level ``def`` that takes a Kernel method's name stays unless it is one the tests rely on: ``raise``, ``==``,
  ``exit``...); a module it included into or prepended to one of them with such a method, a constant it replaced,
  or a class the tests declare that it declared first fails the run;
* evaluates the tests; an exception or an ``exit`` (any status) there fails the run; test-unit's test classes are
  run by its runner here (autorun is off) and pass when its result says ``passed?`` and it ran at least as many test
  methods as the tests' text defines; Minitest's through ``Minitest.run``;
* checks again that no kept method, ancestor or constant changed while the tests ran, then writes the nonce through
  a raw IO of fd 1 it opened first and leaves with ``exit!`` (no ``at_exit`` of the completion's runs after it).
What stays open is in ``FORGEABLE``.
"""

from __future__ import annotations

import re
from pathlib import Path

MARK_TESTS = "#rlvr-tests"
LAUNCHER = ("ruby", "-e", (Path(__file__).with_name("ruby_launcher.rb")).read_text(encoding="utf-8"))

FORGEABLE = (
    "the interpreter's memory (/proc/self/mem, Fiddle, a C extension: the debug gem's frame inspector reaches the "
    "launcher's locals); a returned object whose == always holds (Integer#== and Array#== ask it); a function that, "
    "while the tests run, replaces what they call (a core method, test-unit's runner or its result's state) and puts "
    "it back before the launcher looks again, or a finalizer or signal handler that does so")


def split_close(tests: str) -> tuple[str, str]:
    """(an ``end`` the tests begin with, which closes the completion's function, the rest)."""
    m = re.match(r"\s*end\b", tests)
    if m is None:
        return "", tests
    return f"\n{m.group(0).strip()}\n", tests[m.end():]


def program(setup: str, completion: str, tests: str) -> str:
    close, tests = split_close(tests)
    return f"{setup}{completion}{close}\n{MARK_TESTS}\n{tests}\n"


def secret_input(a: bytes, b: bytes) -> str:
    """The launcher's stdin: the end's two halves (16 bytes each) in hex; the nonce is their XOR."""
    return (a + b).hex()
