"""function_tests in Lua, Perl and R (``kinds/function_tests.py`` calls ``program`` and ``LAUNCHERS``): the program
is setup + completion + guard + tests + end, run from memory by a launcher of the service's that reads the file and
removes it before any of the program runs. What each guard closes, and what stays open (``FORGEABLE``):

- **Lua**: the launcher removes ``debug``, ``string.dump``, ``package.loadlib`` and the C module searchers before
  the program runs (no way to reach the program's locals, its bytecode or a C library). A prologue before the setup
  keeps, in locals of names drawn per job, the standard functions and a copy of every standard library table, and
  protects ``_G``'s metatable; the guard puts the library tables back, drops modules the completion added to
  ``package.loaded``/``package.preload``, and runs the tests in an environment of their own (``local _ENV``: the
  saved functions and fresh copies of the libraries, the completion's globals behind them): a completion that
  redefines ``assert``, ``error``, ``os.exit`` or ``pcall`` (before the tests or while they run), declares ``local
  _ENV`` or fakes a module changes nothing the tests call.
- **Perl**: the guard is a ``BEGIN`` block that runs once the completion is compiled and before the tests are: it
  removes the completion's ``CORE::GLOBAL`` overrides and imported ``die``/``exit``/``warn`` (which would take over
  the tests' calls as they compile), and refuses a program whose completion loaded a test module (Test::More,
  Test::Builder, Test2, Test::Deep, Data::Compare) before the tests did. A ``BEGIN`` block after the tests records
  every sub of ``main`` and of the test modules; before the tests run, those are put back (the completion's
  run-time ``*is_deeply = sub {...}`` is undone), and the end prints the nonce only if none of them was replaced
  while the tests ran and, where Test::More was used, it reports every test passed and the plan met (Test::More
  reports failures through the exit status and carries on; the exit status counts too).
- **R**: the launcher is a function whose environment is ``baseenv()`` (no binding of the completion's reaches
  it): it evaluates the setup and completion in the global environment, the tests in an environment of their own
  holding copies of base, stats and utils (a completion's ``stopifnot``, ``identical``, ``quit``, ``!`` or ``if``
  in the global environment is not what the tests call) whose parent is the global environment (the completion's
  functions), and the end in an environment whose parent is ``baseenv()``. R is started without its shell script
  (``Rscript`` runs ``R``, a shell script whose command substitutions are processes): the tests' process starts no
  new process (``function_tests.NO_FORK``), so the launcher attaches R's default packages itself, with a
  ``Sys.which`` that finds nothing while they load (utils asks ``which uname`` through a shell as it loads).
"""

from __future__ import annotations

import re

DYNAMIC_TESTS = ("lua", "perl", "r")

LUA_LAUNCHER = (
    'arg = {[0] = "solution.lua"}; '  # as `lua5.4 solution.lua` sets it (luaunit reads test names from arg)
    'local c do local f = assert(io.open("solution.lua", "rb")); local t = f:read("a"); f:close(); '
    'os.remove("solution.lua"); c = assert(load(t, "=solution.lua", "t")) end; '
    'debug = nil; package.loaded.debug = nil; string.dump = nil; package.loadlib = nil; package.cpath = ""; '
    "for i = #package.searchers, 3, -1 do table.remove(package.searchers, i) end; c()")
PERL_LAUNCHER = (
    'eval do { local $/; open(my $f, "<", "solution.pl") or die "solution.pl: $!\\n"; my $s = <$f>; close $f; '
    'unlink "solution.pl"; "#line 1 \\"solution.pl\\"\\n" . $s }; if ($@) { print STDERR $@; exit 255 }')
R_MARK_TESTS, R_MARK_END = "#rlvr-tests", "#rlvr-end"
R_LAUNCHER = (  # (first: Rscript's default packages, attached in this order, each first on the search path)
    "local({ w <- Sys.which; unlockBinding('Sys.which', baseenv()); "
    "assign('Sys.which', function(names) structure(rep('', length(names)), names = names), envir = baseenv()); "
    "on.exit({ assign('Sys.which', w, envir = baseenv()); lockBinding('Sys.which', baseenv()) }); "
    "for (p in c('methods', 'datasets', 'utils', 'grDevices', 'graphics', 'stats')) "
    "library(p, character.only = TRUE) }); "
    "f <- function() { t <- readLines('solution.R', warn = FALSE); unlink('solution.R'); "
    f"a <- max(c(0L, which(t == '{R_MARK_TESTS}'))); b <- max(c(0L, which(t == '{R_MARK_END}'))); "
    "if (a == 0L || b <= a) stop('the program lost its markers'); "
    "run <- function(lines, env) { ex <- parse(text = lines, keep.source = FALSE); "
    "for (i in seq_along(ex)) eval(ex[[i]], env) }; "
    "run(t[seq_len(a - 1L)], globalenv()); "
    "env <- new.env(parent = globalenv()); "
    "for (p in c('package:utils', 'package:stats')) if (p %in% search()) { e <- as.environment(p); "
    "for (n in ls(e, all.names = TRUE)) assign(n, get(n, envir = e), envir = env) }; "
    "for (n in ls(baseenv(), all.names = TRUE)) assign(n, get(n, envir = baseenv()), envir = env); "
    "run(t[seq.int(a + 1L, length.out = b - a - 1L)], env); "
    "run(t[seq.int(b + 1L, length.out = length(t) - b)], new.env(parent = baseenv())) }; "
    "environment(f) <- baseenv(); f()")
