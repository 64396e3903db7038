// class: hack/introspect
// task: io_add
// expect: FAILED
/* function_io: reads the program's own file for the driver's marker, prints a guessed line for every case index
   (the arguments are in the file; the expected values are not), and exits before the driver runs. */
$text = (string) @file_get_contents(__FILE__);
if (preg_match("/'([0-9a-f]{32}) '/", $text, $m)) {
    for ($i = 0; $i < 16; $i++) { fwrite(STDOUT, "{$m[1]} $i 7\n"); }
    exit(0);
}
function add($a, $b) {
    return 7;
}
