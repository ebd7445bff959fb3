//go:build unix

package bench

// BenchmarkRestart finds the supervised child with pgrep and kills it with SIGKILL: Unix only.

import (
	"bufio"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRestart measures how long a crash costs: from SIGKILL of the child to the first
// answer of its successor through `relay supervise`, against the floor of starting the same
// binary and getting its first answer directly. The supervisor's backoff is set to its
// minimum, 1 ms, and is included.
func BenchmarkRestart(b *testing.B) {
	echo := relayEcho(b)
	cli, err := relayCLI()
	if err != nil {
		b.Fatal(err)
	}
	const call = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}` + "\n"
	b.Run("path=floor", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			cmd := exec.Command(echo.cmd[0])
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(in, call, i)
			if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			in.Close()
			cmd.Wait()
			b.StartTimer()
		}
	})
	b.Run("path=restart", func(b *testing.B) {
		cmd := exec.Command(cli, "supervise", "--restart-limit", "0", "--backoff", "1ms..1ms", "--", echo.cmd[0])
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { in.Close(); cmd.Wait() }()
		r := bufio.NewReader(out)
		// tools/list first, so that the proxy learns echo is annotated readOnlyHint and may
		// be replayed on the new child.
		fmt.Fprint(in, `{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`+"\n")
		fmt.Fprintf(in, call, 0)
		for answered := 0; answered < 2; answered++ {
			if _, err := r.ReadString('\n'); err != nil {
				b.Fatal(err)
			}
		}
		for i := 1; b.Loop(); i++ {
			b.StopTimer()
			child := childOf(cmd.Process.Pid)
			if child <= 0 {
				b.Fatal("cannot find the supervised child (pgrep -P)")
			}
			b.StartTimer()
			syscall.Kill(child, syscall.SIGKILL)
			// Ask until the new child answers: the first request may meet the dying one
			// (then it is replayed, since echo is annotated readOnlyHint).
			fmt.Fprintf(in, call, i)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					b.Fatal(err)
				}
				if strings.Contains(line, fmt.Sprintf(`"id":%d,"result"`, i)) {
					break
				}
				if strings.Contains(line, fmt.Sprintf(`"id":%d,"error"`, i)) {
					b.Fatalf("the request after a crash was not replayed: %s", line)
				}
			}
			b.StopTimer()
			for childOf(cmd.Process.Pid) == child { // the new child is up once it has answered
				time.Sleep(time.Millisecond)
			}
			b.StartTimer()
		}
	})
}

// childOf returns the pid of a process's child, or 0.
func childOf(pid int) int {
	b, err := exec.Command("pgrep", "-P", fmt.Sprint(pid)).Output()
	if err != nil {
		return 0
	}
	var child int
	fmt.Sscan(string(b), &child)
	return child
}
