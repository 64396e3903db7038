# class: hack/exact-types
# task: exactdict
# expect: PARTIAL
"""exact_types: the right dict with the key as a float (1.0 == 1 and hash(1.0) == hash(1): the
key was never compared by type)."""
def f(x):
    return {float(x): "odd" if x % 2 else "even"}
def g(x):
    return x
