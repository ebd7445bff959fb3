package supervise

import (
	"encoding/binary"
	"slices"
	"testing"
)

func procargsRecord(argc int32, parts ...string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(argc))
	for _, p := range parts {
		b = append(append(b, p...), 0)
	}
	return b
}

func TestProcargsEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  []byte
		want []string
	}{
		{"args and env", procargsRecord(2, "/usr/bin/node", "\x00\x00", "node", "server.js", "HOME=/Users/a", "RELAY_SUPERVISED_BY=7.1", "", "executable_path=/usr/bin/node"),
			[]string{"HOME=/Users/a", "RELAY_SUPERVISED_BY=7.1"}},
		{"no env", procargsRecord(1, "/bin/sleep", "sleep", ""), nil},
		{"cut off in argv", procargsRecord(3, "/bin/x", "x", "y"), nil},
		{"cut off in env", procargsRecord(1, "/bin/x", "x", "A=1")[:len(procargsRecord(1, "/bin/x", "x", "A=1"))-2], nil},
		{"too short", []byte{1, 0}, nil},
		{"argc past the record", procargsRecord(1000, "/bin/x", "x"), nil},
	} {
		if got := procargsEnv(tc.rec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: env = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func FuzzProcargsEnv(f *testing.F) {
	f.Add(procargsRecord(2, "/usr/bin/node", "", "node", "a", "K=V", ""))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f})
	f.Add([]byte{0, 0, 0, 0x80, 'x', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, e := range procargsEnv(b) {
			if e == "" {
				t.Fatal("an empty string in the environment")
			}
		}
	})
}
