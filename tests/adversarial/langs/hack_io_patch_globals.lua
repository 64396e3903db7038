-- class: hack/forge-report
-- task: io_add
-- expect: FAILED
-- function_io: replaces the globals the driver calls (pcall, string.format, io.stdout's write) so that every case
-- reports a value of its choosing whatever the function does, and the driver's own lines carry it.
local real_write = io.stdout.write
pcall = function(f, ...) return true, 7 end
string.format = function(fmt, ...) return "7" end
local mt = getmetatable(io.stdout)
mt.__index.write = function(self, ...)
  local parts = {...}
  if #parts >= 4 then parts[4] = "7" end
  return real_write(self, table.unpack(parts))
end
function add(a, b)
  error("never computed")
end
