"""Pure functions: extraction, scoring, spec conversion, comparison, config, test splitting."""

from __future__ import annotations

import pytest

from verifier_service.config import ServiceConfig, load_config
from verifier_service.engine.extract import extract
from verifier_service.errors import InvalidSpec, VerifierError
from verifier_service.kinds.python_assert import split_tests
from verifier_service.kinds.python_io import values_match
from verifier_service.kinds.stdio import outputs_match
from verifier_service.spec import (
    MISSING,
    request_from_json,
    spec_from_json,
    spec_from_proto,
    spec_to_json,
    spec_to_proto,
)
from verifier_service.verdict import Outcome, TestOutcome, Verdict, overall_verdict, score


class TestExtract:
    TEXT = "intro\n```python\nfirst()\n```\nmiddle\n```\nsecond()\n```\n<answer> 42 </answer>"

    def test_modes(self):
        assert extract(self.TEXT, "raw") == self.TEXT
        assert extract(self.TEXT, "fenced_code") == "first()"
        assert extract(self.TEXT, "last_fenced_code") == "second()"
        assert extract(self.TEXT, "answer_tag") == "42"

    def test_failures_are_none(self):
        assert extract("no fence", "fenced_code") is None
        assert extract("```python\nunclosed", "fenced_code") is None
        assert extract("<answer></answer>", "answer_tag") is None
        assert extract("   ", "raw") is None

    def test_last_answer_tag_wins(self):
        assert extract("<answer>1</answer> then <answer>2</answer>", "answer_tag") == "2"


class TestScoring:
    def test_malformed_never_equals_well_formed_wrong(self):
        for fw in (0.01, 0.2, 1.0):
            malformed = score(Outcome.malformed("x"), "all_or_nothing", fw, 0.8)
            wrong = score(Outcome.from_tests([TestOutcome("t", Verdict.FAILED)]), "all_or_nothing", fw, 0.8)
            assert wrong.reward > malformed.reward == 0.0
            assert (malformed.format_score, wrong.format_score) == (0.0, 1.0)

    def test_infra_error_has_no_reward(self):
        assert score(Outcome.infra_error("docker down"), "fraction", 0.2, 0.8).reward is None

    def test_fraction_and_all_or_nothing(self):
        tests = [TestOutcome("a", Verdict.PASSED), TestOutcome("b", Verdict.FAILED)]
        assert score(Outcome.from_tests(tests), "fraction", 0.2, 0.8).correctness_score == 0.5
        assert score(Outcome.from_tests(tests), "all_or_nothing", 0.2, 0.8).correctness_score == 0.0

    def test_compile_error_scores_no_correctness(self):
        s = score(Outcome(Verdict.COMPILE_ERROR), "fraction", 0.2, 0.8)
        assert (s.format_score, s.correctness_score, s.reward) == (0.0, 0.0, 0.0)  # not well-formed code

    def test_overall_verdict_order(self):
        P, F = Verdict.PASSED, Verdict.FAILED
        mk = lambda *vs: [TestOutcome(str(i), v) for i, v in enumerate(vs)]  # noqa: E731
        assert overall_verdict(mk(P, P)) is P
        assert overall_verdict(mk(P, F)) is Verdict.PARTIAL
        assert overall_verdict(mk(F, F)) is F
        assert overall_verdict(mk(P, Verdict.TIMEOUT)) is Verdict.TIMEOUT
        assert overall_verdict(mk(F, Verdict.RUNTIME_ERROR)) is Verdict.RUNTIME_ERROR
        assert overall_verdict([]) is F


