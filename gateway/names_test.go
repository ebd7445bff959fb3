package gateway

import (
	"regexp"
	"strings"
	"testing"
)

// hostNames is what several hosts enforce on tool names.
var hostNames = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestNames_PrefixSeparatorName(t *testing.T) {
	for _, c := range []struct{ prefix, sep, name, want string }{
		{"gh", "__", "create_issue", "gh__create_issue"},
		{"", "__", "create_issue", "create_issue"},
		{"fs", "-", "read.file", "fs-read_file"}, // '.' is valid MCP, refused by hosts
		{"x", "__", "ünï code", "x___n__code"},
	} {
		got, _ := ExposedName(c.prefix, c.sep, c.name)
		if got != c.want {
			t.Errorf("ExposedName(%q, %q, %q) = %q, want %q", c.prefix, c.sep, c.name, got, c.want)
		}
	}
}

// A long name is cut to 64 characters with a hash suffix that is the same from run to run,
// and two long names that share their beginning stay apart.
func TestNames_LongNamesGetAStableHashSuffix(t *testing.T) {
	long := strings.Repeat("a", 70)
	a, changed := ExposedName("server", "__", long+"_one")
	b, _ := ExposedName("server", "__", long+"_two")
	again, _ := ExposedName("server", "__", long+"_one")
	if !changed || len(a) != MaxNameLen || !hostNames.MatchString(a) {
		t.Fatalf("%q (changed %v): want 64 valid characters", a, changed)
	}
	if a == b {
		t.Errorf("two long names share their exposed name %q", a)
	}
	if a != again {
		t.Errorf("not stable: %q then %q", a, again)
	}
	if d := distinctName(a, "other"); d == a || !hostNames.MatchString(d) {
		t.Errorf("distinctName = %q", d)
	}
}

// FuzzExposedName: every exposed name matches the hosts' pattern, whatever the names.
func FuzzExposedName(f *testing.F) {
	f.Add("gh", "create_issue")
	f.Add("", strings.Repeat("é", 40))
	f.Fuzz(func(t *testing.T, prefix, name string) {
		if prefix+name == "" {
			return
		}
		got, _ := ExposedName(ValidName(prefix), DefaultSeparator, name)
		if !hostNames.MatchString(got) {
			t.Fatalf("ExposedName(%q, %q) = %q, which hosts refuse", prefix, name, got)
		}
	})
}
