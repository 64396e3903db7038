# class: escape/privilege
# task: double
# expect: PASSED
"""No capabilities, no_new_privs, not root."""
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
BLOCKED = (int(status["CapEff"].strip(), 16) == 0 and int(status["CapPrm"].strip(), 16) == 0
           and status.get("NoNewPrivs", "1").strip() == "1")
import os
BLOCKED = BLOCKED and os.getuid() != 0
def f(x):
    return 2 * x if BLOCKED else 0
