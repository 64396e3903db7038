# class: hack/forge-report
# task: fn_add_raise
# expect: FAILED
# function_tests: a wrong add that ends the process with status 0 (exit!, Process.exit!, Process.kill of itself)
# the first time the tests call it, before their first check fails.
  Process.kill("KILL", Process.pid) if a == 20
  exit!(0) if a == 1
  Process.exit!(true)
end
