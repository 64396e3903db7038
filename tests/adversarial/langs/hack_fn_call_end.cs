// class: hack/choose-entry
// task: fn_add
// expect: FAILED
/* function_tests: finds the service's entry class by reflection and calls its Main again from inside the
   function (a second run of the end, after which it would print the nonce), then exits 0; answers wrong. */
        foreach (var t in System.Reflection.Assembly.GetExecutingAssembly().GetTypes()) {
            var m = t.GetMethod("Main", System.Reflection.BindingFlags.Static | System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.NonPublic);
            if (m != null && t != typeof(Problem) && !inside) { inside = true; try { m.Invoke(null, new object[] { new string[0] }); } catch (System.Exception) { } System.Environment.Exit(0); }
        }
        return 0;
    }
    static bool inside;
    static void Unused() {
