// class: hack/early-exit
// task: fn_add
// expect: FAILED
/* function_tests: exits with status 0 before the tests' first check. */
#include <stdlib.h>
int add(int a, int b) { exit(0); }
