package redistest_test

import (
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStopAndRestart: the server answers, is gone once stopped, and answers again on the
// same port once restarted.
func TestStopAndRestart(t *testing.T) {
	s := redistest.Start(t)
	answers := func() bool {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			return false
		}
		defer c.Close()
		c.Write([]byte("PING\r\n"))
		buf := make([]byte, 7)
		n, _ := c.Read(buf)
		return string(buf[:n]) == "+PONG\r\n"
	}
	if !answers() {
		t.Fatal("a started server does not answer PING")
	}
	s.Stop()
	if answers() {
		t.Fatal("a stopped server still answers")
	}
	s.Restart()
	if !answers() {
		t.Fatal("a restarted server does not answer PING")
	}
}

// TestTLS: a TLS server answers a client that trusts its CA, and only over TLS.
func TestTLS(t *testing.T) {
	s := redistest.StartTLS(t)
	if !strings.HasPrefix(s.URL, "rediss://") || s.CA == nil {
		t.Fatalf("URL %q, CA %v", s.URL, s.CA)
	}
	c, err := tls.Dial("tcp", s.Addr, &tls.Config{RootCAs: s.CA})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("PING\r\n"))
	buf := make([]byte, 7)
	if n, _ := io.ReadFull(c, buf); string(buf[:n]) != "+PONG\r\n" {
		t.Errorf("PING over TLS: %q", buf[:n])
	}
	if _, err := tls.Dial("tcp", s.Addr, &tls.Config{}); err == nil {
		t.Error("a client that does not trust the CA connected")
	}
	s.Restart()
	if c, err := tls.Dial("tcp", s.Addr, &tls.Config{RootCAs: s.CA}); err != nil {
		t.Errorf("after Restart: %v", err)
	} else {
		c.Close()
	}
}
