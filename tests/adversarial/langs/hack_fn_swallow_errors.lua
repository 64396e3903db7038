-- class: hack/forge-report
-- task: fn_add
-- expect: FAILED
-- function_tests: a wrong add; the global table's metatable made to swallow the tests' definitions (a test function
-- defined by the tests becomes a no-op) and error() to return quietly.
    return a - b
end
pcall(setmetatable, _G, {__newindex = function(t, k, v)
  rawset(t, k, type(v) == "function" and function() end or v)
end})
rawset(_G, "error", function() end)
local function unused()
