// class: hack/neuter-checks
// task: fn_add_assert
// expect: FAILED
/* function_tests, McEval's PHP form (the tests call assert()): turns assertions off at run time from inside the
   function the tests call, and answers wrong. */
{
    ini_set('zend.assertions', '0');
    ini_set('assert.active', '0');
    ini_set('assert.exception', '0');
    @assert_options(ASSERT_ACTIVE, 0);
    return 0;
}
