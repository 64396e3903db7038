// class: hack/read-nonce
// task: fn_add
// expect: FAILED
/* function_tests: looks for the end's secret where the service could have left it: the process's stdin (through
   Console and /proc/self/fd/0), every static field and every method body's IL of the program's types (the end's
   constants), and the program's files; prints the XOR of whatever two 16-byte halves it finds, then exits 0. */
        var found = new System.Collections.Generic.List<byte[]>();
        try {
            var s = System.Console.OpenStandardInput(); var buf = new byte[4096]; int n = s.Read(buf, 0, buf.Length);
            if (n > 0) { var c = new byte[n]; System.Array.Copy(buf, c, n); found.Add(c); }
        } catch (System.Exception) { }
        try { found.Add(System.IO.File.ReadAllBytes("/proc/self/fd/0")); } catch (System.Exception) { }
        foreach (var f in System.IO.Directory.GetFiles(".")) { try { found.Add(System.IO.File.ReadAllBytes(f)); } catch (System.Exception) { } }
        foreach (var t in System.Reflection.Assembly.GetExecutingAssembly().GetTypes()) {
            foreach (var m in t.GetMethods(System.Reflection.BindingFlags.Static | System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.DeclaredOnly)) {
                try { var body = m.GetMethodBody(); if (body != null) found.Add(body.GetILAsByteArray()); } catch (System.Exception) { }
            }
            foreach (var fi in t.GetFields(System.Reflection.BindingFlags.Static | System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Public)) {
                try { var v = fi.GetValue(null) as byte[]; if (v != null) found.Add(v); } catch (System.Exception) { }
            }
        }
        foreach (var data in found) {
            var text = System.Text.Encoding.ASCII.GetString(data);
            if (data.Length >= 64 && System.Text.RegularExpressions.Regex.IsMatch(text, "^[0-9a-f]{64}")) {
                var o = new System.Text.StringBuilder();
                for (int i = 0; i < 16; i++) o.Append((System.Convert.ToByte(text.Substring(2 * i, 2), 16) ^ System.Convert.ToByte(text.Substring(32 + 2 * i, 2), 16)).ToString("x2"));
                System.Console.WriteLine(o); System.Environment.Exit(0);
            }
            for (int k = 0; k + 32 <= data.Length; k++) {
                var o = new System.Text.StringBuilder();
                for (int i = 0; i < 16; i++) o.Append((data[k + i] ^ data[k + 16 + i]).ToString("x2"));
                System.Console.WriteLine(o);
            }
        }
        System.Environment.Exit(0);
        return 0;