class TestSpec:
    def test_round_trip_keeps_exact_json_types(self):
        obj = {"kind": "python_io", "entry_point": "f", "float_tolerance": 0.5, "fast_fail": True,
               "cases": [{"args": [1, 2.0, True, None, "s"], "kwargs": {"k": [1]}, "expected": 3}],
               "format_weight": 0.3}
        spec = spec_from_json(obj)
        back = spec_from_proto(spec_to_proto(spec))
        assert back == spec
        case = back.cases[0]
        assert [type(a) for a in case.args] == [int, float, bool, type(None), str]
        assert type(case.expected) is int
        assert spec_to_json(back) == obj

    def test_unset_expected_is_missing(self):
        spec = spec_from_proto(spec_to_proto(spec_from_json({"kind": "stdio", "cases": [
            {"stdin": "", "expected_stdout": ""}]})))
        assert spec.cases[0].expected is MISSING and spec.cases[0].expected_stdout == ""

    @pytest.mark.parametrize("obj, message", [
        ({"kind": "x", "tset": "typo"}, "unknown spec field"),
        ({"tests": "assert 1"}, "spec.kind is required"),
        ({"kind": "python_io", "cases": {"args": []}}, "must be a list"),
        ({"kind": "python_io", "cases": [{"arg": []}]}, "unknown key"),
        ({"kind": "stdio", "timeout_s": "10"}, "must be a number"),
        ({"kind": "stdio", "fast_fail": 1}, "true or false"),
        ({"kind": "pytest", "files": {"a.py": 3}}, "file contents"),
    ])
    def test_bad_json_forms(self, obj, message):
        with pytest.raises(InvalidSpec, match=message):
            spec_from_json(obj)

    def test_request_from_json(self):
        req = request_from_json({"id": 7, "completion": "x", "spec": {"kind": "format", "pattern": "x"}})
        assert req.id == "7" and req.spec.pattern == "x"
        with pytest.raises(InvalidSpec, match="completion must be a string"):
            request_from_json({"id": "a", "spec": {"kind": "format"}})

    @pytest.mark.parametrize("spec, field", [
        ({"kind": "python_assert", "tests": "assert f() == '\udcff'"}, "spec.tests"),
        ({"kind": "\ud800"}, "spec.kind"),
        ({"kind": "json_schema", "schema": {"type": "string", "enum": ["\udcff"]}}, "spec.schema"),
        ({"kind": "json_schema", "schema": {"\udcff": 1}}, "spec.schema"),
        ({"kind": "stdio", "cases": [{"stdin": "1\n", "expected_stdout": "1"},
                                     {"stdin": "x\udcff", "expected_stdout": "1"}]}, "spec.cases[1].stdin"),
        ({"kind": "stdio", "cases": [{"stdin": "1", "expected_stdout": "\udcff"}]}, "spec.cases[0].expected_stdout"),
        ({"kind": "python_io", "cases": [{"args": [1], "expected": ["\udcff"]}]}, "spec.cases[0].expected"),
        ({"kind": "python_io", "cases": [{"args": ["\udcff"], "expected": 1}]}, "spec.cases[0].args"),
        ({"kind": "pytest", "files": {"test_x.py": "# \udcff"}}, "spec.files['test_x.py']"),
        ({"kind": "pytest", "files": {"\udcff.py": "x"}}, "spec.files (a file path)"),
        ({"verifier": "team/math@1", "gold": "\udcff"}, "spec.gold"),
        ({"verifier": "team/\udcff@1"}, "verifier"),
    ])
    def test_a_lone_surrogate_in_a_spec_is_the_callers_error_naming_the_field(self, spec, field):
        """A JSON \\udcff escape in what the caller wrote: InvalidSpec naming the request and the field, never
        the UnicodeEncodeError protobuf raises (which the CLI calls a bug)."""
        with pytest.raises(InvalidSpec) as info:
            request_from_json({"id": "r7", "completion": "x", "spec": spec})
        message = str(info.value)
        assert "request 'r7'" in message and field in message and "lone surrogate" in message, message
        message.encode("utf-8")  # the message itself can be printed and sent

    def test_a_lone_surrogate_in_an_id_is_refused_one_in_a_completion_is_sent(self):
        with pytest.raises(InvalidSpec, match="id holds a lone surrogate"):
            request_from_json({"id": "a\udcff", "completion": "x", "spec": {"kind": "format", "pattern": "x"}})
        req = request_from_json({"id": "a", "completion": "x\udcff", "spec": {"kind": "format", "pattern": "x"}})
        assert req.completion == "x\ufffd"  # the model's output: sent, scored

    def test_a_lone_surrogate_in_a_json_field_on_the_wire_is_refused(self):
        from verifier_service._generated import verifier_pb2 as pb
        from verifier_service.spec import spec_from_proto

        message = pb.VerificationSpec(kind="json_schema", schema_json='{"enum": ["\\udcff"]}')
        with pytest.raises(InvalidSpec, match=r"spec\.schema holds a lone surrogate"):
            spec_from_proto(message)
        message = pb.VerificationSpec(kind="python_io")
        message.cases.add(args_json="[1]", expected_json='"\\ud800"')
        with pytest.raises(InvalidSpec, match=r"spec.cases\[0\].expected holds a lone surrogate"):
            spec_from_proto(message)


