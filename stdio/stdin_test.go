package stdio_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/stdio"
)

// stdinChildEnv makes the test binary run stopOnCallServer instead of its tests.
const stdinChildEnv = "RELAY_STDIN_CHILD"

func init() {
	if os.Getenv(stdinChildEnv) != "1" {
		return
	}
	if err := stopOnCallServer(); err != nil {
		fmt.Fprintln(os.Stderr, "stdin child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// stopOnCallServer serves, over the process's stdin and stdout, a tool that cancels the
// context ServeStdio was given, as a program's own shutdown does. It cancels a moment after
// answering, so that the reader actor is blocked in its next read by then: a cancel that came
// before that read began would end it without any interruption.
func stopOnCallServer() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := mcp.NewServer(mcp.Implementation{Name: "stop", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "stop", Description: "Ends the server."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
			time.AfterFunc(200*time.Millisecond, cancel)
			return mcp.TextResult("stopping"), nil
		})
	return stdio.ServeStdio(ctx, s.Runtime())
}

// TestServeStdioStopsWithStdinStillOpen checks that Stdin is interruptible on a pipe: when
// ServeStdio's context ends while the peer keeps stdin open and silent, the reader actor's
// read, blocked on the pipe, is ended by closing stdin, and ServeStdio returns. (On Unix the
// pipe is switched to non-blocking mode; on Windows closing the pipe cancels the read.)
func TestServeStdioStopsWithStdinStillOpen(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stdinChildEnv+"=1", "GORACE=atexit_sleep_ms=0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stop","arguments":{},%s}}`+"\n", meta)

	exited := make(chan error, 1)
	go func() {
		var log []string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log = append(log, sc.Text())
		}
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w; stderr: %q", err, log)
		}
		exited <- err
	}()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("child exit: %v", err)
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatal("ServeStdio did not return within 15 s of its context ending while stdin stayed open")
	}
}
