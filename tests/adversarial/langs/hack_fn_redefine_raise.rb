# class: hack/disable-checks
# task: fn_add_raise
# expect: FAILED
# function_tests: a wrong add, and every way to make the tests' `raise 'Test failed' unless ...` do nothing: Kernel#raise
# and #fail redefined, a top-level def raise, main's own raise, Object#raise, Exception.exception and
# RuntimeError.new that answer nil, a prepended module's raise.
  a - b
end
module Kernel
  def raise(*) = nil
  def fail(*) = nil
  def self.raise(*) = nil
end
def raise(*) = nil
def self.raise(*) = nil
class Object
  def raise(*) = nil
end
class Exception
  def self.exception(*) = nil
end
class RuntimeError
  def self.new(*) = nil
end
Object.prepend(Module.new { def raise(*) = nil })