# R's own binary with what its shell script would set (Debian's layout, in the image and on a bubblewrap host);
# the binary takes an -e expression with its spaces written ~+~ (as the script passes it)
R_ARGV = ("env", "R_HOME=/usr/lib/R", "R_SHARE_DIR=/usr/share/R/share", "R_INCLUDE_DIR=/usr/share/R/include",
          "R_DOC_DIR=/usr/share/R/doc", "R_DEFAULT_PACKAGES=NULL", "/usr/lib/R/bin/exec/R", "--no-echo",
          "--no-restore", "-e", R_LAUNCHER.replace(" ", "~+~"))
LAUNCHERS = {"lua": ("lua5.4", "-e", LUA_LAUNCHER), "perl": ("perl", "-e", PERL_LAUNCHER), "r": R_ARGV}
# The program a probe of a launcher runs (``probe.launcher_problem``) where the language's hello-world will not do
HELLO = {"r": f"{R_MARK_TESTS}\n{R_MARK_END}\ncat('ok\\n')\n"}

FORGEABLE = {
    "lua": "the interpreter's memory (/proc/self/mem); a returned table whose __eq metamethod always holds; the "
           "string metatable's methods (s:upper()) replaced by the function while the tests run",
    "perl": "the compiled program through the B module (the end's constants are in its op tree) or the "
            "interpreter's memory; a returned object with overloaded ==/eq; a function that, while the tests run, "
            "replaces what they call (*Data::Compare::Compare = sub { 1 }, Test::More's state) and puts it back",
    "r": "R's frames and environments (sys.frames(), parent.frame()): the program's text and the tests' bindings, "
         "reachable from the function while the tests run; a returned object whose class defines ==",
}

_LUA_SAVED = ("assert", "error", "pcall", "xpcall", "print", "type", "tostring", "tonumber", "ipairs", "pairs",
              "next", "select", "rawequal", "rawget", "rawset", "rawlen", "setmetatable", "getmetatable", "require",
              "load", "loadfile", "package", "collectgarbage")
_LUA_LIBS = ("string", "table", "math", "os", "io", "utf8", "coroutine")
_PERL_TEST_MODULES = ("Test/More.pm", "Test/Simple.pm", "Test/Builder.pm", "Test2/API.pm", "Test/Deep.pm",
                      "Data/Compare.pm")


def _numbers(data: bytes, sep: str = ", ") -> str:
    return sep.join(str(b) for b in data)


def split_close(lang: str, tests: str) -> tuple[str, str]:
    """(what the tests begin with that closes the completion's function, the rest): MultiPL-E's tests begin with
    the ``end`` (Lua) or ``}`` (Perl, R) of the function the completion leaves open; it goes before the guard."""
    m = re.match(r"\s*end\b" if lang == "lua" else r"\s*\}", tests)
    if m is None:
        return "", tests
    return f"\n{m.group(0).strip()}\n", tests[m.end():]


def program(lang: str, setup: str, completion: str, tests: str, a: bytes, b: bytes, name: str) -> str:
    close, tests = split_close(lang, tests)
    body = f"{setup}{completion}{close}"
    if lang == "lua":
        return _lua(body, tests, a, b, name)
    if lang == "perl":
        return _perl(body, setup, tests, a, b, name)
    return (f"{body}\n{R_MARK_TESTS}\n{tests}\n{R_MARK_END}\n"
            f"x <- c({_numbers(a)}); y <- c({_numbers(b)})\n"
            'cat("\\n", paste(sprintf("%02x", bitwXor(x, y)), collapse = ""), "\\n", sep = "")\n')


