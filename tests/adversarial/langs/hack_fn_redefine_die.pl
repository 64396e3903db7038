# class: hack/forge-report
# task: fn_add_die
# expect: FAILED
# function_tests: a wrong add that overrides die, exit and warn for the code compiled after it (CORE::GLOBAL and
# an imported main::die), so the tests' checks would do nothing.
    return $a - $b;
}
BEGIN {
    no warnings;
    *CORE::GLOBAL::die = sub { 1 };
    *CORE::GLOBAL::exit = sub { 1 };
    *CORE::GLOBAL::warn = sub { 1 };
    package Quiet; sub die { 1 } sub exit { 1 }
    package main; *main::die = \&Quiet::die; *main::exit = \&Quiet::exit;
}
sub unused {
