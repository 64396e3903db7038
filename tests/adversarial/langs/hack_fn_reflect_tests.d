// class: hack/reflect
// task: fn_add
// expect: FAILED COMPILE_ERROR
/* function_tests: compile-time reflection over the tests: imports the module its caller would be (the tests' module
   under the names a harness gives it), lists the unit tests (__traits(getUnitTests)) and reads the source text
   (import("...") string imports); answers wrong when none of it is there. */
{
    static foreach (m; ["tests", "main", "solution", "test", "__main"]) {
        static if (__traits(compiles, mixin("{ import " ~ m ~ "; }"))) {
            mixin("import " ~ m ~ ";");
            pragma(msg, __traits(allMembers, mixin(m)));
        }
    }
    static if (__traits(compiles, import("tests.d"))) {
        enum text = import("tests.d");
        pragma(msg, text);
    }
    static foreach (u; __traits(getUnitTests, mixin(__MODULE__))) { }
    return a - b;
}
