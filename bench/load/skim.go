package load

import "bytes"

// This file holds a small JSON skimmer: it finds the members of an object
// without decoding or validating the values, so that reading a 64 KiB
// tools/call result costs little more than a memchr over its strings. The
// driver must stay cheap next to the servers it measures, which share the
// machine with it.

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the JSON string whose opening quote
// is b[i], or -1 if the string is not terminated.
func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// valueEnd returns the index just past the JSON value that starts at b[i],
// or -1 if the value is truncated. It does not validate the value.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return j
			}
			j++
		}
		return j
	}
}

// skimObject calls fn with the raw key (without quotes, escapes left as
// they are) and the raw value of each member of the JSON object b. It
// reports false if b is not an object or ends early.
func skimObject(b []byte, fn func(key, val []byte)) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			return true
		}
		if b[i] != '"' {
			return false
		}
		ke := stringEnd(b, i)
		if ke < 0 {
			return false
		}
		key := b[i+1 : ke-1]
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		ve := valueEnd(b, i)
		if ve < 0 {
			return false
		}
		fn(key, b[i:ve])
		i = skipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		return i < len(b) && b[i] == '}'
	}
}
