package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
)

// maxDepth bounds nesting so that a hostile frame cannot exhaust the stack; it matches the
// limit of encoding/json.
const maxDepth = 10000

var errSyntax = errors.New("jsonrpc: invalid JSON")

// strSafe marks the bytes that may appear unescaped inside a JSON string without ending it.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// skipValue validates the JSON value starting at d[i] (no leading space) and returns the index
// just past it.
func skipValue(d []byte, i, depth int) (int, error) {
	if i >= len(d) {
		return 0, errSyntax
	}
	switch c := d[i]; {
	case c == '"':
		return skipString(d, i)
	case c == '{':
		return skipObject(d, i, depth+1)
	case c == '[':
		return skipArray(d, i, depth+1)
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(d, i)
	case c == 't':
		return skipLiteral(d, i, "true")
	case c == 'f':
		return skipLiteral(d, i, "false")
	case c == 'n':
		return skipLiteral(d, i, "null")
	}
	return 0, errSyntax
}

func skipLiteral(d []byte, i int, lit string) (int, error) {
	if len(d)-i < len(lit) || string(d[i:i+len(lit)]) != lit {
		return 0, errSyntax
	}
	return i + len(lit), nil
}

// SWAR ("SIMD within a register"): tests on the 8 bytes of a word at once.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// notPlain flags (in the top bit of each byte) the quotes, backslashes and control bytes of
// x. Each test is one subtraction: for a byte below 0x80, b-n has its top bit set exactly when
// b < n, and (b^c)-1 exactly when b == c; non-ASCII bytes are masked out at the end. A borrow
// only comes out of a flagged byte, so it may flag bytes above it but never the lowest: "any"
// and "the first" are exact, which is all the scanner and AppendString ask.
func notPlain(x uint64) uint64 {
	return ((x - lsb*0x20) | ((x ^ lsb*'"') - lsb) | ((x ^ lsb*'\\') - lsb)) &^ x & msb
}

// plain32 reports whether the 32 bytes at d[i:] hold no quote, backslash or control byte.
func plain32(d []byte, i int) bool {
	d = d[i : i+32]
	return notPlain(binary.LittleEndian.Uint64(d))|notPlain(binary.LittleEndian.Uint64(d[8:]))|
		notPlain(binary.LittleEndian.Uint64(d[16:]))|notPlain(binary.LittleEndian.Uint64(d[24:])) == 0
}

// skipString validates the string starting at the quote d[i] and returns the index past its
// closing quote.
func skipString(d []byte, i int) (int, error) {
	i++
	for {
		// Most strings are short (keys, names, ids): the first 8 bytes usually hold the
		// closing quote, and the lowest byte that notPlain flags is where it stands (a
		// borrow in its arithmetic only flags bytes above a flagged one).
		if i+8 <= len(d) {
			if m := notPlain(binary.LittleEndian.Uint64(d[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto special
			}
			i += 8
		}
		for i+32 <= len(d) && plain32(d, i) { // long strings: 32 bytes a step, then 8
			i += 32
		}
		for i+8 <= len(d) {
			if m := notPlain(binary.LittleEndian.Uint64(d[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto special
			}
			i += 8
		}
		for i < len(d) && strSafe[d[i]] {
			i++
		}
	special:
		if i >= len(d) {
			return 0, errSyntax
		}
		switch d[i] {
		case '"':
			return i + 1, nil
		case '\\':
			if i+1 >= len(d) {
				return 0, errSyntax
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(d)-i < 6 {
					return 0, errSyntax
				}
				for _, h := range d[i+2 : i+6] {
					if !isHex(h) {
						return 0, errSyntax
					}
				}
				i += 6
			default:
				return 0, errSyntax
			}
		default: // a control character
			return 0, errSyntax
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipNumber validates -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(d []byte, i int) (int, error) {
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && isDigit(d[i]):
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return 0, errSyntax
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return 0, errSyntax
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return 0, errSyntax
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	return i, nil
}

func skipArray(d []byte, i, depth int) (int, error) {
	if depth > maxDepth {
		return 0, errSyntax
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = skipValue(d, i, depth); err != nil {
			return 0, err
		}
		i = skipSpace(d, i)
		if i >= len(d) {
			return 0, errSyntax
		}
		switch d[i] {
		case ',':
			i = skipSpace(d, i+1)
		case ']':
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

func skipObject(d []byte, i, depth int) (int, error) {
	if depth > maxDepth {
		return 0, errSyntax
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	for {
		var err error
		if i >= len(d) || d[i] != '"' {
			return 0, errSyntax
		}
		if i, err = skipString(d, i); err != nil {
			return 0, err
		}
		i = skipSpace(d, i)
		if i >= len(d) || d[i] != ':' {
			return 0, errSyntax
		}
		if i, err = skipValue(d, skipSpace(d, i+1), depth); err != nil {
			return 0, err
		}
		i = skipSpace(d, i)
		if i >= len(d) {
			return 0, errSyntax
		}
		switch d[i] {
		case ',':
			i = skipSpace(d, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

// Valid reports whether data is exactly one JSON value, surrounded by optional white space.
func Valid(data []byte) bool {
	i, err := skipValue(data, skipSpace(data, 0), 0)
	return err == nil && skipSpace(data, i) == len(data)
}

// skipTrusted returns the index just past the JSON value starting at d[i], for input already
// known to be valid: strings are crossed with memchr-speed searches for their closing quote,
// and nothing is validated. On invalid input it returns some index within d, never panics.
func skipTrusted(d []byte, i int) int {
	if i >= len(d) {
		return len(d)
	}
	switch d[i] {
	case '"':
		return skipStringTrusted(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				i = skipStringTrusted(d, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(d)
	}
	for i < len(d) && !isSpace(d[i]) && d[i] != ',' && d[i] != '}' && d[i] != ']' {
		i++ // a number or a literal
	}
	return i
}

// skipStringTrusted returns the index past the closing quote of the string at d[i].
func skipStringTrusted(d []byte, i int) int {
	start := i + 1
	for i = start; ; {
		j := bytes.IndexByte(d[i:], '"')
		if j < 0 {
			return len(d)
		}
		q := i + j
		n := 0 // backslashes right before the quote: an odd count escapes it
		for p := q - 1; p >= start && d[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}
