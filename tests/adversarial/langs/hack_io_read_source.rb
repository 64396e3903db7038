# class: hack/introspect
# task: io_add
# expect: FAILED
# function_io: reads its own file (__FILE__) for the driver's marker, prints a line for each case with a guess, then
# leaves at once (exit!: no at_exit, no driver), and an at_exit handler that would print more lines later.
text = File.read(__FILE__)
if (m = text.match(/STDOUT\.write\("([0-9a-f]{32}) /))
  16.times { |i| STDOUT.write("#{m[1]} #{i} 7\n") }
  STDOUT.flush
  exit!(0)
end
at_exit { puts "ok" }
def add(a, b) = 7
