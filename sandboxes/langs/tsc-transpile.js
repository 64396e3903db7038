// TypeScript to JavaScript for the sandbox's compile step: Debian's TypeScript compiler, one file, no type
// checking (as ts-node --transpile-only, tsx or esbuild run TypeScript): a syntax error is a compile error,
// reported as tsc reports it (solution.ts(3,5): error TS1005: ...). Usage: tsc-transpile.js IN.ts OUT.js
"use strict";
const fs = require("fs");
const ts = require("typescript");
if (process.argv[2] === "--version") {
  console.log(`TypeScript ${ts.version}`);
  process.exit(0);
}
const [input, output] = process.argv.slice(2);
const source = fs.readFileSync(input, "utf8");
const result = ts.transpileModule(source, {
  fileName: input,
  reportDiagnostics: true,
  compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, strict: false },
});
const errors = (result.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
if (errors.length) {
  for (const d of errors) {
    const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    if (d.file && d.start !== undefined) {
      const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
      process.stderr.write(`${input}(${line + 1},${character + 1}): error TS${d.code}: ${text}\n`);
    } else {
      process.stderr.write(`error TS${d.code}: ${text}\n`);
    }
  }
  process.exit(1);
}
fs.writeFileSync(output, result.outputText);