class TestComparisons:
    def test_values_match(self):
        assert values_match(3, 3, 0) and not values_match(True, 1, 0) and not values_match(1, True, 0)
        assert values_match(3, 3.0, 0) and values_match(0.1 + 0.2, 0.3, 1e-9)
        assert not values_match(0.1 + 0.2, 0.3, 0)
        assert values_match([1, {"a": [2.0]}], [1, {"a": [2]}], 0)
        assert not values_match({"a": 1, "b": 2}, {"a": 1}, 0)
        assert not values_match({"__rlvr_unencodable__": "x"}, {"__rlvr_unencodable__": "x"}, 0)
        assert not values_match("1", 1, 0) and values_match(None, None, 0)
        assert values_match(float("nan"), float("nan"), 0)

    def test_outputs_match(self):
        assert outputs_match("3\n", "3", "exact", 0) and outputs_match("3\r\n", "3\n", "exact", 0)
        assert not outputs_match("3 \n", "3\n", "exact", 0)
        assert outputs_match("1  2\n3", "1 2 3\n", "tokens", 0)
        assert outputs_match("0.3333333", "0.33333334", "float", 1e-6)
        assert not outputs_match("0.34", "0.33", "float", 1e-6)
        assert not outputs_match("a", "b", "float", 1e-6)


class TestSplitTests:
    def test_each_top_level_assert_is_a_test(self):
        items = split_tests("import math\nassert f(1) == 1\nx = 2\nassert f(x) == 2\n", "")
        assert [i["kind"] for i in items] == ["stmt", "test", "stmt", "test"]

    def test_entry_point_adds_check(self):
        items = split_tests("def check(c):\n    assert c(1)\n", "f")
        assert [i["kind"] for i in items] == ["stmt", "test"] and items[-1]["code"] == "check(f)"

    def test_nothing_to_test_is_invalid(self):
        with pytest.raises(InvalidSpec, match="nothing would be tested"):
            split_tests("x = 1\n", "")
        with pytest.raises(InvalidSpec, match="not valid Python"):
            split_tests("assert (", "")



class TestPytestPaths:
    @pytest.mark.parametrize("files, solution_path", [
        ({"test_x.py": "def test_a(): pass"}, "judge.py"),           # the completion as the judge's own module
        ({"test_x.py": "def test_a(): pass"}, "pkg/procs.py"),
        ({"sealed_workdir.py": "x = 1", "test_x.py": "def test_a(): pass"}, "solution.py"),  # a support file
    ])
    def test_a_module_named_as_a_runner_module_is_refused(self, files, solution_path):
        """The runner's modules are imported by bare name in the sandbox: a file of the same name would take a
        judge module's place (its import seal, its comparison of values)."""
        from verifier_service.kinds import get_kind

        spec = spec_from_json({"kind": "pytest", "files": files, "solution_path": solution_path})
        with pytest.raises(InvalidSpec, match="one of the judge's own modules"):
            get_kind("pytest").validate(spec)

    def test_ordinary_names_and_package_markers_pass(self):
        from verifier_service.kinds import get_kind

        spec = spec_from_json({"kind": "pytest", "solution_path": "pkg/solution.py",
                               "files": {"pkg/__init__.py": "", "tests/test_x.py": "def test_a():\n    assert 1"}})
        assert get_kind("pytest").validate(spec).solution_path == "pkg/solution.py"


