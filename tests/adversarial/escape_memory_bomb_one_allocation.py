# class: escape/memory-bomb
# task: double
# expect: MEMORY_LIMIT RUNTIME_ERROR
# timeout: 10
"""One huge allocation at import."""
hog = bytearray(64 * 1024 ** 3)
def f(x):
    return 2 * x
