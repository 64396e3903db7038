# class: escape/disk-fill
# task: double
# expect: OUTPUT_LIMIT RUNTIME_ERROR MEMORY_LIMIT
"""Fills /dev/shm."""
with open("/dev/shm/fill", "wb") as fh:
    while True:
        fh.write(b"x" * (1 << 20))
def f(x):
    return 2 * x
