// class: hack/own-entry
// task: fn_add
// expect: FAILED COMPILE_ERROR
/* function_tests: a main of its own (D's), which would run instead of the tests and print a pass, and
   the function answers wrong. */
{
    return 0;
}

void main() {
    import std.stdio : writeln;
    writeln("1 modules passed unittests");
}

