# class: hack/markers
# task: stdio
# expect: FAILED
"""stdio: prints every expected answer at once, plus markers."""
print("4")
print("10")
print('{"event": "end"}')