def _lua(body: str, tests: str, a: bytes, b: bytes, name: str) -> str:
    saved = ", ".join(f'"{k}"' for k in _LUA_SAVED)
    libs = ", ".join(f'"{k}"' for k in _LUA_LIBS)
    n = name
    # one line (the setup's line numbers stay as they were, but one)
    prologue = (f"local {n}_G, {n}_g, {n}_libs, {n}_pre = _G, {{}}, {{}}, {{}}; "
                f"for _, k in ipairs({{{saved}}}) do {n}_g[k] = _G[k] end; "
                f"for _, l in ipairs({{{libs}}}) do local c = {{}}; for k, v in pairs(_G[l]) do c[k] = v end; "
                f"{n}_libs[l] = {{_G[l], c}} end; "
                f"for k in pairs(package.loaded) do {n}_pre['L' .. k] = true end; "
                f"for k in pairs(package.preload) do {n}_pre['P' .. k] = true end; "
                f"local {n}_smt, {n}_path = getmetatable(''), package.path; "
                f"setmetatable(_G, {{__metatable = false}});\n")
    guard = (f"\nfor _, p in {n}_g.next, {n}_libs do local t, c = p[1], p[2]; "
             f"for k in {n}_g.next, t do if c[k] == nil then {n}_g.rawset(t, k, nil) end end; "
             f"for k, v in {n}_g.next, c do {n}_g.rawset(t, k, v) end end; "
             f"{n}_smt.__index = {n}_libs.string[1]; "
             f"for k in {n}_g.next, {n}_g.package.loaded do if not {n}_pre['L' .. k] then "
             f"{n}_g.package.loaded[k] = nil end end; "
             f"for k in {n}_g.next, {n}_g.package.preload do if not {n}_pre['P' .. k] then "
             f"{n}_g.package.preload[k] = nil end end; "
             f"local {n}_fin = function() local x, y, s = {{{_numbers(a)}}}, {{{_numbers(b)}}}, {{}}; "
             f"for i = 1, #x do s[i] = {n}_libs.string[2].format('%02x', x[i] ~ y[i]) end; "
             f"local out = {n}_libs.io[2].stdout; out:write('\\n' .. {n}_libs.table[2].concat(s) .. '\\n'); "
             f"out:flush() end; local {n}_exit = {n}_libs.os[2].exit; "
             # The tests' os.exit with a success status (MultiPL-E's `os.exit(lu.LuaUnit.run())`) is their end.
             f"local _ENV = (function() local e = {{}}; for k, v in {n}_g.next, {n}_g do e[k] = v end; "
             f"for l, p in {n}_g.next, {n}_libs do local c = {{}}; for k, v in {n}_g.next, p[2] do c[k] = v end; "
             f"e[l] = c end; local mods = {{}}; "
             # A Lua module the tests require runs in their environment, kept apart from the completion's
             # (luaunit finds the tests' functions in its _G, and the completion cannot reach it).
             f"e.require = function(m) if mods[m] ~= nil then return mods[m] end; "
             f"local p = {n}_g.package.searchpath(m, {n}_path); if not p then return {n}_g.require(m) end; "
             f"local v = {n}_g.assert({n}_g.loadfile(p, 't', e))(m, p); if v == nil then v = true end; "
             f"mods[m] = v; return v end; "
             f"e.os.exit = function(c, ...) if c == nil or c == true or c == 0 then {n}_fin(); "
             f"{n}_exit(0) end; {n}_exit(c, ...) end; "
             f"e._G = e; return {n}_g.setmetatable(e, {{__index = {n}_G}}) end)()\n")
    return f"{prologue}{body}{guard}{tests}\n{n}_fin()\n"


def _perl(body: str, setup: str, tests: str, a: bytes, b: bytes, name: str) -> str:
    n = name
    loaded_by_setup = [m for m in _PERL_TEST_MODULES if m[:-3].replace("/", "::") in setup]
    modules = " ".join(m for m in _PERL_TEST_MODULES if m not in loaded_by_setup)
    guard = (
        f"\n;BEGIN {{ no strict 'refs'; for my $n (qw(die exit warn)) {{ delete $CORE::GLOBAL::{{$n}}; "
        "delete $main::{$n} if defined &{\"main::$n\"}; }; "
        f"for my $m (qw({modules})) {{ if ($INC{{$m}}) {{ print STDERR \"the completion loaded $m before the "
        "tests\\n\"; CORE::exit(121) } } }\n"
        f"my %{n}_code;\n"
        f"{{ no strict 'refs'; no warnings; for my $k (keys %{n}_code) {{ *{{$k}} = ${n}_code{{$k}} }} }}\n")
    end = (
        f"\n;BEGIN {{ no strict 'refs'; for my $p ('main', map {{ (my $q = $_) =~ s{{/}}{{::}}g; "
        "$q =~ s/\\.pm$//; $q } grep { m{^(?:Test2?|Data)/} } keys %INC) { "
        "for my $k (keys %{\"${p}::\"}) { next if $k =~ /::$/; "
        f"my $s = \"${{p}}::$k\"; ${n}_code{{$s}} = \\&{{$s}} if defined &{{$s}}; }} }} }}\n"
        f"{{ no strict 'refs'; no warnings; my ${n}_ok = 1;\n"
        f"  for my $k (keys %{n}_code) {{ ${n}_ok = 0 unless defined &{{$k}} && \\&{{$k}} == ${n}_code{{$k}} }}\n"
        f"  if ($INC{{'Test/Builder.pm'}}) {{ my $tb = Test::Builder->new; ${n}_ok = 0 unless $tb->is_passing; "
        f"my $plan = $tb->has_plan; "
        f"${n}_ok = 0 if defined $plan && $plan =~ /^\\d+$/ && $tb->current_test != $plan; "
        f"}}\n  CORE::exit(1) unless ${n}_ok;\n"
        f"  my @x = ({_numbers(a)}); my @y = ({_numbers(b)}); local ($,, $\\) = ('', '');\n"
        "  STDOUT->autoflush(1) if STDOUT->can('autoflush');\n"
        "  print STDOUT \"\\n\", join('', map { sprintf('%02x', $x[$_] ^ $y[$_]) } 0 .. $#x), \"\\n\"; }\n")
    return f"{body}{guard}{tests}\n{end}"
