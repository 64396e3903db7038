"""The official Spider judge on candidate queries: a driver run by the Python that has the judge's dependencies.

    PYTHON_WITH_SQLPARSE benchmarks/datasets/spider_official.py OFFICIAL_DIR < candidates.jsonl > verdicts.jsonl

OFFICIAL_DIR is a checkout of taoyds/test-suite-sql-eval (its ``exec_eval.py`` and ``parse.py``; they need
``sqlparse`` and ``tqdm``). Each input line is ``{"key", "db", "pred", "gold"}`` (``db``: the ``.sqlite`` path);
each output line ``{"key", "distinct_kept", "distinct_removed"}``: 1 or 0 from ``eval_exec_match`` without
value plugging, with ``--keep_distinct`` and without it (the judge's default removes DISTINCT from both
queries), or ``"gold error"`` where the judge's assertion that the gold runs fails. Nothing here judges: it
only calls the official function, the way its ``evaluation.py`` does for ``--etype exec``.
"""

import json
import sys


def main() -> int:
    sys.path.insert(0, sys.argv[1])
    from exec_eval import eval_exec_match  # the official judge, from its own checkout

    for line in sys.stdin:
        item = json.loads(line)
        out = {"key": item["key"]}
        for name, keep in (("distinct_kept", True), ("distinct_removed", False)):
            try:
                out[name] = eval_exec_match(item["db"], item["pred"], item["gold"], plug_value=False,
                                            keep_distinct=keep, progress_bar_for_each_datapoint=False)
            except AssertionError:
                out[name] = "gold error"
            except Exception as exc:  # noqa: BLE001 - the judge's own failure (its parser): reported, not scored
                out[name] = f"judge error: {type(exc).__name__}: {str(exc)[:200]}"
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
