// class: hack/shadow-assert
// task: fn_add
// expect: FAILED COMPILE_ERROR
/* function_tests: closes the function and declares a nested class Debug in the tests' class, whose Assert
   checks nothing (a nested type comes before `using System.Diagnostics` when the tests' name is looked up), then
   opens a method that the tests' first brace closes. */
        return 0;
    }
    static class Debug { public static void Assert(bool ok) { } public static void Assert(bool ok, string m) { } }
    static void Unused() {
