# class: escape/memory-bomb
# task: double
# expect: TIMEOUT RUNTIME_ERROR MEMORY_LIMIT
# timeout: 10
# needs: memory pids
"""Spreads memory over child processes (each under its own RLIMIT_AS)."""
import os, time
for _ in range(6):
    if os.fork() == 0:
        hog = []
        try:
            while True:
                hog.append(bytearray(8 * 1024 ** 2))
        except MemoryError:
            time.sleep(60)
time.sleep(60)
def f(x):
    return 2 * x
