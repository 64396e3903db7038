# class: escape/write
# task: double
# expect: PASSED
"""Everything but the scratch dirs is read-only (the runner's code included)."""
import os
BLOCKED = True
for path in ("/opt/rlvr/judge.py", "/opt/rlvr/evil.py", "/usr/lib/evil", "/etc/evil", "/evil", "/home/evil",
             "/var/evil"):
    try:
        with open(path, "a") as fh:
            fh.write("# owned\n")
        BLOCKED = False
    except OSError:
        pass
def f(x):
    return 2 * x if BLOCKED else 0
