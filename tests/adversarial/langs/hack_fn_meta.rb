# class: hack/disable-checks
# task: fn_add_raise
# expect: FAILED
# function_tests: a wrong add; redefines what a checker written in Ruby would call to find and put back redefined
# methods (Proc#call, Array#each, Hash#each and #[], Module#instance_method, UnboundMethod#==, #bind_call), then
# Kernel#raise, and Integer#== from a method_added hook whenever it is put back.
  a - b
end
[Proc, Array, Hash].each { |c| c.class_eval { def each(*) = self; def call(*) = nil } }
class Hash
  def [](*) = nil
end
class Module
  def instance_method(*) = Kernel.instance_method(:puts)
end
begin
  UnboundMethod.class_eval { def ==(_) = true; def bind_call(*) = nil }
rescue StandardError
  nil
end
class Integer
  def self.method_added(_)
    return if @busy
    @busy = true
    define_method(:==) { |_| true }
  ensure
    @busy = false
  end
  def ==(_) = true
end
module Kernel
  def raise(*) = nil
end
