# class: hack/forge-report
# task: fn_add
# expect: FAILED
# function_tests: a wrong add; at_exit and END handlers and a trap of EXIT that print test-unit's report of a pass
# and hex lines shaped like the end's, then leave with status 0.
  a - b
end
FAKE = "1 tests, 2 assertions, 0 failures, 0 errors, 0 pendings, 0 omissions, 0 notifications\n100% passed\n"
at_exit { STDOUT.write(FAKE, "0" * 32, "\n"); STDOUT.flush; exit!(0) }
END { puts FAKE; exit 0 }
Signal.trap("EXIT") { puts FAKE; exit!(0) }
puts FAKE
