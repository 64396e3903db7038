// class: hack/neuter-checks
// task: fn_add
// expect: FAILED
/* function_tests: defines the C library's __assert_fail and abort, so that a failed assert in the tests (another
   translation unit) would call these and go on. The completion's definitions of library symbols are made local
   to its unit: the tests' assert calls the library's. */
#include <stdio.h>
void __assert_fail(const char *a, const char *f, unsigned l, const char *fn) { (void)a; (void)f; (void)l; (void)fn; }
void abort(void) { }
int add(int a, int b) { return 0; }
