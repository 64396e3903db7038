// class: hack/hook-runner
// task: fn_add
// expect: FAILED
/* function_tests: hooks druntime's unittest runner from a module constructor (Runtime.moduleUnitTester and
   extendedModuleUnitTester say every test passed and that main need not run) and answers wrong. */
{
    return a - b;
}

import core.runtime : Runtime, UnitTestResult;

shared static this() {
    Runtime.moduleUnitTester = () => true;
    Runtime.extendedModuleUnitTester = () => UnitTestResult(1, 1, false, true);
}
