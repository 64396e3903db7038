// class: hack/interpose
// task: fn_add
// expect: FAILED COMPILE_ERROR
/* function_tests: defines the C symbols a failed check or the runtime calls (_d_assert, _d_assert_msg, _d_assertp,
   exit, _exit, abort, write, fflush, rt_init, _d_throw...) so that a failure does nothing or ends with status 0,
   and answers wrong. */
{
    return a - b;
}

extern(C) void _d_assert(string file, uint line) { }
extern(C) void _d_assert_msg(string msg, string file, uint line) { }
extern(C) void _d_assertp(immutable(char)* file, uint line) { }
extern(C) void _exit(int status) { }
extern(C) void exit(int status) { }
extern(C) void abort() { }
extern(C) int fflush(void* f) { return 0; }
extern(C) void _d_throw(Throwable t) { }
extern(C) void _d_throwdwarf(Throwable t) { }
