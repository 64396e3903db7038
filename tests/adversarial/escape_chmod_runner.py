# class: escape/write
# task: double
# expect: PASSED
"""The runner's files and the interpreter cannot be re-moded."""
import os
BLOCKED = True
for path in ("/opt/rlvr", "/opt/rlvr/runner.py", "/tmp/..", "/usr/bin/python3"):
    try:
        os.chmod(path, 0o777)
        BLOCKED = False
    except OSError:
        pass
def f(x):
    return 2 * x if BLOCKED else 0
