# class: escape/output-flood
# task: double
# expect: OUTPUT_LIMIT
"""Floods stdout from inside the tested function."""
def f(x):
    while True:
        print("z" * 10000)
