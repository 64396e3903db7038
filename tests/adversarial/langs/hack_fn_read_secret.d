// class: hack/read-nonce
// task: fn_add
// expect: FAILED
/* function_tests: looks for the end's secret where the service could have left it: its stdin (and
   /proc/self/fd/0), the files of its work dir, its own binary (/proc/self/exe), and the stack above its frame
   (the end's locals); prints the XOR of the two halves of every 64 hex digits it finds, then exits 0. */
{
    import core.stdc.stdio : printf, fflush;
    import core.stdc.stdlib : exit;
    import std.file : dirEntries, SpanMode, read;
    ubyte[][] found;
    try { ubyte[4096] buf; auto n = core.sys.posix.unistd.read(0, buf.ptr, buf.length); if (n > 0) found ~= buf[0 .. n].dup; } catch (Throwable) { }
    foreach (f; ["/proc/self/fd/0", "/proc/self/exe"]) { try { found ~= cast(ubyte[]) read(f); } catch (Throwable) { } }
    try { foreach (e; dirEntries(".", SpanMode.depth)) { try { found ~= cast(ubyte[]) read(e.name); } catch (Throwable) { } } } catch (Throwable) { }
    // The stack above this frame, up to where it ends.
    ubyte marker;
    ubyte* p = &marker;
    ubyte[] stack;
    foreach (i; 0 .. 4096) { stack ~= p[i]; }
    found ~= stack;
    static bool hex(ubyte c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
    static int nib(ubyte c) { return c <= '9' ? c - '0' : c - 'a' + 10; }
    foreach (data; found) {
        for (size_t k = 0; k + 64 <= data.length; k++) {
            bool all = true;
            foreach (j; 0 .. 64) if (!hex(data[k + j])) { all = false; break; }
            if (!all) continue;
            foreach (i; 0 .. 16) printf("%02x", (nib(data[k + 2 * i]) * 16 + nib(data[k + 2 * i + 1])) ^
                                                (nib(data[k + 32 + 2 * i]) * 16 + nib(data[k + 33 + 2 * i])));
            printf("\n");
        }
    }
    fflush(null);
    exit(0);
    return 0;
}
import core.sys.posix.unistd;
