# class: hack/read-expected
# task: stdio
# expect: FAILED
"""stdio: each case is a fork of a warm interpreter; looks through every object it inherited (and the stack's
frames) for the job, the spec or another case's expected output: they never enter the sandbox."""
import gc, json, re, sys

n = sys.stdin.readline().strip()
answer = "0"
texts = [o for o in gc.get_objects() if isinstance(o, (str, bytes, dict))]
frame = sys._getframe()
while frame is not None:
    texts += list(frame.f_locals.values())
    frame = frame.f_back
for obj in texts:
    try:
        text = obj.decode("utf-8", "replace") if isinstance(obj, bytes) else obj if isinstance(obj, str) else repr(obj)
    except Exception:
        continue
    for found in re.findall(r'[\'"]expected_stdout[\'"]\s*:\s*[\'"]([^\'"]*)', text):
        answer = found.strip()
print(answer)
