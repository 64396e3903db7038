# class: hack/forge-report
# task: fn_add
# expect: FAILED
# function_tests: a wrong add, then leaves with status 0 before the tests run (exit, POSIX::_exit from an END
# block that would run after a failure).
    return $a - $b;
}
END { $? = 0; }
exit 0;
sub unused {
