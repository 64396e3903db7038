# class: escape/memory-bomb
# task: double
# expect: MEMORY_LIMIT
# timeout: 10
"""Allocates without end inside the tested function."""
def f(x):
    hog = []
    while True:
        hog.append(bytearray(8 * 1024 ** 2))
