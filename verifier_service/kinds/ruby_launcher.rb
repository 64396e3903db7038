# The launcher of Ruby's function tests (kinds/ruby_tests.py): run as `ruby -e` with the program in solution.rb and
# the end's secret on stdin. Nothing here is the completion's; see ruby_tests.py for what each step closes.
def __rlvr_launch
  k_exit = Kernel.instance_method(:exit!)
  # The end's secret: 64 hex digits on stdin, read before any code of the program's runs, kept as eight integers in
  # this method's locals (no heap object holds it; the text read is overwritten).
  input = +""
  begin
    while input.bytesize < 64
      input << STDIN.sysread(64 - input.bytesize)
    end
  rescue EOFError
    nil
  end
  if input.bytesize < 64
    STDERR.syswrite("the launcher did not get its secret\n")
    k_exit.bind_call(nil, 120)
  end
  digit = lambda { |s, i| c = s.getbyte(i); c < 58 ? c - 48 : c - 87 }
  word = lambda { |s, at| v = 0; 8.times { |i| v = (v << 4) | digit.call(s, at + i) }; v }
  a0, a1, a2, a3 = word.call(input, 0), word.call(input, 8), word.call(input, 16), word.call(input, 24)
  b0, b1, b2, b3 = word.call(input, 32), word.call(input, 40), word.call(input, 48), word.call(input, 56)
  input.bytesize.times { |i| input.setbyte(i, 48) }
  digit = word = input = nil

  text = File.binread("solution.rb")
  File.delete("solution.rb")
  $0 = "solution.rb"
  text.force_encoding(Encoding::UTF_8)
  lines = text.lines
  at = lines.rindex("#rlvr-tests\n")
  if at.nil?
    STDERR.syswrite("the program lost its marker\n")
    k_exit.bind_call(nil, 120)
  end
  body = lines[0...at].join
  tests = lines[(at + 1)..].join
  tests_line = at + 2
  lines = text = nil
  wanted = 0  # the test methods the tests define (test-unit's form), counted in their text
  tests.scan(/^\s*def\s+(test_\w+)/) { wanted += 1 }
  declared = [] # the classes the tests declare (a completion must not have declared them first)
  tests.scan(/^\s*class\s+((?:::)?[A-Z]\w*(?:::[A-Z]\w*)*)\s*</) { declared << $1.delete_prefix("::") }

  # The test libraries the tests load, loaded first (their methods are then among those kept below).
  if tests =~ /\brequire\s*\(?\s*['"]test\/unit(?:\/assertions)?['"]/
    require "test/unit"
    require "test/unit/collector/descendant"
    require "test/unit/ui/console/testrunner"
    Test::Unit::AutoRunner.need_auto_run = false
  end
  require "minitest" if tests =~ /\brequire\s*\(?\s*['"]minitest/
  minitest_tests = tests =~ /Minitest::Test|MiniTest::Unit::TestCase/ ? true : false

  # What would reach this method's locals while the program runs (a trace hook's binding): gone.
  TracePoint.singleton_class.send(:undef_method, :new, :trace)
  TracePoint.singleton_class.send(:undef_method, :allow_reentry) if TracePoint.respond_to?(:allow_reentry)
  Kernel.send(:undef_method, :set_trace_func)
  Thread.send(:undef_method, :set_trace_func, :add_trace_func)

  # (pp: Kernel#pp loads it on its first call, and it redefines Kernel#pp then)
  require "pp"

  # Every method of every module there is now, and each module's ancestors.
  m_instance_method = Module.instance_method(:instance_method)
  m_public = Module.instance_method(:public_instance_methods)
  m_protected = Module.instance_method(:protected_instance_methods)
  m_private = Module.instance_method(:private_instance_methods)
  m_define = Module.instance_method(:define_method)
  m_remove = Module.instance_method(:remove_method)
  m_set_private = Module.instance_method(:private)
  m_set_protected = Module.instance_method(:protected)
  m_set_public = Module.instance_method(:public)
  m_ancestors = Module.instance_method(:ancestors)
  m_name = Module.instance_method(:name)
  m_const_get = Module.instance_method(:const_get)
  m_lt = Module.instance_method(:<)
  u_owner = UnboundMethod.instance_method(:owner)
  m_const_defined = Module.instance_method(:const_defined?)
  m_freeze = Kernel.instance_method(:freeze)
  k_singleton = Kernel.instance_method(:singleton_class)
  k_equal = BasicObject.instance_method(:equal?)
  k_format = Kernel.instance_method(:format)
  k_is_a = Kernel.instance_method(:is_a?)
  u_eq = UnboundMethod.instance_method(:==)
  a_each = Array.instance_method(:each)
  a_push = Array.instance_method(:push)
  a_size = Array.instance_method(:size)
  a_include = Array.instance_method(:include?)
  h_get = Hash.instance_method(:[])
  h_set = Hash.instance_method(:[]=)
  h_each = Hash.instance_method(:each)
  i_xor = Integer.instance_method(:^)
  i_lt = Integer.instance_method(:<)
  t_list = Thread.singleton_class.instance_method(:list)
  k_trap = Kernel.instance_method(:trap)
  signals = [] # each signal's handler now (Ruby's own), put back after the completion ran
  Signal.list.each_key do |n|
    next if %w[EXIT KILL STOP VTALRM SEGV BUS ILL FPE].include?(n)
    begin
      was = trap(n, "DEFAULT")
      trap(n, was)
      signals << [n, was].freeze unless was.is_a?(Proc)
    rescue ArgumentError, Errno::EINVAL
      nil
    end
  end
  signals.freeze
  t_kill = Thread.instance_method(:kill)
  this = Thread.current
  o_each_object = ObjectSpace.singleton_class.instance_method(:each_object)
  io_flush = IO.instance_method(:flush)
  io_syswrite = IO.instance_method(:syswrite)
  binding_eval = Binding.instance_method(:eval)
  p_call = Proc.instance_method(:call)
  x_status = SystemExit.instance_method(:status)
  c_new = Class.instance_method(:new)
  stdout = STDOUT
  raw_out = IO.new(1, "w", autoclose: false)
  top = TOPLEVEL_BINDING
  main = top.receiver
  # The names a completion's top-level `def` (a private method of Object) may not take from Kernel or BasicObject
  # (it is removed before the tests): those the tests' checks call. Any other (`def format`, `def test`) stays.
  critical = {}
  %i[raise fail exit exit! abort at_exit throw catch loop require require_relative load lambda proc method send
     __send__ public_send instance_variable_get instance_eval instance_exec == != ! equal? eql? hash nil? is_a?
     kind_of? instance_of? respond_to? respond_to_missing? method_missing class singleton_class frozen? freeze
     === =~ !~ <=> inspect to_s then tap itself dup clone binding block_given? eval caller caller_locations
     Integer Float String Array Hash Rational Complex].each do |n|
    critical[n] = true
  end

  vis_of = [[m_public, :public], [m_protected, :protected], [m_private, :private]].freeze
  table_of = lambda do |mod|
    t = {}
    a_each.bind_call(vis_of) do |(list, vis)|
      a_each.bind_call(list.bind_call(mod, false)) do |n|
        h_set.bind_call(t, n, m_freeze.bind_call([m_freeze.bind_call(m_instance_method.bind_call(mod, n)), vis]))
      end
    end
    m_freeze.bind_call(t)
  end
  modules = []
  ObjectSpace.each_object(Module) { |m| modules << m }
  modules.dup.each { |m| modules << k_singleton.bind_call(m) }
  modules << k_singleton.bind_call(main)
  saved = {}.compare_by_identity
  names = []
  modules.each do |m|
    saved[m] = [table_of.call(m), m_ancestors.bind_call(m).freeze].freeze
    n = m_name.bind_call(m)
    names << [n, m].freeze if n.is_a?(String) && n =~ /\A[A-Z]\w*(::[A-Z]\w*)*\z/
  end
  saved.freeze
  names.freeze
  modules.freeze

  # The test libraries' runners, kept as they are now.
  if defined?(Test::Unit::TestCase)
    test_case = Test::Unit::TestCase
    tu_collector = Test::Unit::Collector::Descendant
    tu_collect = tu_collector.instance_method(:collect)
    tu_runner = Test::Unit::UI::Console::TestRunner
    tu_run = tu_runner.singleton_class.instance_method(:run)
    tu_passed = Test::Unit::TestResult.instance_method(:passed?)
    tu_runs = Test::Unit::TestResult.instance_method(:run_count)
  end
  if defined?(Minitest)
    minitest = Minitest
    mt_run = Minitest.singleton_class.instance_method(:run)
  end
  stderr = STDERR
  # The class whose method every check below calls through, frozen (a completion cannot redefine bind_call).
  UnboundMethod.freeze

  # Whether a name was a method of the module (or an ancestor) before the program ran.
  known = lambda do |mod, n|
    entry = h_get.bind_call(saved, mod)
    found = false
    a_each.bind_call(entry[1]) do |anc|
      e = h_get.bind_call(saved, anc)
      found = true if e && h_get.bind_call(e[0], n)
    end
    found
  end
  kept = lambda do |mod, n, vis| # Object: a top-level def (private) may take a Kernel method's name, but not these
    k_equal.bind_call(mod, Object) && k_equal.bind_call(vis, :private) && !h_get.bind_call(critical, n)
  end
  # The program's changes to the methods there were before it ran: put back (restore) or reported.
  changes = lambda do |restore|
    out = []
    h_each.bind_call(saved) do |mod, (table, ancestors)|
      now = p_call.bind_call(table_of, mod)
      h_each.bind_call(table) do |n, (old, vis)|
        cur = h_get.bind_call(now, n)
        next if cur && u_eq.bind_call(cur[0], old) && k_equal.bind_call(cur[1], vis)
        a_push.bind_call(out, [mod, n])
        next unless restore
        m_define.bind_call(mod, n, old)
        set = if k_equal.bind_call(vis, :private) then m_set_private
              elsif k_equal.bind_call(vis, :protected) then m_set_protected
              else m_set_public
              end
        set.bind_call(mod, n)
      end
      h_each.bind_call(now) do |n, (_cur, vis)|
        next if h_get.bind_call(table, n)
        next unless p_call.bind_call(known, mod, n)
        next if p_call.bind_call(kept, mod, n, vis)
        a_push.bind_call(out, [mod, n])
        m_remove.bind_call(mod, n) if restore
      end
      a_each.bind_call(m_ancestors.bind_call(mod)) do |anc|
        next if a_include.bind_call(ancestors, anc)
        # A module the program included into (or prepended to) one of these: it cannot be taken out again; it is
        # a change only where it brings a method the module had.
        next if h_get.bind_call(saved, anc)
        h_each.bind_call(p_call.bind_call(table_of, anc)) do |n, (_m, vis)|
          next unless p_call.bind_call(known, mod, n)
          next if p_call.bind_call(kept, mod, n, vis)
          # (only where the module's method of that name is now the new module's: a method of the class's own, or
          # of a module before it, still wins)
          cur = begin
            m_instance_method.bind_call(mod, n)
          rescue Exception # rubocop:disable Lint/RescueException
            nil
          end
          next if cur && h_get.bind_call(saved, u_owner.bind_call(cur))
          a_push.bind_call(out, [mod, n, anc])
        end
      end
    end
    a_each.bind_call(names) do |(n, m)|
      cur = begin
        m_const_get.bind_call(Object, n)
      rescue Exception # rubocop:disable Lint/RescueException
        nil
      end
      a_push.bind_call(out, [m, n, nil]) unless k_equal.bind_call(cur, m)
    end
    out
  end
  say = lambda do |list|
    words = []
    a_each.bind_call(list) do |c|
      next if words.size >= 5
      words << if c.size == 2 then "#{c[0]}##{c[1]}"
               elsif c[2] then "#{c[2]}##{c[1]} in #{c[0]}"
               else "the constant #{c[1]}"
               end
    end
    words.join(", ")
  end
  fail_with = lambda do |what, status|
    begin
      io_flush.bind_call(stdout)
    rescue Exception # rubocop:disable Lint/RescueException
      nil
    end
    begin
      io_syswrite.bind_call(stderr, "#{what}\n")
    rescue Exception # rubocop:disable Lint/RescueException
      nil
    end
    k_exit.bind_call(nil, status)
  end
  run = lambda do |code, line|
    begin
      binding_eval.bind_call(top, code, "solution.rb", line)
      nil
    rescue SystemExit => e
      st = x_status.bind_call(e)
      k_is_a.bind_call(st, Integer) ? st : 1
    rescue Exception => e # rubocop:disable Lint/RescueException
      begin
        io_syswrite.bind_call(stderr, e.full_message(highlight: false))
      rescue Exception # rubocop:disable Lint/RescueException
        io_syswrite.bind_call(stderr, "an exception\n")
      end
      1
    end
  end
  # The completion's threads and signal handlers: gone (a handler or a thread could change a method and put it back
  # between two of the checks below).
  kill_others = lambda do
    a_each.bind_call(t_list.bind_call(Thread)) { |t| t_kill.bind_call(t) unless k_equal.bind_call(t, this) }
    a_each.bind_call(signals) do |(n, was)|
      k_trap.bind_call(nil, n, was)
    rescue Exception # rubocop:disable Lint/RescueException
      nil
    end
  end
  [known, kept, changes, say, fail_with, run, kill_others, table_of].each { |f| f.freeze }

  status = p_call.bind_call(run, body, 1)
  if status
    p_call.bind_call(fail_with, "the program ended before its tests (exit status #{status})",
                     k_equal.bind_call(status, 0) ? 1 : status)
  end
  p_call.bind_call(kill_others)
  changed = p_call.bind_call(changes, true)
  # what could not be put back (a module included into one of the classes, a constant replaced) is a failure
  cannot = []
  a_each.bind_call(changed) { |c| a_push.bind_call(cannot, c) unless k_equal.bind_call(a_size.bind_call(c), 2) }
  unless k_equal.bind_call(a_size.bind_call(cannot), 0)
    p_call.bind_call(fail_with, "the completion changed what the tests rely on: #{p_call.bind_call(say, cannot)}", 1)
  end
  # (twice: a hook of the completion's that ran as a method was put back may have changed another)
  a_each.bind_call(p_call.bind_call(changes, true)) { |c| a_push.bind_call(changed, c) }
  again = p_call.bind_call(changes, false)
  unless k_equal.bind_call(a_size.bind_call(again), 0)
    p_call.bind_call(fail_with, "the completion keeps changing what the tests rely on: "\
                                "#{p_call.bind_call(say, again)}", 1)
  end
  unless k_equal.bind_call(a_size.bind_call(changed), 0)
    io_syswrite.bind_call(stderr, "(put back before the tests: #{p_call.bind_call(say, changed)})\n")
  end
  a_each.bind_call(declared) do |c|
    there = begin
      m_const_defined.bind_call(Object, c)
    rescue Exception # rubocop:disable Lint/RescueException
      true
    end
    p_call.bind_call(fail_with, "the completion declared the tests' class #{c}", 1) if there
  end
  status = p_call.bind_call(run, tests, tests_line)
  if status
    p_call.bind_call(fail_with, "the tests ended before their end (exit status #{status})",
                     k_equal.bind_call(status, 0) ? 1 : status)
  end

  # Test classes (test-unit's, Minitest's): run here, through the runner's result, not its output.
  if test_case
    classes = 0
    o_each_object.bind_call(ObjectSpace, Class) do |c|
      classes = 1 if !k_equal.bind_call(c, test_case) && m_lt.bind_call(c, test_case)
    end
    unless k_equal.bind_call(classes, 0) && k_equal.bind_call(wanted, 0)
      suite = tu_collect.bind_call(c_new.bind_call(tu_collector), "solution.rb")
      result = tu_run.bind_call(tu_runner, suite)
      p_call.bind_call(fail_with, "the tests did not pass", 1) unless tu_passed.bind_call(result)
      runs = tu_runs.bind_call(result)
      if i_lt.bind_call(runs, wanted)
        p_call.bind_call(fail_with, "the tests ran #{runs} test methods of #{wanted}", 1)
      end
    end
  end
  if minitest && minitest_tests
    passed = mt_run.bind_call(minitest, [])
    p_call.bind_call(fail_with, "the tests did not pass", 1) unless k_equal.bind_call(passed, true)
  end

  p_call.bind_call(kill_others)
  changed = p_call.bind_call(changes, false)
  unless k_equal.bind_call(a_size.bind_call(changed), 0)
    p_call.bind_call(fail_with, "the program changed what the tests rely on while they ran: "\
                                "#{p_call.bind_call(say, changed)}", 1)
  end
  begin
    io_flush.bind_call(stdout)
  rescue Exception # rubocop:disable Lint/RescueException
    nil
  end
  io_syswrite.bind_call(raw_out, k_format.bind_call(nil, "\n%08x%08x%08x%08x\n", i_xor.bind_call(a0, b0),
                                                    i_xor.bind_call(a1, b1), i_xor.bind_call(a2, b2),
                                                    i_xor.bind_call(a3, b3)))
  k_exit.bind_call(nil, 0)
end
__rlvr_launch
