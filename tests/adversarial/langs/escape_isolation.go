// class: escape/isolation
// task: escape
// expect: PASSED
/* The languages image, from Go: only the loopback interface, no write outside the scratch dirs. */
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	leaks := []string{}
	data, _ := os.ReadFile("/proc/net/dev")
	for _, line := range strings.Split(string(data), "\n")[2:] {
		if i := strings.Index(line, ":"); i > 0 {
			if name := strings.TrimSpace(line[:i]); name != "lo" {
				leaks = append(leaks, "interface "+name)
			}
		}
	}
	for _, p := range []string{"/opt/rlvr-langs/x", "/usr/lib/go/x", "/x", "/opt/rlvr/x", "/etc/x"} {
		if f, err := os.Create(p); err == nil {
			f.Close()
			leaks = append(leaks, "wrote "+p)
		}
	}
	if len(leaks) == 0 {
		fmt.Println("held")
	} else {
		fmt.Println(strings.Join(leaks, ", "))
	}
}
