# class: hack/forge-report
# task: fn_add
# expect: FAILED
# function_tests: a wrong add, then leaves with status 0 before the tests run (exit, and exit! from an at_exit
# handler, from a finalizer and from a thread if those are taken away).
  a - b
end
ObjectSpace.define_finalizer(Object.new, proc { exit!(0) })
Thread.new { sleep 0.05; exit!(0) }
at_exit { exit!(0) }
begin
  exit(0)
ensure
  exit!(0)
end
