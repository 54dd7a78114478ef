package main

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestMain runs the emulator itself when a test starts this binary as it.
func TestMain(m *testing.M) {
	if os.Getenv("FORGE_EMULATOR_MAIN") == "1" {
		os.Args = append(os.Args[:1], strings.Fields(os.Getenv("FORGE_EMULATOR_ARGS"))...)
		os.Exit(run())
	}
	os.Exit(m.Run())
}

// emulatorCmd is the emulator with args, as a command.
func emulatorCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "FORGE_EMULATOR_MAIN=1", "FORGE_EMULATOR_ARGS="+strings.Join(args, " "))
	return cmd
}

// TestPortInUse: -port on a taken port says so and how to choose, exit 2.
func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	out, err := emulatorCmd("-port", port).CombinedOutput()
	want := "emulator: -port " + port + ": 127.0.0.1:" + port + " is in use (another emulator?); choose another -port, or 0 for a free one\n"
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || string(out) != want {
		t.Errorf("exit %v, output %q; want exit 2 and %q", err, out, want)
	}
}
