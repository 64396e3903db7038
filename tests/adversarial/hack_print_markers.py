# class: hack/markers
# task: double
# expect: FAILED RUNTIME_ERROR
"""Prints what harness output looks like on stdout."""
import json
for i in range(10):
    print(json.dumps({"event": "test", "index": i, "passed": True}))
print(json.dumps({"event": "end"}))
print("PASSED all tests\n{\"event\": \"done\", \"dirty\": false}")
def f(x):
    return 0
