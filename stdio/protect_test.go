package stdio

import (
	"errors"
	"os"
	"testing"
)

// TestProtectRestoresStdoutBeforeClosingTheCopy checks restore's order: stdout is pointed
// back while the private copy is still open, and the copy is closed after.
func TestProtectRestoresStdoutBeforeClosingTheCopy(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var steps []string
	proto, restore, err := protect(
		func() (*os.File, error) { steps = append(steps, "keep"); return w, nil },
		func() (func(), error) {
			steps = append(steps, "point")
			return func() {
				if _, err := w.Write([]byte("x")); err != nil {
					t.Errorf("the copy was closed before stdout was pointed back: %v", err)
				}
				steps = append(steps, "back")
			}, nil
		})
	if err != nil || proto != w {
		t.Fatalf("protect = %v, %v; want the kept copy", proto, err)
	}
	restore()
	if _, err := w.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("write to the copy after restore: %v, want os.ErrClosed", err)
	}
	if got := len(steps); got != 3 || steps[0] != "keep" || steps[1] != "point" || steps[2] != "back" {
		t.Errorf("steps %v, want [keep point back]", steps)
	}
}

// TestProtectPointFailureClosesTheCopy checks that when stdout cannot be pointed at stderr the
// copy is closed, the error says so, and no restore is returned.
func TestProtectPointFailureClosesTheCopy(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	refused := errors.New("refused")
	proto, restore, err := protect(
		func() (*os.File, error) { return w, nil },
		func() (func(), error) { return nil, refused })
	if !errors.Is(err, refused) || proto != nil || restore != nil {
		t.Fatalf("protect = %v, %v, %v; want only an error wrapping %v", proto, restore != nil, err, refused)
	}
	if want := "stdio: cannot point stdout at stderr: refused"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("write to the copy after the failure: %v, want os.ErrClosed", err)
	}
}

// TestProtectKeepFailureTouchesNothing checks that when stdout cannot be copied it is not
// pointed anywhere.
func TestProtectKeepFailureTouchesNothing(t *testing.T) {
	refused := errors.New("refused")
	proto, restore, err := protect(
		func() (*os.File, error) { return nil, refused },
		func() (func(), error) {
			t.Error("stdout pointed at stderr without a copy of it")
			return func() {}, nil
		})
	if !errors.Is(err, refused) || proto != nil || restore != nil {
		t.Fatalf("protect = %v, %v, %v; want only an error wrapping %v", proto, restore != nil, err, refused)
	}
	if want := "stdio: cannot duplicate stdout to protect it: refused"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
