"""benchmarks/math_table.py without its data: the near misses it builds, and the published table is its run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.math_table import near_misses, ours, report

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("gold, expected", [
    ("52_8", {"another base": "52_{9}"}),                          # not "52": in base 10 that is right
    ("\\frac{14}{3}", {"first number of an expression": "14"}),
    ("10*x**7 + 4*x**3/5 + C", {"first number of an expression": "10"}),
    ("4t", {"first number of an expression": "4"}),
    ("3\\pi", {"first number of an expression": "3"}),
    ("72", {"11th significant digit changed": "72.000000001"}),
    ("0.25", {"11th significant digit changed": "0.25000000001"}),
    ("-3", {"11th significant digit changed": "-3.0000000001"}),
    ("5\\text{ cm}", {}), ("90^\\circ", {}), ("60\\%", {}), ("\\$18.90", {}), ("x = 5", {}),  # the number is right
])
def test_near_misses_are_one_slip_from_the_gold(gold, expected):
    assert near_misses(gold) == expected


@pytest.mark.parametrize("gold", ["52_8", "\\frac{14}{3}", "10*x**7 + 4*x**3/5 + C", "4t", "72", "0.25", "-3"])
def test_the_kind_fails_every_near_miss_and_passes_the_gold(gold):
    assert ours(gold, f"\\boxed{{{gold}}}") is True
    for value in near_misses(gold).values():
        assert ours(gold, f"So the answer is \\boxed{{{value}}}.") is False, value


def test_the_published_table_is_the_committed_run():
    results = json.loads((ROOT / "benchmarks" / "math_table.json").read_text(encoding="utf-8"))
    assert (ROOT / "benchmarks" / "MATH_TABLE.md").read_text(encoding="utf-8") == report(results)
