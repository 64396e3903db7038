# class: escape/privilege
# task: double
# expect: PASSED
"""No way to uid 0."""
import os, subprocess
BLOCKED = True
for call in (lambda: os.setuid(0), lambda: os.setgid(0), lambda: os.setgroups([0])):
    try:
        call()
        BLOCKED = False
    except OSError:
        pass
for argv in (["sudo", "-n", "true"], ["su", "-c", "true"]):
    try:
        if subprocess.run(argv, capture_output=True, timeout=5).returncode == 0:
            BLOCKED = False
    except (OSError, subprocess.SubprocessError):
        pass
def f(x):
    return 2 * x if BLOCKED else 0
