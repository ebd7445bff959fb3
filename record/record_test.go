package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func clock() func() time.Time {
	t := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Nanosecond * 1500); return t }
}

func readAll(t *testing.T, path string) []Frame {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fs, err := ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// Each line read through Reader and written through Writer becomes one frame, in order,
// with its direction; a line that is not JSON is kept as raw, one too long as its length.
func TestTeeRecordsEachLineBothWays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	r, err := Create(path, &Options{Now: clock(), MaxLine: 64})
	if err != nil {
		t.Fatal(err)
	}
	in := r.Reader(In, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\nnot json\n\n"+strings.Repeat("x", 100)+"\n"+`{"id":2,"method":"ping"}`))
	if _, err := io.Copy(io.Discard, in); err != nil {
		t.Fatal(err)
	}
	var sink bytes.Buffer
	w := r.Writer(Out, &sink)
	io.WriteString(w, `{"jsonrpc":"2.0","id":1,`) // a frame in two writes
	io.WriteString(w, `"result":{}}`+"\n")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if sink.String() != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Errorf("the writer passed on %q", sink.String())
	}
	fs := readAll(t, path)
	want := []struct {
		dir      Dir
		msg, raw string
		skipped  int
	}{
		{In, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "", 0},
		{In, "", "not json", 0},
		{In, "", "", 100},
		{In, `{"id":2,"method":"ping"}`, "", 0},
		{Out, `{"jsonrpc":"2.0","id":1,"result":{}}`, "", 0},
	}
	if len(fs) != len(want) {
		t.Fatalf("%d frames, want %d: %+v", len(fs), len(want), fs)
	}
	for i, w := range want {
		f := fs[i]
		if f.Dir != w.dir || string(f.Msg) != w.msg || f.Raw != w.raw || f.Skipped != w.skipped {
			t.Errorf("frame %d = %+v, want %+v", i, f, w)
		}
		if i > 0 && !f.T.After(fs[i-1].T) {
			t.Errorf("frame %d's time %v is not after the previous one", i, f.T)
		}
	}
}

// The file is created 0600: a recording holds what users typed.
func TestFileIsCreated0600(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix modes")
	}
	path := filepath.Join(t.TempDir(), "rec")
	r, err := Create(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	// An existing file that others may read is made private before anything is appended.
	old := filepath.Join(t.TempDir(), "old")
	os.WriteFile(old, []byte{}, 0o644)
	os.Chmod(old, 0o644) // whatever the umask
	r, err = Create(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if st, _ := os.Stat(old); st.Mode().Perm() != 0o600 {
		t.Errorf("an existing file's mode is %v, want 0600", st.Mode().Perm())
	}
}

// Values at the redacted pointers never reach the file; a message they do not reach is
// kept byte for byte.
func TestRedactLeavesNoSecret(t *testing.T) {
	ps, err := ParsePointers("/params/arguments/password, /result/token,/params/a~1b")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rec")
	r, err := Create(path, &Options{Redact: ps})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"user":"ann","password":"hunter2"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"token":"s3cr3t","n":1.50}}`,
		`{"jsonrpc":"2.0","id":2,"method":"x","params":{"a/b":"sl4sh"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list",  "params":{}}`,
	}
	for _, m := range msgs {
		if err := r.Record(In, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	b, _ := os.ReadFile(path)
	for _, secret := range []string{"hunter2", "s3cr3t", "sl4sh"} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the recording holds %q:\n%s", secret, b)
		}
	}
	fs := readAll(t, path)
	if !strings.Contains(string(fs[0].Msg), `"password":"[redacted]"`) || !strings.Contains(string(fs[0].Msg), `"user":"ann"`) {
		t.Errorf("redacted message = %s", fs[0].Msg)
	}
	if !strings.Contains(string(fs[1].Msg), `"n":1.50`) {
		t.Errorf("a number changed in redaction: %s", fs[1].Msg)
	}
	if !jsonEqual(fs[3].Msg, []byte(msgs[3])) || !bytes.Contains(fs[3].Msg, []byte(`{"jsonrpc":"2.0","id":3,`)) {
		t.Errorf("a message no pointer reaches was changed (beyond spaces): %s", fs[3].Msg)
	}
}

// Past the cap the file is rotated once: FILE.1 holds the earlier frames, FILE the later,
// and neither grows past the cap; a second rotation replaces FILE.1.
func TestRotationAtTheCap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec")
	r, err := Create(path, &Options{MaxBytes: 1000, Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "ping"})
		if err := r.Record(In, msg); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	cur, prev := readAll(t, path), readAll(t, path+".1")
	for _, p := range []string{path, path + ".1"} {
		if st, _ := os.Stat(p); st.Size() > 1000 {
			t.Errorf("%s is %d bytes, over the cap", p, st.Size())
		}
	}
	if len(cur) == 0 || len(prev) == 0 {
		t.Fatalf("%d frames in the file, %d in .1", len(cur), len(prev))
	}
	last := cur[len(cur)-1].Parse()
	if last.ID != "39" || !prev[len(prev)-1].T.Before(cur[0].T) {
		t.Errorf("the file ends with id %s, want 39, and .1 must hold the frames before it", last.ID)
	}
	if len(cur)+len(prev) >= 40 {
		t.Errorf("%d frames kept of 40: a second rotation should have dropped the oldest", len(cur)+len(prev))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d files, want 2 (one previous kept)", len(entries))
	}
}

