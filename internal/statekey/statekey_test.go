package statekey_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/internal/statekey"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hex64 is a key as `openssl rand -hex 32` prints it, without its line end.
const hex64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func write(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Neither a file nor the variable: no key, and no error (the server draws its own).
func TestNoKeyGiven(t *testing.T) {
	key, err := statekey.Load("", "")
	if key != nil || err != nil {
		t.Errorf("Load with nothing given = %q, %v; want nil, nil", key, err)
	}
}

// The file's bytes are the key, and so are the variable's.
func TestKeyFromFileOrVariable(t *testing.T) {
	raw := string(bytes.Repeat([]byte{0xff, 0x00, 0x7f, '\n'}, 10)) + "x" // binary, ends with no line end
	for _, tc := range []struct{ name, path, env, want string }{
		{"file", write(t, hex64), "", hex64},
		{"binary file", write(t, raw), "", raw},
		{"variable", "", hex64, hex64},
	} {
		key, err := statekey.Load(tc.path, tc.env)
		if err != nil || string(key) != tc.want {
			t.Errorf("%s: Load = %q, %v; want %q", tc.name, key, err, tc.want)
		}
	}
}

// One line end at the end is not part of the key, in the file and in the variable: what
// `openssl rand -hex 32 > key` writes is the same key as $(cat key) in the variable.
func TestLineEndIsNotPartOfTheKey(t *testing.T) {
	for _, tc := range []struct{ name, path, env, want string }{
		{"file with \\n", write(t, hex64+"\n"), "", hex64},
		{"file with \\r\\n", write(t, hex64+"\r\n"), "", hex64},
		{"variable with \\n", "", hex64 + "\n", hex64},
		{"only one line end is dropped", write(t, hex64+"\n\n"), "", hex64 + "\n"},
		{"a lone \\r stays", write(t, hex64+"\r"), "", hex64 + "\r"},
	} {
		key, err := statekey.Load(tc.path, tc.env)
		if err != nil || string(key) != tc.want {
			t.Errorf("%s: Load = %q, %v; want %q", tc.name, key, err, tc.want)
		}
	}
	fromFile, _ := statekey.Load(write(t, hex64+"\n"), "")
	fromEnv, _ := statekey.Load("", hex64)
	if !bytes.Equal(fromFile, fromEnv) {
		t.Errorf("the file's key %q and the variable's %q differ", fromFile, fromEnv)
	}
}

// A key shorter than 32 bytes is refused, and the error says how to make one; the line end
// does not count towards the 32.
func TestShortKeyIsRefused(t *testing.T) {
	short := strings.Repeat("k", statekey.MinLen-1)
	for _, tc := range []struct{ name, path, env, from string }{
		{"file", write(t, short), "", "--state-key-file"},
		{"file padded by its line end", write(t, short+"\n"), "", "--state-key-file"},
		{"variable", "", short, "$RELAY_STATE_KEY"},
		{"empty file", write(t, ""), "", "--state-key-file"},
	} {
		key, err := statekey.Load(tc.path, tc.env)
		if err == nil || key != nil {
			t.Errorf("%s: Load = %q, %v; want an error", tc.name, key, err)
			continue
		}
		for _, want := range []string{tc.from, "at least 32", "head -c 32 /dev/urandom", "> key"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the error %q does not say %q", tc.name, err, want)
			}
		}
	}
	if key, err := statekey.Load("", strings.Repeat("k", statekey.MinLen)); err != nil || len(key) != statekey.MinLen {
		t.Errorf("a key of exactly %d bytes: %q, %v; want it accepted", statekey.MinLen, key, err)
	}
}

