# class: escape/cpu
# task: double
# expect: TIMEOUT
"""Spins inside the tested function."""
def f(x):
    while True:
        x += 1