func TestReaderRejectsWhatIsNotARecording(t *testing.T) {
	for _, c := range []string{
		`{"dir":"in","msg":{}}`,
		`{"t":"2026-12-01T00:00:00Z","dir":"up","msg":{}}`,
		`{"t":"2026-12-01T00:00:00Z","dir":"in"}`,
		`{"t":"2026-12-01T00:00:00Z","dir":"in","msg":{},"raw":"x"}`,
		`{"t":"2026-12-01T00:00:00Z","dir":"in","msg":null}`,
		`[1,2]`,
		`{"t":"2026-12-01T00:00:00Z","dir":"in","msg":{}}` + "\n" + strings.Repeat(" ", 200) + "x\n",
	} {
		_, err := ReadFile(strings.NewReader(c))
		rd := NewReader(strings.NewReader(c), 100)
		_, err2 := rd.Next()
		if err == nil && err2 == nil {
			t.Errorf("%q was read as a recording", c)
		}
		if err != nil && !errors.Is(err, ErrFormat) {
			t.Errorf("%q: %v does not wrap ErrFormat", c, err)
		}
	}
	long := `{"t":"2026-12-01T00:00:00Z","dir":"in","msg":{"a":"` + strings.Repeat("x", 200) + `"}}`
	if _, err := NewReader(strings.NewReader(long), 100).Next(); err == nil || !strings.Contains(err.Error(), "longer than 100") {
		t.Errorf("a line over the limit: %v", err)
	}
}

// Ids and _meta never count, nor the ignored pointers; everything else does, and the
// difference names its place.
func TestCompareIgnoresIdsMetaAndIgnored(t *testing.T) {
	ig, _ := ParsePointers("/result/content/0/when")
	want := `{"jsonrpc":"2.0","id":1,"result":{"_meta":{"took":5},"content":[{"type":"text","text":"hi","when":"noon","_meta":{"x":1}}]}}`
	same := `{"id":"a7","jsonrpc":"2.0","result":{"content":[{"when":"midnight","type":"text","text":"hi"}],"_meta":{"took":9}}}`
	if ds := Compare([]byte(want), []byte(same), ig); len(ds) != 0 {
		t.Errorf("differences where none count: %v", ds)
	}
	other := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"HI","when":"noon"}],"isError":true}}`
	ds := Compare([]byte(want), []byte(other), ig)
	got := make([]string, len(ds))
	for i, d := range ds {
		got[i] = d.String()
	}
	wantDs := []string{`/result/content/0/text: recorded "hi", got "HI"`, `/result/isError: not recorded, got true`}
	if strings.Join(got, "\n") != strings.Join(wantDs, "\n") {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantDs, "\n"))
	}
}

func TestParsePointer(t *testing.T) {
	p, err := ParsePointer("/a~1b/c~0d/0")
	if err != nil || len(p) != 3 || p[0] != "a/b" || p[1] != "c~d" || p.String() != "/a~1b/c~0d/0" {
		t.Errorf("ParsePointer = %q, %v", p, err)
	}
	for _, bad := range []string{"", "a/b", "/a~2"} {
		if _, err := ParsePointer(bad); err == nil {
			t.Errorf("ParsePointer(%q) accepted", bad)
		}
	}
}

// A recorded "[redacted]" matches any value; everything else must be equal, _meta aside.
func TestMatchesTakesRedactedAsAnyValue(t *testing.T) {
	rec := json.RawMessage(`{"name":"login","arguments":{"user":"ann","password":"[redacted]"}}`)
	for params, want := range map[string]bool{
		`{"name":"login","arguments":{"password":"hunter2","user":"ann"},"_meta":{"progressToken":7}}`: true,
		`{"name":"login","arguments":{"password":{"deep":1},"user":"ann"}}`:                            true,
		`{"name":"login","arguments":{"password":"hunter2","user":"bob"}}`:                             false,
		`{"name":"login","arguments":{"user":"ann"}}`:                                                  false,
		`{"name":"login","arguments":{"password":"x","user":"ann","extra":1}}`:                         false,
	} {
		if got := Matches(rec, json.RawMessage(params)); got != want {
			t.Errorf("Matches(%s) = %v, want %v", params, got, want)
		}
	}
	if !Matches(nil, json.RawMessage(`{}`)) || Matches(json.RawMessage(`[1]`), json.RawMessage(`[2]`)) {
		t.Error("empty params must match absent ones, and unequal arrays must not match")
	}
}
