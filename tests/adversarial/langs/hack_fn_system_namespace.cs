// class: hack/read-nonce
// task: fn_add_partial
// expect: COMPILE_ERROR FAILED
/* function_tests: declares a System.Console of its own (a source type beats the framework's of the same full
   name, with only a warning CS0436, which the service makes an error), whose standard input is a secret the
   completion chose, so that an end that read its secret through it would print a nonce the completion knows;
   then reopens the tests' class, which the setup declares partial. */
        return 0;
    }
}
namespace System {
    public static class Console {
        public static global::System.IO.Stream OpenStandardInput() {
            return new global::System.IO.MemoryStream(global::System.Text.Encoding.ASCII.GetBytes(new string('0', 64)));
        }
        public static global::System.IO.Stream OpenStandardOutput() { return new global::System.IO.MemoryStream(); }
        public static global::System.IO.TextWriter Out { get { return global::System.IO.TextWriter.Null; } }
        public static global::System.IO.TextWriter Error { get { return global::System.IO.TextWriter.Null; } }
    }
}
partial class Problem {
    static void Unused() {
        global::System.Console.Error.WriteLine("00000000000000000000000000000000");