// A file that does not exist is refused: the error names it and says how to make a key.
func TestMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-key")
	_, err := statekey.Load(path, "")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "does not exist") ||
		!strings.Contains(err.Error(), "head -c 32 /dev/urandom") {
		t.Errorf("Load of a missing file: %v; want an error naming it and how to make a key", err)
	}
	dir := t.TempDir() // a file that cannot be read: the error says which flag
	if _, err := statekey.Load(dir, ""); err == nil || !strings.Contains(err.Error(), "--state-key-file") {
		t.Errorf("Load of a directory: %v; want an error naming the flag", err)
	}
}

// Both the file and the variable: refused, whether or not they hold the same key, so that no
// instance signs with a key its operator did not mean.
func TestBothGivenIsRefused(t *testing.T) {
	for _, env := range []string{hex64, strings.Repeat("z", 40)} {
		key, err := statekey.Load(write(t, hex64), env)
		if err == nil || key != nil {
			t.Errorf("Load with both = %q, %v; want an error", key, err)
			continue
		}
		for _, want := range []string{"--state-key-file", "RELAY_STATE_KEY", "one way"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error %q does not say %q", err, want)
			}
		}
	}
}

// The flag reads its file, or the variable when it is not given, and its help names both.
func TestFlag(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f := statekey.AddFlag(fs, "children get it too")
	var help strings.Builder
	fs.SetOutput(&help)
	fs.PrintDefaults()
	for _, want := range []string{"-state-key-file PATH", "RELAY_STATE_KEY", "at least 32 bytes", "children get it too"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("the flag's help does not say %q:\n%s", want, help.String())
		}
	}
	t.Setenv(statekey.Env, "")
	if err := fs.Parse([]string{"--state-key-file", write(t, hex64+"\n")}); err != nil {
		t.Fatal(err)
	}
	if key, err := f.Key(); err != nil || string(key) != hex64 {
		t.Errorf("Key = %q, %v; want the file's", key, err)
	}
	t.Setenv(statekey.Env, hex64)
	if _, err := f.Key(); err == nil {
		t.Error("Key with the flag and the variable both set: no error")
	}
	fs = flag.NewFlagSet("test", flag.ContinueOnError)
	f = statekey.AddFlag(fs, "")
	fs.Parse(nil)
	if key, err := f.Key(); err != nil || string(key) != hex64 {
		t.Errorf("Key = %q, %v; want the variable's", key, err)
	}
}

// Export hands a key of text to the children in $RELAY_STATE_KEY, and refuses one that an
// environment variable cannot hold.
func TestExport(t *testing.T) {
	t.Setenv(statekey.Env, "")
	if err := statekey.Export(nil); err != nil || os.Getenv(statekey.Env) != "" {
		t.Errorf("Export(nil) = %v, and set %q; want nothing done", err, os.Getenv(statekey.Env))
	}
	if err := statekey.Export([]byte(hex64)); err != nil || os.Getenv(statekey.Env) != hex64 {
		t.Errorf("Export = %v, and set %q; want %q", err, os.Getenv(statekey.Env), hex64)
	}
	err := statekey.Export(append([]byte(hex64), 0))
	if err == nil || !strings.Contains(err.Error(), "NUL") || !strings.Contains(err.Error(), "base64") {
		t.Errorf("Export of a key with a NUL byte: %v; want an error saying to make a key of text", err)
	}
}

// Derive gives each purpose its own key, the same from the same key, and nothing from no key.
func TestDerive(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	a, b := statekey.Derive(key, "a"), statekey.Derive(key, "b")
	if len(a) != 32 || bytes.Equal(a, b) || bytes.Equal(a, key) {
		t.Errorf("Derive(key, a) = %x, (key, b) = %x: want two 32-byte keys, neither the key", a, b)
	}
	if again := statekey.Derive([]byte(strings.Repeat("k", 32)), "a"); !bytes.Equal(a, again) {
		t.Errorf("Derive is not the same from the same key: %x, %x", a, again)
	}
	if statekey.Derive(nil, "a") != nil {
		t.Error("Derive(nil) is not nil: a process with no fleet key would share a key with every other")
	}
}
