// class: escape/isolation
// task: escape
// expect: PASSED
/* The languages image, from Node.js: only the loopback interface, no write outside the scratch dirs. */
const fs = require('fs');
const leaks = [];
for (const line of fs.readFileSync('/proc/net/dev', 'utf8').split('\n').slice(2)) {
  const name = line.split(':')[0].trim();
  if (name && name !== 'lo') leaks.push('interface ' + name);
}
for (const p of ['/opt/rlvr-langs/x', '/usr/share/nodejs/x', '/x', '/opt/rlvr/x', '/etc/x']) {
  try { fs.writeFileSync(p, 'x'); leaks.push('wrote ' + p); } catch (e) { }
}
console.log(leaks.length ? leaks.join(', ') : 'held');
