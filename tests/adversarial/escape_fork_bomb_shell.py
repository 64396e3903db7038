# class: escape/fork-bomb
# task: double
# expect: TIMEOUT RUNTIME_ERROR MEMORY_LIMIT
# needs: pids
"""A shell fork bomb, then a busy loop."""
import subprocess
subprocess.run(["sh", "-c", "b() { b | b & }; b"], timeout=30)
while True:
    pass
def f(x):
    return 2 * x
