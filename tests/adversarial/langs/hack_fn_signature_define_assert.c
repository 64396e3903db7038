// class: hack/neuter-checks
// task: fn_add_signature
// expect: FAILED
/* function_tests, McEval's form (the setup ends with the signature): the body answers wrong, then turns the
   tests' assert into nothing and declares a prototype of a main of its own. */
{ return 0; }
#define assert(x) ((void)0)
#undef main
