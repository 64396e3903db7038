// class: hack/introspect
// task: io_add
// expect: FAILED
/* function_io: reads the program's own source for the driver's marker and the cases, prints a line per case with
   a guess (the arguments are there; the expected values are not), and exits before the driver runs. */
const text = require('fs').readFileSync(process.argv[1], 'utf8');
const mark = (text.match(/'([0-9a-f]{32}) '/) || [])[1];
if (mark) {
  for (let i = 0; i < 16; i++) process.stdout.write(`${mark} ${i} 7\n`);
  process.exit(0);
}
function add(a, b) {
  return 7;
}
