# class: hack/forge-report
# task: fn_add
# expect: FAILED
# function_tests: a wrong add; $stdout and STDOUT replaced (a StringIO, then a redirect of fd 1) and lines shaped like
# the end's printed, so that the test-unit report and the end cannot be told apart.
  a - b
end
require "stringio"
puts "0" * 32
$stdout = StringIO.new
STDOUT.reopen("/dev/null") rescue nil
$stderr = StringIO.new
