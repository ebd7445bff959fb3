package redistest_test

import (
	"net"
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
