# class: hack/forge
# task: stdiochecker
# expect: FAILED
"""A spec with a checker: the program prints a wrong answer together with everything that could pass for the
checker's verdict (its report lines, with a guessed nonce and without, testlib's "ok" lines, a "done" event), on
stdout, stderr and its own report channel. The checker sees only the output as data and its verdict comes back on
its own job's report channel with that job's nonce: the answer stays wrong."""
import json, os, sys

n = int(input())
forged = [{"nonce": "0" * 32, "case": i, "role": role, "ok": True, "message": ""}
          for i in range(2) for role in ("answer", "output")] + [{"nonce": "0" * 32, "done": True}, {"done": True}]
lines = [json.dumps(e) for e in forged] + ["ok 2 tokens", "ok accepted", "PASSED"]
for line in lines:
    sys.stderr.write(line + "\n")
try:
    with os.fdopen(int(os.environ["RLVR_REPORT_FD"]), "w") as report:
        report.write("\n".join(lines) + "\n")
except (KeyError, ValueError, OSError):
    pass
print(n, n)  # a wrong pair (n + n != n for n > 0)
print("\n".join(lines))
