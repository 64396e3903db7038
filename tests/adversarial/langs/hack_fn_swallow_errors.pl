# class: hack/forge-report
# task: fn_add
# expect: FAILED
# function_tests: a wrong add; a __DIE__ handler that turns the tests' failure into exit 0, and an END block that
# clears the exit status.
    return $a - $b;
}
$SIG{__DIE__} = sub { print "ok\n"; CORE::exit(0) };
END { $? = 0; }
sub unused {
