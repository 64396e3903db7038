"""stdio in every language of the table (kinds/languages.py), on Docker: the default image (Python, C, C++,
Bash) and the languages image (Java, JavaScript, TypeScript, Go, Rust).

Per language: an accepted solution, a wrong answer, a compile error, a runtime error, a timeout, a memory
bomb, a fork bomb and a huge output, all in one batch (the service runs them side by side); then the
service must still be healthy and an honest batch right.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.docker

CASES = [{"stdin": "1 2\n", "expected_stdout": "3\n"}, {"stdin": "10 -4\n", "expected_stdout": "6\n"}]
BAD_VERDICTS = {"TIMEOUT", "RUNTIME_ERROR", "MEMORY_LIMIT", "OUTPUT_LIMIT"}

# language -> {program: source}; "wrong" is "ok" with the sum turned into a difference.
PROGRAMS: dict[str, dict[str, str]] = {
    "c": {
        "ok": '#include <stdio.h>\nint main(void){long a,b;if(scanf("%ld %ld",&a,&b)!=2)return 1;'
              'printf("%ld\\n",a+b);return 0;}\n',
        "compile": "int main(void) { return undefined_name; }\n",
        "runtime": "int main(void){ volatile int *p = 0; return *p; }\n",
        "timeout": "int main(void){ volatile unsigned x = 0; for (;;) x++; }\n",
        "memory": "#include <stdlib.h>\n#include <string.h>\nint main(void){ for (;;) { char *p = malloc(1 << 20);"
                  " if (!p) return 3; memset(p, 1, 1 << 20); } }\n",
        "fork": "#include <unistd.h>\nint main(void){ for (;;) fork(); }\n",
        "output": '#include <stdio.h>\nint main(void){ for (;;) puts("yyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"); }\n',
    },
    "cpp": {
        "ok": "#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n",
        "compile": "int main() { std::vector<int> v; }\n",
        "runtime": '#include <stdexcept>\nint main(){ throw std::runtime_error("boom"); }\n',
        "timeout": "int main(){ volatile unsigned x = 0; for (;;) x++; }\n",
        "memory": "#include <vector>\nint main(){ std::vector<std::vector<char>> v; "
                  "for (;;) v.emplace_back(1 << 20, 'x'); }\n",
        "fork": "#include <unistd.h>\nint main(){ for (;;) fork(); }\n",
        "output": "#include <cstdio>\nint main(){ for (;;) std::puts(\"yyyyyyyyyyyyyyyyyyyyyyyyyyyyy\"); }\n",
    },
    "bash": {
        "ok": "read -r a b\necho $((a + b))\n",
        "compile": "if then fi (\n",
        "runtime": "read -r a b\necho 'boom' >&2\nexit 3\n",
        "timeout": "while :; do :; done\n",
        "memory": "x=aaaaaaaaaaaaaaaa\nwhile :; do x=$x$x; done\n",
        "fork": ":(){ :|:& };:\n",
        "output": "while :; do echo yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy; done\n",
    },
    "java": {
        "ok": "import java.util.*;\npublic class Solution {\n  public static void main(String[] args) {\n"
              "    Scanner in = new Scanner(System.in);\n    long a = in.nextLong(), b = in.nextLong();\n"
              "    System.out.println(a + b);\n  }\n}\n",
        "compile": "public class Main { public static void main(String[] args) { int x = 1 } }\n",
        "runtime": 'public class Main { public static void main(String[] a) {\n'
                   '  throw new RuntimeException("boom"); } }\n',
        "timeout": "public class Main { public static void main(String[] a) { long x = 0; while (true) x++; } }\n",
        "memory": "import java.util.*;\npublic class Main { public static void main(String[] a) {\n"
                  "  List<long[]> l = new ArrayList<>(); while (true) l.add(new long[1 << 20]); } }\n",
        "fork": "public class Main { public static void main(String[] a) throws Exception {\n"
                "  while (true) new ProcessBuilder(\"sleep\", \"100\").start(); } }\n",
        "output": 'public class Main { public static void main(String[] a) { while (true) '
                  'System.out.println("yyyyyyyyyyyyyyyyyyyyyyyyyy"); } }\n',
    },
    "javascript": {
        "ok": "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
              "console.log(a + b);\n",
        "compile": "const = ;\n",
        "runtime": "throw new Error('boom');\n",
        "timeout": "for (;;) {}\n",
        "memory": "const a = []; for (;;) a.push(new Array(1e6).fill(1.5));\n",
        "fork": "const cp = require('child_process'); for (;;) { try { cp.spawnSync('sh', ['-c', 'sleep 100 &']); }"
                " catch (e) {} }\n",
        "output": "for (;;) process.stdout.write('y'.repeat(100) + '\\n');\n",
    },
    "typescript": {
        "ok": "const input: string = require('fs').readFileSync(0, 'utf8');\n"
              "const [a, b]: number[] = input.trim().split(/\\s+/).map(Number);\nconsole.log(a + b);\n",
        "compile": "let x: number = ;\n",
        "runtime": "function f(n: number): number { if (n > 0) throw new Error('boom'); return n; }\nf(1);\n",
        "timeout": "let x: number = 0;\nfor (;;) { x++; }\n",
        "memory": "const a: number[][] = []; for (;;) a.push(new Array(1e6).fill(1.5));\n",
        "fork": "const cp = require('child_process'); for (;;) { try { cp.spawnSync('sh', ['-c', 'sleep 100 &']); }"
                " catch (e) {} }\n",
        "output": "for (;;) process.stdout.write('y'.repeat(100) + '\\n');\n",
    },
    "go": {
        "ok": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar a, b int64\n\tfmt.Scan(&a, &b)\n'
              "\tfmt.Println(a + b)\n}\n",
        "compile": "package main\n\nfunc main() {\n\tundefinedName()\n}\n",
        "runtime": 'package main\n\nfunc main() {\n\tpanic("boom")\n}\n',
        "timeout": "package main\n\nfunc main() {\n\tx := 0\n\tfor {\n\t\tx++\n\t}\n}\n",
        "memory": "package main\n\nfunc main() {\n\tvar s [][]byte\n\tfor {\n\t\tb := make([]byte, 1<<20)\n"
                  "\t\tfor i := range b {\n\t\t\tb[i] = 1\n\t\t}\n\t\ts = append(s, b)\n\t}\n}\n",
        "fork": 'package main\n\nimport "os/exec"\n\nfunc main() {\n\tfor {\n'
                '\t\t_ = exec.Command("sleep", "100").Start()\n\t}\n}\n',
        "output": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfor {\n\t\tfmt.Println("yyyyyyyyyyyy")\n'
                  '\t}\n}\n',
    },
    "rust": {
        "ok": "use std::io::Read;\nfn main() {\n    let mut s = String::new();\n"
              "    std::io::stdin().read_to_string(&mut s).unwrap();\n"
              "    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n"
              "    println!(\"{}\", v[0] + v[1]);\n}\n",
        "compile": "fn main() {\n    let x: i32 = \"a\";\n}\n",
        "runtime": "fn main() {\n    panic!(\"boom\");\n}\n",
        "timeout": "fn main() {\n    let mut x: u64 = 0;\n    loop {\n"
                   "        x = std::hint::black_box(x + 1);\n    }\n}\n",
        "memory": "fn main() {\n    let mut v: Vec<Vec<u8>> = Vec::new();\n    loop {\n"
                  "        v.push(vec![1u8; 1 << 20]);\n"
                  "    }\n}\n",
        "fork": "fn main() {\n    loop {\n        let _ = std::process::Command::new(\"sleep\").arg(\"100\").spawn();\n"
                "    }\n}\n",
        "output": "fn main() {\n    loop {\n        println!(\"yyyyyyyyyyyyyyyyyyyy\");\n    }\n}\n",
    },
}
for _programs in PROGRAMS.values():
    _programs["wrong"] = _programs["ok"].replace("a + b", "a - b").replace("a+b", "a-b").replace("v[0] + v[1]",
                                                                                               "v[0] - v[1]")

# A fork bomb meets the pids limit, then the time limit (or ends at once: bash's leaves its bombs behind and
# prints nothing, a wrong answer); never PASSED, never INFRA_ERROR. A memory bomb meets the memory limit, or on a
# loaded machine (the CI's, a shared host) the time limit first, growing slowly while the kernel reclaims pages
# or the runtime collects garbage near its limit: a limit either way.
EXPECTED = {"ok": {"PASSED"}, "wrong": {"FAILED"}, "compile": {"COMPILE_ERROR"}, "runtime": {"RUNTIME_ERROR"},
            "timeout": {"TIMEOUT"}, "memory": {"MEMORY_LIMIT", "TIMEOUT"}, "fork": BAD_VERDICTS | {"FAILED"},
            "output": {"OUTPUT_LIMIT"}}
FIRST_ERROR = {"c": "undefined_name", "cpp": "vector", "bash": "syntax error", "java": "';' expected",
               "javascript": "SyntaxError", "typescript": "error TS", "go": "undefined: undefinedName",
               "rust": "mismatched types"}


def spec(language: str, program: str) -> dict:
    # A memory bomb gets time to fill the sandbox's memory even on a loaded machine (it would otherwise meet the
    # time limit first, and be a TIMEOUT: also a failure, but not the verdict tested here).
    limit = {"timeout": 3, "fork": 3, "memory": 15}.get(program)
    return {"kind": "stdio", "language": language, "cases": CASES, "fast_fail": True,
            **({"timeout_s": limit} if limit else {})}


@pytest.fixture(scope="module")
def verdicts(langs_service):
    items = [(lang, name, source) for lang, programs in PROGRAMS.items() for name, source in programs.items()]
    results = langs_service.verify_batch([(source, spec(lang, name)) for lang, name, source in items], timeout=900)
    return {(lang, name): r for (lang, name, _), r in zip(items, results, strict=True)}


@pytest.mark.parametrize("language", sorted(PROGRAMS))
def test_each_program_gets_its_verdict(verdicts, language):
    wrong = {name: (verdicts[language, name]["verdict"], verdicts[language, name]["detail"][:300])
             for name in PROGRAMS[language] if verdicts[language, name]["verdict"] not in EXPECTED[name]}
    assert not wrong, wrong
    assert FIRST_ERROR[language] in verdicts[language, "compile"]["detail"].splitlines()[0]


def test_the_service_is_healthy_and_honest_after_the_hostile_programs(langs_service, verdicts):
    again = langs_service.verify_batch([(PROGRAMS[lang]["ok"], spec(lang, "ok")) for lang in sorted(PROGRAMS)])
    assert [r["verdict"] for r in again] == ["PASSED"] * len(PROGRAMS), [r["detail"] for r in again]


def test_results_carry_the_digest_of_the_image_that_ran_them(langs_service, verdicts):
    sandbox = langs_service.app.sandbox
    assert verdicts["java", "ok"]["sandbox_image"] == sandbox.image_ids["langs"]
    assert verdicts["c", "ok"]["sandbox_image"] == sandbox.image_id != sandbox.image_ids["langs"]
