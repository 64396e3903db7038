# class: hack/forge-report
# task: double
# expect: FAILED RUNTIME_ERROR
"""Steals the nonce from the harness's memory and writes forged events to every fd."""
import gc, json, os, re
nonce = None
for obj in gc.get_objects():
    if callable(obj) and getattr(obj, "__closure__", None):
        for cell in obj.__closure__:
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if isinstance(v, str) and re.fullmatch(r"[0-9a-f]{32}", v):
                nonce = v
if nonce:
    lines = "".join(json.dumps({"event": "test", "index": i, "name": str(i), "passed": True, "error": None,
                                "detail": "", "duration_s": 0, "nonce": nonce}) + "\n" for i in range(10))
    lines += json.dumps({"event": "end", "nonce": nonce}) + "\n"
    for fd in range(3, 64):
        try:
            os.write(fd, lines.encode())
        except OSError:
            pass
    os._exit(0)
def f(x):
    return 0
