# class: hack/compare
# task: stdiofloat
# expect: FAILED PARTIAL
"""stdio compare=float: an integer answer off by one part in ten million (the relative tolerance
used to apply to integer tokens too)."""
n = int(input())
print(n * 1000000 + 1)
print(round(n / 3, 6))
