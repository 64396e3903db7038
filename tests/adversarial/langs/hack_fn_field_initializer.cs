// class: hack/read-nonce
// task: fn_add
// expect: FAILED
/* function_tests: a static field initializer in the tests' class (no static constructor: the class is
   beforefieldinit, which a runtime may initialise as early as when it compiles a method that calls into it, the
   end's Main included) that reads the process's stdin, where the end's secret arrives, and prints the XOR of its
   halves, then exits 0. */
        return 0;
    }
    static readonly int Stolen = Steal();
    static int Steal() {
        var s = System.Console.OpenStandardInput(); var buf = new byte[64]; int n = 0, k;
        while (n < 64 && (k = s.Read(buf, n, 64 - n)) > 0) n += k;
        if (n == 64) {
            var t = System.Text.Encoding.ASCII.GetString(buf); var o = new System.Text.StringBuilder();
            for (int i = 0; i < 16; i++) o.Append((System.Convert.ToByte(t.Substring(2 * i, 2), 16) ^ System.Convert.ToByte(t.Substring(32 + 2 * i, 2), 16)).ToString("x2"));
            System.Console.WriteLine(o);
            System.Environment.Exit(0);
        }
        return n;
    }
    static void Unused() {
