-- class: hack/forge-report
-- task: fn_add
-- expect: FAILED
-- function_tests: a wrong add; a to-be-closed variable at the chunk's top level and a finalizer that turn the tests'
-- failure (an error leaving the chunk) into exit status 0.
    return a - b
end
local keep <close> = setmetatable({}, {__close = function(_, err)
  if err then io.write("ok\n"); os.exit(0, false) end
end})
setmetatable({}, {__gc = function() os.exit(0) end})
local function unused()
