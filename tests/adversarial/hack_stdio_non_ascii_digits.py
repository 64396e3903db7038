# class: hack/compare
# task: stdiofloat
# expect: FAILED
"""stdio compare=float: the answer in Arabic-Indic digits, separated by no-break spaces (float()
read them as digits, str.split() as separators)."""
n = int(input())
digits = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")
print(str(n * 1000000).translate(digits), end="\u00a0")
print(f"{n / 3:.6f}".translate(digits))
