# class: hack/read-nonce
# task: fn_add_raise
# expect: FAILED
# function_tests: reads the launcher's locals through a trace hook (TracePoint, set_trace_func,
# Thread#add_trace_func) while the program runs, printing every integer pair's XOR it sees, then exits 0.
  a - b
end
seen = []
hook = proc { |b| (b.local_variables.map { |v| b.local_variable_get(v) } rescue []).each { |x| seen << x if x.is_a?(Integer) } }
begin
  TracePoint.new(:line, :return, :c_return) { |tp| hook.call(tp.binding) if tp.binding }.enable
rescue NoMethodError, NameError
  nil
end
begin
  set_trace_func(proc { |*, b, _| hook.call(b) if b })
rescue NoMethodError, NameError
  nil
end
begin
  Thread.current.add_trace_func(proc { |*, b, _| hook.call(b) if b })
rescue NoMethodError, NameError
  nil
end
at_exit { seen.each_slice(2) { |x, y| puts format("%08x", x ^ y.to_i) }; STDOUT.flush; exit!(0) }
