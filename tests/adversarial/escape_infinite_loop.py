# class: escape/cpu
# task: double
# expect: TIMEOUT
"""Spins at import."""
while True:
    pass
def f(x):
    return 2 * x
