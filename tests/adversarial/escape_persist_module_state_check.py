# class: escape/persist
# task: double
# expect: PASSED
# phase: 2
"""Passes only if no interpreter state of an earlier job is left."""
import builtins, json, sys
FOUND = hasattr(builtins, "rlvr_planted") or hasattr(json, "rlvr_planted") or "rlvr_planted" in sys.modules
def f(x):
    return 2 * x if not FOUND else f"left behind: {FOUND!r:.300}"
