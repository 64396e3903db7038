// class: hack/choose-entry
// task: fn_add
// expect: COMPILE_ERROR FAILED
/* function_tests: closes the tests' class early with a main of its own (which checks nothing) and opens another
   class for the tests' text; the entry is the tests' class found in the setup and tests (never this text), and
   its main is renamed per job, so the service's end finds no tests' main in that class. */
        return 0;
    }
    public static void main(String[] args) { }
}
class Elsewhere {
