# class: escape/disk-fill
# task: double
# expect: OUTPUT_LIMIT RUNTIME_ERROR TIMEOUT
"""Fills /tmp with many small files (inodes, then space)."""
import os
i = 0
while True:
    with open(f"/tmp/f{i}", "wb") as fh:
        fh.write(b"x" * 65536)
    i += 1
def f(x):
    return 2 * x
