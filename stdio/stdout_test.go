package stdio_test

// This file is an external test package so that it can use package mcp for a realistic server
// whatever mcp imports. It has no TestMain: the child process is selected in init, which runs
// before any TestMain of package stdio.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/stdio"
)

// stdoutChildEnv makes the test binary run strayOutputServer instead of its tests.
const stdoutChildEnv = "RELAY_STDOUT_CHILD"

func init() {
	if os.Getenv(stdoutChildEnv) != "1" {
		return
	}
	if err := strayOutputServer(); err != nil {
		fmt.Fprintln(os.Stderr, "stdout child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// strayOutputServer serves, over the process's stdin and stdout, a tool that writes to
// os.Stdout the way careless handler code (or a library) does.
func strayOutputServer() error {
	s := mcp.NewServer(mcp.Implementation{Name: "stray", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "stray", Description: "Prints to stdout, then answers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			fmt.Println("stray output")
			fmt.Print("stray print without a newline ")
			fmt.Fprint(os.Stdout, `{"jsonrpc":"2.0","id":"forged","result":{}}`+"\n")
			os.Stdout.WriteString("stray write\n")
			return mcp.TextResult("done"), nil
		})
	return stdio.ServeStdio(context.Background(), s.Runtime())
}

// TestServeStdioKeepsStrayOutputOffStdout: nothing that is not a protocol message may appear
// on stdout (DIGEST A12), so ServeStdio points file descriptor 1 at stderr while it serves. A
// handler that prints with fmt.Println must not corrupt the stream: every stdout line is a
// JSON-RPC 2.0 message, every call is answered, and the stray text lands on stderr.
func TestServeStdioKeepsStrayOutputOffStdout(t *testing.T) {
	const calls = 5
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stdoutChildEnv+"=1", "GORACE=atexit_sleep_ms=0")
	var stderr strayTestBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	var lines [][]byte
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				lines = append(lines, line)
			}
			if err != nil {
				return
			}
		}
	}()

	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	var in bytes.Buffer
	for i := range calls {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"stray","arguments":{},%s}}`+"\n", i, meta)
	}
	if _, err := stdin.Write(in.Bytes()); err != nil {
		t.Fatal(err)
	}
	stdin.Close() // EOF: the server answers what it has read, then exits (DIGEST A12)

	select {
	case <-readDone:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-readDone
		t.Errorf("the child did not finish within 15 s of EOF")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("child exit: %v", err)
	}

	answered := map[string]bool{}
	for _, line := range lines {
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  *struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if !bytes.HasSuffix(line, []byte("\n")) || json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" {
			t.Errorf("stdout line is not a JSON-RPC 2.0 message (DIGEST A12): %q", line)
			continue
		}
		if string(m.ID) == `"forged"` {
			t.Errorf("the handler's stray JSON reached stdout: %q", line)
			continue
		}
		if m.Result == nil || len(m.Result.Content) != 1 || m.Result.Content[0].Text != "done" {
			t.Errorf("unexpected message: %s", line)
			continue
		}
		answered[string(m.ID)] = true
	}
	for i := range calls {
		if !answered[fmt.Sprint(i)] {
			t.Errorf("call %d was not answered", i)
		}
	}
	errText := stderr.String()
	for _, want := range []string{"stray output", "stray print without a newline", "stray write"} {
		if got := strings.Count(errText, want); got != calls {
			t.Errorf("stderr has %q %d times, want %d", want, got, calls)
		}
	}
	if t.Failed() {
		t.Logf("child stderr:\n%s", errText)
	}
}

type strayTestBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *strayTestBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *strayTestBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
