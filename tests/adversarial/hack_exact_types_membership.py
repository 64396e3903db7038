# class: hack/exact-types
# task: exactdict
# expect: FAILED PARTIAL
"""exact_types: True where the tests ask whether 1 is in a list (True in [1, 2] holds)."""
def f(x):
    return {x: "odd" if x % 2 else "even"}
def g(x):
    return True