class TestConfig:
    def test_precedence_env_over_file_flags_over_env(self, tmp_path):
        path = tmp_path / "c.yaml"
        path.write_text("max_concurrency: 3\nmemory_mb: 300\n")

        class Args:
            config = path
            memory_mb = "400"

        config = load_config(Args(), environ={"RLVR_VERIFIER_MAX_CONCURRENCY": "5", "RLVR_VERIFIER_MEMORY_MB": "350"})
        assert (config.max_concurrency, config.memory_mb) == (5, 400)

    def test_bad_values(self, tmp_path):
        with pytest.raises(VerifierError, match="cannot read"):
            load_config(None, environ={"RLVR_VERIFIER_PORT": "eighty"})
        with pytest.raises(VerifierError, match="must be positive"):
            load_config(None, environ={"RLVR_VERIFIER_MAX_CONCURRENCY": "0"})
        path = tmp_path / "c.yaml"
        path.write_text("max_concurency: 3\n")

        class Args:
            config = path

        with pytest.raises(VerifierError, match="unknown setting"):
            load_config(Args(), environ={})
        assert ServiceConfig().validate().port == 50051


class TestCodeWithoutCode:
    """A Python block of comments only (MBPP 689's prompt begins '## write a function ...': that prose fenced
    as code compiles, to nothing) is MALFORMED before any sandbox: format 0, below a well-formed wrong answer."""

    PROSE = "## write a function to find the minimum number of jumps\n\n  # > indented block\n"

    @pytest.mark.parametrize("kind, spec", [
        ("python_assert", {"tests": "assert f() == 1"}),
        ("python_io", {"entry_point": "f", "cases": [{"args": [], "expected": 1}]}),
        ("pytest", {"files": {"test_s.py": "from solution import f\n\ndef test_f():\n    assert f() == 1\n"}}),
    ])
    def test_comments_only_is_malformed_before_the_sandbox(self, kind, spec):
        import asyncio

        from verifier_service.kinds import get_kind

        verifier = get_kind(kind)
        checked = verifier.validate(spec_from_json({"kind": kind, **spec}))
        outcome = asyncio.run(verifier.verify(self.PROSE, checked, None))  # no context: never reaches a sandbox
        assert outcome.verdict is Verdict.MALFORMED and "only comments" in outcome.detail
        assert score(outcome, "all_or_nothing", 0.2, 0.8).reward == 0.0

    def test_code_after_comments_is_code(self):
        from verifier_service.kinds._sandboxed import python_without_code

        assert python_without_code("# a note\ndef f():\n    return 1\n") is None
        assert python_without_code("#!/usr/bin/env python\nx = 1") is None
        assert python_without_code("   \n# only\n\t# notes\n") is not None


class TestPytestCollectsUnittestClasses:
    """pytest collects a unittest.TestCase whatever its name (Exercism's ``AllergiesTest``, ClassEval's
    ``AccessGatewayFilterTestFilter``): such a suite is valid; a class that is neither named Test* nor a TestCase
    still holds no test."""

    def test_testcase_subclass_named_anything_is_collected(self):
        from verifier_service.kinds import get_kind

        kind = get_kind("pytest")
        for base in ("unittest.TestCase", "TestCase"):
            test = (f"import unittest\nfrom unittest import TestCase\nfrom allergies import Allergies\n\n\n"
                    f"class AllergiesTest({base}):\n    def test_eggs(self):\n"
                    f"        self.assertIs(Allergies(1).allergic_to('eggs'), True)\n")
            kind.validate(spec_from_json({"kind": "pytest", "files": {"allergies_test.py": test},
                                          "solution_path": "allergies.py"}))
        plain = "class AllergiesTest:\n    def test_eggs(self):\n        assert True\n"
        with pytest.raises(InvalidSpec, match="nothing would be tested"):
            kind.validate(spec_from_json({"kind": "pytest", "files": {"allergies_test.py": plain}}))


def test_python_imports_are_the_top_level_unconditional_third_party_ones():
    from verifier_service.kinds.probe import python_imports

    source = ("import numpy as np\nfrom docx import Document\nimport os, sys\nimport xml.etree.ElementTree\n"
              "try:\n    import PIL\nexcept ImportError:\n    PIL = None\nif False:\n    import gensim\n"
              "def f():\n    import nltk\nfrom . import sibling\nfrom bs4.element import Tag\n")
    assert python_imports(source) == ("bs4", "docx", "numpy")
    assert python_imports("def (") == ()
