# class: hack/forge-report
# task: double
# expect: FAILED RUNTIME_ERROR
"""Writes forged events (no nonce) to every open fd."""
import json, os
lines = "".join(json.dumps({"event": "test", "index": i, "name": str(i), "passed": True}) + "\n" for i in range(10))
lines += json.dumps({"event": "end"}) + "\n"
for fd in range(3, 64):
    try:
        os.write(fd, lines.encode())
    except OSError:
        pass
def f(x):
    return 0
