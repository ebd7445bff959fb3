package filewatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A change is reported once, after it has stayed the same for one more look; a rewrite, a
// replacement by rename and a file that appears are changes; a file being replaced (absent
// for a look) is not yet one.
func TestLook(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.sh")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := New(path) // it does not exist yet
	if f.Look() {
		t.Fatal("a file that does not exist changed")
	}
	write("v1")
	if f.Look() {
		t.Fatal("a change was reported at its first look: it may still be being written")
	}
	if !f.Look() {
		t.Fatal("a file that appeared and stayed the same was not reported")
	}
	if f.Look() || f.Look() {
		t.Fatal("an unchanged file was reported again")
	}
	write("version 2") // another size
	f.Look()
	if !f.Look() {
		t.Fatal("a rewrite was not reported")
	}
	next := filepath.Join(dir, "next")
	os.WriteFile(next, []byte("version 3"), 0o755) // the same size: a rename is another file
	os.Remove(path)
	if f.Look() {
		t.Fatal("a file being replaced was reported")
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	f.Look()
	if !f.Look() {
		t.Fatal("a replacement by rename was not reported")
	}
	later := time.Now().Add(time.Hour) // the same size and identity, another time
	os.Chtimes(path, later, later)
	f.Look()
	if !f.Look() {
		t.Fatal("a new modification time was not reported")
	}
}
