# class: hack/exact-types
# task: exactbool
# expect: FAILED
"""Returns 1/0 where the task says True/False (exact_types)."""
def f(x):
    return 1 if x else 0
