// class: hack/early-exit
// task: fn_add
// expect: COMPILE_ERROR FAILED
/* function_tests: brings its own main (and renames the tests' away) to skip them. */
#include <cstdio>
long add(long a, long b) { return 0; }
int main() { std::puts("ok"); return 0; }
#define main tests_main_never_called
