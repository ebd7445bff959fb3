package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxNameLen is the longest name the gateway exposes: several hosts refuse tool names that
// do not match ^[a-zA-Z0-9_-]{1,64}$.
const MaxNameLen = 64

// DefaultSeparator joins a prefix and a server's own name.
const DefaultSeparator = "__"

// ValidName returns s with every character outside [a-zA-Z0-9_-] replaced by '_'.
func ValidName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// ExposedName returns the name a server's own name is exposed as: prefix, separator and
// name (name alone when prefix is ""), its characters made valid (ValidName). A result
// longer than MaxNameLen is cut, and ends with '-' and 8 hex digits of a hash of the whole
// unshortened name, so that it stays the same from run to run and two long names that
// share their first 55 characters stay apart. It reports whether the name was changed
// beyond the joining.
func ExposedName(prefix, sep, name string) (string, bool) {
	joined := name
	if prefix != "" {
		joined = prefix + sep + name
	}
	valid := ValidName(joined)
	if len(valid) <= MaxNameLen {
		return valid, valid != joined
	}
	return hashed(valid[:MaxNameLen-9], joined), true
}

// hashed returns head, '-', and 8 hex digits of the SHA-256 of whole.
func hashed(head, whole string) string {
	sum := sha256.Sum256([]byte(whole))
	return head + "-" + hex.EncodeToString(sum[:4])
}

// distinctName returns a name for whole, of the form of ExposedName's, that differs from
// taken: the valid name cut to leave room for a hash suffix of whole.
func distinctName(valid, whole string) string {
	head := valid
	if len(head) > MaxNameLen-9 {
		head = head[:MaxNameLen-9]
	}
	return hashed(head, whole)
}
