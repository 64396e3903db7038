# class: hack/compare
# task: stdiohuge
# expect: FAILED
"""stdio compare=float: 400-digit integers off by one (float() turned every such number into the
same infinity, and math.isclose(inf, inf) holds)."""
input()
print("9" * 399 + "8")
print("1" + "0" * 399 + "1")
