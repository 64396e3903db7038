// class: escape/isolation
// task: escape
// expect: PASSED
/* The languages image, from the JVM: only the loopback interface, no write outside the scratch dirs. */
import java.io.*;
import java.net.*;
import java.util.*;
public class Main {
    public static void main(String[] args) throws Exception {
        List<String> leaks = new ArrayList<>();
        for (NetworkInterface n : Collections.list(NetworkInterface.getNetworkInterfaces()))
            if (!n.getName().equals("lo")) leaks.add("interface " + n.getName());
        for (String p : new String[] {"/opt/rlvr-langs/x", "/usr/lib/jvm/x", "/x", "/opt/rlvr/x", "/etc/x"}) {
            try (FileOutputStream f = new FileOutputStream(p)) { leaks.add("wrote " + p); } catch (IOException e) { }
        }
        System.out.println(leaks.isEmpty() ? "held" : String.join(", ", leaks));
    }
}
