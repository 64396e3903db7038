# class: hack/exact-types
# task: exact
# expect: FAILED
"""Returns a float where the task says the int (exact_types)."""
def f(x):
    return 2.0 * x
