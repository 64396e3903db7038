# class: hack/introspect
# task: io_add
# expect: FAILED
# function_io: reads its own file ($0) for the driver's marker, prints a line for each case with a guess, then
# leaves at once (POSIX::_exit: no END block, no driver), and an END block that would print more lines later.
use POSIX ();
open(my $fh, '<', $0) or die;
my $text = do { local $/; <$fh> };
if ($text =~ /print STDOUT "([0-9a-f]{32}) /) {
    print STDOUT "$1 $_ 7\n" for 0 .. 15;
    STDOUT->flush();
    POSIX::_exit(0);
}
END { print "ok\n"; }
sub add { return 7 }
