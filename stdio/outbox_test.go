package stdio

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// A reader that stops reading never makes a sender wait: the outbox takes frames up to its
// bound in bytes (one frame always, whatever its size) and then refuses them at once; what
// it took is written, in order, once the reader reads again.
func TestOutboxNeverBlocksItsSenders(t *testing.T) {
	r, w := io.Pipe() // nothing reads r until the end: the writer's first write blocks
	o := NewOutbox(1000)
	done := make(chan error, 1)
	go func() {
		err := WriteOutbox(w, o, zap.NewNop())
		w.Close() // the end of what r reads
		done <- err
	}()
	frame := []byte(`{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", 57) + `"}`) // 100 bytes with its newline
	if len(frame)+1 != 100 {
		t.Fatalf("the test's frame is %d bytes with its newline", len(frame)+1)
	}
	sent, full := 0, 0
	deadline := time.After(10 * time.Second)
	for full < 5 {
		select {
		case <-deadline:
			t.Fatalf("Send blocked or never refused: %d sent, %d refused", sent, full)
		default:
		}
		switch err := o.Send(frame); {
		case errors.Is(err, ErrOutboxFull):
			full++
		case err != nil:
			t.Fatal(err)
		default:
			sent++
		}
	}
	// The first frame may be in the blocked write already, out of the outbox's count only once written.
	if sent < 10 || sent > 11 {
		t.Errorf("%d frames of 100 bytes taken by an outbox of 1,000 bytes whose reader is stalled", sent)
	}
	o.Close()
	if err := o.Send(frame); !errors.Is(err, ErrOutboxClosed) {
		t.Errorf("Send after Close = %v, want ErrOutboxClosed", err)
	}
	out, _ := io.ReadAll(r)
	if err := <-done; err != nil {
		t.Fatalf("WriteOutbox = %v", err)
	}
	if lines := strings.Count(string(out), "\n"); lines != sent {
		t.Errorf("%d lines written, want the %d frames taken", lines, sent)
	}
	if big := NewOutbox(10); big.Send(frame) != nil {
		t.Error("an empty outbox refused a frame larger than its bound: it must take one")
	}
}

// A failed write closes the outbox: senders hear of it at once, and WriteOutbox returns the
// error.
func TestOutboxClosesWhenAWriteFails(t *testing.T) {
	r, w := io.Pipe()
	r.CloseWithError(errors.New("the reader is gone"))
	o := NewOutbox(1 << 20)
	done := make(chan error, 1)
	go func() { done <- WriteOutbox(w, o, zap.NewNop()) }()
	if err := o.Send([]byte(`{"jsonrpc":"2.0","method":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("WriteOutbox returned nil after a failed write")
	}
	if err := o.Send([]byte(`{}`)); !errors.Is(err, ErrOutboxClosed) {
		t.Errorf("Send after a failed write = %v, want ErrOutboxClosed", err)
	}
}
