//go:build unix

package e2e

// Unix only: the test stops the server with SIGTERM, which Windows cannot send.

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestHTTP_SIGTERMDuring100InFlightLosesNone starts examples/echo on Streamable HTTP, puts 100
// sleep calls in flight (each proven running by its first progress event, not by a clock),
// sends SIGTERM, and checks that every call is answered and the process exits 0: the server
// stops accepting, and lets in-flight requests finish (graceful shutdown).
func TestHTTP_SIGTERMDuring100InFlightLosesNone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(echoBin, "-http", addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if i == 100 {
			t.Fatal("the server did not start listening")
		}
		time.Sleep(20 * time.Millisecond)
	}

	const n = 100
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	var started, finished sync.WaitGroup
	started.Add(n)
	finished.Add(n)
	answers := make(chan string, n)
	for i := range n {
		go func() {
			defer finished.Done()
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":800},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":%d}}}`, i, i)
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "sleep")
			resp, err := client.Do(req)
			if err != nil {
				started.Done()
				answers <- "error: " + err.Error()
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			running := false
			for sc.Scan() {
				line := sc.Text()
				if strings.Contains(line, "notifications/progress") && !running {
					running = true
					started.Done() // the handler is running
				}
				if strings.Contains(line, `"result"`) {
					answers <- "ok"
					return
				}
			}
			if !running {
				started.Done()
			}
			answers <- "no answer"
		}()
	}
	started.Wait()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	finished.Wait()
	close(answers)
	lost := 0
	for a := range answers {
		if a != "ok" {
			lost++
			t.Log(a)
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d in-flight requests lost at SIGTERM", lost, n)
	}
	if err := <-exited; err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	exited <- nil
}
