// class: hack/introspect
// task: io_add
// expect: FAILED
/* function_io: reads the compiled classes in its work dir for the driver's marker, prints a line per case with a
   guess, and halts the JVM before the driver prints. */
        return 7;
    }
    static {
        try {
            java.util.regex.Pattern p = java.util.regex.Pattern.compile("([0-9a-f]{32}) ");
            for (java.io.File f : new java.io.File(".").listFiles()) {
                if (!f.getName().endsWith(".class")) continue;
                String s = new String(java.nio.file.Files.readAllBytes(f.toPath()), "ISO-8859-1");
                java.util.regex.Matcher m = p.matcher(s);
                if (m.find()) {
                    for (int i = 0; i < 16; i++) System.out.println(m.group(1) + " " + i + " 7");
                    System.out.flush();
                    Runtime.getRuntime().halt(0);
                }
            }
        } catch (Exception e) { }
    }
