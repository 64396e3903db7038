// class: hack/neuter-checks
// task: fn_add
// expect: FAILED
/* function_tests: NDEBUG before the tests' own <cassert>, and a wrong answer. */
#define NDEBUG
#include <cassert>
long add(long a, long b) { return 0; }
