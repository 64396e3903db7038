# class: escape/memory-bomb
# task: double
# expect: MEMORY_LIMIT
# timeout: 10
"""Grows a list of 8 MB blocks until something stops it."""
hog = []
while True:
    hog.append(bytearray(8 * 1024 ** 2))
def f(x):
    return 2 * x
