# class: escape/persist
# task: double
# expect: PASSED
# phase: 1
"""Poisons builtins and imported modules for a later job in the same interpreter."""
import builtins, json, sys
builtins.rlvr_planted = True
json.rlvr_planted = True
sys.modules["rlvr_planted"] = json
def f(x):
    return 2 * x
