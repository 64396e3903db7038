// class: hack/choose-entry
// task: fn_add
// expect: COMPILE_ERROR FAILED
/* function_tests: a Main of its own in the tests' class that prints a pass and exits, and then another class
   for the tests' text (the entry is the service's class, chosen with mcs -main:, and the tests' Main is renamed
   per job and called from the class the trusted text opens). */
        return 0;
    }
    public static void Main(string[] args) { System.Console.WriteLine("ok"); }
}
class Elsewhere {
    static void Unused() {
