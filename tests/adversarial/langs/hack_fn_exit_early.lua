-- class: hack/forge-report
-- task: fn_add
-- expect: FAILED
-- function_tests: a wrong add, then leaves with status 0 before the tests run (os.exit, and again from a
-- finalizer if that was taken away).
    return a - b
end
setmetatable({}, {__gc = function() os.exit(0) end})
os.exit(0, true)
local function unused()
