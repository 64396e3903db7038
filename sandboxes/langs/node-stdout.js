// Preloaded before every Node.js program (kinds/languages.py): stdout and stderr written synchronously, as a
// C program's are. Otherwise a program that prints in a loop that never yields queues its output in memory
// (the event loop never runs to flush it), and reaches the memory or time limit instead of the output limit.
"use strict";
for (const stream of [process.stdout, process.stderr]) {
  if (stream._handle && typeof stream._handle.setBlocking === "function") stream._handle.setBlocking(true);
}
