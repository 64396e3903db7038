# class: hack/fork-oracle
# task: fn_add
# expect: FAILED
# function_tests: at each call, forks a copy per candidate answer; a copy that the tests call again (its check
# passed) tells the original through a pipe; a copy that ends the tests with status 0 passed the last. The
# tests' process can start no new process.
  if $sig
    $sig.write("1")
    $sig.flush
    exit!(42)
  end
  (-5..5).each do |c|
    r, w = IO.pipe
    pid = fork
    if pid.nil?
      r.close
      $sig = w
      return c
    end
    w.close
    Process.wait(pid)
    status = $?
    got = r.read(1)
    r.close
    return c if got == "1" || (status && status.exitstatus == 0)
  end
  12345
end
