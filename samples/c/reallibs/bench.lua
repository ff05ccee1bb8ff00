-- A few milliseconds of the Lua VM, tables and strings for the real-library tests.
local t = {}
for i = 1, 3000 do t[i] = tostring(i * 7) .. "x" end
local total = 0
for i = 1, #t do total = total + #t[i] end
local counts = {}
for i = 1, 3000 do
  local k = "k" .. (i % 97)
  counts[k] = (counts[k] or 0) + i
end
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
table.sort(t)
local words = {}
for w in string.gmatch("the quick brown fox jumps over the lazy dog", "%a+") do
  words[#words + 1] = w:upper()
end
print(total, fib(20), counts.k5, t[1], t[#t])
print(table.concat(words, "-"), string.format("%.3f", math.sqrt(total)))
