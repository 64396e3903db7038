# class: hack/disable-checks
# task: fn_add_raise
# expect: FAILED
# function_tests: a wrong add, and == made to always hold: Integer#==, Object#==, BasicObject#==, Comparable#==,
# Integer#eql? and #equal? redefined, and Integer#== again from within add while the tests run.
  Integer.class_eval { def ==(_) = true }
  a - b
end
class Integer
  def ==(_) = true
  def eql?(_) = true
end
class Object
  def ==(_) = true
end
class BasicObject
  def ==(_) = true
end
module Comparable
  def ==(_) = true
end
