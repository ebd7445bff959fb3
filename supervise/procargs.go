package supervise

import (
	"bytes"
	"encoding/binary"
)

// procargsEnv returns the environment from macOS's kern.procargs2 record of a process:
// argc (a little-endian int32), the executable's path, NUL padding, argc arguments, then
// the environment, each string NUL-terminated, the environment ending with an empty string.
// A record too short or cut off yields what could be read.
func procargsEnv(b []byte) []string {
	if len(b) < 4 {
		return nil
	}
	argc := int(int32(binary.LittleEndian.Uint32(b)))
	b = b[4:]
	next := func() (string, bool) {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return "", false
		}
		s := string(b[:i])
		b = b[i+1:]
		return s, true
	}
	if _, ok := next(); !ok { // the executable's path
		return nil
	}
	for len(b) > 0 && b[0] == 0 { // its padding
		b = b[1:]
	}
	for ; argc > 0; argc-- {
		if _, ok := next(); !ok {
			return nil
		}
	}
	var env []string
	for {
		s, ok := next()
		if !ok || s == "" {
			return env
		}
		env = append(env, s)
	}
}
