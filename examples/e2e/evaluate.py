"""Held-out evaluation: pass@1 and format compliance, scored through the service and the reference scorer.

Each held-out prompt gets ``n`` completions (greedy by default: one, the model's pass@1 answer). Every
completion is scored twice: by the remote verifier service (``python_io`` in the sandbox) and in-process by
``examples/e2e/reference.py``. The two must agree on every completion: same well-formedness, same correctness,
same number of cases passed; each disagreement is listed.

pass@1 is the share of completions whose verdict is PASSED (every case right); format compliance the share with
a format score of 1 (one fenced code block found). Both carry Wilson 95% intervals over the completions.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from examples.e2e import reference
from trainer.gates import wilson_interval


@dataclass(frozen=True)
class Scored:
    """One completion as both scorers saw it."""

    id: str
    family: str
    level: int
    service_verdict: str
    service_format: bool
    service_correct: bool
    service_passed: int
    reference_format: bool
    reference_correct: bool
    reference_passed: int
    total: int

    def disagreement(self) -> str | None:
        problems = []
        if self.service_verdict == "INFRA_ERROR":
            return "service INFRA_ERROR (no verdict)"
        if self.service_format != self.reference_format:
            problems.append(f"format service={self.service_format} reference={self.reference_format}")
        if self.service_correct != self.reference_correct:
            problems.append(f"correct service={self.service_correct} reference={self.reference_correct}")
        if self.service_format and self.reference_format and self.service_passed != self.reference_passed:
            problems.append(f"cases passed service={self.service_passed} reference={self.reference_passed}")
        return "; ".join(problems) or None


def score_both(samples: list[dict], service_results: list[dict]) -> list[Scored]:
    """Joins the service's results (JSON form, same ids) with the reference scorer's verdicts."""
    by_id = {str(r["id"]): r for r in service_results}
    scored = []
    for s in samples:
        r = by_id[str(s["id"])]
        ref = reference.score(s["completion"], s["spec"])
        task = s.get("task") or {}
        scored.append(Scored(
            id=str(s["id"]), family=task.get("family", ""), level=int(task.get("level", 0)),
            service_verdict=r["verdict"], service_format=float(r.get("format_score") or 0.0) >= 1.0,
            service_correct=r["verdict"] == "PASSED", service_passed=int(r.get("tests_passed") or 0),
            reference_format=ref.well_formed, reference_correct=ref.correct, reference_passed=ref.passed,
            total=ref.total))
    return scored


def rate(successes: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(successes, n)
    return {"successes": successes, "n": n, "rate": successes / n if n else 0.0, "ci95": [low, high]}


def summarise(scored: list[Scored]) -> dict[str, Any]:
    """pass@1 and format compliance (service and reference), per level too, and the agreement."""
    judged = [s for s in scored if s.service_verdict != "INFRA_ERROR"]
    disagreements = [{"id": s.id, "problem": p} for s in scored if (p := s.disagreement())]
    levels = sorted({s.level for s in judged})
    return {
        "completions": len(scored),
        "infra_errors": len(scored) - len(judged),
        "pass@1": rate(sum(s.service_correct for s in judged), len(judged)),
        "format_compliance": rate(sum(s.service_format for s in judged), len(judged)),
        "reference_pass@1": rate(sum(s.reference_correct for s in scored), len(scored)),
        "reference_format_compliance": rate(sum(s.reference_format for s in scored), len(scored)),
        "per_level": {str(level): rate(sum(s.service_correct for s in judged if s.level == level),
                                       sum(1 for s in judged if s.level == level)) for level in levels},
        "agreement": {"compared": len(scored), "disagreements": len(disagreements),
                      "examples": disagreements[:20]},
    }


def attach_tasks(samples: list[dict], rows: list[dict]) -> list[dict]:
    """Each sample (id ``<row>-<j>``) with its row's task (family, level, name)."""
    for s in samples:
        s["task"] = rows[int(str(s["id"]).rsplit("-", 1)[0])].get("task", {})
    return samples


def write_jsonl(path, items) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(asdict(i) if hasattr(i, "__dataclass_fields__") else i) + "\n"
                            for i in items))
